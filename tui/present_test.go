package tui

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/labs"
	"github.com/gpulab/gpulab/landscape"
	"github.com/gpulab/gpulab/probes/report"
	"github.com/gpulab/gpulab/runbooks"
)

// loopbackFleet is fakeFleet on loopback ports, as a simulated fleet is
// addressed: the same names, 127.0.0.1:2201 and on.
type loopbackFleet struct{ fakeFleet }

func (f loopbackFleet) Hosts() []app.FleetHost {
	hs := f.fakeFleet.Hosts()
	for i := range hs {
		hs[i].Address = fmt.Sprintf("127.0.0.1:%d", 2201+i)
	}
	return hs
}

// demoSteps are a walkthrough like gpulab demo --present's.
var demoSteps = []PresentStep{
	{Tab: "Map", Caption: "caption one: the planes"},
	{Tab: "Matrix", Caption: "caption two: the axes"},
	{Tab: "Fleet", Run: "probe", Caption: "caption three: gpu001 is flagged"},
	{Tab: "Fleet", Open: true, Caption: "caption four: gpu001 up close"},
	{Tab: "Runbooks", Run: "topology", Caption: "caption five: topology on gpu[001-004], 127.0.0.1:2201 first"},
	{Tab: "Runbooks", Open: true, Caption: "caption six: the evidence"},
	{Tab: "Labs", Run: "topology-sanity", Caption: "caption seven: scored live"},
	{Tab: "Results", Open: true, Caption: "caption eight: the record"},
}

// newDemoModel is the workbench on 4 simulated hosts gpu[001-004] with
// every runner, a results directory holding one record of them, and the
// options given.
func newDemoModel(t *testing.T, opts Options, w, h int) Model {
	t.Helper()
	c, err := landscape.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	rbs, err := runbooks.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := labs.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r := &labs.Record{Schema: labs.RecordSchema, Lab: "topology-sanity", Name: "Topology sanity", Started: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), Complete: true,
		Hosts: []labs.HostRecord{{Host: "gpu001"}, {Host: "gpu002", Err: "dial tcp 127.0.0.1:2202: connect: connection refused"}, {Host: "gpu003"}, {Host: "gpu004"}}}
	writeRecord(t, dir, r)
	opts.Catalog, opts.Inventory, opts.Runbooks, opts.Labs, opts.Results = c, inventory.Empty(), rbs, ls, dir
	if opts.Fleet == nil {
		opts.Fleet = loopbackFleet{fakeFleet{n: 4, odd: -1}}
	}
	opts.RunbookRunner, opts.LabRunner = fakeRunbooks{n: 4, unreachable: -1}, scriptedLabs{n: 4}
	if opts.Styles.PlaneTitle == nil { // no styles given
		opts.Styles = DefaultStyles()
	}
	m := New(opts)
	m = drain(t, m, m.Init())
	next, _ := m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return next.(Model)
}

// fits reports how a frame misses the terminal's size ("" when it fits).
func fits(frame string, w, h int) string {
	lines := strings.Split(frame, "\n")
	if len(lines) != h {
		return fmt.Sprintf("%d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if lw := lipgloss.Width(l); lw != w {
			return fmt.Sprintf("line %d is %d wide, want %d: %q", i+1, lw, w, l)
		}
	}
	return ""
}

// TestSimulatedBadge: a simulated fleet says so in the header and on every
// host, in words (the tests draw without colour, as NO_COLOR does); a real
// one does not.
func TestSimulatedBadge(t *testing.T) {
	for _, sz := range []struct{ w, h int }{{80, 24}, {160, 48}} {
		t.Run(fmt.Sprintf("%dx%d", sz.w, sz.h), func(t *testing.T) {
			m := newDemoModel(t, Options{Simulated: true}, sz.w, sz.h)
			for tab := range 7 {
				m, _ = press(t, m, fmt.Sprint(tab+1))
				header, _, _ := strings.Cut(m.View(), "\n")
				if !strings.HasPrefix(header, "gpulab  SIMULATED ") {
					t.Errorf("%s: header lacks the SIMULATED badge: %q", m.Active(), header)
				}
			}
			m, cmd := press(t, m, "3", "p")
			m = drain(t, m, cmd)
			v := m.View()
			for i := 1; i <= 4; i++ {
				addr := fmt.Sprintf(` +127\.0\.0\.1:220%d `, i)
				if sz.w < narrowFleet {
					addr = " " // the ADDRESS column gives way to OUTPUT
				}
				if !regexp.MustCompile(fmt.Sprintf(`(?m)^..gpu00%d SIM`, i) + addr).MatchString(v) {
					t.Errorf("Fleet row of gpu00%d lacks its SIM badge:\n%s", i, v)
				}
			}
			m, _ = press(t, m, "enter")
			if v := m.View(); !strings.Contains(v, "gpu001  SIMULATED ") {
				t.Errorf("host view lacks the SIMULATED badge:\n%s", v)
			}
			m, cmd = press(t, m, "esc", "4", "end", "enter")
			m = drain(t, m, cmd)
			v = m.View()
			if !strings.Contains(v, "on gpu[001-004] SIM") || !regexp.MustCompile(`(?m)^. (PASS|FAIL) +gpu\S+ SIM: `).MatchString(v) {
				t.Errorf("Runbooks: hosts lack their SIM badge:\n%s", v)
			}
			m, _ = press(t, m, "esc", "5", "end")
			m, cmd = press(t, m, "enter")
			m = drain(t, m, cmd)
			v = m.View()
			if !strings.Contains(v, "nvlink-mesh (critical) gpu002 SIM: ") {
				t.Errorf("Labs: the criteria's hosts lack their SIM badge:\n%s", v)
			}
			if msg := fits(v, sz.w, sz.h); msg != "" {
				t.Errorf("Labs does not fit: %s", msg)
			}
			if m, _ = press(t, m, "pgdown"); !strings.Contains(m.View(), "gpu[001-004] SIM  observe topo") {
				t.Errorf("Labs: the steps' hosts lack their SIM badge (below the criteria):\n%s", m.View())
			}
		})
	}
	m := newDemoModel(t, Options{}, 160, 48)
	if v := m.View(); strings.Contains(v, "SIMULATED") {
		t.Errorf("real hosts are drawn as simulated:\n%s", v)
	}
}

// TestFleetFlagsTheSickHost: after the probe, a host whose snapshot has an
// NVLink down, findings or Xids is flagged, with what was found, in its
// row, the headline and the folded pane.
func TestFleetFlagsTheSickHost(t *testing.T) {
	m := newDemoModel(t, Options{}, 160, 48)
	m, cmd := press(t, m, "3", "p")
	m = drain(t, m, cmd)
	v := m.View()
	for _, want := range []string{"4/4  2 ok, 1 flagged (gpu001), 1 failed: 1 no NVML (gpu004)", "ok FLAGGED", "⚑ Xid 79 on GPU1", "⚑ gpu001: Xid 79 on GPU1"} {
		if !strings.Contains(v, want) {
			t.Errorf("Fleet lacks %q:\n%s", want, v)
		}
	}
	if strings.Count(v, "ok FLAGGED") != 1 {
		t.Errorf("want one flagged host:\n%s", v)
	}
	// Its group in the folded output says so too ("ok" alone read as
	// healthy).
	if !strings.Contains(v, "gpu[001-003] (3 hosts): ok, 1 flagged") {
		t.Errorf("the flagged host's folded group does not say FLAGGED:\n%s", v)
	}
}

// TestFleetFlagsDrift: a host whose driver differs from the fleet's most
// common one is flagged with it in its row and the folded pane.
func TestFleetFlagsDrift(t *testing.T) {
	m := newDemoModel(t, Options{Fleet: loopbackFleet{fakeFleet{n: 4, odd: 2}}}, 160, 48)
	m, cmd := press(t, m, "3", "p")
	m = drain(t, m, cmd)
	v := m.View()
	for _, want := range []string{"⚑ drift: driver 535.104.05 (most hosts: 550.54.15)", "⚑ gpu003: drift: driver 535.104.05"} {
		if !strings.Contains(v, want) {
			t.Errorf("Fleet lacks %q:\n%s", want, v)
		}
	}
}

func TestNVLinksDown(t *testing.T) {
	s := dgxSnapshot(t)
	if got := report.NVLinksDown(s); got != nil {
		t.Errorf("nvlinksDown(full NV12 mesh) = %q, want none", got)
	}
	for i, l := range s.Topology {
		if l.A == 0 && l.B == 4 || l.A == 4 && l.B == 0 {
			s.Topology[i].Level = "SYS"
		}
		if l.A == 0 || l.B == 0 || l.A == 4 || l.B == 4 {
			if s.Topology[i].Level != "SYS" {
				s.Topology[i].Level = "NV10"
			}
		}
	}
	if got, want := strings.Join(report.NVLinksDown(s), "; "), "NVLink GPU0–GPU4 down (SYS)"; got != want {
		t.Errorf("nvlinksDown(GPU0–GPU4 at SYS) = %q, want %q", got, want)
	}
	// The host's GPUs say it in Health, as the Fleet row flags it.
	health := ansi.Strip(renderHost(s, true, DefaultStyles(), 120))
	if _, h, _ := strings.Cut(health, "Health"); !strings.Contains(h, "! NVLink GPU0–GPU4 down (SYS)") || strings.Contains(h, "no findings") {
		t.Errorf("the host view's Health lacks the NVLink down:\n%s", health)
	}
	for i := range s.Topology {
		s.Topology[i].Level = "SYS"
	}
	if got := report.NVLinksDown(s); got != nil {
		t.Errorf("nvlinksDown(no NVLink at all) = %q, want none", got)
	}
}

func TestMasker(t *testing.T) {
	m := newMasker([]app.FleetHost{{Name: "dgx01", Address: "127.0.0.1:41805"}, {Name: "dgx02", Address: "127.0.0.1:38833"},
		{Name: "dgx03", Address: "127.0.0.1:33121"}, {Name: "dgx04", Address: "127.0.0.1:37505"}, {Name: "head", Address: "[::1]:22"}})
	for _, tc := range []struct{ in, want string }{
		{"dgx01", "host-1"},
		{"on dgx[01-04] SIM", "on host-[1-4] SIM"},
		{"dgx[02-04] (3 hosts): ok", "host-[2-4] (3 hosts): ok"},
		{"dgx[01-02],dgx04", "host-[1-2],host-4"},
		{"dial tcp 127.0.0.1:41805: connect: connection refused", "dial tcp masked: connect: connection refused"},
		{"[127.0.0.1]:41805 ssh-ed25519", "masked ssh-ed25519"},
		{"head on [::1]:22 and ::1", "host-5 on masked and masked"},
		{"\x1b[1mdgx01\x1b[0m driver", "\x1b[1mhost-1\x1b[0m driver"},
		{"results/20261130-165019-dgx[01-04]/record.md", "results/20261130-165019-host-[1-4]/record.md"},
		{"cut: dgx[01-0", "cut: host-?"},
		{"cut: dgx0…", "cut: host-?…"},
		{"dgx05 is not ours", "host-? is not ours"},
		{"xdgx01 dgx01x headless 127.0.0.10", "xdgx01 dgx01x headless 127.0.0.10"},
		// Columns stay in place: a longer name takes a space from the
		// next gap, a shorter address gives its width back there.
		{"  dgx01 SIM      127.0.0.1:41805        ok", "  host-1 SIM     masked                 ok"},
		{"dgx01  driver", "host-1 driver"},
		// Host names are case-insensitive: `hostname | tr a-z A-Z` showed DGX01.
		{"DGX01 and Dgx[02-03]", "host-1 and host-[2-3]"},
		{"HEAD", "host-5"},
	} {
		if got := m.apply(tc.in); got != tc.want {
			t.Errorf("mask(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := (*masker)(nil).apply("dgx01"); got != "dgx01" {
		t.Errorf("nil masker changed %q", got)
	}
}

// unmasked finds a host's name or address that a mask should have hidden.
var unmasked = regexp.MustCompile(`gpu0|127\.0\.0\.1|10\.0\.0\.`)

// TestPresentMasked steps through a presenter's walkthrough with names
// masked: each step shows its tab and caption and starts its run, and at
// no step does any view show a host's name or address. The frame fits the
// terminal at every step.
func TestPresentMasked(t *testing.T) {
	for _, sz := range []struct{ w, h int }{{80, 24}, {160, 48}} {
		t.Run(fmt.Sprintf("%dx%d", sz.w, sz.h), func(t *testing.T) {
			m := newDemoModel(t, Options{Simulated: true, Present: demoSteps, Mask: true, Styles: PresenterStyles()}, sz.w, sz.h)
			check := func(where string, m Model) {
				t.Helper()
				v := m.View()
				if loc := unmasked.FindStringIndex(v); loc != nil {
					t.Errorf("%s: %q on screen:\n%s", where, v[loc[0]:loc[1]], v)
				}
				if msg := fits(v, sz.w, sz.h); msg != "" {
					t.Errorf("%s: the frame does not fit: %s", where, msg)
				}
			}
			if v := m.View(); !strings.Contains(v, "Presenter mode: 8 steps. n next step") {
				t.Errorf("the walkthrough does not say how to start:\n%s", v)
			}
			for i, s := range demoSteps {
				var cmd tea.Cmd
				m, cmd = press(t, m, "n")
				m = drain(t, m, cmd)
				v := m.View()
				if want := m.mask.apply(fmt.Sprintf("%d/%d  %s", i+1, len(demoSteps), s.Caption)); !strings.Contains(v, want) {
					t.Errorf("step %d lacks its caption %q:\n%s", i+1, want, v)
				}
				if m.Active() != s.Tab {
					t.Errorf("step %d shows %s, want %s", i+1, m.Active(), s.Tab)
				}
				check(fmt.Sprintf("step %d", i+1), m)
				for tab := range 7 { // every view at this step
					mm, _ := press(t, m, fmt.Sprint(tab+1))
					check(fmt.Sprintf("step %d, %s", i+1, mm.Active()), mm)
				}
				switch i + 1 {
				case 3:
					if !strings.Contains(v, "1 flagged (host-1)") {
						t.Errorf("step 3 did not probe:\n%s", v)
					}
				case 4:
					if !strings.Contains(v, "host-1  SIMULATED") {
						t.Errorf("step 4 did not open the flagged host:\n%s", v)
					}
				case 6:
					if !strings.Contains(v, "── evidence") {
						t.Errorf("step 6 did not open the evidence:\n%s", v)
					}
				case 7:
					if !strings.Contains(v, "FAIL    nvlink-mesh (critical) host-2 SIM") || !strings.Contains(v, "PASS    nvlink-mesh (critical) host-[1,3-4] SIM") {
						t.Errorf("step 7 did not score the lab:\n%s", v)
					}
				case 8:
					if !strings.Contains(v, "Lab record: Topology sanity") {
						t.Errorf("step 8 did not open the record:\n%s", v)
					}
				}
			}
			// Back and forth: p goes back without starting anything again.
			m, cmd := press(t, m, "p", "p")
			if m.Active() != "Runbooks" || cmd != nil {
				t.Errorf("p p: %s (command %v), want Runbooks and nothing started", m.Active(), cmd != nil)
			}
		})
	}
}

// TestPresentNoCommands: in presenter mode the Fleet's command prompt is
// off, and says so.
func TestPresentNoCommands(t *testing.T) {
	m := newDemoModel(t, Options{Simulated: true, Present: demoSteps, Styles: PresenterStyles()}, 120, 30)
	m, _ = press(t, m, "3", ":")
	v := m.View()
	if !strings.Contains(v, "presenter mode: running commands is off") {
		t.Errorf(": in presenter mode does not say it is off:\n%s", v)
	}
	if m.views[m.active].Capturing() {
		t.Errorf(": opened the command prompt in presenter mode")
	}
	if strings.Contains(v, ": run a command") {
		t.Errorf("the status bar offers : in presenter mode:\n%s", v)
	}
	m, _ = press(t, m, "?")
	if v := m.View(); !strings.Contains(v, "next step") || strings.Contains(v, "run a command") || strings.Contains(v, "probe GPUs") {
		t.Errorf("help in presenter mode offers the keys it does not hear:\n%s", v)
	}
}

// dgxSnapshot is the simulated DGX A100's snapshot gpulab's probe printed:
// eight GPUs in a full NV12 mesh.
func dgxSnapshot(t *testing.T) *report.Snapshot {
	t.Helper()
	data, err := os.ReadFile("testdata/dgxa100-simulated.json")
	if err != nil {
		t.Fatal(err)
	}
	var s report.Snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

// BenchmarkMaskedFleetView: the Fleet of 1,000 hosts, masked, at 160x48.
func BenchmarkMaskedFleetView(b *testing.B) {
	c, _ := landscape.Builtin()
	m := New(Options{Catalog: c, Inventory: inventory.Empty(), Fleet: loopbackFleet{fakeFleet{n: 1000}}, Styles: DefaultStyles(), Simulated: true, Mask: true})
	next, _ := m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
	m, _ = press(b, next.(Model), "3")
	b.ResetTimer()
	for range b.N {
		_ = m.View()
	}
}

// TestPresentClickerScrollsFirst: a presenter's clicker (page down, page
// up) scrolls the pane in view to its end before it steps on, and back to
// its top before it steps back; n and p always step.
func TestPresentClickerScrollsFirst(t *testing.T) {
	m := newDemoModel(t, Options{Simulated: true, Present: demoSteps, Styles: PresenterStyles()}, 80, 24)
	step := func(m Model, keys ...string) Model { t.Helper(); return pressAll(t, m, keys...) }
	m = step(m, "n", "n", "n", "n") // step 4: the flagged host's GPUs, longer than the screen
	if v := m.View(); m.present.at != 3 || !strings.Contains(v, "more lines below · pgdn") {
		t.Fatalf("step 4 does not show a host view with more below:\n%s", v)
	}
	pages := 0
	for !strings.Contains(m.View(), "end of output") {
		before := m.View()
		m = step(m, "pgdown")
		pages++
		if m.present.at != 3 {
			t.Fatalf("page down %d stepped to step %d before the pane's end:\n%s", pages, m.present.at+1, before)
		}
		if m.View() == before || pages > 20 {
			t.Fatalf("page down %d did not scroll the pane:\n%s", pages, before)
		}
	}
	if m = step(m, "pgdown"); m.present.at != 4 || m.Active() != "Runbooks" {
		t.Fatalf("page down at the pane's end: step %d in %s, want step 5 in Runbooks", m.present.at+1, m.Active())
	}
	// Back: the Runbooks step has nothing scrolled, so page up steps back
	// to the host view, shown as step 4 shows it, from its top; page up
	// there steps back to step 3, the host list, its GPUs closed.
	m = step(m, "pgup")
	if v := m.View(); m.present.at != 3 || !strings.Contains(v, "more lines below · pgdn") || strings.Contains(v, "end of output") {
		t.Fatalf("page up into step 4 does not show its host view from the top:\n%s", v)
	}
	if m = step(m, "pgup"); m.present.at != 2 {
		t.Errorf("page up at step 4's top left it at step %d, want 3", m.present.at+1)
	}
	if v := m.View(); strings.Contains(v, "more lines below · pgdn") || !strings.Contains(v, "HOST           STATE") {
		t.Fatalf("step 3 shows step 4's host view, not the host list:\n%s", v)
	}
	// n and p step whatever the pane has below.
	if m = step(m, "n"); m.present.at != 3 {
		t.Errorf("n with more below went to step %d, want 4", m.present.at+1)
	}
	if m = step(m, "n"); m.present.at != 4 {
		t.Errorf("n with more below went to step %d, want 5", m.present.at+1)
	}
	if m = step(m, "p"); m.present.at != 3 {
		t.Errorf("p went to step %d, want 4", m.present.at+1)
	}
}

// TestPresentCaptionNamesTheClicker: before the first step the caption
// says what page down and page up do, where the width has room for it.
func TestPresentCaptionNamesTheClicker(t *testing.T) {
	for _, tc := range []struct {
		w    int
		want string
	}{{120, "n next step · p previous step · pgdn/pgup scroll, then step · q quit"}, {80, "n next step · p previous step · q quit"}} {
		m := newDemoModel(t, Options{Simulated: true, Present: demoSteps, Styles: PresenterStyles()}, tc.w, 24)
		if v := m.View(); !strings.Contains(v, tc.want) {
			t.Errorf("at %d columns the caption lacks %q:\n%s", tc.w, tc.want, v)
		}
	}
}

// TestPresentMatrixPlaneKey: in presenter mode p steps back, so the
// Matrix offers its plane filter on P, and its guidance says P (it said
// "p plane").
func TestPresentMatrixPlaneKey(t *testing.T) {
	m := newDemoModel(t, Options{Simulated: true, Present: demoSteps, Styles: PresenterStyles()}, 80, 24)
	m, _ = press(t, m, "2")
	if v := m.View(); !strings.Contains(v, "P plane") || strings.Contains(v, "p plane") {
		t.Fatalf("the Matrix's guidance in presenter mode:\n%s", v)
	}
	m, _ = press(t, m, "P")
	if v := m.View(); !strings.Contains(v, "plane: ") {
		t.Errorf("P did not filter a plane:\n%s", v)
	}
}

// TestPresentTabsKeepTheirP: in presenter mode p steps back, so every
// tab whose own key was p (the Fleet's probe, Runbooks' and Labs'
// parameters) offers it on P, its guidance and help say P, and P does it.
func TestPresentTabsKeepTheirP(t *testing.T) {
	m := newDemoModel(t, Options{Simulated: true, Present: demoSteps, Styles: PresenterStyles()}, 160, 48)
	m, _ = press(t, m, "3")
	if v := m.View(); !strings.Contains(v, "P to probe their GPUs") || strings.Contains(v, "p to probe") {
		t.Fatalf("the Fleet's guidance in presenter mode:\n%s", v)
	}
	at := m.present.at
	m = pressAll(t, m, "P")
	if m.present.at != at {
		t.Errorf("P stepped the walkthrough (%d to %d)", at, m.present.at)
	}
	if v := m.View(); !strings.Contains(v, "1 flagged") {
		t.Errorf("P did not probe the fleet:\n%s", v)
	}
	for _, tab := range []string{"4", "5"} {
		m, _ = press(t, m, tab, "?")
		v := m.View()
		if !regexp.MustCompile(`\bP +set parameters`).MatchString(v) || regexp.MustCompile(`\bp +set parameters`).MatchString(v) {
			t.Errorf("tab %s's help in presenter mode:\n%s", tab, v)
		}
		m, _ = press(t, m, "?")
	}
}

// TestPresentOffersOnlyStepsThatMove: before the first step the status
// bar offers n, not p; at the last step p, not n.
func TestPresentOffersOnlyStepsThatMove(t *testing.T) {
	m := newDemoModel(t, Options{Simulated: true, Present: demoSteps, Styles: PresenterStyles()}, 160, 48)
	bar := func(m Model) string { l := strings.Split(m.View(), "\n"); return l[len(l)-1] }
	if b := bar(m); !strings.Contains(b, "n next step") || strings.Contains(b, "p previous step") {
		t.Errorf("before the first step: %q", b)
	}
	for range demoSteps {
		var cmd tea.Cmd
		m, cmd = press(t, m, "n")
		m = drain(t, m, cmd)
	}
	if b := bar(m); strings.Contains(b, "n next step") || !strings.Contains(b, "p previous step") {
		t.Errorf("at the last step: %q", b)
	}
}

// TestPresentStepOwnsItsScreen: every step shows the screen it shows
// going forward, entered from either side, and after stray keys the
// presenter pressed; a tab that is not the step's says so instead of the
// step's caption; n at the last step says it was the last.
func TestPresentStepOwnsItsScreen(t *testing.T) {
	m := newDemoModel(t, Options{Simulated: true, Present: demoSteps, Styles: PresenterStyles()}, 100, 30)
	step := func(m Model, keys ...string) Model { t.Helper(); return pressAll(t, m, keys...) }
	// The screen above the status bar: the bar says live things (the
	// fleet flagged once the probe ran) that are no part of a step.
	body := func(v string) string { return v[:strings.LastIndex(v, "\n")] }
	forward := map[int]string{}
	for i := range demoSteps {
		m = step(m, "n")
		if m.present.at != i {
			t.Fatalf("n %d: at step %d", i+1, m.present.at+1)
		}
		forward[i] = m.View()
	}
	if v := m.View(); !strings.Contains(v, "8/8  caption eight: the record · the end: p goes back, q quits") {
		t.Errorf("the last step does not say it is the end:\n%s", v)
	}
	m = step(m, "n")
	// The caption (its offers) follows the notice where the width has room.
	if v := m.View(); m.present.at != len(demoSteps)-1 || !strings.Contains(v, "8/8  That was the last step: p goes back, q quits · caption eight: the record") {
		t.Errorf("n at the last step:\n%s", v)
	}
	// Backward, then forward again, with stray keys at every step: each
	// step's screen is its forward screen.
	for i := len(demoSteps) - 2; i >= 0; i-- {
		m = step(m, "p")
		if v := m.View(); m.present.at != i || body(v) != body(forward[i]) {
			t.Errorf("p into step %d: at %d, screen\n%s\nwant\n%s", i+1, m.present.at+1, v, forward[i])
		}
		m = step(m, "down", "enter", "e", "esc")
	}
	for i := 1; i < len(demoSteps); i++ {
		m = step(m, "enter", "down", "esc", "n")
		if v := m.View(); m.present.at != i || body(v) != body(forward[i]) {
			t.Errorf("n into step %d after stray keys: at %d, screen\n%s\nwant\n%s", i+1, m.present.at+1, v, forward[i])
		}
	}
	// Another tab by hand: the caption says where the step is.
	m = step(m, "p", "p", "p", "p", "p") // from step 8 to step 3, the Fleet
	m = step(m, "7")
	if v := m.View(); !strings.Contains(v, "3/8 is on the Fleet tab: n goes on from there, p goes back (this is Cluster)") || strings.Contains(v, "caption three") {
		t.Errorf("the Cluster tab under step 3:\n%s", v)
	}
	if m = step(m, "n"); m.present.at != 3 || m.Active() != "Fleet" {
		t.Errorf("n from another tab: step %d in %s, want 4 in the Fleet", m.present.at+1, m.Active())
	}
}

// pressAll presses keys one at a time, each command drained before the
// next key, as a person at the keyboard would.
func pressAll(t *testing.T, m Model, keys ...string) Model {
	t.Helper()
	for _, k := range keys {
		var cmd tea.Cmd
		m, cmd = press(t, m, k)
		m = drain(t, m, cmd)
	}
	return m
}

// The host view's Health lists every finding the Fleet row flags: a GPU
// NVML lost (no row of its own), an RDMA port down; never "no findings"
// beside them.
func TestHostViewShowsHostFindings(t *testing.T) {
	s := dgxSnapshot(t)
	s.Errors = append(s.Errors, report.FieldError{Field: "gpu[8]", GPU: ptrTo(8), Code: "GPU_IS_LOST", Message: "GPU is lost"})
	s.IB = &report.IBState{Ports: []report.IBPort{{Device: "mlx5_0", Port: 1, LinkLayer: "InfiniBand", State: "DOWN", PhysState: "Polling"}}}
	health := ansi.Strip(renderHost(s, true, DefaultStyles(), 120))
	_, h, _ := strings.Cut(health, "Health")
	for _, want := range []string{"GPU8: the GPU is lost", "mlx5_0 port 1 (InfiniBand) is DOWN, Polling"} {
		if !strings.Contains(h, want) {
			t.Errorf("Health lacks %q:\n%s", want, h)
		}
	}
	if strings.Contains(h, "no findings") {
		t.Errorf("Health says no findings beside them:\n%s", h)
	}
}

func ptrTo(i int) *int { return &i }
