package tui

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/landscape"
	"github.com/gpulab/gpulab/probes/report"
)

// fakeLive is a LiveCluster over fixed objects.
type fakeLive struct {
	mu      sync.Mutex
	objs    *cluster.Objects
	status  cluster.LiveStatus
	changes chan struct{}
}

func newFakeLive(o *cluster.Objects) *fakeLive {
	return &fakeLive{objs: o, status: cluster.LiveStatus{State: cluster.Synced, Server: "127.0.0.1:6443"}, changes: make(chan struct{}, 1)}
}

func (f *fakeLive) Snapshot() *cluster.Objects { f.mu.Lock(); defer f.mu.Unlock(); return f.objs }
func (f *fakeLive) Status() cluster.LiveStatus { f.mu.Lock(); defer f.mu.Unlock(); return f.status }
func (f *fakeLive) Changes() <-chan struct{}   { return f.changes }

// set changes the cluster and tells it.
func (f *fakeLive) set(o *cluster.Objects, st cluster.LiveStatus) {
	f.mu.Lock()
	f.objs, f.status = o, st
	f.mu.Unlock()
	f.changes <- struct{}{}
}

var epoch = metav1.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func gpuNode(name string, res map[string]int64, allocatable map[string]int64) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{}, Allocatable: corev1.ResourceList{},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	for r, q := range res {
		n.Status.Capacity[corev1.ResourceName(r)] = *resource.NewQuantity(q, resource.DecimalSI)
	}
	for r, q := range allocatable {
		n.Status.Allocatable[corev1.ResourceName(r)] = *resource.NewQuantity(q, resource.DecimalSI)
	}
	return n
}

func gpuPod(ns, name, node string, gpus int64) *corev1.Pod {
	q := corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name)},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Limits: q}}}}}
	p.Status.Phase = corev1.PodRunning
	if node == "" {
		p.Status.Phase = corev1.PodPending
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable"}}
	}
	return p
}

// clusterFixture: three DGX nodes (dgx03 with MIG slices and two GPUs
// the device plugin does not offer), 9 of 20 allocatable GPUs free but
// at most 4 on one node, a pod asking for 8 (fragmentation) with the scheduler's
// event, and a Job the ml-team quota refuses.
func clusterFixture() *cluster.Objects {
	o := &cluster.Objects{}
	o.Nodes = []*corev1.Node{
		gpuNode("dgx01", map[string]int64{"nvidia.com/gpu": 8}, map[string]int64{"nvidia.com/gpu": 8}),
		gpuNode("dgx02", map[string]int64{"nvidia.com/gpu": 8}, map[string]int64{"nvidia.com/gpu": 8}),
		gpuNode("dgx03", map[string]int64{"nvidia.com/gpu": 6, "nvidia.com/mig-3g.20gb": 2}, map[string]int64{"nvidia.com/gpu": 4, "nvidia.com/mig-3g.20gb": 2}),
	}
	o.Pods = []*corev1.Pod{gpuPod("ml-team", "pretrain-0", "dgx01", 4), gpuPod("ml-team", "triton-a", "dgx02", 4), gpuPod("research", "nb-alice-0", "dgx02", 1),
		gpuPod("research", "nb-bob-0", "dgx03", 2), gpuPod("research", "llm-finetune-8gpu-x2k4d", "", 8)}
	msg := "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
	o.Pods[4].Status.Conditions[0].Message = msg
	o.Events = []*corev1.Event{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "research", Name: "e1"}, Reason: "FailedScheduling", Message: msg, LastTimestamp: epoch,
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "research", Name: "llm-finetune-8gpu-x2k4d", UID: "uid-research-llm-finetune-8gpu-x2k4d"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ml-team", Name: "e2"}, Reason: "FailedCreate", Count: 14, LastTimestamp: epoch,
			Message:        `Error creating: pods "eval-sweep-7qv2n" is forbidden: exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=4, used: requests.nvidia.com/gpu=10, limited: requests.nvidia.com/gpu=12`,
			InvolvedObject: corev1.ObjectReference{Kind: "Job", Namespace: "ml-team", Name: "eval-sweep", UID: "uid-job"}},
	}
	q := corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("12")}
	o.ResourceQuotas = []*corev1.ResourceQuota{{ObjectMeta: metav1.ObjectMeta{Namespace: "ml-team", Name: "gpu-quota"},
		Status: corev1.ResourceQuotaStatus{Hard: q, Used: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("10")}}}}
	return o
}

func newClusterModel(t testing.TB, w, h int, src ...ClusterSource) Model {
	t.Helper()
	c, err := landscape.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	m := New(Options{Catalog: c, Inventory: inventory.Empty(), Version: "test", Styles: DefaultStyles(), Clusters: src, Simulated: src[0].Simulated})
	next, _ := m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	m, _ = press(t, next.(Model), "7")
	if m.Active() != "Cluster" {
		t.Fatalf("7 opened %s", m.Active())
	}
	return m
}

func TestClusterViewGolden(t *testing.T) {
	for _, sz := range []struct{ w, h int }{{100, 34}, {80, 24}} {
		m := newClusterModel(t, sz.w, sz.h, ClusterSource{Name: "simulated", Simulated: true, Live: newFakeLive(clusterFixture())})
		golden(t, fmt.Sprintf("cluster_%dx%d", sz.w, sz.h), m.View())
	}
}

// The tab shows the nodes with their bars, the pending pod explained
// (fragmentation) and, selected, the Job the quota refuses with its
// evidence; the quota; and the reconciliation not read yet.
func TestClusterViewExplainsTheSelectedWait(t *testing.T) {
	m := newClusterModel(t, 120, 40, ClusterSource{Name: "simulated", Simulated: true, Live: newFakeLive(clusterFixture())})
	view := m.View()
	for _, want := range []string{"context simulated", "SIMULATED", "GPU nodes (3)", "dgx03", "nvidia.com/mig-3g.20gb",
		"[████████░░░░░░░░] 4/8/8", "[█████░░░░░░×××××] 2/4/6", "▶ research/llm-finetune-8gpu-x2k4d", "fragmentation", "event FailedScheduling: 0/3 nodes are available",
		"ml-team/gpu-quota", "10/12 used", "Reconciliation not read yet"} {
		if !strings.Contains(view, want) {
			t.Errorf("the Cluster tab lacks %q:\n%s", want, view)
		}
	}
	m, _ = press(t, m, "down")
	view = m.View()
	for _, want := range []string{"▶ ml-team/eval-sweep", "why: ml-team/eval-sweep", "quota gpu-quota refuses them", "event FailedCreate: Error creating", "held by ResourceQuota gpu-quota (×14)"} {
		if !strings.Contains(view, want) {
			t.Errorf("with eval-sweep selected, the tab lacks %q:\n%s", want, view)
		}
	}
	m, _ = press(t, m, "right", "down")
	if v := m.View(); !strings.Contains(v, "▶ dgx02") {
		t.Errorf("→ then ↓ did not select dgx02:\n%s", v)
	}
}

// A probe run of the Fleet reconciles the nodes of the same names: the
// USED column says what pods hold there busy and idle, the
// reconciliation line sums it; a node no host probed says so, and a host
// that is no node is left out.
func TestClusterViewReconcilesAProbeRun(t *testing.T) {
	for _, sz := range []struct{ w, h int }{{160, 40}, {80, 24}} {
		m := newClusterModel(t, sz.w, sz.h, ClusterSource{Name: "prod", Live: newFakeLive(clusterFixture())})
		if v := m.View(); !strings.Contains(v, "Reconciliation not read yet: probe the hosts") || strings.Contains(v, "…") && sz.w == 160 {
			t.Errorf("%dx%d before a probe run:\n%s", sz.w, sz.h, v)
		}
		gpus := make([]report.GPU, 8)
		for i := range gpus {
			gpus[i] = report.GPU{Index: i, Memory: &report.Memory{TotalMiB: 40960, UsedMiB: 4}, Utilization: &report.Utilization{}, MIG: report.MIG{Current: "disabled"}}
		}
		gpus[0].Utilization.GPUPercent, gpus[0].Memory.UsedMiB = 97, 30000
		snap := &report.Snapshot{Schema: 1, Host: "dgx01", NVML: report.NVMLState{Available: true}, GPUs: gpus,
			Processes: []report.Process{{GPU: 0, PID: 4242, Name: "python", Type: "compute", UsedMiB: 30000, PodUID: "uid-ml-team-pretrain-0"}}}
		probed := FleetProbedMsg{Hosts: []string{"dgx01", "dgx02", "login01"},
			Outcomes: []app.ProbeOutcome{{Snapshot: snap}, {Err: "dial tcp 10.0.0.12:22: connect: connection refused"}, {Err: "no NVML"}}}
		next, cmd := m.Update(probed)
		m = runUntil(t, next.(Model), cmd, func(m Model) bool { return !strings.Contains(m.View(), "not read yet") })
		v := m.View()
		// The reconciliation wraps at 80 columns: its words are read in a row.
		flat := strings.Join(strings.Fields(v), " ")
		for _, want := range []string{"4/8/8 4 busy, 0 idle", "5/8/8 not probed", "2/4/6 not probed",
			"1 of 3 nodes probed · pods hold 11 GPUs: 4 busy, 0 idle, 0 starting, 7 unknown · 0 processes with no allocation"} {
			if !strings.Contains(flat, want) {
				t.Errorf("%dx%d after the probe run, the tab lacks %q:\n%s", sz.w, sz.h, want, v)
			}
		}
		if strings.Contains(v, "login01") {
			t.Errorf("a host that is no node is shown:\n%s", v)
		}
		if sz.w == 80 {
			golden(t, "cluster_reconciled_80x24", v)
		}
	}
}

// A lost API server is shown in the tab, which keeps what it showed.
func TestClusterViewShowsALostServer(t *testing.T) {
	live := newFakeLive(clusterFixture())
	m := newClusterModel(t, 120, 40, ClusterSource{Name: "prod", Live: live})
	cmd := m.Init()
	lost := cluster.LiveStatus{State: cluster.Lost, Server: "127.0.0.1:6443", Since: epoch.Time, Err: "connect: connection refused"}
	live.set(clusterFixture(), lost)
	m = runUntil(t, m, cmd, func(m Model) bool { return strings.Contains(m.View(), "unreachable") })
	view := m.View()
	for _, want := range []string{"API server 127.0.0.1:6443 unreachable since 12:00:00 (connect: connection refused)", "GPU nodes (3)", "dgx01"} {
		if !strings.Contains(view, want) {
			t.Errorf("the lost view lacks %q:\n%s", want, view)
		}
	}
	if strings.Contains(view, "SIMULATED") {
		t.Error("a real context is marked SIMULATED")
	}
}

// runUntil runs cmd's messages through the model until ok holds.
func runUntil(t *testing.T, m Model, cmd tea.Cmd, ok func(Model) bool) Model {
	t.Helper()
	queue := []tea.Cmd{cmd}
	for len(queue) > 0 && !ok(m) {
		c := queue[0]
		queue = queue[1:]
		if c == nil {
			continue
		}
		switch msg := c().(type) {
		case tea.BatchMsg:
			queue = append(queue, msg...)
		case clusterChangedMsg, clusterComputedMsg:
			next, more := m.Update(msg)
			m = next.(Model)
			queue = append(queue, more)
		}
	}
	if !ok(m) {
		t.Fatalf("the view never got there:\n%s", m.View())
	}
	return m
}

// Node names that are the fleet's hosts are masked, in the node list and
// in the wrapped why.
func TestClusterViewMasksHostNames(t *testing.T) {
	c, err := landscape.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	inv := inventory.Empty()
	for _, n := range []string{"dgx01", "dgx02", "dgx03"} {
		inv.Hosts = append(inv.Hosts, inventory.Host{Name: n, Address: "10.0.0." + n[3:]})
	}
	m := New(Options{Catalog: c, Inventory: inv, Styles: DefaultStyles(), Mask: true,
		Clusters: []ClusterSource{{Name: "simulated", Simulated: true, Live: newFakeLive(clusterFixture())}}})
	next, _ := m.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
	m, _ = press(t, next.(Model), "7")
	view := m.View()
	if strings.Contains(view, "dgx0") || !strings.Contains(view, "host-1") {
		t.Errorf("host names are not masked:\n%s", view)
	}
	// The NODE column is as wide as the masked names: STATUS stays over
	// Ready (it sat a column left of it).
	var head, row string
	for _, l := range strings.Split(view, "\n") {
		switch {
		case strings.Contains(l, "NODE") && head == "":
			head = l
		case strings.Contains(l, "host-1 ") && row == "":
			row = l
		}
	}
	if strings.Index(head, "STATUS") != strings.Index(row, "Ready") {
		t.Errorf("STATUS and Ready are not in one column:\n%s\n%s", head, row)
	}
}

// bigCluster is n GPU nodes of 8 GPUs and pods pods of 1 GPU each,
// one in twenty of them pending.
func bigCluster(n, pods int) *cluster.Objects {
	o := &cluster.Objects{}
	for i := range n {
		o.Nodes = append(o.Nodes, gpuNode(fmt.Sprintf("gpu-%04d", i), map[string]int64{"nvidia.com/gpu": 8}, map[string]int64{"nvidia.com/gpu": 8}))
	}
	for i := range pods {
		node := fmt.Sprintf("gpu-%04d", i%n)
		if i%20 == 0 {
			node = ""
		}
		o.Pods = append(o.Pods, gpuPod(fmt.Sprintf("team-%d", i%7), fmt.Sprintf("pod-%05d", i), node, 1))
	}
	return o
}

// View at 1,000 nodes and 20,000 pods: it draws a screenful, whatever
// the cluster's size.
func BenchmarkClusterView(b *testing.B) {
	v := newClusterView([]ClusterSource{{Name: "bench", Live: newFakeLive(bigCluster(1000, 20000))}}, DefaultStyles())
	v.SetSize(160, 48)
	b.ResetTimer()
	for b.Loop() {
		_ = v.View()
	}
}

// A change at 1,000 nodes and 20,000 pods: what the tab recomputes
// (GPU nodes, pending and why, quotas) from a snapshot, in a command off
// the workbench's loop.
func BenchmarkClusterChange(b *testing.B) {
	v := newClusterView([]ClusterSource{{Name: "bench", Live: newFakeLive(bigCluster(1000, 20000))}}, DefaultStyles())
	v.SetSize(160, 48)
	b.ResetTimer()
	for b.Loop() {
		_ = computeCluster(v.sources[0].Live, nil)
	}
}

// Every frame of the Cluster tab is exactly the terminal's size, whatever
// the size, the cluster (full, empty, not connected) and the keys pressed.
func TestClusterViewFitsTheTerminal(t *testing.T) {
	sources := []ClusterSource{
		{Name: "full", Live: newFakeLive(clusterFixture())},
		{Name: "empty", Live: newFakeLive(&cluster.Objects{})},
		{Name: "broken", Err: "kubeconfig: context \"broken\" not found"},
	}
	for _, sz := range []struct{ w, h int }{{80, 24}, {160, 48}, {60, 16}, {20, 6}, {250, 70}} {
		m := newClusterModel(t, sz.w, sz.h, sources...)
		for _, keys := range [][]string{nil, {"down", "down", "down"}, {"right", "end"}, {"c"}, {"c", "c"}, {"c", "c", "c", "down"}} {
			mm, _ := press(t, m, keys...)
			lines := strings.Split(mm.View(), "\n")
			if len(lines) != sz.h {
				t.Errorf("%dx%d %v: %d lines, want %d", sz.w, sz.h, keys, len(lines), sz.h)
			}
			for i, l := range lines {
				if w := lipgloss.Width(l); w != sz.w {
					t.Errorf("%dx%d %v line %d is %d wide, want %d: %q", sz.w, sz.h, keys, i+1, w, sz.w, l)
					break
				}
			}
		}
	}
	m, _ := press(t, newClusterModel(t, 120, 40, sources...), "c", "c")
	if v := m.View(); !strings.Contains(v, "not connected: kubeconfig: context \"broken\" not found") || !strings.Contains(v, "(3 of 3: c for the next)") {
		t.Errorf("the broken context is not shown with why:\n%s", v)
	}
}

// The selection follows its pod, not its place: a pod deleted above the
// selected one leaves the selection, and the why, on the same pod.
func TestClusterViewKeepsTheSelectionByKey(t *testing.T) {
	o := clusterFixture()
	o.Pods = append(o.Pods, gpuPod("research", "aaa-first", "", 8), gpuPod("research", "zzz-last", "", 8))
	live := newFakeLive(o)
	m := newClusterModel(t, 120, 40, ClusterSource{Name: "prod", Live: live})
	cmd := m.Init()
	m, _ = press(t, m, "down")
	if v := m.View(); !strings.Contains(v, "why: research/llm-finetune-8gpu-x2k4d") {
		t.Fatalf("↓ did not select llm-finetune:\n%s", v)
	}
	gone := clusterFixture()
	gone.Pods = append(gone.Pods, gpuPod("research", "zzz-last", "", 8)) // aaa-first deleted
	live.set(gone, live.Status())
	m = runUntil(t, m, cmd, func(m Model) bool { return !strings.Contains(m.View(), "aaa-first") })
	if v := m.View(); !strings.Contains(v, "why: research/llm-finetune-8gpu-x2k4d") || !strings.Contains(v, "▶ research/llm-finetune") {
		t.Errorf("deleting the pod above moved the selection:\n%s", v)
	}
}

// Until the operator moves the cursor, the selection is the list's first
// row, whatever arrived first: a Job refused by its quota listed before
// the pending pod (it was, on a busy machine) does not keep the cursor
// when the pod arrives above it.
func TestClusterViewFirstRowUntilChosen(t *testing.T) {
	early := clusterFixture()
	var pods []*corev1.Pod
	for _, p := range early.Pods {
		if p.Name != "llm-finetune-8gpu-x2k4d" {
			pods = append(pods, p)
		}
	}
	early.Pods = pods
	live := newFakeLive(early)
	m := newClusterModel(t, 120, 40, ClusterSource{Name: "prod", Live: live})
	cmd := m.Init()
	if v := m.View(); !strings.Contains(v, "▶ ml-team/eval-sweep") {
		t.Fatalf("the only waiting item is not selected:\n%s", v)
	}
	live.set(clusterFixture(), live.Status())
	m = runUntil(t, m, cmd, func(m Model) bool { return strings.Contains(m.View(), "llm-finetune-8gpu-x2k4d") })
	if v := m.View(); !strings.Contains(v, "▶ research/llm-finetune-8gpu-x2k4d") || !strings.Contains(v, "why: research/llm-finetune-8gpu-x2k4d") {
		t.Errorf("the pod that arrived above the untouched selection is not selected:\n%s", v)
	}
}

// A reader the server refuses the pods: the tab says so in every state
// and draws what depends on the pods as unknown, never as none (0
// allocated, nothing waits); refused credentials are said as such.
func TestClusterViewSaysWhatIsDenied(t *testing.T) {
	o := clusterFixture()
	o.Pods, o.Events = nil, nil // the server would not list them
	warning := "cannot list pods at the cluster scope (RBAC): allocation and pending unknown"
	for _, state := range []cluster.LiveState{cluster.Waiting, cluster.Synced, cluster.Lost} {
		live := newFakeLive(o)
		live.status = cluster.LiveStatus{State: state, Server: "127.0.0.1:6443", Since: epoch.Time, Err: "connect: connection refused", Denied: []string{"pods"}, Warning: warning}
		m := newClusterModel(t, 140, 40, ClusterSource{Name: "prod", Live: live})
		view := m.View()
		for _, want := range []string{warning, "? pods · ? waiting", "?/8/8", "Waiting (?)", "unknown: the server refuses to list pods", "prod: " + state.String() + ", 3 GPU nodes, ? waiting"} {
			if !strings.Contains(view, want) {
				t.Errorf("%s: the tab lacks %q:\n%s", state, want, view)
			}
		}
		for _, lie := range []string{"0/8/8", "nothing waits", "0 pods", "0 waiting"} {
			if strings.Contains(view, lie) {
				t.Errorf("%s: the tab says %q although the pods are denied:\n%s", state, lie, view)
			}
		}
	}
	live := newFakeLive(o)
	live.status = cluster.LiveStatus{State: cluster.Refused, Server: "127.0.0.1:6443", Since: epoch.Time, Err: "Unauthorized"}
	view := newClusterModel(t, 140, 40, ClusterSource{Name: "prod", Live: live}).View()
	if !strings.Contains(view, "API server 127.0.0.1:6443 refused: Unauthorized (the credentials)") || strings.Contains(view, "unreachable") {
		t.Errorf("refused credentials are not said as such:\n%s", view)
	}
}

// Back from an outage, the tab says it is reconnecting until the
// informers have delivered again, not synced.
func TestClusterViewSaysReconnecting(t *testing.T) {
	live := newFakeLive(clusterFixture())
	live.status = cluster.LiveStatus{State: cluster.Reconnecting, Server: "127.0.0.1:6443", Since: epoch.Time}
	view := newClusterModel(t, 160, 40, ClusterSource{Name: "prod", Live: live}).View()
	if !strings.Contains(view, "API server 127.0.0.1:6443: reconnecting (back since 12:00:00") || strings.Contains(view, "synced") {
		t.Errorf("the tab does not say it is reconnecting:\n%s", view)
	}
}

// Before the first list (the server unreachable from the start), the
// counts are unknown, not zero.
func TestClusterViewSaysWhatIsNotListedYet(t *testing.T) {
	live := newFakeLive(&cluster.Objects{})
	live.status = cluster.LiveStatus{State: cluster.Lost, Server: "127.0.0.1:6443", Since: epoch.Time, Err: "connection refused",
		Listing: []string{"nodes", "pods", "resourcequotas", "priorityclasses", "events"}}
	view := newClusterModel(t, 160, 40, ClusterSource{Name: "prod", Live: live}).View()
	for _, want := range []string{"? GPU nodes · ? pods · ? waiting", "GPU nodes (?)", "unknown: nodes not listed yet", "unknown: pods not listed yet", "unknown: resourcequotas not listed yet"} {
		if !strings.Contains(view, want) {
			t.Errorf("the tab lacks %q:\n%s", want, view)
		}
	}
	for _, lie := range []string{"0 pods", "nothing waits", "no node has a GPU resource", "no ResourceQuota"} {
		if strings.Contains(view, lie) {
			t.Errorf("the tab says %q before anything was listed:\n%s", lie, view)
		}
	}
}

// At 80×24 the why pane holds a few lines: ] scrolls it to the end of the
// evidence (the last evidence line shows, the marker says what is above),
// [ back; another item's why starts at its top.
func TestClusterViewScrollsTheWhy(t *testing.T) {
	m := newClusterModel(t, 80, 24, ClusterSource{Name: "simulated", Simulated: true, Live: newFakeLive(clusterFixture())})
	if v := m.View(); !strings.Contains(v, "more lines of why and evidence · ]") || strings.Contains(v, "event FailedScheduling") {
		t.Fatalf("at 80x24 the why is expected cut, with a marker:\n%s", v)
	}
	m, _ = press(t, m, "]", "]", "]", "]")
	v := m.View()
	if !strings.Contains(v, "event FailedScheduling") || !strings.Contains(v, "end of the evidence") {
		t.Errorf("] did not reach the end of the evidence:\n%s", v)
	}
	m, _ = press(t, m, "[", "[", "[", "[")
	if v := m.View(); !strings.Contains(v, "waits for a node for 8 nvidia.com/gpu") || strings.Contains(v, "end of the evidence") {
		t.Errorf("[ did not come back to the top:\n%s", v)
	}
	m, _ = press(t, m, "]", "down")
	if v := m.View(); !strings.Contains(v, "why: ml-team/eval-sweep") || strings.Contains(v, "↑") && strings.Contains(v, "above · [") {
		t.Errorf("another item's why does not start at its top:\n%s", v)
	}
}

// A screen too short for every node row says which rows it shows and how
// to reach the others, and the cursor reaches the last node: at 80x24
// and 60x16 a cluster of six GPU nodes hid some without a word.
func TestClusterViewSaysHiddenNodeRows(t *testing.T) {
	o := clusterFixture()
	for _, n := range []string{"dgx04", "dgx05", "dgx06"} {
		o.Nodes = append(o.Nodes, gpuNode(n, map[string]int64{"nvidia.com/gpu": 8}, map[string]int64{"nvidia.com/gpu": 8}))
	}
	for _, sz := range []struct{ w, h int }{{80, 24}, {60, 16}} {
		m := newClusterModel(t, sz.w, sz.h, ClusterSource{Name: "prod", Live: newFakeLive(o)})
		if v := m.View(); !regexp.MustCompile(`GPU nodes \(6\)  rows 1-\d of 7 · ←/→ then ↑/↓`).MatchString(v) {
			t.Errorf("%dx%d: the hidden node rows are not said:\n%s", sz.w, sz.h, v)
		}
		m, _ = press(t, m, "left", "down", "down", "down", "down", "down", "down")
		v := m.View()
		if !strings.Contains(v, "▶ dgx06") || !regexp.MustCompile(`rows \d-7 of 7 · ↑/↓`).MatchString(v) {
			t.Errorf("%dx%d: the cursor does not reach the last node, or the rows shown are not said:\n%s", sz.w, sz.h, v)
		}
	}
}
