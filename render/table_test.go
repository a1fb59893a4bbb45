package render

import (
	"reflect"
	"strings"
	"testing"
)

func sample() Table {
	t := Table{Columns: []Column{{Head: "NODE"}, {Head: "GPUS", Right: true}, {Head: "NOTE", Drop: 1, Max: 6}, {Head: "ZONE", Drop: 2}}}
	t.Add("dgx01", "8", "fine", "a")
	t.Add("节点二", "16", "a long note", "b")
	t.Add("dgx03") // a short row: its other cells are empty
	return t
}

// The text output lines columns up by terminal cells (a CJK character is
// two), two spaces apart, figures to the right, nothing cut, no space at
// a line's end.
func TestWriteText(t *testing.T) {
	var b strings.Builder
	if err := sample().WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"NODE    GPUS  NOTE         ZONE\n" +
		"dgx01      8  fine         a\n" +
		"节点二    16  a long note  b\n" +
		"dgx03\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// Fit leaves out the highest Drop first, says which, cuts a cell over
// its Max with …, and keeps the columns that never drop even when they
// do not fit.
func TestFit(t *testing.T) {
	for _, c := range []struct {
		width int
		head  string
		row   string
		left  []string
	}{
		{80, "NODE   GPUS NOTE   ZONE", "节点二   16 a lon… b", nil},
		{20, "NODE   GPUS NOTE", "节点二   16 a lon…", []string{"ZONE"}},
		{12, "NODE   GPUS", "节点二   16", []string{"ZONE", "NOTE"}},
		{4, "NODE   GPUS", "节点二   16", []string{"ZONE", "NOTE"}},
	} {
		head, rows, left := sample().Fit(c.width)
		if head != c.head || rows[1] != c.row || !reflect.DeepEqual(left, c.left) {
			t.Errorf("Fit(%d) = %q, %q, left out %q; want %q, %q, %q", c.width, head, rows[1], left, c.head, c.row, c.left)
		}
	}
}

// Min lines up tables written one after another.
func TestMinWidth(t *testing.T) {
	tb := Table{Columns: []Column{{Head: "A", Min: 5}, {Head: "B"}}}
	tb.Add("x", "y")
	var b strings.Builder
	tb.WriteText(&b)
	if b.String() != "A      B\nx      y\n" {
		t.Errorf("got %q", b.String())
	}
}

// A table whose kept columns still do not fit narrows the columns that
// may be cut, the widest first, down to their heads.
func TestFitNarrowsWhatMayBeCut(t *testing.T) {
	tb := Table{Columns: []Column{{Head: "GPU"}, {Head: "MIG", Max: 20}, {Head: "FINDINGS", Max: 40}}}
	tb.Add("2", "1g.10gb×7", "row remapping pending; uncorrectable ECC")
	head, rows, left := tb.Fit(30)
	if head != "GPU MIG       FINDINGS" || rows[0] != "2   1g.10gb×7 row remapping p…" || left != nil {
		t.Errorf("Fit(30) = %q, %q, %q", head, rows[0], left)
	}
	if _, rows, _ := tb.Fit(10); rows[0] != "2   1g.… row rem…" {
		t.Errorf("Fit(10) = %q: each column down to its head, no further", rows[0])
	}
}
