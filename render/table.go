package render

import (
	"io"
	"strings"

	"github.com/gpulab/gpulab/internal/text"
)

// Column is one column of a Table: its head, how its cells align, and
// how it gives way on a screen too narrow for the whole table.
type Column struct {
	Head  string
	Right bool // figures: aligned to the right
	// Drop is the order in which Fit leaves the column out when the
	// table does not fit: 0 never, then the highest first.
	Drop int
	// Max is the most cells Fit gives the column's cells, which it cuts
	// with …; 0 is no limit. The text output never cuts.
	Max int
	// Min is the fewest cells the column takes: tables written one
	// after another (a host's each) line up when they share it.
	Min int
}

// Table is rows of cells under a head: one layout of a result's table
// for the text output (WriteText) and for the workbench (Fit), so that
// both word every cell the same way. Cells are escaped by whoever fills
// them (visible.String); widths are counted in terminal cells, a wide
// character as two.
type Table struct {
	Columns []Column
	Rows    [][]string
	Indent  string // before every line of the text output
}

// NewTable is a table under these heads, every column left-aligned
// and kept on a narrow screen.
func NewTable(heads ...string) Table {
	t := Table{Columns: make([]Column, len(heads))}
	for i, h := range heads {
		t.Columns[i].Head = h
	}
	return t
}

// Column is the index of the column headed head, -1 when there is none:
// a front end that adds to a column's cells (a bar) finds it by its head,
// never by a number that a new column would shift.
func (t Table) Column(head string) int {
	for i, c := range t.Columns {
		if c.Head == head {
			return i
		}
	}
	return -1
}

// Add appends a row; a row shorter than the head leaves its last
// columns empty.
func (t *Table) Add(cells ...string) { t.Rows = append(t.Rows, cells) }

// textGap is the spaces between two columns of the text output (as
// kubectl's tables).
const textGap = 2

// WriteText writes the table as the command line prints it: the head in
// capitals, each column as wide as its widest cell and two spaces apart,
// no column cut, no space at a line's end.
func (t Table) WriteText(w io.Writer) error { return t.write(w, true) }

// WriteRows writes the rows as WriteText does, without the head: a
// listing whose lines say what they are.
func (t Table) WriteRows(w io.Writer) error { return t.write(w, false) }

func (t Table) write(w io.Writer, head bool) error {
	t.Columns = append([]Column(nil), t.Columns...)
	cols := make([]int, len(t.Columns))
	for i := range cols {
		cols[i] = i
		if !head {
			t.Columns[i].Head = ""
		}
	}
	var b strings.Builder
	widths := t.widths(cols, false)
	if head {
		t.line(&b, cols, widths, t.heads(), textGap)
	}
	for _, r := range t.Rows {
		t.line(&b, cols, widths, r, textGap)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Fit lays the table out in width cells for a screen, one space between
// columns: it leaves out whole columns, the highest Drop first, until
// the rest fit, and cuts a cell over its column's Max with …; when the
// columns it keeps still do not fit, those with a Max are narrowed
// further, the widest first. It returns
// the head line, the rows, and the heads of the columns it left out, for
// the screen to say so: nothing is hidden silently. A table that fits in
// no way keeps its Drop 0 columns, for the screen to cut at its edge.
func (t Table) Fit(width int) (head string, rows []string, left []string) {
	t.Indent = "" // a screen places the table itself
	cols := make([]int, len(t.Columns))
	for i := range cols {
		cols[i] = i
	}
	widths := t.widths(cols, true)
	for total(cols, widths) > width {
		worst := -1
		for k, c := range cols {
			if d := t.Columns[c].Drop; d > 0 && (worst < 0 || d >= t.Columns[cols[worst]].Drop) {
				worst = k
			}
		}
		if worst < 0 {
			break
		}
		left = append(left, t.Columns[cols[worst]].Head)
		cols = append(cols[:worst:worst], cols[worst+1:]...)
		widths = t.widths(cols, true)
	}
	t.shrink(cols, widths, width)
	var b strings.Builder
	t.line(&b, cols, widths, t.heads(), 1)
	head = strings.TrimSuffix(b.String(), "\n")
	for _, r := range t.Rows {
		b.Reset()
		t.line(&b, cols, widths, r, 1)
		rows = append(rows, strings.TrimSuffix(b.String(), "\n"))
	}
	return head, rows, left
}

// shrink narrows the columns that may be cut (those with a Max), the
// widest first, until cols fit in width or each is down to its head.
func (t Table) shrink(cols, widths []int, width int) {
	for total(cols, widths) > width {
		widest := -1
		for k, c := range cols {
			floor := max(text.Width(t.Columns[c].Head), 4)
			if t.Columns[c].Max > 0 && widths[k] > floor && (widest < 0 || widths[k] > widths[widest]) {
				widest = k
			}
		}
		if widest < 0 {
			return
		}
		widths[widest]--
	}
}

func (t Table) heads() []string {
	h := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		h[i] = c.Head
	}
	return h
}

// widths is each of cols' width: its widest cell or head, no more than
// its Max when the table is cut to a screen.
func (t Table) widths(cols []int, cut bool) []int {
	w := make([]int, len(cols))
	for k, c := range cols {
		w[k] = max(t.Columns[c].Min, text.Width(t.Columns[c].Head))
		for _, r := range t.Rows {
			if c < len(r) {
				w[k] = max(w[k], text.Width(r[c]))
			}
		}
		if m := t.Columns[c].Max; cut && m > 0 {
			w[k] = min(w[k], max(m, text.Width(t.Columns[c].Head)))
		}
	}
	return w
}

// total is the cells a line of cols takes, one space between them.
func total(cols, widths []int) int {
	n := max(len(cols)-1, 0)
	for _, w := range widths {
		n += w
	}
	return n
}

// line writes one row of cols, each cell cut to and padded to its
// column's width, gap spaces apart, and no space at its end.
func (t Table) line(b *strings.Builder, cols, widths []int, r []string, gap int) {
	var l strings.Builder
	for k, c := range cols {
		cell := ""
		if c < len(r) {
			cell = text.Cut(r[c], widths[k])
		}
		if k > 0 {
			l.WriteString(strings.Repeat(" ", gap))
		}
		pad := strings.Repeat(" ", widths[k]-text.Width(cell))
		if t.Columns[c].Right {
			l.WriteString(pad + cell)
		} else {
			l.WriteString(cell + pad)
		}
	}
	b.WriteString(t.Indent)
	b.WriteString(strings.TrimRight(l.String(), " "))
	b.WriteByte('\n')
}
