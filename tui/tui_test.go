package tui

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/landscape"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestMain(m *testing.M) {
	lipgloss.SetColorProfile(termenv.Ascii) // goldens hold plain text
	os.Exit(m.Run())
}

func newTestModel(t testing.TB, w, h int) Model {
	t.Helper()
	c, err := landscape.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	m := New(Options{Catalog: c, Inventory: inventory.Empty(), Version: "test", Styles: DefaultStyles()})
	next, _ := m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return next.(Model)
}

// press sends keys: names such as "tab", "down", "enter", "esc", or any
// other string as typed runes.
func press(t testing.TB, m Model, keys ...string) (Model, tea.Cmd) {
	t.Helper()
	var cmd tea.Cmd
	for _, k := range keys {
		var msg tea.KeyMsg
		switch k {
		case "tab":
			msg = tea.KeyMsg{Type: tea.KeyTab}
		case "shift+tab":
			msg = tea.KeyMsg{Type: tea.KeyShiftTab}
		case "up":
			msg = tea.KeyMsg{Type: tea.KeyUp}
		case "down":
			msg = tea.KeyMsg{Type: tea.KeyDown}
		case "left":
			msg = tea.KeyMsg{Type: tea.KeyLeft}
		case "right":
			msg = tea.KeyMsg{Type: tea.KeyRight}
		case "enter":
			msg = tea.KeyMsg{Type: tea.KeyEnter}
		case "esc":
			msg = tea.KeyMsg{Type: tea.KeyEsc}
		case "end":
			msg = tea.KeyMsg{Type: tea.KeyEnd}
		case "home":
			msg = tea.KeyMsg{Type: tea.KeyHome}
		case "pgdown":
			msg = tea.KeyMsg{Type: tea.KeyPgDown}
		case "pgup":
			msg = tea.KeyMsg{Type: tea.KeyPgUp}
		case "ctrl+c":
			msg = tea.KeyMsg{Type: tea.KeyCtrlC}
		default:
			msg = tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
		}
		next, c := m.Update(msg)
		m, cmd = next.(Model), c
	}
	return m, cmd
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./tui -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s (go test ./tui -update rewrites it)\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}

func TestGoldenViews(t *testing.T) {
	sizes := []struct{ w, h int }{{80, 24}, {160, 48}}
	for _, sz := range sizes {
		suffix := "_" + itoa(sz.w) + "x" + itoa(sz.h)
		m := newTestModel(t, sz.w, sz.h)
		golden(t, "map"+suffix, m.View())
		m, _ = press(t, m, "right", "right", "down")
		golden(t, "map_selected"+suffix, m.View())
		mx, _ := press(t, newTestModel(t, sz.w, sz.h), "tab", "right", "right", "right")
		golden(t, "matrix"+suffix, mx.View())
		mx, _ = press(t, mx, "f", "f", "f")
		golden(t, "matrix_strong"+suffix, mx.View())
	}
	h, _ := press(t, newTestModel(t, 80, 24), "tab", "?")
	golden(t, "matrix_help_80x24", h.View())
}

func itoa(i int) string { return fmtInt(i) }

func fmtInt(i int) string {
	if i == 0 {
		return "0"
	}
	s := ""
	for ; i > 0; i /= 10 {
		s = string(rune('0'+i%10)) + s
	}
	return s
}

// Every frame is exactly the terminal's size, at any size, on every view:
// nothing wraps, nothing pushes the status bar away.
func TestViewsFitTheTerminal(t *testing.T) {
	for _, sz := range []struct{ w, h int }{{80, 24}, {160, 48}, {100, 30}, {60, 16}, {250, 70}} {
		m := newTestModel(t, sz.w, sz.h)
		for tab := 0; tab < 7; tab++ {
			for _, extra := range [][]string{nil, {"enter"}, {"?"}} {
				mm, _ := press(t, m, extra...)
				lines := strings.Split(mm.View(), "\n")
				if len(lines) != sz.h {
					t.Errorf("%dx%d %s %v: %d lines, want %d", sz.w, sz.h, mm.Active(), extra, len(lines), sz.h)
				}
				for i, l := range lines {
					if w := lipgloss.Width(l); w != sz.w {
						t.Errorf("%dx%d %s %v line %d is %d wide, want %d: %q", sz.w, sz.h, mm.Active(), extra, i+1, w, sz.w, l)
						break
					}
				}
			}
			m, _ = press(t, m, "tab")
		}
	}
}

func TestTabs(t *testing.T) {
	m := newTestModel(t, 80, 24)
	if m.Active() != "Map" {
		t.Fatalf("opens on %q, want Map", m.Active())
	}
	steps := []struct {
		keys []string
		want string
	}{
		{[]string{"tab"}, "Matrix"},
		{[]string{"tab"}, "Fleet"},
		{[]string{"shift+tab", "shift+tab"}, "Map"},
		{[]string{"shift+tab"}, "Cluster"},
		{[]string{"5"}, "Labs"},
		{[]string{"1"}, "Map"},
	}
	for _, s := range steps {
		m, _ = press(t, m, s.keys...)
		if m.Active() != s.want {
			t.Errorf("after %v: active %q, want %q", s.keys, m.Active(), s.want)
		}
	}
	if !strings.Contains(m.View(), "[Map]") {
		t.Errorf("header does not mark the active tab")
	}
}

func TestQuit(t *testing.T) {
	for _, k := range []string{"q", "ctrl+c"} {
		_, cmd := press(t, newTestModel(t, 80, 24), k)
		if cmd == nil {
			t.Fatalf("%s returned no command", k)
		}
		if _, ok := cmd().(tea.QuitMsg); !ok {
			t.Errorf("%s did not quit", k)
		}
	}
}

// While a run goes (a Fleet command, the probe, a runbook, a lab), q and
// ctrl+c ask before quitting: the same key again quits (the runs stop and
// their cleanup runs), any other key stays and does nothing else. A user
// mashing ctrl+c still gets out: the fourth quits at once.
func TestQuitAsksWhileARunGoes(t *testing.T) {
	for _, c := range []struct {
		name string
		keys []string
	}{
		{"fleet command", []string{"3", ":", "x", "enter"}},
		{"probe", []string{"3", "p"}},
		{"runbook", []string{"4", "enter"}},
		{"lab", []string{"5", "end", "enter"}},
	} {
		for _, k := range []string{"q", "ctrl+c"} {
			m, _ := press(t, newDemoModel(t, Options{}, 120, 32), c.keys...)
			if m.running() == 0 {
				t.Fatalf("%s: %v started no run", c.name, c.keys)
			}
			tab := m.Active()
			m, cmd := press(t, m, k)
			ask := "a run is going: q or ctrl+c again quits (cleanup runs), any other key stays"
			if msgOf(cmd) != nil || m.quitting != 0 || !strings.Contains(m.View(), ask) {
				t.Fatalf("%s, %s: quit without asking, or the status bar does not ask:\n%s", c.name, k, m.View())
			}
			m, cmd = press(t, m, "x") // in the Fleet, x opens the command field
			if msgOf(cmd) != nil || m.quitting != 0 || strings.Contains(m.View(), ask) || m.Active() != tab || m.views[m.active].Capturing() {
				t.Fatalf("%s, %s: another key did not just stay:\n%s", c.name, k, m.View())
			}
			m, _ = press(t, m, k, k)
			if m.quitting != 1 || !strings.Contains(m.View(), "Cleaning up on") {
				t.Fatalf("%s, %s: the key asked again does not stop the runs for cleanup:\n%s", c.name, k, m.View())
			}
			if k == "ctrl+c" {
				m, _ = press(t, m, k)
				if _, quit := msgOf(func() tea.Cmd { _, c := press(t, m, k); return c }()).(tea.QuitMsg); !quit {
					t.Errorf("%s: the fourth ctrl+c does not quit", c.name)
				}
			}
		}
	}
}

func TestMapNavigation(t *testing.T) {
	m := newTestModel(t, 80, 24)
	mv := m.views[0].(*mapView)
	steps := []struct {
		key, want string
	}{
		{"right", "kueue"},
		{"left", "kube-scheduler"},
		{"left", "kube-scheduler"}, // stays at the first
		{"down", "quota-priority"}, // second row of the control band
		{"down", "nvidia-device-plugin"},
		{"down", "container-toolkit"}, // the data band's second row (GPU Operator +ctrl fills the first)
		{"up", "nvidia-device-plugin"},
		{"end", "leaderworkerset"},
		{"down", "leaderworkerset"}, // no row below
		{"g", "kube-scheduler"},
	}
	for _, s := range steps {
		m, _ = press(t, m, s.key)
		if got := mv.Selected(); got != s.want {
			t.Errorf("after %s: selected %q, want %q", s.key, got, s.want)
		}
	}
	m, _ = press(t, m, "right", "right", "right", "right", "right", "right", "right", "right", "right", "right", "right", "right")
	view := m.View()
	for _, want := range []string{"[HAMi +ctrl]", "HAMi · Heterogeneous device virtualization middleware", "Isolation: Soft", "Evidence: hami-sharing"} {
		if !strings.Contains(view, want) {
			t.Errorf("Map with HAMi selected lacks %q:\n%s", want, view)
		}
	}
	m, _ = press(t, m, "enter")
	view = m.View()
	for _, want := range []string{"Decision axes", "Limits are enforced by intercepting CUDA calls", "Acceptance questions"} {
		if !strings.Contains(view, want) {
			t.Errorf("full card lacks %q:\n%s", want, view)
		}
	}
	m, _ = press(t, m, strings.Split(strings.Repeat("down ", 20), " ")[:20]...)
	if view = m.View(); !strings.Contains(view, "alternative to:") || strings.Contains(view, "Decision axes") {
		t.Errorf("the full card does not scroll down to its links:\n%s", view)
	}
	m, _ = press(t, m, "esc")
	if strings.Contains(m.View(), "Decision axes") {
		t.Errorf("esc did not close the full card")
	}
}

func TestMatrixFilterSortSearch(t *testing.T) {
	m, _ := press(t, newTestModel(t, 160, 48), "tab")
	mx := m.views[1].(*matrixView)
	ids := func() string {
		var s []string
		for _, p := range mx.rows {
			s = append(s, p.ID)
		}
		return strings.Join(s, ",")
	}
	// Isolation is column 3; f cycles none, soft, strong.
	m, _ = press(t, m, "right", "right", "right", "f", "f", "f")
	if got := ids(); got != "slurm,nvidia-device-plugin,mig,nvidia-vgpu,ascend-vnpu" {
		t.Errorf("isolation=strong rows = %s", got)
	}
	if !strings.Contains(m.View(), "Isolation: Strong") || !strings.Contains(m.View(), "5 of 25 projects") {
		t.Errorf("filter bar or status does not show the filter:\n%s", m.View())
	}
	m, _ = press(t, m, "p", "p") // plane: control, then data
	if got := ids(); got != "nvidia-device-plugin,mig,nvidia-vgpu,ascend-vnpu" {
		t.Errorf("isolation=strong, plane=data rows = %s", got)
	}
	m, _ = press(t, m, "esc")
	if len(mx.rows) != 25 {
		t.Errorf("esc left %d rows, want all 25", len(mx.rows))
	}
	// Sort by isolation descending: verifiable first.
	m, _ = press(t, m, "s", "s")
	if mx.rows[0].ID != "dcgm-exporter" || !strings.Contains(m.View(), "Isolation ↓") {
		t.Errorf("sort descending by isolation starts with %s", mx.rows[0].ID)
	}
	// Search captures keys: q is typed, not quit.
	m, cmd := press(t, m, "/", "q")
	if cmd != nil {
		if _, quit := cmd().(tea.QuitMsg); quit {
			t.Fatal("q quit while typing a search")
		}
	}
	m, _ = press(t, m, "esc", "/", "n", "v", "l", "i", "n", "k", "enter")
	if got := ids(); got != "nccl" {
		t.Errorf("search nvlink rows = %s, want nccl", got)
	}
	m, _ = press(t, m, "left", "left", "enter")
	if !strings.Contains(m.View(), "Acceptance questions") {
		t.Errorf("enter on a row does not open the project's card")
	}
}

func TestMatrixCellExplains(t *testing.T) {
	m, _ := press(t, newTestModel(t, 160, 48), "tab", "down", "down", "right", "right", "right", "right")
	view := m.View()
	for _, want := range []string{"Volcano × Fragmentation source", "Topology + Request shape", "Why: Gangs need many GPUs at once", "Topology: Affinity (NVLink, NUMA"} {
		if !strings.Contains(view, want) {
			t.Errorf("cell explanation lacks %q:\n%s", want, view)
		}
	}
}

func TestHelp(t *testing.T) {
	m, _ := press(t, newTestModel(t, 100, 30), "tab", "?")
	view := m.View()
	for _, want := range []string{"Keys: Matrix", "filter plane", "search", "next view", "quit"} {
		if !strings.Contains(view, want) {
			t.Errorf("help lacks %q:\n%s", want, view)
		}
	}
	m, _ = press(t, m, "?")
	if strings.Contains(m.View(), "Keys: Matrix") {
		t.Errorf("? did not close help")
	}
}

// helpText is every line the help panel shows, scrolled through with
// page down to its end.
func helpText(t *testing.T, m Model) string {
	t.Helper()
	m, _ = press(t, m, "?")
	seen := []string{m.View()}
	for range 20 {
		m, _ = press(t, m, "pgdown")
		if v := m.View(); v != seen[len(seen)-1] {
			seen = append(seen, v)
			continue
		}
		return strings.Join(seen, "\n")
	}
	t.Fatalf("the help panel still scrolls after 20 pages:\n%s", seen[len(seen)-1])
	return ""
}

// Every key the help lists at 160 columns is in it at 80×24 too, on every
// tab, the demo's K and a presenter's keys included: a narrow help panel
// puts its columns on more rows (and scrolls) instead of dropping one
// for a "…".
func TestHelpKeepsEveryKeyAt80Columns(t *testing.T) {
	kill := func(string) error { return nil }
	for _, opts := range []Options{{KillHost: kill, Simulated: true}, {Present: demoSteps, Simulated: true}} {
		for tab := 1; tab <= 7; tab++ {
			wide, _ := press(t, newDemoModel(t, opts, 160, 48), itoa(tab))
			narrow, _ := press(t, newDemoModel(t, opts, 80, 24), itoa(tab))
			view, global := narrow.helpBindings()
			texts := map[int]string{160: helpText(t, wide), 80: helpText(t, narrow)}
			for _, g := range append(view, global...) {
				for _, b := range g {
					if !b.Enabled() {
						continue
					}
					h := b.Help()
					re := regexp.MustCompile(regexp.QuoteMeta(h.Key) + " +" + regexp.QuoteMeta(h.Desc))
					for _, w := range []int{160, 80} {
						if !re.MatchString(texts[w]) {
							t.Errorf("%s (presenting %v) at %d columns: the help lacks %q %q:\n%s", narrow.Active(), opts.Present != nil, w, h.Key, h.Desc, texts[w])
						}
					}
				}
			}
		}
	}
}

func TestHints(t *testing.T) {
	inv, err := inventory.Load("../inventory.toml")
	if err != nil {
		t.Fatal(err)
	}
	c, _ := landscape.Builtin()
	m := New(Options{Catalog: c, Inventory: inv, Styles: DefaultStyles()})
	m, _ = press(t, m, "3")
	if v := m.View(); !strings.Contains(v, "bastion,dgx-[01-02],gpu[001-012],h200-01") {
		t.Errorf("Fleet hint does not fold the inventory's hosts:\n%s", v)
	}
	m, _ = press(t, newTestModel(t, 80, 24), "3")
	if v := m.View(); !strings.Contains(v, "No hosts") {
		t.Errorf("Fleet on the built-in default does not say there are no hosts:\n%s", v)
	}
}

func BenchmarkMapView160x48(b *testing.B) {
	m := newTestModel(b, 160, 48)
	b.ResetTimer()
	for b.Loop() {
		_ = m.View()
	}
}

func BenchmarkMatrixView160x48(b *testing.B) {
	m, _ := press(b, newTestModel(b, 160, 48), "tab")
	b.ResetTimer()
	for b.Loop() {
		_ = m.View()
	}
}

// Keys typed faster than the terminal is read arrive as one message; each
// is still a key of its own, and what follows a key that opens a text
// field is text for that field.
func TestFastTyping(t *testing.T) {
	// (Views are shared by copies of a Model: each press sequence starts
	// from a new one.)
	one, _ := press(t, newTestModel(t, 100, 30), "2", "right", "right", "right", "f", "f", "f")
	fast, _ := press(t, newTestModel(t, 100, 30), "2", "right", "right", "right", "fff")
	if !strings.Contains(one.View(), "Isolation: Strong") || fast.View() != one.View() {
		t.Errorf("fff typed at once differs from f, f, f:\n%s\n---\n%s", fast.View(), one.View())
	}
	f := newFleetModel(t, fakeFleet{n: 3, odd: -1}, 100, 30)
	f, _ = press(t, f, "3", ":ls -l")
	if v := f.View(); !strings.Contains(v, "$ ls -l") {
		t.Errorf("the text after : goes to the command field:\n%s", v)
	}
}

// TestMapChipsNeverTouch: on any selection at 80 columns, two marked
// chips side by side keep a column between them (‹HAMi +ctrl›‹Dynamic…›
// read as one name).
func TestMapChipsNeverTouch(t *testing.T) {
	c, err := landscape.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	v := newMapView(c, DefaultStyles())
	v.SetSize(80, 22)
	for i := range v.order {
		v.sel = i
		for _, l := range strings.Split(ansi.Strip(v.View()), "\n") {
			for _, touch := range []string{"›‹", "]‹", "›[", "]["} {
				if strings.Contains(l, touch) {
					t.Errorf("selecting %s, two chips touch (%q): %q", v.order[i].ID, touch, l)
				}
			}
		}
	}
}
