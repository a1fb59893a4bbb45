package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/internal/kubetest"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/landscape"
	"github.com/gpulab/gpulab/sim"
	"github.com/gpulab/gpulab/tui"
)

// The demo's Cluster tab: the simulated fleet's cluster, followed by
// informers through the mirrored fake clientset, shows the fleet's hosts
// as GPU nodes, the pod pending for fragmentation with its why, and the
// Job the quota refuses, all marked SIMULATED.
func TestDemoClusterTab(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f, err := sim.Start(ctx, sim.Config{Hosts: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	o := &options{env: Env{Getenv: func(string) string { return "" }}}
	sources, stop := workbenchClusters(o, ctx, &workbench{cluster: f.KubeClient}, inventory.Empty())
	defer stop()
	if len(sources) != 1 || !sources[0].Simulated || sources[0].Name != "simulated" || sources[0].Live == nil {
		t.Fatalf("sources = %+v, want the simulated cluster", sources)
	}
	live := sources[0].Live
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for {
		snap := live.Snapshot()
		if live.Status().State == cluster.Synced && len(snap.GPUNodes()) == 4 && len(snap.Pending("")) == 1 && len(snap.Blocked("")) == 1 {
			break
		}
		select {
		case <-live.Changes():
		case <-deadline.C:
			t.Fatalf("the simulated cluster never synced: %s", live.Status())
		}
	}
	lipgloss.SetColorProfile(termenv.Ascii)
	c, err := landscape.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	var m tea.Model = tui.New(tui.Options{Catalog: c, Inventory: inventory.Empty(), Styles: tui.DefaultStyles(), Simulated: true, Clusters: sources})
	m, _ = m.Update(tea.WindowSizeMsg{Width: 140, Height: 48})
	m, _ = m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("7")})
	view := m.View()
	for _, want := range []string{"context simulated  SIMULATED", "GPU nodes (4)", "dgx01", "dgx04", "nvidia.com/mig-",
		"▶ research/llm-finetune-8gpu-", "fragmentation", "ml-team/eval-sweep", "held by ResourceQuota gpu-quota", "ml-team/gpu-quota"} {
		if !strings.Contains(view, want) {
			t.Errorf("the demo's Cluster tab lacks %q:\n%s", want, view)
		}
	}
	m, _ = m.Update(tea.KeyMsg{Type: tea.KeyDown})
	if view := m.View(); !strings.Contains(view, "why: ml-team/eval-sweep") || !strings.Contains(view, "exceeded quota: gpu-quota") {
		t.Errorf("selecting eval-sweep does not explain it:\n%s", view)
	}
}

// With an inventory, each [[kube]] table is a context of the tab: one
// that loads is followed (here a real API server, through its
// kubeconfig), one that does not is listed with why.
func TestWorkbenchClustersFromInventory(t *testing.T) {
	cp := kubetest.Start(t)
	cp.AddNode(t, kubetest.GPUNode("gpu-a", 8))
	inv := inventory.Empty()
	inv.Kube = []inventory.KubeContext{
		{Name: "lab", Kubeconfig: cp.Kubeconfig, Context: "kubetest"},
		{Name: "gone", Kubeconfig: filepath.Join(t.TempDir(), "missing"), Context: "nowhere"},
	}
	o := &options{env: Env{Getenv: func(string) string { return "" }}}
	sources, stop := workbenchClusters(o, t.Context(), &workbench{}, inv)
	defer stop()
	if len(sources) != 2 || sources[0].Name != "lab" || sources[0].Simulated || sources[0].Live == nil {
		t.Fatalf("sources = %+v", sources)
	}
	if sources[1].Live != nil || !strings.Contains(sources[1].Err, "missing: no such file") {
		t.Errorf("the missing context: %+v, want it listed with why", sources[1])
	}
	live := sources[0].Live
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for live.Status().State != cluster.Synced || len(live.Snapshot().GPUNodes()) != 1 {
		select {
		case <-live.Changes():
		case <-deadline.C:
			t.Fatalf("the lab context never synced: %s", live.Status())
		}
	}
}
