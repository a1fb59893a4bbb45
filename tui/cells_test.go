package tui

import (
	"fmt"
	"strings"
	"testing"
	"unicode"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/labs"
	"github.com/gpulab/gpulab/landscape"
)

// What uniform makes of text a terminal would count otherwise, and of
// text it draws as measured (kept as it is). The widths in the comments
// are tmux 3.3a's, measured.
func TestUniform(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"ok 👍🏽 done", "ok 👍 done"},          // 2 measured, 4 drawn: the skin tone goes
		{"👨\u200d👩\u200d👧", "👨"},             // one cluster of 2, or three emoji of 2: the first stays, as wide as measured
		{"❤\ufe0f ☀\ufe0f ©\ufe0f", "❤ ☀ ©"}, // 2 measured, 1 drawn: the emoji selector goes
		{"☺\ufe0e", "☺"},
		{"1\ufe0f\u20e3 #\u20e3", "1 #"}, // keycaps
		{"🏳\ufe0f\u200d🌈", "🏳"},
		{"a\u00adb", "ab"}, // the soft hyphen: 0 measured, 1 drawn
		{"x\ty", "x       y"},
		{"漢\tz", "漢      z"},                  // the stop is counted in columns, not characters
		{"क्षि", "क्\u200bष\u200bि"},          // 1 measured, 3 drawn: the spacing vowel alone
		{"ก่ำ", "ก่\u200bำ"},                  // 1 measured, 2 drawn
		{"🇩", "D "},                           // a lone regional indicator: 2 measured, 1 drawn: its letter, as wide
		{"\u0600a", `\u0600` + "\u200ba"},     // an Arabic number sign: 0 measured, 1 drawn
		{"a\rb\x07", `a\rb\a`},                // controls that move the cursor, shown
		{"gpu\u202e01", `gpu\u202e01`},        // a bidi override, shown
		{"🇩🇪 漢字 שלום مرحبا é 가 a\u200bb", ""}, // flags, CJK, RTL, accents, Hangul: kept
		{"▶ gpu001 ── … ↑ ⚑ ✓ ✗ ·", ""},       // the workbench's own
		{"\x1b[1mbold\x1b[0m 👍🏽\x1b[7m\tx\x1b[0m", "\x1b[1mbold\x1b[0m 👍\x1b[7m x\x1b[0m"}, // styles kept, no width
	} {
		want := c.want
		if want == "" {
			want = c.in
		}
		got := uniform(c.in)
		if got != want {
			t.Errorf("uniform(%q) = %q, want %q", c.in, got, want)
		}
		if w, cells := ansi.StringWidth(got), termCells(got); w != cells {
			t.Errorf("uniform(%q) = %q is %d columns measured, %d drawn", c.in, got, w, cells)
		}
		if ansi.StringWidth(got) > ansi.StringWidth(c.in) && !strings.ContainsAny(c.in, "\t\r\a\u0600\u202e") && !strings.Contains(c.in, "क") && !strings.Contains(c.in, "ก") {
			t.Errorf("uniform(%q) = %q is wider than what was measured: a line laid out for it loses its end", c.in, got)
		}
		if again := uniform(got); again != got {
			t.Errorf("uniform is not idempotent on %q: %q", got, again)
		}
	}
}

// Every character that uniform leaves alone on its fast path (not
// unsure) is a cluster of its own next to a letter and as wide as a
// terminal draws it: no cluster of them can be measured otherwise.
func TestUniformFastPathIsSafe(t *testing.T) {
	t.Parallel()
	var bad []string
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		if unsure(r) || !unicode.IsPrint(r) && !unicode.Is(unicode.Co, r) {
			continue
		}
		s := string(r)
		if c, _ := ansi.FirstGraphemeCluster("a"+s+"a", ansi.GraphemeWidth); c != "a" {
			bad = append(bad, fmt.Sprintf("U+%04X joins the character before it", r))
		} else if c, _ := ansi.FirstGraphemeCluster(s+"a", ansi.GraphemeWidth); c != s {
			bad = append(bad, fmt.Sprintf("U+%04X joins the character after it", r))
		} else if ansi.StringWidth(s) != runeCells(r) {
			bad = append(bad, fmt.Sprintf("U+%04X is %d columns measured, %d drawn", r, ansi.StringWidth(s), runeCells(r)))
		}
	}
	if len(bad) > 0 {
		t.Errorf("%d characters skip uniform but are not safe: %v", len(bad), bad)
	}
}

// drawnRight reports how a frame misses the terminal's size as the
// terminal draws it ("" when it fits): every line as wide measured as
// drawn, and no control character but the styles' escapes.
func drawnRight(frame string, w, h int) string {
	if miss := fits(frame, w, h); miss != "" {
		return miss
	}
	for i, l := range strings.Split(frame, "\n") {
		if cells := termCells(l); cells != w {
			return fmt.Sprintf("line %d is drawn %d wide, measured %d: %q", i+1, cells, lipgloss.Width(l), l)
		}
		if j := strings.IndexFunc(l, func(r rune) bool { return r < 0x20 && r != 0x1b || r == 0x7f }); j >= 0 {
			return fmt.Sprintf("line %d holds a control character at byte %d: %q", i+1, j, l)
		}
	}
	return ""
}

// Host output with emoji a terminal counts otherwise (a skin tone, a ZWJ
// family, keycaps), tabs, CJK, RTL and flags: every frame of the Fleet is
// exactly the terminal's size as the terminal draws it, and the text
// that is the same either way is shown as it came.
func TestFleetFramesWithEmojiFit(t *testing.T) {
	out := "ok 👍🏽 done\n👨\u200d👩\u200d👧 family\t1\ufe0f\u20e3 ❤\ufe0f\n漢字\tשלום 🇩🇪 क्षि\n"
	for _, sz := range []struct{ w, h int }{{80, 24}, {120, 32}} {
		m := newFleetModel(t, fakeFleet{n: 4, odd: -1, out: out}, sz.w, sz.h)
		m, cmd := press(t, m, "3", ":", "echo 'ok 👍🏽 done'", "enter")
		m = drain(t, m, cmd)
		for _, keys := range [][]string{nil, {"o"}, {"o"}, {">"}} { // folded, log, host, sideways
			m, _ = press(t, m, keys...)
			v := m.View()
			if miss := drawnRight(v, sz.w, sz.h); miss != "" {
				t.Errorf("%dx%d after %v: %s\n%s", sz.w, sz.h, keys, miss, v)
			}
			if keys == nil && !strings.Contains(v, "  漢字    שלום 🇩🇪") {
				t.Errorf("%dx%d: CJK, RTL or a flag is not shown as it came:\n%s", sz.w, sz.h, v)
			}
		}
	}
}

// A lab whose name holds a tab (a user's lab file) does not move the
// Labs tab's frame: fit expands it.
func TestLabsFrameWithTabFits(t *testing.T) {
	c, _ := landscape.Builtin()
	ls, err := labs.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	l := *ls[0]
	l.ID, l.Name, l.Goal = "tab\tlab", "a\tname 👍🏽", "the\tgoal"
	ls = append([]*labs.Lab{&l}, ls[1:]...)
	m := New(Options{Catalog: c, Inventory: inventory.Empty(), LabRunner: scriptedLabs{n: 3}, Labs: ls, Styles: DefaultStyles()})
	next, _ := m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	m, _ = press(t, next.(Model), "5")
	if v := m.View(); drawnRight(v, 80, 24) != "" || !strings.Contains(v, "tab    lab") {
		t.Errorf("the Labs tab with a tab in a lab's name: %s\n%s", drawnRight(v, 80, 24), v)
	}
}

// A host's output line is made uniform before the Fleet lays it out: its
// tabs stop at columns of the text as shown (漢字 is 4 columns, ❤ one once
// its emoji selector is gone), so that what is measured is what is drawn.
func TestTermLineIsUniform(t *testing.T) {
	for in, want := range map[string]string{
		"漢字\tx":        "漢字    x",
		"❤\ufe0f\tx":   "❤       x",
		"ok 👍🏽 done\r": "ok 👍 done",
		"a\x1b[2J\tb":  `a\x1b[2J        b`, // the escape as shown is 8 columns
	} {
		if got := termLine(in); got != want {
			t.Errorf("termLine(%q) = %q, want %q", in, got, want)
		}
	}
}

// A frame whose every row holds an emoji that uniform takes apart: its
// slow path, against BenchmarkFleetView1000Hosts's fast one.
func BenchmarkFleetViewEmoji1000Hosts(b *testing.B) {
	m := newFleetModel(b, fakeFleet{n: 1000, odd: 500, out: "ok 👍🏽 done\t👨\u200d👩\u200d👧 क्षि\n"}, 160, 48)
	m, cmd := press(b, m, "3", ":", "x", "enter")
	m = drain(b, m, cmd)
	m, _ = press(b, m, "o", "o") // per-host pane
	b.ResetTimer()
	for b.Loop() {
		_ = m.View()
	}
}

// TestWrappedEmojiLoseNoText: a heading with a ZWJ family, a flag and a
// lone regional indicator, wrapped at 80 columns and then fitted to the
// screen, keeps every word: the normaliser made such lines wider than
// they were wrapped for, and their ends were cut ("…pa…", then "the
// screen edge").
func TestWrappedEmojiLoseNoText(t *testing.T) {
	md := "# Emoji 👨\u200d👩\u200d👧 lab 🇯🇵 and 🇩 👍🏽 with a very long name that goes on and on past the screen edge and further still\n"
	var words []string
	for _, l := range renderMarkdown(md, 80) {
		words = append(words, strings.Fields(ansi.Strip(fit(l, 80, 1)))...)
	}
	got := strings.Join(words, " ")
	for _, want := range []string{"with a very long name that goes on and on past the screen edge and further still", "lab 🇯🇵 and D"} {
		if !strings.Contains(got, want) {
			t.Errorf("the wrapped heading lost text: want %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "…") {
		t.Errorf("a line was cut:\n%s", got)
	}
}
