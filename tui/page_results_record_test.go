package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// renderPlain renders md at width and returns its lines without styles.
func renderPlain(t *testing.T, md string, width int) []string {
	t.Helper()
	lines := renderMarkdown(md, width)
	for i, l := range lines {
		lines[i] = ansi.Strip(l)
		if w := ansi.StringWidth(lines[i]); w > width {
			t.Errorf("line %d is %d columns at width %d: %q", i, w, width, lines[i])
		}
		if strings.Contains(lines[i], "…") {
			t.Errorf("line %d is cut: %q", i, lines[i])
		}
	}
	return lines
}

// TestRecordTableFits: a table narrower than the room is drawn as it is,
// columns as wide as their content.
func TestRecordTableFits(t *testing.T) {
	md := "| Host | Kernel |\n|---|---|\n| gpu001 | 6.8.0-45-generic |\n"
	got := strings.Join(renderPlain(t, md, 80), "\n")
	want := "Host    Kernel\n────────────────────────\ngpu001  6.8.0-45-generic"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestRecordTableWrapsCells: a long cell wraps within its column, down to
// its header's width; no word is cut and every one is kept.
func TestRecordTableWrapsCells(t *testing.T) {
	notes := "NVLink GPU0 to GPU4 reads SYS in nvidia-smi topo -m; the pair is down on both ends and Xid 79 names the bus"
	md := "| Host | Verdict | Notes |\n|---|---|---|\n| gpu001 | FAIL | " + notes + " |\n| gpu002 | PASS | ok |\n"
	lines := renderPlain(t, md, 60)
	if len(lines) < 5 {
		t.Fatalf("the long cell did not wrap:\n%s", strings.Join(lines, "\n"))
	}
	if !strings.HasPrefix(lines[0], "Host    Verdict  Notes") {
		t.Errorf("header: %q", lines[0])
	}
	var text []string
	for _, l := range lines[2:] {
		if strings.HasPrefix(l, "gpu002") {
			break
		}
		text = append(text, strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(l, "gpu001"), "  ")))
	}
	// Wrapping may break after a hyphen: compare the words' letters.
	squeeze := func(s string) string { return strings.Join(strings.Fields(s), "") }
	if got := squeeze(strings.ReplaceAll(strings.Join(text, " "), "FAIL", "")); got != squeeze(notes) {
		t.Errorf("the wrapped cell reads\n%q\nwant\n%q", got, notes)
	}
	if !strings.HasPrefix(lines[len(lines)-1], "gpu002  PASS") {
		t.Errorf("the next row does not follow the wrapped one: %q", lines[len(lines)-1])
	}
}

// TestRecordTableExpanded: a table whose headers cannot stand side by side
// (the result table's twelve columns at 80) is drawn a block per row,
// every header and every value whole.
func TestRecordTableExpanded(t *testing.T) {
	headers := []string{"Host", "Workload", "Mode", "Request", "Throughput", "P50", "P95", "P99", "Interference coefficient", "Fragmentation", "Stability", "Notes"}
	row1 := []string{"gpu001", "vllm-serve", "mig-3g.20gb", "1", "812.4 tok/s", "41 ms", "88 ms", "120 ms", "1.00", "0.00", "stable", "baseline"}
	row2 := []string{"gpu002", "vllm-serve", "time-slicing", "1", "402.0 tok/s", "77 ms", "190 ms", "260 ms", "2.17", "0.25", "jitter", "two tenants share the card; the P99 doubles under the noisy neighbour"}
	md := "| " + strings.Join(headers, " | ") + " |\n|" + strings.Repeat("---|", len(headers)) + "\n| " +
		strings.Join(row1, " | ") + " |\n| " + strings.Join(row2, " | ") + " |\n"
	lines := renderPlain(t, md, 80)
	got := strings.Join(lines, "\n")
	if !strings.HasPrefix(lines[0], "── Host gpu001") {
		t.Errorf("the first block's title: %q", lines[0])
	}
	for _, h := range headers[1:] {
		n := 0
		for _, l := range lines {
			if strings.HasPrefix(l, h+"  ") {
				n++
			}
		}
		if n != 2 {
			t.Errorf("header %q starts %d lines, want one per row:\n%s", h, n, got)
		}
	}
	for _, v := range append(row1, row2[:len(row2)-1]...) {
		if !strings.Contains(got, v) {
			t.Errorf("value %q is missing:\n%s", v, got)
		}
	}
	flat := strings.Join(strings.Fields(got), " ")
	if !strings.Contains(flat, row2[len(row2)-1]) {
		t.Errorf("the long note is not whole:\n%s", got)
	}
	if strings.Contains(got, "|") {
		t.Errorf("a Markdown pipe is left:\n%s", got)
	}
}

// TestRecordTableWideCharacters: columns are measured in cells, so a name
// in CJK keeps the next column in line.
func TestRecordTableWideCharacters(t *testing.T) {
	md := "| Host | GPUs |\n|---|---|\n| 节点一 | 8 |\n| gpu001 | 8 |\n"
	lines := renderPlain(t, md, 80)
	col := func(l string) int { return ansi.StringWidth(l[:strings.LastIndex(l, "8")]) }
	if len(lines) != 4 || col(lines[2]) != col(lines[3]) {
		t.Errorf("the GPUs column is out of line:\n%s", strings.Join(lines, "\n"))
	}
}

// A tab in a record reaches the screen as spaces to the next stop, in a
// paragraph, a list, a table and a code block: a raw tab made the
// terminal move its cursor and broke the frame.
func TestRecordExpandsTabs(t *testing.T) {
	md := "Tabs:\tcol1\tcol2\n\n- item\twith tab\n\n| a\tb | c |\n|---|---|\n| 1\t2 | 3 |\n\n```\nx\ty\n```\n"
	for _, l := range renderMarkdown(md, 80) {
		if strings.Contains(l, "\t") {
			t.Errorf("a tab is left: %q", l)
		}
	}
	if got := ansi.Strip(renderMarkdown("Tabs:\tcol1\tcol2", 80)[0]); got != "Tabs:   col1    col2" {
		t.Errorf("paragraph: %q", got)
	}
	if got := plainLines("a\tb", 80)[0]; got != "a       b" {
		t.Errorf("plain text: %q", got)
	}
	if got := expandTabs("日本\tx\n\ty", 4); got != "日本    x\n    y" {
		t.Errorf("expandTabs counts columns, not runes: %q", got)
	}
}

// A table whose cells would wrap to a word a line (the environment table
// of four DGX hosts at 80 columns, each with eight GPUs named) is drawn a
// block per row when that takes fewer lines: it took some 120 lines.
func TestRecordTablePicksTheShorterForm(t *testing.T) {
	gpus := strings.TrimSuffix(strings.Repeat("NVIDIA A100-SXM4-40GB; ", 8), "; ")
	md := "| Host | Kernel | Driver | CUDA | GPUs | Source |\n|---|---|---|---|---|---|\n"
	for _, h := range []string{"dgx01", "dgx02", "dgx03", "dgx04"} {
		md += "| " + h + " | 5.15.0-91-generic | 535.129.03 | 12.2 | " + gpus + " | probe 2ee5810 (nvml), SIMULATED |\n"
	}
	lines := renderPlain(t, md, 80)
	if !strings.HasPrefix(lines[0], "── Host dgx01") || len(lines) > 4*12 {
		t.Errorf("%d lines, want a block per host:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	wide := renderPlain(t, md, 300)
	if len(wide) != 6 || !strings.HasPrefix(wide[0], "Host ") {
		t.Errorf("at 300 columns the table is not drawn whole:\n%s", strings.Join(wide, "\n"))
	}
}

// TestRecordCodeInQuotesFits: a code block inside quotes is cut to the
// room its prefix leaves, counted in cells: it fills the pane to its
// margin (renderMarkdown keeps two columns) and no further (a "│ " is two bytes wider than its cells: counted as
// bytes, each quote level took two more columns off the code).
func TestRecordCodeInQuotesFits(t *testing.T) {
	const width = 40
	md := "> > > ```\n> > > " + strings.Repeat("nvidia-smi topo -m ", 8) + "\n> > > ```\n"
	lines := renderMarkdown(md, width)
	cut := false
	for i, l := range lines {
		l = ansi.Strip(l)
		if w := ansi.StringWidth(l); w > width {
			t.Errorf("line %d is %d columns at width %d: %q", i, w, width, l)
		}
		if strings.HasSuffix(l, "…") {
			cut = true
			if w := ansi.StringWidth(l); w != width-2 {
				t.Errorf("the cut code line is %d columns, want the pane's %d less its margin of 2: %q", w, width, l)
			}
		}
	}
	if !cut {
		t.Errorf("the long code line is not cut with …:\n%s", strings.Join(lines, "\n"))
	}
}
