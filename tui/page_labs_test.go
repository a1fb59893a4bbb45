package tui

import (
	"context"
	"fmt"
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
	"github.com/gpulab/gpulab/orchestrator"
)

// scriptedLabs replays a run's events: the view's contract (labs' own
// tests run real labs on sshd). Host gpu002's topology lacks NVLink.
type scriptedLabs struct{ n int }

func (f scriptedLabs) Hosts() []app.FleetHost { return fakeFleet{n: f.n}.Hosts() }

func (f scriptedLabs) RunLab(ctx context.Context, l *labs.Lab, hosts []int, o app.LabRunOptions, events chan<- app.LabUpdate) {
	params := o.Params
	defer close(events)
	rec := &labs.Record{Lab: l.ID, Name: l.Name, Complete: true}
	all := f.Hosts()
	skip := false
	if o.Guide != nil {
		g := labs.GuideStep{N: 1, Of: 1, Phase: "observe", Step: labs.Step{ID: "topo", Title: "Read the topology"}, Command: "nvidia-smi topo -m",
			Measures: []string{"gpus", "nvlink"}, Criteria: []string{"nvlink-mesh"}}
		skip = o.Guide(ctx, g) != labs.GuideRun
	}
	for i, hi := range hosts {
		h := all[hi]
		step := &labs.StepRecord{ID: "topo", Phase: "observe", Command: "nvidia-smi topo -m"}
		if skip {
			step.Skipped = "skipped by the operator (guided run)"
		} else {
			events <- app.LabUpdate{Event: &labs.Event{Kind: labs.StepStarted, Index: i, Host: h.Name, Phase: "observe", Step: step}}
			smp := labs.Sample{GPUs: []labs.SampleGPU{{Index: 0, UtilPct: ptr(uint32(97)), MemUsedMiB: ptr(uint64(71680))}}}
			events <- app.LabUpdate{Event: &labs.Event{Kind: labs.Sampled, Index: i, Host: h.Name, Phase: "observe", Step: step, Sample: &smp}}
		}
		events <- app.LabUpdate{Event: &labs.Event{Kind: labs.StepFinished, Index: i, Host: h.Name, Phase: "observe", Step: step}}
		m := map[string]any{"gpus": int64(8), "nvlink": "PASS", "nics": int64(1), "near_nic": "PASS", "numa_nodes": int64(2)}
		if i == 1 {
			m["nvlink"] = "FAIL"
		}
		if skip {
			delete(m, "gpus")
		}
		scores := l.Score(m, nil, params, f.n, true)
		events <- app.LabUpdate{Event: &labs.Event{Kind: labs.HostFinished, Index: i, Host: h.Name, Scores: scores}}
		hr := labs.HostRecord{Host: h.Name, Scores: scores, Passed: labs.Passed(scores)}
		rec.Hosts = append(rec.Hosts, hr)
	}
	events <- app.LabUpdate{Record: rec, Dir: "/results/topology-sanity/20261129-100000-gpu[001-003]"}
}

func ptr[T any](v T) *T { return &v }

func newLabsModel(t testing.TB, r LabRunner, w, h int) Model {
	t.Helper()
	c, _ := landscape.Builtin()
	ls, err := labs.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	m := New(Options{Catalog: c, Inventory: inventory.Empty(), LabRunner: r, Labs: ls, Styles: DefaultStyles()})
	next, _ := m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return next.(Model)
}

func TestLabsTab(t *testing.T) {
	m := newLabsModel(t, scriptedLabs{n: 3}, 140, 40)
	m, _ = press(t, m, "5", "home")
	v := m.View()
	for _, want := range []string{"▶ exclusive-baseline", "draft", "30 min", "topology-sanity", "Goal: One vLLM server", "parameters (p sets): base_url = http://127.0.0.1:8000, model = (not set)"} {
		if !strings.Contains(v, want) {
			t.Errorf("lab list lacks %q:\n%s", want, v)
		}
	}
	if !strings.Contains(v, "fast-forward (f): off") {
		t.Errorf("the baseline has a fast-forward, and the list does not say so:\n%s", v)
	}
	m, _ = press(t, m, "f")
	if v := m.View(); !strings.Contains(v, "fast-forward (f): on: its demo fast-forward runs instead of the full steps") {
		t.Errorf("f does not turn the fast-forward on:\n%s", v)
	}
	m, _ = press(t, m, "end")
	if v := m.View(); strings.Contains(v, "fast-forward (f)") {
		t.Errorf("topology-sanity has no fast-forward, yet the list offers one:\n%s", v)
	}
	m, cmd := press(t, m, "enter")
	// The first message is the batch of the updates and the timer tick;
	// drain follows the updates only.
	m = drain(t, m, onlyUpdates(cmd))
	v = m.View()
	for _, want := range []string{"topology-sanity: Topology sanity", "FAILED", "done: gpu[001-003]",
		"✓ PASS    nvlink-mesh (critical) gpu[001,003]: metrics.gpus = 8, metrics.nvlink = \"PASS\"",
		"✗ FAIL    nvlink-mesh (critical) gpu002: metrics.gpus = 8, metrics.nvlink = \"FAIL\"",
		"gpu[001-003]  observe topo: ok", "record: /results/topology-sanity/",
		"probe: 3 samples on gpu[001-003]; latest on gpu001: busiest GPU 97%, 70.0 GiB in use"} {
		if !strings.Contains(v, want) {
			t.Errorf("finished lab lacks %q:\n%s", want, v)
		}
	}
	m, _ = press(t, m, "esc")
	if !strings.Contains(m.View(), "▶ topology-sanity") {
		t.Errorf("esc after the run goes back to the list:\n%s", m.View())
	}
	// h chooses the hosts, p sets the parameters (here the baseline's).
	m, _ = press(t, m, "h")
	m = typeLine(t, m, "gpu00[2-3]")
	if v := m.View(); !strings.Contains(v, "hosts: gpu00[2-3] → gpu[002-003] (2); h chooses, enter runs") {
		t.Errorf("chosen hosts, topology-sanity (no parameters) selected:\n%s", v)
	}
	m, _ = press(t, m, "home")
	if v := m.View(); !strings.Contains(v, "(2); h chooses, p sets parameters, enter runs") {
		t.Errorf("a lab with parameters selected, p is not offered:\n%s", v)
	}
	m, _ = press(t, m, "p")
	if v := m.View(); !strings.Contains(v, "the vLLM server under test") || !strings.Contains(v, "base_url: ") {
		t.Errorf("the first parameter's field:\n%s", v)
	}
	m = typeLine(t, m, "http://10.0.0.7:8000")
	m = typeLine(t, m, "Qwen/Qwen2-7B")
	for i := 0; i < 3; i++ {
		m, _ = press(t, m, "enter") // keep the remaining defaults
	}
	if v := m.View(); !strings.Contains(v, "base_url = http://10.0.0.7:8000, model = Qwen/Qwen2-7B, num_prompts = 200") {
		t.Errorf("parameters set:\n%s", v)
	}
	m, _ = press(t, m, "end")
	m, cmd = press(t, m, "enter")
	m = drain(t, m, onlyUpdates(cmd))
	if v := m.View(); !strings.Contains(v, "on gpu[002-003]") || !strings.Contains(v, "gpu[002-003]  observe topo: ok") {
		t.Errorf("the run on the chosen hosts:\n%s", v)
	}
	for _, sz := range []struct{ w, h int }{{80, 24}, {60, 16}} {
		mm := newLabsModel(t, scriptedLabs{n: 40}, sz.w, sz.h)
		mm, _ = press(t, mm, "5", "end")
		mm, cmd := press(t, mm, "enter")
		mm = drain(t, mm, onlyUpdates(cmd))
		if lines := strings.Split(mm.View(), "\n"); len(lines) != sz.h {
			t.Errorf("%dx%d: %d lines", sz.w, sz.h, len(lines))
		}
	}
}

// t runs a lab step by step: the run waits at the step, showing what it
// runs and measures, until a key answers; s skips it.
func TestLabsTabGuided(t *testing.T) {
	m := newLabsModel(t, scriptedLabs{n: 3}, 140, 40)
	m, _ = press(t, m, "5", "end")
	m, cmd := press(t, m, "t")
	next, wait := m.Update(onlyUpdates(cmd)())
	m = next.(Model)
	v := m.View()
	for _, want := range []string{"waiting for you at step 1/1 (observe · topo) · step by step", "Next: step 1/1 · observe · topo Read the topology", "$ nvidia-smi topo -m",
		"measures gpus, nvlink for nvlink-mesh", "enter runs it · s skips it · esc stops here (cleanup runs)"} {
		if !strings.Contains(v, want) {
			t.Errorf("a guided run waiting at its step lacks %q:\n%s", want, v)
		}
	}
	m, _ = press(t, m, "s")
	m = drain(t, m, wait)
	v = m.View()
	if !strings.Contains(v, "gpu[001-003]  observe topo: skipped: skipped by the operator (guided run)") || !strings.Contains(v, "UNKNOWN") || strings.Contains(v, "Next: step") {
		t.Errorf("after s:\n%s", v)
	}
}

// onlyUpdates keeps the lab-update command of a batch, not the timer.
func onlyUpdates(cmd tea.Cmd) tea.Cmd {
	return func() tea.Msg {
		msg := cmd()
		if b, ok := msg.(tea.BatchMsg); ok {
			for _, c := range b {
				done := make(chan tea.Msg, 1)
				go func() { done <- c() }()
				select {
				case m := <-done:
					if _, ok := m.(streamMsg[app.LabUpdate]); ok {
						return m
					}
				case <-time.After(500 * time.Millisecond):
				}
			}
		}
		return msg
	}
}

func TestResultsTab(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for i, c := range []struct {
		lab      string
		tps, p99 float64
	}{{"exclusive-baseline", 2000, 400}, {"mig-isolation", 900, 480}} {
		r := &labs.Record{Schema: labs.RecordSchema, Lab: c.lab, Name: c.lab, Started: t0.Add(time.Duration(i) * time.Hour), Complete: true, Passed: i == 0,
			Result: labs.ResultRow{Workload: "vLLM", Throughput: "tps", Unit: "tok/s", P99: "p99"},
			Hosts:  []labs.HostRecord{{Host: "gpu07", Passed: i == 0, Metrics: map[string]any{"tps": c.tps, "p99": c.p99}}}}
		writeRecord(t, dir, r)
	}
	c, _ := landscape.Builtin()
	m := New(Options{Catalog: c, Inventory: inventory.Empty(), Results: dir, Styles: DefaultStyles()})
	m = drain(t, m, m.Init()) // the records are read off the UI goroutine
	next, _ := m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	m = next.(Model)
	m, _ = press(t, m, "6")
	v := m.View()
	if !strings.Contains(v, "▶ ") || !strings.Contains(v, "mig-isolation        gpu07            failed") || strings.Index(v, "mig-isolation") > strings.Index(v, "exclusive-baseline") {
		t.Fatalf("records, newest first:\n%s", v)
	}
	m, _ = press(t, m, "down", "b", "up", "c")
	v = m.View()
	if !strings.Contains(v, "throughput 900 tok/s (× 0.45)") || !strings.Contains(v, "P99 480 (interference 1.2)") {
		t.Errorf("comparison against the marked baseline:\n%s", v)
	}
	m, cmd := press(t, m, "esc", "enter")
	m = drain(t, m, cmd) // the record is read off the UI goroutine
	if v := m.View(); !strings.Contains(v, "Lab record: mig-isolation") || strings.Contains(v, "| Host |") {
		t.Errorf("enter opens the record, rendered:\n%s", v)
	}
	// A resize draws the open record again for the new width.
	longest := func(v string) int {
		n := 0
		for _, l := range strings.Split(v, "\n") {
			n = max(n, lipgloss.Width(strings.TrimRight(ansi.Strip(l), " ")))
		}
		return n
	}
	narrow := longest(m.View())
	mm, _ := m.Update(tea.WindowSizeMsg{Width: 200, Height: 40})
	m = mm.(Model)
	if wide := longest(m.View()); wide <= narrow {
		t.Errorf("the record was not drawn again wider: %d columns at most, %d before", wide, narrow)
	}
}

// TestResultsTabEscapesRecords: a record's lab id and host names, and its
// record.md, are anyone's text: the Results tab shows their control
// characters escaped (the view, drawn without colour here, holds none).
func TestResultsTabEscapesRecords(t *testing.T) {
	const pwned = "\x1b]0;pwned\a\x1b[31m"
	dir := t.TempDir()
	r := &labs.Record{Schema: labs.RecordSchema, Lab: "lab" + pwned, Name: "name" + pwned, Started: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), Complete: true,
		Hosts: []labs.HostRecord{{Host: "gpu" + pwned}}}
	writeRecord(t, dir, r)
	m := resultsModel(t, dir)
	m, _ = press(t, m, "6")
	list := m.View()
	m, cmd := press(t, m, "enter")
	m = drain(t, m, cmd)
	record := m.View()
	for name, v := range map[string]string{"the list": list, "the record": record} {
		if strings.ContainsAny(v, "\x1b\a") || !strings.Contains(v, `\x1b]0;pwned\a`) {
			t.Errorf("%s shows the record's control characters raw, or not at all:\n%q", name, v)
		}
	}
}

// The baseline is a record, not a line of the list: after a new record
// arrives and the list reloads, the comparison is still against it (never
// a run against itself).
func TestResultsBaselineSurvivesReload(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	write := func(i int, tps float64) {
		r := &labs.Record{Schema: labs.RecordSchema, Lab: "exclusive-baseline", Name: "x", Started: t0.Add(time.Duration(i) * time.Hour), Complete: true,
			Result: labs.ResultRow{Workload: "vLLM", Throughput: "tps", Unit: "tok/s"},
			Hosts:  []labs.HostRecord{{Host: "gpu07", Metrics: map[string]any{"tps": tps}}}}
		writeRecord(t, dir, r)
	}
	write(0, 1000)
	write(1, 500)
	c, _ := landscape.Builtin()
	m := New(Options{Catalog: c, Inventory: inventory.Empty(), Results: dir, Styles: DefaultStyles()})
	m = drain(t, m, m.Init())
	next, _ := m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	m = next.(Model)
	m, _ = press(t, m, "6", "down", "b") // the older run (1000 tok/s) is the baseline
	write(2, 250)
	m, cmd := press(t, m, "r")
	m = drain(t, m, cmd)
	m, _ = press(t, m, "up", "up", "c") // the selection stayed on its record: up to the newest, against the baseline
	if v := m.View(); !strings.Contains(v, "throughput 250 tok/s (× 0.25)") {
		t.Errorf("after a reload the newest run is compared with the marked baseline (1000 tok/s):\n%s", v)
	}
}

// TestResultsTabMarksSimulated: a record of a simulated fleet is marked
// SIM in the Results list, at the start of its row (where a narrow
// terminal cannot cut it off), and the columns stay in line: the other
// rows and the header make room for the mark.
func TestResultsTabMarksSimulated(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for i, sim := range []bool{false, true} {
		r := &labs.Record{Schema: labs.RecordSchema, Lab: "topology-sanity", Name: "t", Started: t0.Add(time.Duration(i) * time.Hour), Complete: true,
			Simulated: sim, Hosts: []labs.HostRecord{{Host: fmt.Sprintf("dgx%02d", i+1)}}}
		writeRecord(t, dir, r)
	}
	c, _ := landscape.Builtin()
	m := New(Options{Catalog: c, Inventory: inventory.Empty(), Results: dir, Styles: DefaultStyles()})
	m = drain(t, m, m.Init())
	next, _ := m.Update(tea.WindowSizeMsg{Width: 120, Height: 24})
	m = next.(Model)
	m, _ = press(t, m, "6")
	v := m.View()
	var header, simRow, realRow string
	for _, l := range strings.Split(v, "\n") {
		switch {
		case strings.Contains(l, "STARTED"):
			header = l
		case strings.Contains(l, "dgx02"):
			simRow = l
		case strings.Contains(l, "dgx01"):
			realRow = l
		}
	}
	col := func(line, s string) int {
		i := strings.Index(line, s)
		if i < 0 {
			return -1
		}
		return lipgloss.Width(line[:i])
	}
	if !strings.Contains(simRow, "▶ SIM 2026-11-29") || strings.Contains(realRow, "SIM") {
		t.Errorf("the simulated record's row is not marked SIM at its start, or the real one's is:\n%s", v)
	}
	for _, c := range []struct{ head, row string }{{"STARTED", "2026-11-29"}, {"LAB", "topology-sanity"}, {"RESULT", "failed"}, {"RUN", "2026112"}} {
		h, s, r := col(header, c.head), col(simRow, c.row), col(realRow, c.row)
		if h < 0 || s != h || r != h {
			t.Errorf("column %s starts at %d in the header, %d in the simulated row, %d in the real one: want the same\n%s", c.head, h, s, r, v)
		}
	}
	// The comparison says which run was on a simulated fleet.
	m, _ = press(t, m, "down", "b", "up", "c")
	v = m.View()
	if !strings.Contains(v, "topology-sanity on dgx02: failed, SIMULATED fleet") || strings.Contains(v, "dgx01: failed, SIMULATED") {
		t.Errorf("the comparison does not say which run was simulated:\n%s", v)
	}
}

// Rows keep their columns with wide characters: a lab named in CJK takes
// the same columns as one in ASCII.
func TestResultsRowsWithWideCharacters(t *testing.T) {
	v := &resultsView{}
	a := v.rowText("2026-11-29 10:00:00", "宽字符的实验名字很长很长", "gpu[01-02]", "passed", "", "run")
	b := v.rowText("2026-11-29 10:00:00", "topology-sanity", "gpu[01-02]", "passed", "", "run")
	if lipgloss.Width(a) != lipgloss.Width(b) || strings.Index(a, "gpu[01-02]") < 0 {
		t.Errorf("rows misaligned: %d and %d columns\n%s\n%s", lipgloss.Width(a), lipgloss.Width(b), a, b)
	}
}

// TestLabsStepsShowTheRunningStep: the Steps list says which step each
// host runs now, hosts on the same step folded; a finished step leaves
// it (the list showed only finished steps while a long one ran).
func TestLabsStepsShowTheRunningStep(t *testing.T) {
	v := newLabsView(scriptedLabs{n: 1}, nil, nil, DefaultStyles())
	v.phase, v.current = map[string]string{}, map[string]string{}
	for _, h := range []string{"gpu001", "gpu002", "gpu003"} {
		v.apply(app.LabUpdate{Event: &labs.Event{Kind: labs.StepStarted, Host: h, Phase: "observe", Step: &labs.StepRecord{ID: "topo"}}})
	}
	if got := strings.Join(v.runningSteps(), "\n"); got != "  gpu[001-003]  observe topo: running…" {
		t.Errorf("three hosts on one step: %q", got)
	}
	v.apply(app.LabUpdate{Event: &labs.Event{Kind: labs.StepFinished, Host: "gpu002", Phase: "observe", Step: &labs.StepRecord{ID: "topo", ExitCode: 0}}})
	if got := strings.Join(v.runningSteps(), "\n"); got != "  gpu[001,003]  observe topo: running…" {
		t.Errorf("one host finished: %q", got)
	}
	if len(v.log) != 1 || v.log[0].hosts[0] != "gpu002" {
		t.Errorf("the finished step is not logged: %+v", v.log)
	}
}

// heldLabs sends a run's record, then holds its channel open until
// release: the moment between the record and the close.
type heldLabs struct {
	scriptedLabs
	release chan struct{}
}

func (f heldLabs) RunLab(ctx context.Context, l *labs.Lab, hosts []int, o app.LabRunOptions, events chan<- app.LabUpdate) {
	inner := make(chan app.LabUpdate)
	go f.scriptedLabs.RunLab(ctx, l, hosts, o, inner)
	for u := range inner {
		events <- u
	}
	<-f.release
	close(events)
}

// The record is a lab run's last word: once it is shown, the run is over,
// and q quits at once (it asked "a run is going" when the record and the
// channel's close came in two frames: a busy machine's demo hung on it).
func TestLabRecordEndsTheRun(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	m := newLabsModel(t, heldLabs{scriptedLabs{n: 3}, release}, 140, 40)
	m, _ = press(t, m, "5", "end")
	m, cmd := press(t, m, "enter")
	wait := onlyUpdates(cmd)
	for deadline := time.Now().Add(10 * time.Second); ; {
		next, c := m.Update(wait())
		m = next.(Model)
		if strings.Contains(m.View(), "record: /results/topology-sanity/") {
			break
		}
		if c == nil || time.Now().After(deadline) {
			t.Fatalf("waited 10 s for the run's record, which never came:\n%s", m.View())
		}
		wait = c
	}
	if n := m.running(); n != 0 {
		t.Errorf("the record is shown, and the workbench counts %d hosts still running", n)
	}
	if _, quit := msgOf(func() tea.Cmd { _, c := press(t, m, "q"); return c }()).(tea.QuitMsg); !quit {
		t.Errorf("q after the record did not quit:\n%s", m.View())
	}
}

// TestResultsTabReadsTheRecordAgainWhenItsRunEnds: a presenter's last
// step opens the newest record while its run may still be writing it (on
// a busy machine it read "INCOMPLETE … no end recorded"); when a lab run
// ends, the open record is read again, in place, and shows the end.
func TestResultsTabReadsTheRecordAgainWhenItsRunEnds(t *testing.T) {
	dir := t.TempDir()
	r := &labs.Record{Schema: labs.RecordSchema, Lab: "topology-sanity", Name: "Topology sanity", Started: time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC),
		Hosts: []labs.HostRecord{{Host: "gpu01", Class: orchestrator.OK}}}
	d := writeRecord(t, dir, r) // saved mid-run
	m := resultsModel(t, dir)
	m, cmd := press(t, m, "6", "enter")
	m = drain(t, m, cmd)
	if v := m.View(); !strings.Contains(v, "no end recorded") {
		t.Fatalf("the record saved mid-run:\n%s", v)
	}
	r.Finished, r.Complete, r.Passed = r.Started.Add(time.Minute), true, false
	if err := r.Write(d, ""); err != nil { // the run's end
		t.Fatal(err)
	}
	next, cmd := m.Update(recordsChangedMsg{}) // what the Labs page sends when its run ends
	m = drain(t, next.(Model), cmd)
	if v := m.View(); strings.Contains(v, "no end recorded") || !strings.Contains(v, "Lab record: Topology sanity") || !strings.Contains(v, "(1m0s), complete") {
		t.Errorf("the open record was not read again when the run ended:\n%s", v)
	}
}

// When a lab run from the Labs page ends, the page says the records
// changed (the Results page reads them again on that, and on no other
// page's message).
func TestLabRunEndSaysTheRecordsChanged(t *testing.T) {
	m := newLabsModel(t, scriptedLabs{n: 2}, 140, 40)
	m, _ = press(t, m, "5", "end")
	m, cmd := press(t, m, "enter")
	for deadline := time.Now().Add(10 * time.Second); ; {
		if cmd == nil || time.Now().After(deadline) {
			t.Fatalf("waited 10 s for the run's end to say the records changed:\n%s", m.View())
		}
		msg := onlyUpdates(cmd)()
		if _, ok := msg.(recordsChangedMsg); ok {
			return
		}
		var next tea.Model
		next, cmd = m.Update(msg)
		m = next.(Model)
	}
}

// resultsModel is the workbench on the results in dir, its records read,
// at 160×30.
func resultsModel(t *testing.T, dir string) Model {
	t.Helper()
	c, _ := landscape.Builtin()
	m := New(Options{Catalog: c, Inventory: inventory.Empty(), Results: dir, Styles: DefaultStyles()})
	m = drain(t, m, m.Init())
	next, _ := m.Update(tea.WindowSizeMsg{Width: 160, Height: 30})
	return next.(Model)
}

// b on an open record marks it the baseline (the walkthrough's last step
// opens the record and offers b); c on the baseline itself says why it
// does not compare, as results compare refuses a run with itself.
func TestResultsBaselineFromTheOpenRecord(t *testing.T) {
	dir := t.TempDir()
	r := &labs.Record{Schema: labs.RecordSchema, Lab: "topology-sanity", Name: "Topology sanity", Started: time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC),
		Finished: time.Date(2026, 12, 3, 9, 1, 0, 0, time.UTC), Complete: true, Hosts: []labs.HostRecord{{Host: "gpu01", Class: orchestrator.OK}}}
	writeRecord(t, dir, r)
	m := resultsModel(t, dir)
	m, cmd := press(t, m, "6", "enter")
	m = drain(t, m, cmd)
	// c where the record is read, before any baseline: it says why (it
	// did nothing and said nothing).
	m, _ = press(t, m, "c")
	if v := m.View(); !strings.Contains(v, "no baseline: b marks this run one") {
		t.Errorf("c on the open record with no baseline:\n%s", v)
	}
	m, _ = press(t, m, "b")
	if v := m.View(); !strings.Contains(v, "baseline: this run") {
		t.Errorf("b on the open record did not mark it:\n%s", v)
	}
	m, _ = press(t, m, "c")
	if v := m.View(); !strings.Contains(v, "this run is the baseline: esc, then c on another run") {
		t.Errorf("c on the open baseline:\n%s", v)
	}
	m, _ = press(t, m, "esc", "c")
	if v := m.View(); !strings.Contains(v, "base") || !strings.Contains(v, "this run is the baseline: pick another run") || strings.Contains(v, "Comparison") {
		t.Errorf("c on the baseline itself compared it with itself, or said nothing:\n%s", v)
	}
}

// writeRecord writes r as a lab run does, in a directory of its own under
// dir, and returns that directory.
func writeRecord(t *testing.T, dir string, r *labs.Record) string {
	t.Helper()
	d, err := r.CreateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Write(d, ""); err != nil {
		t.Fatal(err)
	}
	return d
}

// refusingLabs refuses every run before any host, as the workbench does
// for a lab that writes the host on nodes whose pods mount it read-only.
type refusingLabs struct{ scriptedLabs }

func (refusingLabs) RunLab(_ context.Context, l *labs.Lab, _ []int, _ app.LabRunOptions, events chan<- app.LabUpdate) {
	defer close(events)
	events <- app.LabUpdate{Err: "lab " + l.ID + `: step "mark" needs the host's / writable`}
}

// A run refused before any host says so in its header, where the eye
// is, not only below the criteria: NOT RUN, and why.
func TestLabRefusedSaysSoInItsHeader(t *testing.T) {
	m := newLabsModel(t, refusingLabs{scriptedLabs{n: 2}}, 100, 30)
	m, _ = press(t, m, "5", "end")
	m, cmd := press(t, m, "enter")
	m = drain(t, m, cmd)
	head := strings.Join(strings.Fields(strings.Join(strings.SplitN(m.View(), "\n", 6)[:5], " ")), " ") // the header, wrapped at 100 columns
	if !strings.Contains(head, `NOT RUN: lab topology-sanity: step "mark" needs the host's / writable`) {
		t.Errorf("the refused run's header:\n%s", m.View())
	}
}
