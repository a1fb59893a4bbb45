package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/landscape"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/probes/report"
)

// fakeFleet is a stand-in for the engine, shaped like orchestrator.Engine.Run:
// the Fleet view's contract, not a proof that SSH works (the orchestrator's
// tests against real sshd are).
type fakeFleet struct {
	n     int
	odd   int    // index of the host whose output differs
	block bool   // wait for cancel before answering
	out   string // what every host prints ("": its GPU's name)
}

func (f fakeFleet) Hosts() []app.FleetHost {
	hs := make([]app.FleetHost, f.n)
	for i := range hs {
		hs[i] = app.FleetHost{Name: fmt.Sprintf("gpu%03d", i+1), Address: fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)}
	}
	return hs
}

func (f fakeFleet) Run(ctx context.Context, command string, events chan<- orchestrator.Event) []orchestrator.HostResult {
	defer close(events)
	if f.block {
		<-ctx.Done()
	}
	res := make([]orchestrator.HostResult, f.n)
	for i, h := range f.Hosts() {
		out, class := "NVIDIA A100-SXM4-80GB\n", orchestrator.OK
		if i == f.odd {
			out, class = "NVIDIA A100-SXM4-40GB\n", orchestrator.OK
		}
		if f.out != "" {
			out = f.out
			if i == f.odd {
				out += "41\n"
			}
		}
		if f.block {
			class = orchestrator.Cancelled
		}
		res[i] = orchestrator.HostResult{Host: h.Name, Class: class, Connect: 40 * time.Millisecond, Total: 90 * time.Millisecond,
			Steps: []orchestrator.Result{{Command: command, Stdout: []byte(out), Class: class}}}
		now := time.Now()
		events <- orchestrator.Event{Kind: orchestrator.HostConnecting, Index: i, Host: h.Name, Time: now}
		events <- orchestrator.Event{Kind: orchestrator.HostConnected, Index: i, Host: h.Name, Time: now.Add(40 * time.Millisecond)}
		events <- orchestrator.Event{Kind: orchestrator.HostDone, Index: i, Host: h.Name, Done: &res[i]}
	}
	return res
}

// Probe answers with the simulated DGX A100 snapshot that gpulab's own
// probe printed (testdata/dgxa100-simulated.json); host `odd` has another
// driver, and the last host has no NVML.
func (f fakeFleet) Probe(ctx context.Context, events chan<- orchestrator.Event) []app.ProbeOutcome {
	defer close(events)
	data, err := os.ReadFile("testdata/dgxa100-simulated.json")
	if err != nil {
		panic(err)
	}
	out := make([]app.ProbeOutcome, f.n)
	for i, h := range f.Hosts() {
		var s report.Snapshot
		if err := json.Unmarshal(data, &s); err != nil {
			panic(err)
		}
		s.Host = h.Name
		switch i {
		case f.odd:
			s.DriverVersion = "535.104.05"
		case f.n - 1:
			s = report.Snapshot{Schema: 1, Host: h.Name, NVML: report.NVMLState{Error: "libnvidia-ml.so.1: cannot open shared object file: No such file or directory"}}
		case 0:
			gpu := 1
			s.Processes = []report.Process{{GPU: 1, PID: 4242, Name: "vllm", Type: "compute", UsedMiB: 20480, PodUID: "3b1f4a2c-8d7e-4f1a-9b2c-1234567890ab"}}
			s.XIDs = []report.XIDEvent{{Code: 79, GPU: &gpu, Source: "kmsg", XIDInfo: report.DecodeXID(79)}}
			s.GPUs[0].MIG = report.MIG{Current: "enabled", Pending: "enabled", GPUInstances: []report.GPUInstance{
				{ID: 1, Profile: "3g.20gb", PlacementStart: 4, PlacementSize: 4, ComputeInstances: []report.ComputeInstance{{Profile: "3g.20gb"}}},
				{ID: 2, Profile: "3g.20gb", PlacementStart: 0, PlacementSize: 4, ComputeInstances: []report.ComputeInstance{{Profile: "1c.3g.20gb"}, {Profile: "2c.3g.20gb"}}},
			}}
		}
		out[i] = app.ProbeOutcome{Snapshot: &s}
		res := orchestrator.HostResult{Host: h.Name, Class: orchestrator.OK}
		events <- orchestrator.Event{Kind: orchestrator.HostConnecting, Index: i, Host: h.Name, Time: time.Now()}
		events <- orchestrator.Event{Kind: orchestrator.HostDone, Index: i, Host: h.Name, Done: &res}
	}
	return out
}

func TestFleetProbeAndHostView(t *testing.T) {
	m := newFleetModel(t, fakeFleet{n: 12, odd: 6}, 160, 48)
	m, cmd := press(t, m, "3", "p")
	m = drain(t, m, cmd)
	v := m.View()
	for _, want := range []string{"$ gpulab probe done", "folded output",
		"gpu[001-006,008-011] (10 hosts): ok", "8× Mock NVIDIA A100-SXM4-40GB, NV12 full mesh, driver 550.54.15, SIMULATED",
		"+8× Mock NVIDIA A100-SXM4-40GB, NV12 full mesh, driver 535.104.05, SIMULATED", "gpu012 (1 host): exit (status 3)", "no NVML"} {
		if !strings.Contains(v, want) {
			t.Errorf("Fleet after probing lacks %q:\n%s", want, v)
		}
	}
	m, _ = press(t, m, "enter")
	v = m.View()
	for _, want := range []string{"gpu001  SIMULATED   driver 550.54.15 · CUDA 12.4", "00000000:B7:00.0", "Topology",
		"GPU0  X     NV12  NV12", "16-31", "MIG layout", "GPU0 [BBBBAAAA] A=3g.20gb[3g.20gb] B=3g.20gb[1c.3g.20gb,2c.3g.20gb]",
		"pid 4242", "pod 3b1f4a2c-8d7e-4f1a-9b2c-1234567890ab", "Xid 79 on GPU1: GPU has fallen off the bus"} {
		if !strings.Contains(v, want) {
			t.Errorf("host view lacks %q:\n%s", want, v)
		}
	}
	m, _ = press(t, m, "esc", "G", "enter") // G: the last host (end scrolls the output pane)
	if v := m.View(); !strings.Contains(v, "No NVML on this host: libnvidia-ml.so.1") {
		t.Errorf("host view of a host without NVML:\n%s", v)
	}
}

func newFleetModel(t testing.TB, f fakeFleet, w, h int) Model {
	t.Helper()
	c, err := landscape.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	m := New(Options{Catalog: c, Inventory: inventory.Empty(), Fleet: f, Styles: DefaultStyles()})
	next, _ := m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return next.(Model)
}

// drain runs cmd and the commands its messages lead to, feeding each
// message back to the model, until none is left.
func drain(t testing.TB, m Model, cmd tea.Cmd) Model {
	t.Helper()
	queue := []tea.Cmd{cmd}
	for steps := 0; len(queue) > 0 && steps < 10000; steps++ {
		c := queue[0]
		queue = queue[1:]
		if c == nil {
			continue
		}
		msg := c()
		if b, ok := msg.(tea.BatchMsg); ok {
			queue = append(queue, b...)
			continue
		}
		switch msg.(type) {
		case streamMsg[fleetItem], streamMsg[app.RunbookHost], streamMsg[app.LabUpdate], recordsMsg, recordPageMsg, recordsChangedMsg:
		default:
			continue // cursor blinks and the like
		}
		next, c2 := m.Update(msg)
		m = next.(Model)
		queue = append(queue, c2)
	}
	return m
}

func TestFleetRun(t *testing.T) {
	m := newFleetModel(t, fakeFleet{n: 12, odd: 6}, 120, 32)
	m, _ = press(t, m, "3")
	if v := m.View(); !strings.Contains(v, "12 hosts: gpu[001-012]. Press : to run a command") {
		t.Fatalf("Fleet before a run:\n%s", v)
	}
	m, _ = press(t, m, ":", "n", "v", "i", "d", "i", "a", "-", "s", "m", "i", " ", "-", "L", "q")
	if m.Active() != "Fleet" || !strings.Contains(m.View(), "$ nvidia-smi -Lq") {
		t.Fatalf("typing a command (q is text, not quit):\n%s", m.View())
	}
	m, cmd := press(t, m, "enter")
	m = drain(t, m, cmd)
	v := m.View()
	for _, want := range []string{"$ nvidia-smi -Lq done", "12/12", "12 ok", "gpu001", "10.0.0.1", "40ms", "NVIDIA A100-SXM4-80GB",
		"folded output", "gpu[001-006,008-012] (11 hosts): ok", "+NVIDIA A100-SXM4-40GB"} {
		if !strings.Contains(v, want) {
			t.Errorf("Fleet after the run lacks %q:\n%s", want, v)
		}
	}
	m, _ = press(t, m, "o")
	if v := m.View(); !strings.Contains(v, "command log") || !strings.Contains(v, "nvidia-smi -Lq  on gpu[001-012]  → 12 hosts: 12 ok") {
		t.Errorf("command log:\n%s", v)
	}
	m, _ = press(t, m, "o", "down", "down", "down", "down", "down", "down")
	if v := m.View(); !strings.Contains(v, "output of gpu007") || !strings.Contains(v, "▶ gpu007") {
		t.Errorf("per-host output of the selected host:\n%s", v)
	}
}

func TestFleetCancelAndOtherTab(t *testing.T) {
	m := newFleetModel(t, fakeFleet{n: 5, odd: -1, block: true}, 100, 30)
	m, _ = press(t, m, "3", ":", "s", "l", "e", "e", "p")
	m, cmd := press(t, m, "enter")
	m, _ = press(t, m, "c") // cancel: the fake answers only then
	m, _ = press(t, m, "1") // the run's messages still reach the Fleet while the Map is shown
	m = drain(t, m, cmd)
	m, _ = press(t, m, "3")
	if v := m.View(); !strings.Contains(v, "5 cancelled") || !strings.Contains(v, "5/5") {
		t.Errorf("after cancel:\n%s", v)
	}
}

func TestFleetViewFits(t *testing.T) {
	for _, sz := range []struct{ w, h int }{{80, 24}, {160, 48}} {
		m := newFleetModel(t, fakeFleet{n: 300, odd: 3}, sz.w, sz.h)
		m, cmd := press(t, m, "3", ":", "x", "enter")
		m = drain(t, m, cmd)
		for _, keys := range [][]string{nil, {"o"}, {"o"}, {"end"}} {
			m, _ = press(t, m, keys...)
			lines := strings.Split(m.View(), "\n")
			if len(lines) != sz.h {
				t.Errorf("%dx%d: %d lines", sz.w, sz.h, len(lines))
			}
		}
	}
}

func BenchmarkFleetView1000Hosts(b *testing.B) {
	m := newFleetModel(b, fakeFleet{n: 1000, odd: 500}, 160, 48)
	m, cmd := press(b, m, "3", ":", "x", "enter")
	m = drain(b, m, cmd)
	m, _ = press(b, m, "o", "o") // per-host pane
	b.ResetTimer()
	for b.Loop() {
		_ = m.View()
	}
}

func BenchmarkFleetFolded1000Hosts(b *testing.B) {
	m := newFleetModel(b, fakeFleet{n: 1000, odd: 500}, 160, 48)
	m, cmd := press(b, m, "3", ":", "x", "enter")
	m = drain(b, m, cmd)
	b.ResetTimer()
	for b.Loop() {
		_ = m.View()
	}
}

// A running command's output shows as it comes: the row's last line and,
// for the selected host, the output so far; the result replaces it.
func TestFleetLiveOutput(t *testing.T) {
	v := newFleetView(fakeFleet{n: 2, odd: -1}, DefaultStyles())
	v.SetSize(160, 40)
	v.apply(orchestrator.Event{Kind: orchestrator.HostConnecting, Index: 0, Host: "gpu001", Time: time.Now()})
	v.apply(orchestrator.Event{Kind: orchestrator.HostConnected, Index: 0, Host: "gpu001", Time: time.Now()})
	v.apply(orchestrator.Event{Kind: orchestrator.StepOutput, Index: 0, Host: "gpu001", Stream: 1, Output: []byte("step 1 of 3\nstep 2")})
	v.apply(orchestrator.Event{Kind: orchestrator.StepOutput, Index: 0, Host: "gpu001", Stream: 1, Output: []byte(" of 3\n")})
	if row := v.row(0); !strings.Contains(row, "step 2 of 3") || strings.Contains(row, "step 1 of 3") {
		t.Errorf("running row shows %q, want its last line", row)
	}
	v.pane = paneHost
	if got := strings.Join(v.paneLines(), "\n"); !strings.Contains(got, "step 1 of 3\nstep 2 of 3") {
		t.Errorf("the selected running host's pane:\n%s", got)
	}
	done := orchestrator.HostResult{Host: "gpu001", Class: orchestrator.OK, Steps: []orchestrator.Result{{Stdout: []byte("all 3 steps done\n")}}}
	v.apply(orchestrator.Event{Kind: orchestrator.HostDone, Index: 0, Host: "gpu001", Done: &done})
	if row := v.row(0); !strings.Contains(row, "all 3 steps done") {
		t.Errorf("finished row shows %q, want its result", row)
	}
}

// In the demo, K cuts the host under the cursor off; the key is offered
// only where a simulated fleet can do it (not on real hosts, not while
// presenting).
func TestFleetKillHostInDemo(t *testing.T) {
	c, err := landscape.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	var killed []string
	kill := func(name string) error { killed = append(killed, name); return nil }
	for _, tc := range []struct {
		name string
		opts Options
		want []string
	}{
		{"demo", Options{KillHost: kill, Simulated: true}, []string{"gpu002"}},
		{"real hosts", Options{}, nil},
		{"presenting", Options{KillHost: kill, Simulated: true, Present: []PresentStep{{Tab: "Fleet", Caption: "look"}}}, nil},
	} {
		killed = nil
		tc.opts.Catalog, tc.opts.Inventory, tc.opts.Fleet, tc.opts.Styles = c, inventory.Empty(), fakeFleet{n: 3}, DefaultStyles()
		next, _ := New(tc.opts).Update(tea.WindowSizeMsg{Width: 160, Height: 48})
		m, _ := press(t, next.(Model), "3", "down", "K")
		if fmt.Sprint(killed) != fmt.Sprint(tc.want) {
			t.Errorf("%s: K killed %v, want %v", tc.name, killed, tc.want)
		}
		if v := m.View(); (tc.want != nil) != strings.Contains(v, "gpu002 is cut off") {
			t.Errorf("%s: the notice is wrong:\n%s", tc.name, v)
		}
	}
}

// seq40 is what `seq 1 40` prints.
func seq40() string {
	var b strings.Builder
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	return b.String()
}

// Output longer than the pane scrolls, and the pane says how much is
// below: `seq 1 40` on 8 hosts folds into one group whose 40 lines are all
// reached with page down and end, the last one included.
func TestFleetScrollsLongOutput(t *testing.T) {
	for _, sz := range []struct{ w, h int }{{80, 24}, {160, 48}} {
		suffix := "_" + itoa(sz.w) + "x" + itoa(sz.h)
		m := newFleetModel(t, fakeFleet{n: 8, odd: -1, out: seq40()}, sz.w, sz.h)
		m, cmd := press(t, m, "3", ":", "s", "e", "q", " ", "1", " ", "4", "0", "enter")
		m = drain(t, m, cmd)
		v := m.View()
		if !strings.Contains(v, "more lines below · pgdn") || strings.Contains(v, "\n  40 ") {
			t.Errorf("%s: the folded pane does not say what is below:\n%s", suffix, v)
		}
		golden(t, "fleet_seq40"+suffix, v)
		m, _ = press(t, m, "pgdown")
		if v := m.View(); !strings.Contains(v, "above ·") {
			t.Errorf("%s: a page down shows no position:\n%s", suffix, v)
		}
		m, _ = press(t, m, "end")
		v = m.View()
		if !strings.Contains(v, "  40 ") || !strings.Contains(v, "end of output") {
			t.Errorf("%s: end does not reach the last line:\n%s", suffix, v)
		}
		golden(t, "fleet_seq40_end"+suffix, v)
		m, _ = press(t, m, "home")
		if v := m.View(); !strings.Contains(v, "gpu[001-008] (8 hosts): ok") {
			t.Errorf("%s: home does not go back to the top:\n%s", suffix, v)
		}
	}
}

// The mouse wheel scrolls the output pane, and only the shown view's.
func TestFleetWheelScrolls(t *testing.T) {
	m := newFleetModel(t, fakeFleet{n: 8, odd: -1, out: seq40()}, 80, 24)
	m, cmd := press(t, m, "3", ":", "x", "enter")
	m = drain(t, m, cmd)
	next, _ := m.Update(tea.MouseMsg{Button: tea.MouseButtonWheelDown, Action: tea.MouseActionPress})
	if v := next.(Model).View(); !strings.Contains(v, "↑ 3 above") {
		t.Errorf("a wheel turn down does not scroll 3 lines:\n%s", v)
	}
}

// Folded output never drops a group: with gpu008 printing one line more,
// the end of the pane is its group and its difference.
func TestFleetFoldedKeepsTheLastGroup(t *testing.T) {
	m := newFleetModel(t, fakeFleet{n: 8, odd: 7, out: seq40()}, 80, 24)
	m, cmd := press(t, m, "3", ":", "x", "enter")
	m = drain(t, m, cmd)
	m, _ = press(t, m, "end")
	v := m.View()
	for _, want := range []string{"gpu008 (1 host): ok", "+41", "end of output"} {
		if !strings.Contains(v, want) {
			t.Errorf("the end of the folded pane lacks %q:\n%s", want, v)
		}
	}
}

// While a command runs, the selected host's pane follows its output's
// end; once the run ends the result is shown from its top.
func TestFleetFollowsLiveOutput(t *testing.T) {
	m := newFleetModel(t, fakeFleet{n: 2, odd: -1, out: seq40()}, 80, 24)
	m, cmd := press(t, m, "3", ":", "x", "enter") // start sets the pane to follow
	v := m.views[2].(*fleetView)
	v.pane = paneHost
	v.apply(orchestrator.Event{Kind: orchestrator.HostConnecting, Index: 0, Host: "gpu001", Time: time.Now()})
	v.apply(orchestrator.Event{Kind: orchestrator.StepOutput, Index: 0, Host: "gpu001", Stream: 1, Output: []byte(seq40())})
	if got := m.View(); !strings.Contains(got, "\n40 ") || !strings.Contains(got, "lines above") {
		t.Errorf("the running host's pane does not follow its output:\n%s", got)
	}
	m = drain(t, m, cmd)
	if got := m.View(); !strings.Contains(got, "more lines below") {
		t.Errorf("the finished run is not shown from its top:\n%s", got)
	}
}

// A pane switched to during a run (o, until the host's own output) starts
// at its end and follows the lines that arrive, as one chosen before the
// run does; when the run ends, the pane the operator chose stays, and so
// does their place in it.
func TestFleetPaneChosenMidRunFollows(t *testing.T) {
	m := newFleetModel(t, fakeFleet{n: 2, odd: -1, out: seq40()}, 80, 24)
	m, cmd := press(t, m, "3", ":", "x", "enter")
	m = drain(t, m, cmd) // two hosts: the first run ends on the folded pane
	m, cmd = press(t, m, ":", "y", "enter")
	v := m.views[2].(*fleetView)
	if v.pane != paneFolded || !v.running {
		t.Fatalf("the second run does not start on the folded pane: pane %d, running %v", v.pane, v.running)
	}
	v.apply(orchestrator.Event{Kind: orchestrator.HostConnecting, Index: 0, Host: "gpu001", Time: time.Now()})
	v.apply(orchestrator.Event{Kind: orchestrator.StepOutput, Index: 0, Host: "gpu001", Stream: 1, Output: []byte(seq40())})
	m, _ = press(t, m, "o", "o") // the log, then the host's output
	if got := m.View(); !strings.Contains(got, "output of gpu001") || !strings.Contains(got, "\n40 ") || !strings.Contains(got, "lines above") {
		t.Errorf("the host's pane chosen mid-run does not start at its end:\n%s", got)
	}
	v.apply(orchestrator.Event{Kind: orchestrator.StepOutput, Index: 0, Host: "gpu001", Stream: 1, Output: []byte("41\n42\n")})
	if got := m.View(); !strings.Contains(got, "\n42 ") {
		t.Errorf("the host's pane chosen mid-run does not follow its output:\n%s", got)
	}
	m, _ = press(t, m, "pgup")
	before := m.View()
	m = drain(t, m, cmd)
	after := m.View()
	if !strings.Contains(after, "output of gpu001") || strings.Contains(after, "folded output") {
		t.Fatalf("the run's end left the pane the operator chose:\n%s", after)
	}
	above := regexp.MustCompile(`↑ \d+ above`)
	if a, b := above.FindString(before), above.FindString(after); a == "" || a != b {
		t.Errorf("the run's end moved the operator's place in the pane (%q, then %q):\n%s\n---\n%s", a, b, before, after)
	}
	// The folded pane chosen during a run has nothing to follow until it
	// ends: then its groups show from their top.
	m, cmd = press(t, m, ":", "z", "enter")
	m, _ = press(t, m, "o")
	if v.pane != paneFolded || !v.running {
		t.Fatalf("o from the host's pane during a run is not the folded pane: %d", v.pane)
	}
	m = drain(t, m, cmd)
	if got := m.View(); !strings.Contains(got, "gpu[001-002] (2 hosts): ok") || !strings.Contains(got, "more lines below") {
		t.Errorf("the folded pane chosen during the run does not show the results from their top:\n%s", got)
	}
}

// A host's output cannot drive the operator's terminal: an escape
// sequence (clear the screen, retitle), a bell and a C1 CSI are shown
// escaped; a carriage return shows what a terminal would (the text after
// it); tabs become spaces to the next 8-column stop of the text as shown
// (the escapes included), in the host table, the folded pane and the
// host's own output.
func TestFleetEscapesHostOutput(t *testing.T) {
	lipgloss.SetColorProfile(termenv.Ascii)
	hostile := "x\x1b[2Jafter\x1b]0;PWNED\x07 \u009b31m\tcol\r\n10%\r55%\r100% done\n"
	m := newFleetModel(t, fakeFleet{n: 3, odd: -1, out: hostile}, 120, 32)
	m, _ = press(t, m, "3", ":", "x")
	m, cmd := press(t, m, "enter")
	m = drain(t, m, cmd)
	for _, view := range []string{m.View(), func() string { m, _ = press(t, m, "o", "o"); return m.View() }()} { // folded, then the host's
		if strings.ContainsAny(view, "\x1b\x07\r\t\u009b") {
			t.Fatalf("a host's control characters reach the screen:\n%q", view)
		}
		for _, want := range []string{`x\x1b[2Jafter\x1b]0;PWNED\a \u009b31m   col`, "100% done"} {
			if !strings.Contains(view, want) {
				t.Errorf("the view lacks %q:\n%s", want, view)
			}
		}
		if strings.Contains(view, "55%") {
			t.Errorf("text a carriage return overwrote is shown:\n%s", view)
		}
	}
	if !strings.Contains(m.View(), "output of gpu001") {
		t.Errorf("o o did not show the host's own output:\n%s", m.View())
	}
}

// A running host's row shows its last line escaped, as its result will
// be: a retitle sent mid-run does not reach the terminal.
func TestFleetEscapesLiveOutput(t *testing.T) {
	v := newFleetView(fakeFleet{n: 1, odd: -1}, DefaultStyles())
	v.SetSize(160, 40)
	v.apply(orchestrator.Event{Kind: orchestrator.HostConnecting, Index: 0, Host: "gpu001", Time: time.Now()})
	v.apply(orchestrator.Event{Kind: orchestrator.StepOutput, Index: 0, Host: "gpu001", Stream: 1, Output: []byte("\x1b]0;PWNED\x07 50%\tx\n")})
	if row := v.row(0); strings.ContainsAny(row, "\x1b\x07\t") || !strings.Contains(row, `\x1b]0;PWNED\a 50%      x`) {
		t.Errorf("the running row is not escaped: %q", row)
	}
}

// Output cut at the limit says so, in the host's output and in the
// folded pane.
func TestFleetSaysOutputWasCut(t *testing.T) {
	v := newFleetView(fakeFleet{n: 1}, DefaultStyles())
	v.SetSize(120, 32)
	v.rows = []hostRow{{FleetHost: app.FleetHost{Name: "gpu001"}, state: stateDone, result: &orchestrator.HostResult{Host: "gpu001",
		Steps: []orchestrator.Result{{Stdout: []byte("1\n2\n"), Truncated: true, StdoutBytes: 2000008}}}}}
	v.pane = paneHost
	got := strings.Join(v.paneLines(), "\n")
	if !strings.Contains(got, "[output cut: 2000008 bytes of stdout and 0 of stderr came, the first 4 and 0 were kept]") {
		t.Errorf("the host's output does not say it was cut:\n%s", got)
	}
}

// A second command replaces the first in the field instead of being
// appended to it; ↑ on the empty field brings the last one back.
func TestFleetCommandFieldStartsEmpty(t *testing.T) {
	m := newFleetModel(t, fakeFleet{n: 2, odd: -1}, 120, 32)
	m, _ = press(t, m, "3", ":", "a")
	m, cmd := press(t, m, "enter")
	m = drain(t, m, cmd)
	m, _ = press(t, m, ":", "b")
	if v := m.View(); !strings.Contains(v, "$ b") || strings.Contains(v, "$ ab") {
		t.Errorf("the second command is not typed alone:\n%s", v)
	}
	m, _ = press(t, m, "backspace", "up")
	if v := m.View(); !strings.Contains(v, "$ a") {
		t.Errorf("↑ on the empty field does not bring the last command back:\n%s", v)
	}
}

// During a run, : opens the command field as before one: a command typed
// right away lands in it instead of running key by key as shortcuts (the
// q of seq quit the workbench). Enter does not start a second run: it
// says why and keeps the text, which enter runs once the run has ended.
func TestFleetCommandFieldDuringRun(t *testing.T) {
	m := newFleetModel(t, fakeFleet{n: 3, odd: -1}, 100, 30)
	m, first := press(t, m, "3", ":", "x", "enter")
	m, cmd := press(t, m, ":", "s", "e", "q", " ", "3")
	if _, quit := msgOf(cmd).(tea.QuitMsg); quit || strings.Contains(m.View(), "again quits") || !strings.Contains(m.View(), "$ seq 3") {
		t.Fatalf("a command typed during a run does not go to the field (quit %v):\n%s", quit, m.View())
	}
	m, _ = press(t, m, "enter")
	v := m.views[2].(*fleetView)
	if got := m.View(); !strings.Contains(got, "$ seq 3") || !strings.Contains(got, "a run is going: c cancels it") || v.command != "x" || !v.typing {
		t.Fatalf("enter during a run started another, or lost the text (running %q):\n%s", v.command, got)
	}
	m = drain(t, m, first)
	if got := m.View(); !strings.Contains(got, "$ seq 3") || strings.Contains(got, "a run is going") {
		t.Fatalf("after the run the field lost its text, or still says a run is going:\n%s", got)
	}
	m, cmd = press(t, m, "enter")
	m = drain(t, m, cmd)
	if got := m.View(); !strings.Contains(got, "$ seq 3 done") {
		t.Errorf("enter after the run does not run the command kept:\n%s", got)
	}
}

// At 80 columns, during a run whose output pane offers pgdn, the status
// bar still offers c: the hint that stops a run is the last to go.
func TestFleetStatusBarKeepsCancel(t *testing.T) {
	m := newFleetModel(t, fakeFleet{n: 2, odd: -1}, 80, 24)
	m, _ = press(t, m, "3", ":", "x", "enter")
	v := m.views[2].(*fleetView)
	v.apply(orchestrator.Event{Kind: orchestrator.HostConnecting, Index: 0, Host: "gpu001", Time: time.Now()})
	v.apply(orchestrator.Event{Kind: orchestrator.StepOutput, Index: 0, Host: "gpu001", Stream: 1, Output: []byte(longLine + "\n" + seq40())})
	m, _ = press(t, m, "pgup")
	lines := strings.Split(m.View(), "\n")
	if bar := lines[len(lines)-1]; !strings.Contains(bar, "pgdn more output") || !strings.Contains(bar, "c cancel the run") {
		t.Errorf("during a run the status bar does not offer both pgdn and c: %q", bar)
	}
}

// A host reached by a route that does not say it is simulated (-H and an
// ssh_config) is marked SIM as soon as a connection shows it is (its
// handshake), and the header says SIMULATED; the mark stays for the
// runs after.
func TestFleetMarksSimulatedOnConnect(t *testing.T) {
	m := newFleetModel(t, fakeFleet{n: 3, odd: -1}, 120, 32)
	m, cmd := press(t, m, "3", ":", "x", "enter")
	if v := m.View(); strings.Contains(v, "SIM") {
		t.Fatalf("a fleet not known to be simulated says SIM:\n%s", v)
	}
	fv := m.views[2].(*fleetView)
	fv.apply(orchestrator.Event{Kind: orchestrator.HostConnecting, Index: 1, Host: "gpu002", Time: time.Now()})
	fv.apply(orchestrator.Event{Kind: orchestrator.HostConnected, Index: 1, Host: "gpu002", Time: time.Now(), Simulated: true})
	for _, when := range []string{"connected", "done", "the next run"} {
		switch when {
		case "done":
			m = drain(t, m, cmd)
		case "the next run":
			m, _ = press(t, m, ":", "y", "enter")
		}
		v := m.View()
		if !strings.HasPrefix(v, "gpulab  SIMULATED ") || !regexp.MustCompile(`(?m)^  gpu002 SIM `).MatchString(v) || strings.Contains(v, "gpu001 SIM") {
			t.Errorf("%s: the header or gpu002 alone does not say it is simulated:\n%s", when, v)
		}
	}
}

// msgOf is what cmd sends (nil: none).
func msgOf(cmd tea.Cmd) tea.Msg {
	if cmd == nil {
		return nil
	}
	return cmd()
}

// longLine is a host's output line of 200 characters, its end marked.
var longLine = "begin " + strings.Repeat("0123456789", 19) + " END"

// pressUntil presses k until the view is as done wants, at most limit
// times; it returns the model and how many presses it took (0: never).
func pressUntil(t *testing.T, m Model, k string, done func(view string) bool, limit int) (Model, int) {
	t.Helper()
	for i := 1; i <= limit; i++ {
		m, _ = press(t, m, k)
		if done(m.View()) {
			return m, i
		}
	}
	return m, 0
}

// At 80 columns a line of 200 in the output pane is cut with "…", and >
// shows the rest, a step at a time, to its end and no further; < comes
// back. The status bar and the pane's marker offer only the keys that
// move it.
func TestFleetScrollsSideways(t *testing.T) {
	m := newFleetModel(t, fakeFleet{n: 8, odd: -1, out: longLine + "\n" + seq40()}, 80, 24)
	m, cmd := press(t, m, "3", ":", "x", "enter")
	m = drain(t, m, cmd)
	start := m.View()
	if !regexp.MustCompile(`(?m)^  begin [0-9]+…$`).MatchString(start) || strings.Contains(start, "END") {
		t.Fatalf("the long line is not cut at the edge:\n%s", start)
	}
	if !strings.Contains(start, "below · pgdn · > sideways") || !strings.Contains(start, "> sideways  ") || strings.Contains(start, "< sideways") {
		t.Errorf("the Fleet does not offer > alone:\n%s", start)
	}
	golden(t, "fleet_wide_80x24", start)
	m, n := pressUntil(t, m, ">", func(v string) bool { return strings.Contains(v, "END") }, 10)
	if n < 2 {
		t.Fatalf("> took %d presses to show the end (0: never), want a few steps:\n%s", n, m.View())
	}
	end := m.View()
	if !regexp.MustCompile(`(?m)^…[0-9 ]+END *$`).MatchString(end) || strings.Contains(end, "> sideways") || !strings.Contains(end, "< sideways") {
		t.Errorf("at its end the line lacks its … on the left, or > is still offered:\n%s", end)
	}
	golden(t, "fleet_wide_end_80x24", end)
	if m, _ = press(t, m, ">"); m.View() != end {
		t.Errorf("> moved past the end of the widest line:\n%s", m.View())
	}
	if m, n = pressUntil(t, m, "<", func(v string) bool { return v == start }, 10); n == 0 {
		t.Errorf("< does not come back to the start:\n%s", m.View())
	}
	// Another pane (o: the command log, whose long command runs past the
	// edge) starts at its left edge: the column was carried over and hid
	// the start of every command.
	long := "for i in $(seq 1 40); do echo tick $i; sleep 0.25; done # " + strings.Repeat("x", 60)
	m, cmd = press(t, m, ":", long, "enter")
	m = drain(t, m, cmd)
	m, _ = press(t, m, ">", ">", ">", "o")
	if v := m.View(); !strings.Contains(v, "command log") || !regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d  for i in`).MatchString(v) {
		t.Errorf("the command log does not start at its left edge:\n%s", v)
	}
}

// The host view's GPU table fits the screen: at 80 columns it keeps
// what says whether a GPU is sick (memory, ECC, MIG, findings), names
// the columns it leaves out, and > still reaches the end of the
// topology grid; at 160 it leaves out nothing.
func TestFleetHostViewFitsItsGPUTable(t *testing.T) {
	m := newFleetModel(t, fakeFleet{n: 2, odd: -1}, 80, 24)
	m, cmd := press(t, m, "3", "p")
	m = drain(t, m, cmd)
	m, _ = press(t, m, "enter")
	v := m.View()
	if !regexp.MustCompile(`(?m)^GPU +MEMORY +UTIL +TEMP +ECC +MIG +NVLINK +FINDINGS *$`).MatchString(v) ||
		!regexp.MustCompile(`(?m)^0 +\[░+\] 0/40960 MiB +0% +29C on 0 UE 0 CE +3g\.20gb×2 +12/12 up +- *$`).MatchString(v) {
		t.Errorf("the host view at 80 columns does not show each GPU's memory, ECC, MIG and findings unscrolled:\n%s", v)
	}
	if !strings.Contains(v, "not shown: BUS, POWER, NAME, NUMA (") || !strings.Contains(v, "> sideways") {
		t.Errorf("the host view at 80 columns does not name the columns it leaves out, or does not offer > for the rest:\n%s", v)
	}
	golden(t, "fleet_host_narrow_80x24", v)
	if m, n := pressUntil(t, m, ">", func(v string) bool { return strings.Contains(v, "CPU affinity") && !strings.Contains(v, "> sideways") }, 20); n == 0 {
		t.Errorf("> never reaches the end of the topology grid:\n%s", m.View())
	}

	m = newFleetModel(t, fakeFleet{n: 2, odd: -1}, 160, 48)
	m, cmd = press(t, m, "3", "p")
	m = drain(t, m, cmd)
	m, _ = press(t, m, "enter")
	if v := m.View(); !regexp.MustCompile(`(?m)^GPU +NAME +BUS +MEMORY +UTIL +TEMP +POWER +ECC +MIG +NUMA +NVLINK +FINDINGS *$`).MatchString(v) || strings.Contains(v, "not shown:") {
		t.Errorf("the host view at 160 columns leaves a column of the GPU table out:\n%s", v)
	}
}

// With names masked, a shifted pane masks a line before cutting it: at
// no column does a piece of a host's name or address show, where a mask
// after the cut would no longer know it for one.
func TestFleetSidewaysMasked(t *testing.T) {
	c, err := landscape.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	// The pane has the name from column 79: two steps of > (column 80)
	// leave its first two letters behind the pane's left edge.
	out := strings.Repeat("x", 76) + " gpu003 at 127.0.0.1:2203 " + strings.Repeat("y", 120) + "\n"
	m := New(Options{Catalog: c, Inventory: inventory.Empty(), Fleet: loopbackFleet{fakeFleet{n: 4, odd: -1, out: out}}, Styles: DefaultStyles(), Mask: true})
	next, _ := m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	m, cmd := press(t, next.(Model), "3", ":", "x", "enter")
	m = drain(t, m, cmd)
	piece := regexp.MustCompile(`pu0|u00|0\.0\.|\.0\.|27\.0|:22`)
	seen := false
	for range 12 {
		v := m.View()
		if loc := piece.FindStringIndex(v); loc != nil {
			t.Errorf("%q of a name or address on screen:\n%s", v[loc[0]:loc[1]], v)
		}
		seen = seen || strings.Contains(v, "host-3 at masked")
		m, _ = press(t, m, ">")
	}
	if !seen {
		t.Errorf("> never showed the masked name and address")
	}
}

// A folded group whose node set is longer than the pane (hosts failing
// here and there among 300) wraps its head: its host count and class are
// never cut off (they came after a set cut with …).
func TestFleetFoldedHeadWraps(t *testing.T) {
	m := newFleetModel(t, fakeFleet{n: 300, odd: -1}, 80, 24)
	m, cmd := press(t, m, "3", ":", "x", "enter")
	m = drain(t, m, cmd)
	v := m.views[2].(*fleetView)
	var names []string
	for i := 1; i <= 300; i += 2 {
		names = append(names, fmt.Sprintf("gpu%03d", i))
	}
	v.groups = []orchestrator.Group{{NodeSet: inventory.FoldNames(names), Hosts: names, Class: orchestrator.Killed}}
	v.pane = paneFolded
	flat := strings.Join(strings.Fields(m.View()), " ")
	if !strings.Contains(flat, "150 hosts, killed: gpu[001,003,") {
		t.Errorf("the group's count and class are cut:\n%s", m.View())
	}
	if v := m.View(); !strings.Contains(v, "\n150 hosts, killed: gpu[001,003,") {
		t.Errorf("the group's head does not start with its count:\n%s", v)
	}
}

// What a host says of its processes is drawn escaped and cut by cells,
// and a container id shorter than 12 bytes is shown whole (it was sliced
// at 12, and a snapshot with a short one panicked the workbench).
func TestHostViewProcessesFromAnUntrustedHost(t *testing.T) {
	s := &report.Snapshot{Host: "gpu01", NVML: report.NVMLState{Available: true}, Processes: []report.Process{
		{GPU: 0, PID: 7, Name: "\x1b]0;owned\a训练任务训练任务训练任务", UsedMiB: 10, ContainerID: "abc"},
		{GPU: 1, PID: 8, Name: "py", UsedMiB: 20, PodUID: "uid\x1b[31m"},
	}}
	out := renderHost(s, false, DefaultStyles(), 100)
	if strings.Contains(out, "\x1b]0;") || strings.Contains(out, "\x1b[31m") {
		t.Errorf("an escape sequence the host sent reached the screen:\n%q", out)
	}
	// A host that says it uses more memory than it has is drawn full, not
	// a panic (strings.Repeat of a negative count).
	s.GPUs = []report.GPU{{Index: 0, Memory: &report.Memory{TotalMiB: 100, UsedMiB: 250}}}
	if out := renderHost(s, false, DefaultStyles(), 100); !strings.Contains(out, "[████████] 250/100 MiB") {
		t.Errorf("memory over its total:\n%s", out)
	}
	for _, want := range []string{"container abc", `pod uid\x1b[31m`, `\x1b]0;owned\a…`} {
		if !strings.Contains(out, want) {
			t.Errorf("the processes lack %q:\n%s", want, out)
		}
	}
}
