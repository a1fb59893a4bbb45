package tui

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/labs"
	"github.com/gpulab/gpulab/landscape"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/runbooks"
	"github.com/gpulab/gpulab/step"
	"github.com/gpulab/gpulab/step/parse"
)

// fakeRunbooks judges a runbook on real fixture outputs instead of running
// it over SSH (runbooks' own e2e tests do that against sshd): hosts get
// the HGX A100 topology, except the last, which gets a PCIe-only A10 box,
// and one host that is unreachable.
type fakeRunbooks struct {
	n           int
	unreachable int
	params      chan map[string]string // receives each run's parameters, when set
}

func (f fakeRunbooks) Hosts() []app.FleetHost { return fakeFleet{n: f.n}.Hosts() }

func (f fakeRunbooks) RunRunbook(ctx context.Context, rb runbooks.Runbook, hosts []int, params map[string]string, done chan<- app.RunbookHost) {
	defer close(done)
	if f.params != nil {
		f.params <- params
	}
	// Two machines' outputs: the HGX's affinities name CPUs the 2-node
	// numactl does not list, so the affinity check is UNKNOWN on them.
	files := map[string]string{
		"nvidia-smi-topo":  "../testdata/fixtures/nvidia-smi-topo-m/hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt",
		"numactl-hardware": "../testdata/fixtures/numactl-hardware/asus-esc8000a-e12-2node-epyc9374f.txt",
	}
	all := f.Hosts()
	for pos, i := range hosts {
		h := all[i]
		if ctx.Err() != nil {
			return
		}
		run := runbooks.HostRun{Host: h.Name, Class: orchestrator.OK}
		inputs := map[string]step.Input{}
		for _, s := range rb.Steps {
			file := files[s.Parser]
			if i == f.n-1 && s.Parser == "nvidia-smi-topo" {
				file = "../testdata/fixtures/nvidia-smi-topo-m/a10-4gpu-pcie-SYS-2nic.txt"
			}
			in := step.Input{Step: s.ID}
			sr := runbooks.StepRun{ID: s.ID, Command: s.Command}
			if file == "" {
				in.Problem = "exited 127: no stand-in output for " + s.Parser
			} else if i == f.unreachable {
				run.Class = orchestrator.Refused
				in.Problem = "did not run: host connect (dial tcp: connection refused)"
			} else {
				data, err := os.ReadFile(file)
				if err != nil {
					panic(err)
				}
				k, _ := parse.Lookup(s.Parser)
				v, _ := k.Parse(string(data))
				in.Ran, in.Output, in.Value = true, string(data), v
				sr.Output, sr.Value = string(data), v
			}
			inputs[s.ID] = in
			run.Steps = append(run.Steps, sr)
		}
		for _, c := range rb.Checks {
			var in []step.Input
			for _, u := range c.Uses {
				in = append(in, inputs[u])
			}
			run.Verdicts = append(run.Verdicts, step.Judge(c, in))
		}
		done <- app.RunbookHost{Index: pos, Run: run}
	}
}

func newRunbooksModel(t testing.TB, r RunbookRunner, w, h int) Model {
	t.Helper()
	c, err := landscape.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	rbs, err := runbooks.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	m := New(Options{Catalog: c, Inventory: inventory.Empty(), RunbookRunner: r, Runbooks: rbs, Styles: DefaultStyles()})
	next, _ := m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return next.(Model)
}

func TestRunbooksTab(t *testing.T) {
	m := newRunbooksModel(t, fakeRunbooks{n: 6, unreachable: 3}, 160, 48)
	m, _ = press(t, m, "4", "home")
	v := m.View()
	if m.Active() != "Runbooks" {
		t.Fatalf("key 4 opens %s", m.Active())
	}
	for _, want := range []string{"▶ cluster-overview", "topology", "nccl-slow", "GPU, NIC and NUMA topology (data plane, 3 checks)"} {
		if !strings.Contains(v, want) {
			t.Errorf("runbook list lacks %q:\n%s", want, v)
		}
	}
	// Select the topology runbook and run it.
	for i := 0; i < 10 && !strings.Contains(m.View(), "▶ topology"); i++ {
		m, _ = press(t, m, "down")
	}
	m, cmd := press(t, m, "enter")
	m = drain(t, m, cmd)
	v = m.View()
	for _, want := range []string{
		"topology  on gpu[001-006]  done 6/6", // the title gives way to the counts
		"; also UNKNOWN: cpu-affinity",
		"NVLink mesh is complete",
		"PASS    gpu[001-003,005]: 8 GPUs, NV12 full mesh",
		"gpu006: ", "gpu004: ", "did not run",
	} {
		if !strings.Contains(v, want) {
			t.Errorf("folded verdicts lack %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "── evidence") {
		t.Errorf("evidence shown before e:\n%s", v)
	}
	m, _ = press(t, m, "e")
	v = m.View()
	for _, want := range []string{"── evidence", "topology of gpu001", "GPU0  X      NV12   NV12", "PXB     CPU 16-31"} {
		if !strings.Contains(v, want) {
			t.Errorf("evidence of the first verdict lacks %q:\n%s", want, v)
		}
	}
	// The near-NIC warning on the PCIe-only host: its hint and its grid.
	m, _ = press(t, m, "down", "down", "down")
	if v := m.View(); !strings.Contains(v, "  gpu[001-003,005]  topo  ") {
		t.Errorf("facts shared by folded hosts are one line with the hosts folded:\n%s", v)
	}
	m, _ = press(t, m, "down", "down")
	v = m.View()
	for _, want := range []string{"▶ WARN    gpu006: GPU0, GPU1, GPU2, GPU3 reach every NIC only across sockets (SYS)",
		"next: GPUDirect RDMA wants the GPU and its NIC under one PCIe switch", "topology of gpu006"} {
		if !strings.Contains(v, want) {
			t.Errorf("evidence of gpu006's warning lacks %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "topology of gpu001") {
		t.Errorf("gpu006's evidence shows another host's grid:\n%s", v)
	}
	// The affinity warning's facts, one line per fact with its hosts.
	m, _ = press(t, m, "down", "down", "down")
	v = m.View()
	for _, want := range []string{"▶ WARN    gpu006: GPU0, GPU1, GPU2, GPU3: CPU affinity spans NUMA nodes", "gpu006  topo  GPU0 CPU affinity"} {
		if !strings.Contains(v, want) {
			t.Errorf("evidence of gpu006's affinity warning lacks %q:\n%s", want, v)
		}
	}
	// h chooses the hosts, with the inventory's expressions.
	m, _ = press(t, m, "esc", "h")
	m = typeLine(t, m, "nope[")
	if v := m.View(); !strings.Contains(v, "nope[") || !strings.Contains(v, "never closed") {
		t.Errorf("a bad host expression is an error on the spot:\n%s", v)
	}
	m = typeLine(t, m, "gpu00[4-6]!gpu005")
	if v := m.View(); !strings.Contains(v, "hosts: gpu00[4-6]!gpu005 → gpu[004,006] (2)") {
		t.Errorf("chosen hosts:\n%s", v)
	}
	// Opened again, the field is empty (the choice in its placeholder):
	// what is typed replaces the choice; esc keeps it.
	m, _ = press(t, m, "h", "g", "p", "u")
	if v := m.View(); !strings.Contains(v, "hosts: gpu") || strings.Contains(v, "!gpu005gpu") {
		t.Errorf("typing in the reopened field appends to the old choice:\n%s", v)
	}
	m, _ = press(t, m, "esc")
	m, cmd = press(t, m, "enter")
	m = drain(t, m, cmd)
	if v := m.View(); !strings.Contains(v, "on gpu[004,006]  done 2/2") || !strings.Contains(v, "SKIPPED gpu006") || strings.Contains(v, "gpu001") {
		t.Errorf("the run on the chosen hosts:\n%s", v)
	}
	m, _ = press(t, m, "esc")
	if !strings.Contains(v, "topology: 6/6 hosts") {
		t.Errorf("status bar lacks the runbook's progress:\n%s", v)
	}
	m, _ = press(t, m, "esc")
	if v := m.View(); !strings.Contains(v, "▶ topology") {
		t.Errorf("esc goes back to the list:\n%s", v)
	}
}

// A long verdict list scrolls with the cursor; with the evidence pane open
// the frame still fits the terminal.
func TestRunbooksTabScrollsAndFits(t *testing.T) {
	for _, sz := range []struct{ w, h int }{{80, 24}, {60, 16}, {160, 48}} {
		m := newRunbooksModel(t, fakeRunbooks{n: 40, unreachable: 7}, sz.w, sz.h)
		m, _ = press(t, m, "4")
		for i := 0; i < 10 && !strings.Contains(m.View(), "▶ topology"); i++ {
			m, _ = press(t, m, "down")
		}
		m, cmd := press(t, m, "enter")
		m = drain(t, m, cmd)
		for _, keys := range [][]string{nil, {"e"}, {"down", "down", "down", "down", "down", "down"}, {"end"}, {"e"}, {"home"}} {
			m, _ = press(t, m, keys...)
			lines := strings.Split(m.View(), "\n")
			if len(lines) != sz.h {
				t.Errorf("%dx%d after %v: %d lines", sz.w, sz.h, keys, len(lines))
			}
			if keys != nil && keys[0] == "end" && !strings.Contains(m.View(), "▶ WARN    gpu040: GPU0, GPU1") {
				t.Errorf("%dx%d: end does not show the last verdict:\n%s", sz.w, sz.h, m.View())
			}
			if !strings.Contains(m.View(), "▶ ") {
				t.Errorf("%dx%d after %v: the cursor scrolled out of view:\n%s", sz.w, sz.h, keys, m.View())
			}
		}
	}
}

func TestRunbooksTabWithoutHosts(t *testing.T) {
	m := newRunbooksModel(t, nil, 120, 30)
	m, cmd := press(t, m, "4", "enter")
	if cmd != nil {
		if msg := cmd(); msg != nil {
			t.Errorf("enter without hosts started something: %T", msg)
		}
	}
	if v := m.View(); !strings.Contains(v, "No hosts: pass --inventory FILE") {
		t.Errorf("runbooks without an inventory:\n%s", v)
	}
}

// typeLine clears the focused input, types line and presses enter.
func typeLine(t *testing.T, m Model, line string) Model {
	t.Helper()
	next, _ := m.Update(tea.KeyMsg{Type: tea.KeyCtrlU})
	m = next.(Model)
	if line != "" {
		next, _ = m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(line)})
		m = next.(Model)
	}
	next, _ = m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	return next.(Model)
}

// p sets the selected runbook's parameters, one field each, and the run
// gets them.
func TestRunbooksTabParameters(t *testing.T) {
	got := make(chan map[string]string, 4)
	m := newRunbooksModel(t, fakeRunbooks{n: 2, unreachable: -1, params: got}, 120, 30)
	m, _ = press(t, m, "4", "home")
	for i := 0; i < 10 && !strings.Contains(m.View(), "▶ nccl-slow"); i++ {
		m, _ = press(t, m, "down")
	}
	if v := m.View(); !strings.Contains(v, "parameters (p sets): nccl_log = (not set)") {
		t.Fatalf("a runbook's parameters are shown:\n%s", v)
	}
	m, _ = press(t, m, "p")
	if v := m.View(); !strings.Contains(v, "NCCL_DEBUG=INFO") || !strings.Contains(v, "nccl_log: ") {
		t.Errorf("the field names the parameter and says what it is:\n%s", v)
	}
	m = typeLine(t, m, "/scratch/job 4711/rank0.log")
	if v := m.View(); !strings.Contains(v, "nccl_log = /scratch/job 4711/rank0.log") {
		t.Errorf("the value set:\n%s", v)
	}
	m, cmd := press(t, m, "enter")
	drain(t, m, cmd)
	if p := <-got; p["nccl_log"] != "/scratch/job 4711/rank0.log" {
		t.Errorf("the run got %v", p)
	}
}

// At 80 columns a parameter's help wraps whole above its field (it was
// cut: "…NCCL_DEBUG=INFO (its stderr); w…"), and a runbook without
// parameters offers no s.
func TestRunbooksTabParameterHelpAt80(t *testing.T) {
	m := newRunbooksModel(t, fakeRunbooks{n: 2, unreachable: -1}, 80, 24)
	m, _ = press(t, m, "4", "home")
	if v := m.View(); strings.Contains(v, "sets parameters") {
		t.Errorf("the first runbook has no parameters, but s is offered:\n%s", v)
	}
	for i := 0; i < 10 && !strings.Contains(m.View(), "▶ nccl-slow"); i++ {
		m, _ = press(t, m, "down")
	}
	m, _ = press(t, m, "p")
	flat := strings.Join(strings.Fields(m.View()), " ")
	if !strings.Contains(flat, "without it the NCCL checks are skipped") {
		t.Errorf("the parameter's help is cut:\n%s", m.View())
	}
}

// TestSimulatedDefaults: on a simulated fleet the cursor starts on what
// works on simulated hosts alone, the topology runbook and the
// topology-sanity lab (the first lab, exclusive-baseline, needs a vLLM
// server); elsewhere it starts on the first of each list.
func TestSimulatedDefaults(t *testing.T) {
	c, _ := landscape.Builtin()
	rbs, err := runbooks.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := labs.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		simulated, cluster bool
		runbook, lab       string
		notRunbook, no     string
	}{
		{true, false, "▶ topology ", "▶ topology-sanity ", "▶ cluster-overview", "▶ exclusive-baseline"},
		// Hosts and no cluster: what runs on the hosts alone, not a
		// runbook whose kubectl would find no cluster.
		{false, false, "▶ topology ", "▶ topology-sanity ", "▶ cluster-overview", "▶ exclusive-baseline"},
		{false, true, "▶ cluster-overview ", "▶ exclusive-baseline ", "▶ topology ", "▶ topology-sanity"},
	} {
		t.Run(fmt.Sprint("simulated=", tc.simulated, ",cluster=", tc.cluster), func(t *testing.T) {
			fleet := fakeRunbooks{n: 4, unreachable: -1}
			var clusters []ClusterSource
			if tc.cluster {
				clusters = []ClusterSource{{Name: "lab", Err: "not reached in this test"}}
			}
			m := New(Options{Catalog: c, Inventory: inventory.Empty(), Runbooks: rbs, RunbookRunner: fleet, Labs: ls, LabRunner: scriptedLabs{n: 4},
				Styles: DefaultStyles(), Simulated: tc.simulated, Clusters: clusters})
			next, _ := m.Update(tea.WindowSizeMsg{Width: 140, Height: 50})
			m = next.(Model)
			m, _ = press(t, m, "4")
			if v := m.View(); !strings.Contains(v, tc.runbook) || strings.Contains(v, tc.notRunbook) {
				t.Errorf("Runbooks, simulated %v: the cursor is not on %q:\n%s", tc.simulated, tc.runbook, v)
			}
			m, _ = press(t, m, "5")
			if v := m.View(); !strings.Contains(v, tc.lab) || strings.Contains(v, tc.no) {
				t.Errorf("Labs, simulated %v: the cursor is not on %q:\n%s", tc.simulated, tc.lab, v)
			}
		})
	}
}

// On a short terminal the runbook list with the selected runbook's
// description scrolls: its last line says what is below, and page down
// shows the end of the description (at 60x16 it was cut mid-sentence).
func TestRunbooksListScrollsWhenShort(t *testing.T) {
	m := newRunbooksModel(t, fakeRunbooks{n: 2, unreachable: -1}, 60, 16)
	m, _ = press(t, m, "4", "home")
	if v := m.View(); !strings.Contains(v, "more lines below · pgdn") {
		t.Fatalf("the cut description is not said:\n%s", v)
	}
	rb := m.views[3].(*runbooksView).list[0]
	last := strings.Fields(rb.Symptom)
	m, _ = press(t, m, "pgdown", "pgdown", "pgdown")
	if v := m.View(); !strings.Contains(v, last[len(last)-1]) {
		t.Errorf("page down does not reach the description's end (%q):\n%s", last[len(last)-1], v)
	}
}

// At 80x20 the Cluster tab keeps its quotas and reconciliation on screen:
// the why pane gives way.
func TestClusterViewShortKeepsQuotas(t *testing.T) {
	m := newClusterModel(t, 80, 20, ClusterSource{Name: "prod", Live: newFakeLive(clusterFixture())})
	if v := m.View(); !strings.Contains(v, "ml-team/gpu-quota") || !strings.Contains(v, "Reconciliation") || !strings.Contains(v, "more line") {
		t.Errorf("80x20 loses the quotas, the reconciliation or the why's marker:\n%s", v)
	}
}

// heldRunbooks sends every host's run, then holds its channel open until
// release: the moment between the last host and the close.
type heldRunbooks struct {
	fakeRunbooks
	release chan struct{}
}

func (f heldRunbooks) RunRunbook(ctx context.Context, rb runbooks.Runbook, hosts []int, params map[string]string, done chan<- app.RunbookHost) {
	inner := make(chan app.RunbookHost)
	go f.fakeRunbooks.RunRunbook(ctx, rb, hosts, params, inner)
	for h := range inner {
		done <- h
	}
	<-f.release
	close(done)
}

// Once every host has answered, the run is over: q quits at once.
func TestRunbookLastHostEndsTheRun(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	m := newRunbooksModel(t, heldRunbooks{fakeRunbooks{n: 3, unreachable: -1}, release}, 160, 48)
	m, _ = press(t, m, "4")
	m, cmd := press(t, m, "enter")
	for deadline := time.Now().Add(10 * time.Second); ; {
		next, c := m.Update(cmd())
		m = next.(Model)
		if rv := m.views[m.active].(*runbooksView); rv.finished == len(rv.names) {
			break
		}
		if c == nil || time.Now().After(deadline) {
			t.Fatalf("waited 10 s for every host's run:\n%s", m.View())
		}
		cmd = c
	}
	if n := m.running(); n != 0 {
		t.Errorf("every host has answered, and the workbench counts %d hosts still running", n)
	}
	if _, quit := msgOf(func() tea.Cmd { _, c := press(t, m, "q"); return c }()).(tea.QuitMsg); !quit {
		t.Errorf("q after the last host did not quit:\n%s", m.View())
	}
}
