package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
)

// TestCutSideways: a line is cut to the pane from its column, with a "…"
// at each edge where something is hidden, styles kept, and a wide
// character cut in half shown as a space.
func TestCutSideways(t *testing.T) {
	const abc = "0123456789abcdef" // 16 cells
	const cjk = "漢字テキスト表示"         // 8 wide characters, 16 cells
	for _, tc := range []struct {
		line       string
		col, width int
		want       string
	}{
		{abc, 0, 10, "012345678…"},
		{abc, 0, 16, abc},
		{abc, 4, 10, "…56789abc…"}, // the … stands on column 4
		{abc, 6, 10, "…789abcdef"}, // the end: nothing past the right edge
		{"abc", 6, 10, "…"},        // all of it left of the view
		{"", 6, 10, ""},
		{cjk, 0, 8, "漢字テ…"},
		{cjk, 3, 8, "…テキス…"},
		{cjk, 2, 8, "… テキ…"}, // 字 is cut in half: its right half is a space
	} {
		got := cutSideways(tc.line, tc.col, tc.width)
		if got != tc.want {
			t.Errorf("cutSideways(%q, %d, %d) = %q, want %q", tc.line, tc.col, tc.width, got, tc.want)
		}
		if w := ansi.StringWidth(got); w > tc.width {
			t.Errorf("cutSideways(%q, %d, %d) is %d wide", tc.line, tc.col, tc.width, w)
		}
	}
	styled := "\x1b[31m" + abc + "\x1b[0m"
	got := cutSideways(styled, 4, 10)
	if ansi.Strip(got) != "…56789abc…" {
		t.Errorf("styled line shows %q, want …56789abc…", ansi.Strip(got))
	}
	if i, j := strings.Index(got, "\x1b[31m"), strings.Index(got, "5"); i < 0 || i > j || !strings.HasSuffix(got, "\x1b[0m") {
		t.Errorf("styled line lost its style: %q", got)
	}
}

func runeKey(s string) tea.KeyMsg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)} }

// TestScrollerSideways: > and < move the pane half its width, shift and
// an arrow too; it stops where the widest line's end is in view, and the
// top and end keys leave the column where it is.
func TestScrollerSideways(t *testing.T) {
	k := DefaultScrollKeys()
	lines := []string{"short", strings.Repeat("x", 100) + "END"} // 103 cells
	var s scroller
	for i, want := range []int{20, 40, 60, 63, 63} {
		if !s.handle(runeKey(">"), k, lines, 40, 10) {
			t.Fatalf("> was not handled")
		}
		if s.col != want {
			t.Errorf("after %d×>: column %d, want %d", i+1, s.col, want)
		}
	}
	out := s.render(lines, 40, 10, DefaultStyles())
	if out[1] != "…"+strings.Repeat("x", 36)+"END" || out[0] != "…" {
		t.Errorf("at the end the pane shows %q", out)
	}
	s.handle(tea.KeyMsg{Type: tea.KeyHome}, k, lines, 40, 10)
	s.handle(tea.KeyMsg{Type: tea.KeyEnd}, k, lines, 40, 10)
	if s.col != 63 {
		t.Errorf("home and end moved the column to %d", s.col)
	}
	s.handle(tea.KeyMsg{Type: tea.KeyShiftLeft}, k, lines, 40, 10)
	if s.col != 43 {
		t.Errorf("shift+left: column %d, want 43", s.col)
	}
	for range 3 {
		s.handle(runeKey("<"), k, lines, 40, 10)
	}
	if s.col != 0 {
		t.Errorf("3×< from 43: column %d, want 0", s.col)
	}
	s.handle(tea.KeyMsg{Type: tea.KeyShiftRight}, k, lines, 12, 10)
	if s.col != 8 {
		t.Errorf("shift+right in a pane 12 wide: column %d, want 8 (the least step)", s.col)
	}
	// Text that fits does not move; another text narrower than the
	// column is shown from the column its widest line needs.
	var n scroller
	n.handle(runeKey(">"), k, []string{"short"}, 40, 10)
	if n.col != 0 {
		t.Errorf("> moved a pane whose lines fit to column %d", n.col)
	}
	s.col = 63
	if got := s.render([]string{strings.Repeat("y", 45) + "Z"}, 40, 10, DefaultStyles()); got[0] != "…"+strings.Repeat("y", 38)+"Z" {
		t.Errorf("a narrower text at column 63 shows %q", got[0])
	}
}

// TestScrollerSideKeys: only the sideways keys that move the pane are
// offered; none where every line fits or the pane has no such keys.
func TestScrollerSideKeys(t *testing.T) {
	k := DefaultScrollKeys()
	lines := []string{strings.Repeat("x", 100)}
	help := func(s scroller, k ScrollKeys, lines []string) string {
		var out []string
		for _, b := range s.sideKeys(k, lines, 40) {
			out = append(out, b.Help().Key+" "+b.Help().Desc)
		}
		return strings.Join(out, ", ")
	}
	for _, tc := range []struct {
		col  int
		want string
	}{{0, "> sideways"}, {30, "</> sideways"}, {60, "< sideways"}, {90, "< sideways"}} {
		if got := help(scroller{col: tc.col}, k, lines); got != tc.want {
			t.Errorf("at column %d: %q, want %q", tc.col, got, tc.want)
		}
	}
	if got := help(scroller{col: 30}, k, []string{"fits"}); got != "" {
		t.Errorf("lines that fit offer %q", got)
	}
	if got := help(scroller{}, ScrollKeys{PageUp: k.PageUp, PageDown: k.PageDown}, lines); got != "" {
		t.Errorf("a pane without sideways keys offers %q", got)
	}
	b := scroller{col: 30}.sideKeys(k, lines, 40)[0]
	for _, msg := range []tea.KeyMsg{runeKey("<"), runeKey(">"), {Type: tea.KeyShiftLeft}, {Type: tea.KeyShiftRight}} {
		if !key.Matches(msg, b) {
			t.Errorf("the offered binding does not hear %s", msg)
		}
	}
}

// TestScrollerMarkerSideways: the marker of what is above and below also
// says which sideways keys move the pane, when it has room for it.
func TestScrollerMarkerSideways(t *testing.T) {
	lines := []string{strings.Repeat("x", 100)}
	for i := range 30 {
		lines = append(lines, strings.Repeat("y", i))
	}
	st := DefaultStyles()
	var s scroller
	for _, tc := range []struct {
		col, width int
		want       string
	}{
		{0, 60, "↓ 27 more lines below · pgdn · > sideways"},
		{20, 60, "↓ 27 more lines below · pgdn · </> sideways"},
		{40, 60, "↓ 27 more lines below · pgdn · < sideways"},
		{0, 30, "↓ 27 more lines below · pgdn"}, // no room for the rest
	} {
		s.col = tc.col
		out := s.render(lines, tc.width, 5, st)
		if got := out[len(out)-1]; got != tc.want {
			t.Errorf("column %d of a pane %d wide: marker %q, want %q", tc.col, tc.width, got, tc.want)
		}
		for _, l := range out {
			if w := ansi.StringWidth(l); w > tc.width {
				t.Errorf("column %d: line %q is %d wide, more than %d", tc.col, l, w, tc.width)
			}
		}
	}
	if out := (scroller{}).render(lines[1:], 60, 5, st); strings.Contains(out[len(out)-1], "sideways") {
		t.Errorf("lines that fit: the marker says %q", out[len(out)-1])
	}
}

// TestTextPageKeysNow: a page's status bar offers up only with something
// above, down and page down only with something below, and neither on a
// page that fits (the comparison offered ↑/↓ that did nothing, a record
// at its end pgdn).
func TestTextPageKeysNow(t *testing.T) {
	up := key.NewBinding(key.WithKeys("up"), key.WithHelp("↑", "up"))
	down := key.NewBinding(key.WithKeys("down"), key.WithHelp("↓", "down"))
	names := func(p *textPage) string {
		var out []string
		for _, k := range p.keysNow(up, down, pageKeys()) {
			out = append(out, k.Help().Key)
		}
		return strings.Join(out, " ")
	}
	lines := make([]string, 20)
	p := newTextPage(lines, 80, 5)
	if got := names(p); got != "↓ pgdn" {
		t.Errorf("at the top: %q", got)
	}
	p.s.end(len(lines), 5)
	if got := names(p); got != "↑" {
		t.Errorf("at the end: %q", got)
	}
	if got := names(newTextPage(lines[:3], 80, 5)); got != "" {
		t.Errorf("a page that fits: %q", got)
	}
}

// TestCardKeepsItsPlaceOnResize: a Map card scrolled to its end stays at
// its end when the terminal is resized, and one scrolled partway stays
// partway (both jumped back to the top).
func TestCardKeepsItsPlaceOnResize(t *testing.T) {
	m := newTestModel(t, 100, 20)
	m, _ = press(t, m, "enter", "G")
	if v := m.View(); !strings.Contains(v, "end of output") {
		t.Fatalf("G did not reach the card's end:\n%s", v)
	}
	next, _ := m.Update(tea.WindowSizeMsg{Width: 80, Height: 18})
	m = next.(Model)
	if v := m.View(); !strings.Contains(v, "end of output") {
		t.Errorf("after a resize the card left its end:\n%s", v)
	}
	m, _ = press(t, m, "g", "pgdown")
	next, _ = m.Update(tea.WindowSizeMsg{Width: 120, Height: 20})
	m = next.(Model)
	if v := m.View(); !strings.Contains(v, " above") {
		t.Errorf("after a resize the card went back to its top:\n%s", v)
	}
}

// TestMapFollowsTheSelectionWhenShort: on a terminal too short for the
// three bands, the Map shows the bands around the selected project and
// says what is above and below (at 60x16 the cursor went on into the
// workload band, out of sight, with nothing said).
func TestMapFollowsTheSelectionWhenShort(t *testing.T) {
	for _, sz := range []struct{ w, h int }{{60, 16}, {160, 12}} {
		m := newTestModel(t, sz.w, sz.h)
		if v := m.View(); !strings.Contains(v, "more below") {
			t.Errorf("%dx%d: the bands do not say what is below:\n%s", sz.w, sz.h, v)
		}
		for range 12 {
			m, _ = press(t, m, "down")
		}
		sel := m.views[0].(*mapView).order[m.views[0].(*mapView).sel].Name
		if v := m.View(); !strings.Contains(v, "["+sel) || !strings.Contains(v, "above") {
			t.Errorf("%dx%d: the selected %q is not in view, or what is above is not said:\n%s", sz.w, sz.h, sel, v)
		}
		if got := strings.Count(m.View(), "\n") + 1; got != sz.h {
			t.Errorf("%dx%d: %d lines", sz.w, sz.h, got)
		}
	}
}

// TestListsOfferOnlyMovesThatMove: a list's status bar offers ↑ only
// below its first row and ↓ only above its last (Runbooks, Labs and
// Results offered both on the first and the last rows).
func TestListsOfferOnlyMovesThatMove(t *testing.T) {
	m := newRunbooksModel(t, fakeRunbooks{n: 2, unreachable: -1}, 160, 48)
	m, _ = press(t, m, "4", "home")
	bar := func(m Model) string { l := strings.Split(m.View(), "\n"); return l[len(l)-1] }
	if b := bar(m); strings.Contains(b, "↑/k up") || !strings.Contains(b, "↓/j down") {
		t.Errorf("first runbook: %q", b)
	}
	m, _ = press(t, m, "end")
	if b := bar(m); !strings.Contains(b, "↑/k up") || strings.Contains(b, "↓/j down") {
		t.Errorf("last runbook: %q", b)
	}
	m, _ = press(t, m, "up")
	if b := bar(m); !strings.Contains(b, "↑/k up") || !strings.Contains(b, "↓/j down") {
		t.Errorf("a runbook in between: %q", b)
	}
}
