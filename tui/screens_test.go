package tui

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/labs"
	"github.com/gpulab/gpulab/landscape"
	"github.com/gpulab/gpulab/runbooks"
	"github.com/gpulab/gpulab/step"
)

// screenRecords writes three records into a results directory: a failed
// topology run, and a vLLM baseline and its shared run with throughput
// and latency figures, as the Results tab lists and compares them.
func screenRecords(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	topo := &labs.Record{Schema: labs.RecordSchema, Lab: "topology-sanity", Name: "Topology sanity", Started: at, Finished: at.Add(40 * time.Second), Complete: true,
		Hosts: []labs.HostRecord{
			{Host: "gpu001", Passed: true, Scores: []labs.Score{{ID: "nvlink-mesh", Description: "every GPU pair is linked by NVLink", Status: step.Pass,
				Expr: `metrics.nvlink == "PASS"`, Summary: `metrics.nvlink = "PASS" against metrics.nvlink == "PASS"`}}},
			{Host: "gpu002", Scores: []labs.Score{{ID: "nvlink-mesh", Description: "every GPU pair is linked by NVLink", Status: step.Fail,
				Expr: `metrics.nvlink == "PASS"`, Summary: `metrics.nvlink = "FAIL" against metrics.nvlink == "PASS"`}}},
		}}
	figures := func(lab, mode string, tput, p50, p95, p99 float64, started time.Time) *labs.Record {
		return &labs.Record{Schema: labs.RecordSchema, Lab: lab, Name: lab, Started: started, Finished: started.Add(5 * time.Minute), Complete: true, Passed: true,
			Result: labs.ResultRow{Workload: "vLLM", Mode: mode, Request: "1 GPU", Throughput: "tput", Unit: "tok/s", P50: "p50", P95: "p95", P99: "p99"},
			Hosts: []labs.HostRecord{{Host: "gpu003", Passed: true,
				Scores:  []labs.Score{{ID: "served", Description: "the benchmark served every request", Status: step.Pass, Expr: "metrics.tput > 0.0"}},
				Metrics: map[string]any{"tput": tput, "p50": p50, "p95": p95, "p99": p99}}}}
	}
	for _, r := range []*labs.Record{topo,
		figures("exclusive-baseline", "exclusive", 2400, 180, 260, 310, at.Add(time.Hour)),
		figures("shared-interference", "shared-HAMi", 1500, 240, 420, 560, at.Add(2*time.Hour))} {
		writeRecord(t, dir, r)
	}
	return dir
}

// newScreenModel is the workbench on 8 hosts with every runner and the
// records of screenRecords; hosts false: no hosts at all.
func newScreenModel(t *testing.T, w, h int, hosts bool) (Model, string) {
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
	dir := screenRecords(t)
	opts := Options{Catalog: c, Inventory: inventory.Empty(), Runbooks: rbs, Labs: ls, Results: dir, Version: "test", Styles: DefaultStyles()}
	if hosts {
		opts.Fleet, opts.RunbookRunner, opts.LabRunner = fakeFleet{n: 8, odd: -1, out: seq40()}, fakeRunbooks{n: 8, unreachable: -1}, scriptedLabs{n: 8}
	}
	m := New(opts)
	m = drain(t, m, m.Init())
	next, _ := m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return next.(Model), dir
}

// screen is one golden screen: the keys that lead to it from the Map.
type screen struct {
	name string
	keys []string
	// run drains the commands the last key started; after are the keys
	// pressed once it ended.
	run bool
	// settle waits for what the keys asked for off the UI goroutine (a
	// record read from disk).
	settle bool
	after  []string
}

var screens = []screen{
	{name: "fleet", keys: []string{"3"}},
	{name: "fleet_run", keys: []string{"3", ":", "x", "enter"}, run: true},
	{name: "runbooks", keys: []string{"4"}},
	{name: "runbooks_run", keys: []string{"4", "end", "enter"}, run: true},
	{name: "runbooks_evidence", keys: []string{"4", "end", "enter"}, run: true, after: []string{"down", "e"}},
	{name: "labs", keys: []string{"5"}},
	{name: "labs_run", keys: []string{"5", "end", "enter"}, run: true},
	{name: "results", keys: []string{"6", "end", "b", "home"}},
	{name: "results_record", keys: []string{"6", "end", "enter"}, settle: true},
	{name: "results_compare", keys: []string{"6", "down", "b", "up", "c"}},
	{name: "cluster", keys: []string{"7"}},
	{name: "help_fleet", keys: []string{"3", "?"}},
	{name: "help_runbooks", keys: []string{"4", "?"}},
	{name: "help_labs", keys: []string{"5", "?"}},
	{name: "help_results", keys: []string{"6", "?"}},
}

// TestGoldenScreens draws every view at 80×24 and 160×48, with 8 hosts
// and with none: each frame fits and matches its golden file.
func TestGoldenScreens(t *testing.T) {
	local := time.Local
	time.Local = time.UTC // the records' times, as any machine draws them
	t.Cleanup(func() { time.Local = local })
	for _, sz := range []struct{ w, h int }{{80, 24}, {160, 48}} {
		suffix := "_" + itoa(sz.w) + "x" + itoa(sz.h)
		for _, hosts := range []bool{true, false} {
			for _, sc := range screens {
				name := "screen_" + sc.name + suffix
				if !hosts {
					if sc.run {
						continue
					}
					name = "screen_nohosts_" + sc.name + suffix
				}
				m, dir := newScreenModel(t, sz.w, sz.h, hosts)
				m, cmd := press(t, m, sc.keys...)
				switch {
				case sc.run && sc.name == "labs_run":
					m = drain(t, m, onlyUpdates(cmd)) // not the run's timer
				case sc.run, sc.settle:
					m = drain(t, m, cmd)
				}
				m, _ = press(t, m, sc.after...)
				frame := m.View()
				if msg := fits(frame, sz.w, sz.h); msg != "" {
					t.Errorf("%s does not fit: %s", name, msg)
				}
				// The frame is cut to the screen by the root model, so the
				// view's own lines are what must fit: a line wider than the
				// screen would lose its end to that cut, unsaid.
				own := m.views[m.active].View()
				for i, l := range strings.Split(own, "\n") {
					if lw := lipgloss.Width(l); lw > sz.w {
						t.Errorf("%s: the view's line %d is %d wide, more than %d: %q", name, i+1, lw, sz.w, l)
					}
				}
				if n := strings.Count(own, "\n") + 1; n > m.bodyHeight() {
					t.Errorf("%s: the view draws %d lines in a room of %d", name, n, m.bodyHeight())
				}
				// The results directory is a new one each run: the golden
				// names it $RESULTS, padded to keep the line's width.
				frame = strings.ReplaceAll(frame, dir, "$RESULTS"+strings.Repeat(" ", max(0, len(dir)-8)))
				golden(t, name, frame)
			}
		}
	}
}

// The plane filter keeps the projects that act in the plane, and each
// says so in its Plane column: those whose primary plane is another carry
// "+ctrl" (GPU Operator, HAMi, KServe, llm-d under Control plane).
func TestMatrixPlaneFilterAgreesWithPlaneColumn(t *testing.T) {
	m := newTestModel(t, 80, 48)
	m, _ = press(t, m, "tab", "p")
	v := m.View()
	if !strings.Contains(v, "plane: Control plane") {
		t.Fatalf("p does not filter the control plane:\n%s", v)
	}
	rows := 0
	for _, l := range strings.Split(v, "\n") {
		if !strings.Contains(l, "●") || strings.Contains(l, " × ") || strings.HasPrefix(l, "──") {
			continue // not a row
		}
		rows++
		if !strings.Contains(l, "ctrl") {
			t.Errorf("a row under the control plane filter does not say ctrl: %q", l)
		}
	}
	for _, name := range []string{"NVIDIA GPU Operator", "HAMi", "KServe", "llm-d"} {
		if !strings.Contains(v, name) {
			t.Errorf("%s spans into the control plane and is not listed:\n%s", name, v)
		}
	}
	if rows < 10 {
		t.Errorf("%d rows under the control plane filter, want the 6 control projects and those spanning into it:\n%s", rows, v)
	}
}

// The Map shows projects that span planes (+ctrl on their chip, and in
// the band of the plane they also act in), and selecting a project marks
// the projects of other planes it is linked to.
func TestMapSpansAndLinks(t *testing.T) {
	m := newTestModel(t, 160, 48)
	v := m.View()
	for _, want := range []string{"NVIDIA GPU Operator +ctrl", "HAMi +ctrl", "KServe +ctrl", "llm-d +ctrl",
		"also acts here: NVIDIA GPU Operator (data) · HAMi (data)", "‹NVIDIA device plugin›"} {
		if !strings.Contains(v, want) {
			t.Errorf("the Map with kube-scheduler selected lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "‹Kueue") {
		t.Errorf("a project of the selected one's own plane is marked as linked:\n%s", v)
	}
}

// The Matrix cuts no cell at 160 columns and above: a column whose full
// labels do not fit shows its short ones, and the others keep whole
// words (at 160 the Isolation column keeps "None (inherits)").
func TestMatrixCutsNoCellWhenWide(t *testing.T) {
	for _, w := range []int{160, 200} {
		m := newTestModel(t, w, 48)
		m, _ = press(t, m, "2")
		v := m.View()
		rows := strings.Split(v, "\n")[3:28]
		for _, r := range rows {
			if strings.Contains(r, "…") {
				t.Errorf("%d columns: a cell is cut: %q", w, r)
			}
		}
		if !strings.Contains(v, "None (inherits)") {
			t.Errorf("%d columns: no column kept its whole words:\n%s", w, v)
		}
	}
}

// The Matrix's legend names every level of the axis under the cursor at
// 80 columns, with short labels when the names do not fit (it was cut:
// "Whole GPU · MIG sli…").
func TestMatrixLegendNamesEveryLevelAt80(t *testing.T) {
	c, _ := landscape.Builtin()
	m := newTestModel(t, 80, 24)
	m, _ = press(t, m, "2", "right")
	for _, a := range c.Axes {
		m, _ = press(t, m, "right")
		rule := ""
		for _, l := range strings.Split(m.View(), "\n") {
			if strings.HasPrefix(l, "── ● holds") {
				rule = l
			}
		}
		if strings.Contains(rule, "…") {
			t.Errorf("%s: the legend is cut: %q", a.ID, rule)
		}
		for _, lv := range a.Levels {
			if !strings.Contains(rule, lv.Label(true)) && !strings.Contains(rule, lv.Name) {
				t.Errorf("%s: the legend lacks level %q: %q", a.ID, lv.ID, rule)
			}
		}
	}
}
