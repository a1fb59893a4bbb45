package tui

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
	east "github.com/yuin/goldmark/extension/ast"
)

// table draws a Markdown table so that no cell is ever cut: columns as
// wide as their content when the row fits; otherwise the widest columns
// give way, down to their header's width, and their cells wrap onto more
// lines; and when even the headers do not fit side by side (a result
// table of twelve columns at 80), each row is drawn as a block of
// "header  value" lines, as psql's expanded display does.
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
	room := r.width - ansi.StringWidth(prefix)
	widths, ok := columnWidths(rows, head, room)
	if !ok {
		r.expanded(rows, head, prefix, room)
		return
	}
	start := len(r.out)
	r.grid(rows, head, widths, prefix)
	if len(r.out)-start <= len(rows)+1 { // no cell wrapped
		return
	}
	// Cells wrapped: when one block per row takes fewer lines (narrow
	// columns wrap a long cell to a word a line), draw that instead.
	grid := append([]string(nil), r.out[start:]...)
	r.out = r.out[:start]
	r.expanded(rows, head, prefix, room)
	if len(r.out)-start >= len(grid) {
		r.out = append(r.out[:start], grid...)
	}
}

// grid draws the table as rows of columns of widths, the header over a
// rule.
func (r *mdRenderer) grid(rows [][]string, head int, widths []int, prefix string) {
	for i, cells := range rows {
		r.tableRow(cells, widths, prefix, i < head)
		if i == head-1 {
			total := 0
			for _, w := range widths {
				total += w + 2
			}
			r.out = append(r.out, prefix+mdFaint.Render(strings.Repeat("─", max(total-2, 1))))
		}
	}
}

// tableRow draws one row whose cells wrap within their columns: as many
// lines as its tallest cell.
func (r *mdRenderer) tableRow(cells []string, widths []int, prefix string, header bool) {
	cols := make([][]string, len(widths))
	height := 1
	for j, w := range widths {
		cell := ""
		if j < len(cells) {
			cell = cells[j]
		}
		if header {
			cell = mdTableHead.Render(ansi.Strip(cell))
		}
		cols[j] = strings.Split(ansi.Wrap(cell, w, ""), "\n")
		height = max(height, len(cols[j]))
	}
	for k := range height {
		var b strings.Builder
		b.WriteString(prefix)
		for j, w := range widths {
			part := ""
			if k < len(cols[j]) {
				part = cols[j][k]
			}
			b.WriteString(part + strings.Repeat(" ", max(0, w-ansi.StringWidth(part))))
			if j < len(widths)-1 {
				b.WriteString("  ")
			}
		}
		r.out = append(r.out, strings.TrimRight(b.String(), " "))
	}
}

// expanded draws each body row as a block: its first cell as the block's
// title, then one "header  value" line per other column, values wrapped
// under themselves.
func (r *mdRenderer) expanded(rows [][]string, head int, prefix string, room int) {
	var headers []string
	if head > 0 {
		headers = rows[head-1]
	}
	label := 0
	for _, h := range headers {
		label = max(label, ansi.StringWidth(ansi.Strip(h)))
	}
	label = min(label, max(room*2/5, 8))
	valueRoom := max(room-label-2, 10)
	for i, cells := range rows[head:] {
		if i > 0 {
			r.out = append(r.out, "")
		}
		for j, cell := range cells {
			name := ""
			if j < len(headers) {
				name = ansi.Strip(headers[j])
			}
			if j == 0 {
				r.out = append(r.out, prefix+mdFaint.Render("── ")+mdTableHead.Render(strings.TrimSpace(name+" "+cell)))
				continue
			}
			names := strings.Split(ansi.Wrap(name, label, ""), "\n")
			values := strings.Split(ansi.Wrap(cell, valueRoom, ""), "\n")
			for k := range max(len(names), len(values)) {
				n, v := "", ""
				if k < len(names) {
					n = names[k]
				}
				if k < len(values) {
					v = values[k]
				}
				line := prefix + mdTableHead.Render(n) + strings.Repeat(" ", label-ansi.StringWidth(n)+2) + v
				r.out = append(r.out, strings.TrimRight(line, " "))
			}
		}
	}
}

// columnWidths are the columns' content widths, the widest narrowed first
// until the row, with two spaces between columns, fits width. No column
// is narrowed below its header's width (nor below 8 columns when its
// content is wider): when the row cannot fit that way, ok is false and
// the table is better drawn expanded.
func columnWidths(rows [][]string, head, width int) (widths []int, ok bool) {
	var floors []int
	for i, cells := range rows {
		for j, c := range cells {
			if j >= len(widths) {
				widths = append(widths, 0)
				floors = append(floors, 0)
			}
			w := ansi.StringWidth(c)
			widths[j] = max(widths[j], w)
			if i < head {
				floors[j] = max(floors[j], w)
			}
		}
	}
	for j := range floors {
		floors[j] = min(widths[j], max(floors[j], 8))
	}
	total := 2 * max(len(widths)-1, 0)
	for _, w := range widths {
		total += w
	}
	for total > width {
		widest := -1
		for j, w := range widths {
			if w > floors[j] && (widest < 0 || w > widths[widest]) {
				widest = j
			}
		}
		if widest < 0 {
			return widths, false
		}
		widths[widest]--
		total--
	}
	return widths, true
}
