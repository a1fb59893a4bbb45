package tui

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
	east "github.com/yuin/goldmark/extension/ast"
)

// table draws a Markdown table: columns as wide as their content, the
// widest giving way first when the row is wider than the width (cells cut
// with …), the header bold over a rule.
func (r *mdRenderer) table(t *east.Table, prefix string) {
	var rows [][]string
	var head int
	for row := t.FirstChild(); row != nil; row = row.NextSibling() {
		var cells []string
		for c := row.FirstChild(); c != nil; c = c.NextSibling() {
			cells = append(cells, strings.TrimSpace(strings.ReplaceAll(r.inline(c), "\n", " ")))
		}
		if _, ok := row.(*east.TableHeader); ok {
			head = len(rows) + 1
		}
		rows = append(rows, cells)
	}
	widths := columnWidths(rows, r.width-ansi.StringWidth(prefix))
	for i, cells := range rows {
		var b strings.Builder
		b.WriteString(prefix)
		for j, w := range widths {
			cell := ""
			if j < len(cells) {
				cell = cells[j]
			}
			cell = ansi.Truncate(cell, w, "…")
			if i < head {
				cell = mdTableHead.Render(ansi.Strip(cell))
			}
			b.WriteString(cell + strings.Repeat(" ", w-ansi.StringWidth(cell)))
			if j < len(widths)-1 {
				b.WriteString("  ")
			}
		}
		r.out = append(r.out, strings.TrimRight(b.String(), " "))
		if i == head-1 {
			total := 0
			for _, w := range widths {
				total += w + 2
			}
			r.out = append(r.out, prefix+mdFaint.Render(strings.Repeat("─", max(total-2, 1))))
		}
	}
}

// columnWidths are the columns' content widths, the widest cut first
// until the row, with two spaces between columns, fits width.
func columnWidths(rows [][]string, width int) []int {
	var widths []int
	for _, cells := range rows {
		for j, c := range cells {
			if j >= len(widths) {
				widths = append(widths, 0)
			}
			widths[j] = max(widths[j], ansi.StringWidth(c))
		}
	}
	total := func() int {
		t := 2 * max(len(widths)-1, 0)
		for _, w := range widths {
			t += w
		}
		return t
	}
	for total() > width {
		widest := 0
		for j, w := range widths {
			if w > widths[widest] {
				widest = j
			}
		}
		if widths[widest] <= 4 {
			break
		}
		widths[widest]--
	}
	return widths
}
