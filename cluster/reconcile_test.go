package cluster

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpulab/gpulab/probes/report"
)

func testNode(name string, labels map[string]string, res map[string]string) *corev1.Node {
	rl := corev1.ResourceList{}
	for k, v := range res {
		rl[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Status: corev1.NodeStatus{Capacity: rl, Allocatable: rl}}
}

func testPod(ns, name, node string, phase corev1.PodPhase, res map[string]string) *corev1.Pod {
	rl := corev1.ResourceList{}
	for k, v := range res {
		rl[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name)},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Limits: rl}}}},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

// testGPUs are n idle GPUs (4 MiB used, 0%).
func testGPUs(n int) []report.GPU {
	gpus := make([]report.GPU, n)
	for i := range gpus {
		gpus[i] = report.GPU{Index: i, Memory: &report.Memory{TotalMiB: 40960, UsedMiB: 4}, Utilization: &report.Utilization{}, MIG: report.MIG{Current: "disabled"}}
	}
	return gpus
}

func proc(gpu int, pid uint32, name, podUID string) report.Process {
	return report.Process{GPU: gpu, PID: pid, Name: name, Type: "compute", UsedMiB: 1000, PodUID: podUID}
}

// reconcileFixture is a small cluster: node a (8 GPUs) with a busy pod, an
// idle one, one whose process sits at 0%, one starting, and three
// processes nobody was given a GPU for; node b (MIG, mixed strategy) with
// a pod busy in an instance, an instance beyond what it advertises and a
// GPU in MIG mode with none; node c, unreachable, with a pod.
func reconcileFixture() (*Objects, map[string]NodeProbe) {
	gi := func(i int) *int { return &i }
	objs := &Objects{
		Nodes: []*corev1.Node{
			testNode("a", nil, map[string]string{"nvidia.com/gpu": "8"}),
			testNode("b", map[string]string{"nvidia.com/mig.strategy": "mixed"}, map[string]string{"nvidia.com/mig-3g.20gb": "1"}),
			testNode("c", nil, map[string]string{"nvidia.com/gpu": "4"}),
			testNode("cpu", nil, nil),
		},
		Pods: []*corev1.Pod{
			testPod("ml", "train", "a", corev1.PodRunning, map[string]string{"nvidia.com/gpu": "2"}),
			testPod("ml", "notebook", "a", corev1.PodRunning, map[string]string{"nvidia.com/gpu": "1"}),
			testPod("ml", "stuck", "a", corev1.PodRunning, map[string]string{"nvidia.com/gpu": "1"}),
			testPod("ml", "pulling", "a", corev1.PodPending, map[string]string{"nvidia.com/gpu": "1"}),
			testPod("web", "api", "a", corev1.PodRunning, map[string]string{"cpu": "1"}),
			testPod("ml", "done", "a", corev1.PodSucceeded, map[string]string{"nvidia.com/gpu": "1"}),
			testPod("ml", "slice", "b", corev1.PodRunning, map[string]string{"nvidia.com/mig-3g.20gb": "1", "nvidia.com/gpumem": "1000"}),
			testPod("team", "x", "c", corev1.PodRunning, map[string]string{"nvidia.com/gpu": "1"}),
		},
	}
	a := &report.Snapshot{GPUs: testGPUs(8), Processes: []report.Process{
		proc(0, 101, "python", "uid-ml-train"),
		proc(3, 102, "python", "uid-ml-stuck"),
		proc(5, 103, "leech", "uid-web-api"),
		proc(6, 4242, "python", ""),
		proc(4, 104, "ghost", "uid-gone"),
	}}
	a.GPUs[0].Utilization.GPUPercent = 80
	a.GPUs[1].Utilization.GPUPercent = 5     // busy with no process listed
	a.GPUs[7].Memory.UsedMiB = 300           // memory held with no process listed
	a.GPUs[2].Memory.UsedMiB = IdleMemoryMiB // at the bound: idle
	b := &report.Snapshot{GPUs: testGPUs(3), Processes: []report.Process{
		{GPU: 0, PID: 201, Name: "infer", Type: "compute", UsedMiB: 500, GPUInstanceID: gi(2), ComputeInstanceID: gi(0), PodUID: "uid-ml-slice"},
	}}
	b.GPUs[0].MIG = report.MIG{Current: "enabled", GPUInstances: []report.GPUInstance{{ID: 1, Profile: "3g.20gb"}, {ID: 2, Profile: "3g.20gb"}}}
	b.GPUs[1].MIG = report.MIG{Current: "enabled"}
	return objs, map[string]NodeProbe{
		"a": {Host: "host-a", Snapshot: a},
		"b": {Host: "host-b", Snapshot: b},
		"c": {Host: "host-c", Err: "host host-c: dial tcp 127.0.0.1:1: connection refused"},
	}
}

func TestReconcilePods(t *testing.T) {
	r := Reconcile(reconcileFixture())
	want := map[string]struct {
		state  PodState
		held   Devices
		reason string
		inUse  []int
	}{
		"ml/train":    {PodBusy, Devices{GPUs: 2}, "1 process on GPU 0", []int{0}},
		"ml/notebook": {PodIdle, Devices{GPUs: 1}, "no process of it on any GPU of a", []int{}},
		"ml/stuck":    {PodIdle, Devices{GPUs: 1}, "1 process on GPU 3, which shows 0% utilisation", []int{3}},
		"ml/pulling":  {PodStarting, Devices{GPUs: 1}, "not yet running", []int{}},
		"ml/slice":    {PodBusy, Devices{MIGSlices: 1}, "1 process on GPU 0", []int{0}},
		"team/x":      {PodUnknown, Devices{GPUs: 1}, "connection refused", []int{}},
	}
	if len(r.Pods) != len(want) {
		t.Errorf("Reconcile: %d pods, want %d: %+v", len(r.Pods), len(want), r.Pods)
	}
	for _, p := range r.Pods {
		key := p.Namespace + "/" + p.Name
		w, ok := want[key]
		if !ok {
			t.Errorf("pod %s reported (%s): it holds no device or has ended", key, p.State)
			continue
		}
		if p.State != w.state || p.Held != w.held || !strings.Contains(p.Reason, w.reason) || !reflect.DeepEqual(p.InUse, w.inUse) {
			t.Errorf("pod %s = %s %+v %q in use %v, want %s %+v %q %v", key, p.State, p.Held, p.Reason, p.InUse, w.state, w.held, w.reason, w.inUse)
		}
	}
	if p := r.Pods[0]; p.Namespace != "ml" || p.Name != "notebook" {
		t.Errorf("pods not sorted by namespace and name: first %s/%s", p.Namespace, p.Name)
	}
	if res := r.Pods[2].Resources; r.Pods[2].Name != "slice" || !reflect.DeepEqual(res, map[string]int64{"nvidia.com/mig-3g.20gb": 1}) {
		t.Errorf("ml/slice resources %v: want the MIG slice, not HAMi's gpumem amount", res)
	}
}

func TestReconcileUnallocated(t *testing.T) {
	r := Reconcile(reconcileFixture())
	var got []string
	for _, u := range r.Unallocated {
		got = append(got, fmt.Sprintf("%s/%s GPU %d PID %d %s: %s", u.Host, u.Node, u.GPU, u.PID, u.Name, u.Reason))
	}
	want := []string{
		"host-a/a GPU 5 PID 103 leech: in pod web/api, which requests no GPU resource",
		"host-a/a GPU 6 PID 4242 python: not in a pod (its cgroup names none): a process outside Kubernetes",
		"host-a/a GPU 4 PID 104 ghost: in pod UID uid-gone, which the API server does not have (deleted, or a static pod)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("unallocated:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !r.Wrong() {
		t.Error("Wrong() = false with idle pods and unallocated processes")
	}
}

func TestReconcileNodesAndMIG(t *testing.T) {
	r := Reconcile(reconcileFixture())
	if len(r.Nodes) != 3 {
		t.Fatalf("nodes %+v, want a, b, c (cpu has no GPU resource and no snapshot)", r.Nodes)
	}
	a, b, c := r.Nodes[0], r.Nodes[1], r.Nodes[2]
	if !reflect.DeepEqual(a.BusyGPUs, []int{0, 1, 3, 4, 5, 6, 7}) || a.GPUs != 8 || a.Host != "host-a" || a.Unallocated != 3 {
		t.Errorf("node a: busy %v of %d, host %q, %d unallocated", a.BusyGPUs, a.GPUs, a.Host, a.Unallocated)
	}
	if want := (Usage{Allocated: Devices{GPUs: 5}, Busy: Devices{GPUs: 2}, Idle: Devices{GPUs: 2}, Starting: Devices{GPUs: 1}}); a.Usage != want {
		t.Errorf("node a usage %+v, want %+v", a.Usage, want)
	}
	if c.Probed || !strings.Contains(c.NotProbed, "connection refused") || c.Usage.Unknown.GPUs != 1 {
		t.Errorf("node c: probed %v (%q), usage %+v", c.Probed, c.NotProbed, c.Usage)
	}
	want := []StrandedMIG{
		{Node: "b", Profile: "", Stranded: 1, GPUs: []int{1}},
		{Node: "b", Profile: "3g.20gb", Resource: "nvidia.com/mig-3g.20gb", Instances: 2, Advertised: 1, Stranded: 1, GPUs: []int{0}},
	}
	if !reflect.DeepEqual(r.StrandedMIG, want) || b.StrandedMIG != 2 {
		t.Errorf("stranded MIG %+v (node b: %d), want %+v", r.StrandedMIG, b.StrandedMIG, want)
	}

	// The single strategy advertises instances as nvidia.com/gpu; with
	// both instances used by processes, none is stranded.
	objs, probes := reconcileFixture()
	objs.Nodes[1] = testNode("b", map[string]string{"nvidia.com/mig.strategy": "single"}, map[string]string{"nvidia.com/gpu": "3"})
	snap := probes["b"].Snapshot
	snap.GPUs[1].MIG.Current = "disabled"
	two := 1
	snap.Processes = append(snap.Processes, report.Process{GPU: 0, PID: 202, GPUInstanceID: &two})
	if r := Reconcile(objs, probes); len(r.StrandedMIG) != 0 {
		t.Errorf("single strategy, 2 instances + 1 whole GPU against nvidia.com/gpu 3, both used: stranded %+v", r.StrandedMIG)
	}
	snap.Processes = snap.Processes[:1]
	if r := Reconcile(objs, probes); len(r.StrandedMIG) != 1 || r.StrandedMIG[0].Stranded != 1 || r.StrandedMIG[0].Advertised != 1 {
		t.Errorf("single strategy, one instance unused and unadvertised: %+v", r.StrandedMIG)
	}
}

func TestReconcileTotals(t *testing.T) {
	r := Reconcile(reconcileFixture())
	want := Totals{Nodes: 3, Probed: 2, NotProbed: 1, Pods: 6, Unallocated: 3, UnallocatedGPUs: 3, StrandedMIG: 2,
		Usage: Usage{Allocated: Devices{GPUs: 6, MIGSlices: 1}, Busy: Devices{GPUs: 2, MIGSlices: 1}, Idle: Devices{GPUs: 2},
			Starting: Devices{GPUs: 1}, Unknown: Devices{GPUs: 1}}}
	if r.Totals != want {
		t.Errorf("totals %+v\nwant %+v", r.Totals, want)
	}
	var ns []string
	for _, n := range r.Namespaces {
		ns = append(ns, fmt.Sprintf("%s:%d/%d/%d", n.Namespace, n.Usage.Allocated.GPUs, n.Usage.Busy.GPUs, n.Usage.Idle.GPUs))
	}
	if got := strings.Join(ns, " "); got != "ml:5/2/2 team:1/0/0" {
		t.Errorf("namespaces (allocated/busy/idle GPUs) %s", got)
	}

	// The JSON names are the contract.
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"nodes":`, `"not_probed":"host host-c`, `"busy_gpus":[0,1,3`, `"unallocated_processes":3`, `"stranded_mig":`,
		`"gpus_in_use":[0]`, `"utilization_percent":80`, `"mig_slices":1`, `"pod_uid":"uid-gone"`, `"state":"idle"`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("the JSON lacks %s:\n%s", key, data)
		}
	}

	// Nothing wrong: no idle pod, nothing unallocated; nothing probed at
	// all is not wrong either, only unknown.
	objs, probes := reconcileFixture()
	objs.Pods = []*corev1.Pod{objs.Pods[0], objs.Pods[6]}
	probes["a"].Snapshot.Processes = probes["a"].Snapshot.Processes[:1]
	if r := Reconcile(objs, probes); r.Wrong() {
		t.Errorf("Wrong() with two busy pods: %+v", r.Totals)
	}
	if r := Reconcile(objs, nil); r.Wrong() || r.Totals.NotProbed != 3 || r.Nodes[0].NotProbed != "no host maps to this node" {
		t.Errorf("Reconcile(objs, nil) = %+v, nodes %+v", r.Totals, r.Nodes)
	}
}

// BenchmarkReconcile joins 1,000 nodes of 8 GPUs, each with 8 one-GPU
// pods of which 7 run a process and 1 sits idle.
func BenchmarkReconcile(b *testing.B) {
	objs := &Objects{}
	probes := map[string]NodeProbe{}
	for n := range 1000 {
		name := fmt.Sprintf("gpu%04d", n)
		objs.Nodes = append(objs.Nodes, testNode(name, nil, map[string]string{"nvidia.com/gpu": "8"}))
		snap := &report.Snapshot{GPUs: testGPUs(8)}
		for g := range 8 {
			p := testPod("ns"+fmt.Sprint(n%20), fmt.Sprintf("%s-%d", name, g), name, corev1.PodRunning, map[string]string{"nvidia.com/gpu": "1"})
			objs.Pods = append(objs.Pods, p)
			if g < 7 {
				snap.Processes = append(snap.Processes, proc(g, uint32(1000+g), "python", string(p.UID)))
				snap.GPUs[g].Utilization.GPUPercent = 50
			}
		}
		probes[name] = NodeProbe{Host: name, Snapshot: snap}
	}
	b.ResetTimer()
	for b.Loop() {
		r := Reconcile(objs, probes)
		if r.Totals.Usage.Idle.GPUs != 1000 {
			b.Fatalf("idle %d", r.Totals.Usage.Idle.GPUs)
		}
	}
}
