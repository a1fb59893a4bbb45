package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/internal/kubetest"
	"github.com/gpulab/gpulab/internal/probetest"
	"github.com/gpulab/gpulab/internal/sshtest"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/probes/report"
)

// gpulab cluster reconcile against a real API server (kwok nodes gpu-a,
// gpu-b, gpu-c) and real sshd hosts of the same names, the probe pushed
// over SSH and run on a simulated DGX A100 per host whose processes carry
// the cgroups of the pods the API server created: ml/train holds 2 GPUs
// and runs on one (busy), ml/notebook holds 1 and runs nothing (idle), a
// python in system.slice uses a GPU of gpu-b (used without allocation);
// gpu-c's sshd is down (not probed, its pod unknown, the others intact);
// host login is no node.
func TestClusterReconcile(t *testing.T) {
	cp := kubetest.Start(t)
	caches := t.TempDir()
	f := sshtest.Start(t, 3, sshtest.Options{EnvFor: func(i int) map[string]string {
		return map[string]string{"XDG_CACHE_HOME": filepath.Join(caches, fmt.Sprint(i))}
	}})
	for _, n := range []string{"gpu-a", "gpu-b", "gpu-c"} {
		cp.AddNode(t, kubetest.GPUNode(n, 8))
	}
	cp.Namespace(t, "ml")
	train := createGPUPod(t, cp, "train", "gpu-a", 2)
	createGPUPod(t, cp, "notebook", "gpu-a", 1)
	createGPUPod(t, cp, "far", "gpu-c", 1)
	waitRunning(t, cp, "ml", "train", "notebook") // far's node is not probed: its phase does not matter

	dir := t.TempDir()
	uid := strings.ReplaceAll(string(train.UID), "-", "_")
	faults := map[string]any{
		"gpu-a": map[string]any{"utilization": map[string]int{"0": 87}, "processes": []map[string]any{{"gpu": 0, "pid": 1001, "name": "python", "used_mib": 20480,
			"cgroup": "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uid + ".slice/cri-containerd-" + strings.Repeat("ab", 32) + ".scope"}}},
		"gpu-b": map[string]any{"processes": []map[string]any{{"gpu": 3, "pid": 4242, "name": "python", "used_mib": 1000, "cgroup": "0::/system.slice/train.service"}},
			"mig": map[string][]string{"7": {"3g.20gb", "3g.20gb"}}}, // the node advertises no MIG resource
	}
	faultsFile := filepath.Join(dir, "faults.json")
	data, _ := json.Marshal(faults)
	writeFile(t, faultsFile, string(data))
	var inv strings.Builder
	fmt.Fprintf(&inv, "[defaults]\nuser = %q\nidentity_file = %q\nknown_hosts = %q\n", f.User, f.ClientKey, f.KnownHosts)
	// gpu-c's sshd is down: its port is held, never listened on, so that
	// no other process's server takes it meanwhile.
	down := sshtest.FreePort(t)
	for i, name := range []string{"gpu-a", "gpu-b", "gpu-c"} {
		port := f.Servers[i].Port
		if name == "gpu-c" {
			port = down
		}
		fmt.Fprintf(&inv, "[[host]]\nname = %q\naddress = %q\nport = %d\n", name, f.Servers[i].Addr, port)
	}
	fmt.Fprintf(&inv, "[[host]]\nname = \"login\"\naddress = %q\nport = %d\n", f.Servers[0].Addr, f.Servers[0].Port)
	fmt.Fprintf(&inv, "[[kube]]\nname = \"lab\"\nkubeconfig = %q\ncontext = \"kubetest\"\nnodes = \"gpu-a,gpu-b,gpu-c,login\"\n", cp.Kubeconfig)
	invFile := filepath.Join(dir, "inventory.toml")
	writeFile(t, invFile, inv.String())
	f.Servers[2].Kill() // and its sshd gone too

	env := noEnv(t)
	args := []string{"cluster", "reconcile", "--inventory", invFile, "-H", "gpu-a,gpu-b,gpu-c,login",
		"--mock", "dgxa100", "--mock-faults", faultsFile, "--probe-binary", probetest.Build(t)}
	r := run(t, env, append(args, "--json")...)
	var out reconcileOutput
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 1 {
		t.Fatalf("reconcile --json: exit %d (want 1), %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	checkReconciled(t, out, string(train.UID))

	r = run(t, env, args...)
	t.Logf("gpulab %s\n%s", strings.Join(args, " "), r.stdout)
	r.expect(t, 1, "SIMULATED GPUs (--mock)", "")
	r.expect(t, 1, "\n4 GPUs allocated, 1 idle (ml/notebook), 1 used without allocation (host gpu-b GPU 3, PID 4242 python), 2 MIG instances stranded, 1 node not probed\n", "")
	r.expect(t, 1, "  ml/notebook on gpu-a holds 1 GPU: no process of it on any GPU of gpu-a\n", "")
	r.expect(t, 1, "  login: no node named login\n", "")
	r.expect(t, 1, "  gpu-b: 2 of 2 3g.20gb instances (GPU 7) beyond what the node advertises (nvidia.com/mig-3g.20gb: 0), nothing runs in them\n", "")
	r.expect(t, 1, "not probed: gpu-c (host gpu-c refused: dial 127.0.0.1:", "")

	run(t, env, "cluster", "reconcile", "--help").expect(t, 0, "used without allocation", "")

	// Bad input says which file and which host; the exit status is 2.
	writeFile(t, faultsFile, `{"gpu-a": {"processes": [{"gpu": 9, "pid": 1, "name": "x"}]}}`)
	run(t, env, args...).expect(t, 2, "", `host "gpu-a": processes: PID 1: GPU 9`)
	writeFile(t, faultsFile, "{\n\"gpu-a\": {\n}}}")
	run(t, env, args...).expect(t, 2, "", faultsFile+":3:")
	writeFile(t, faultsFile, `{"gpu-z": {}}`)
	run(t, env, args...).expect(t, 2, "", `host "gpu-z" is not among the hosts -H selects`)
	run(t, env, "cluster", "reconcile", "--inventory", invFile, "-H", "gpu-a", "--mock-faults", faultsFile).expect(t, 2, "", "--mock-faults needs --mock dgxa100")
}

// checkReconciled asserts the reconciliation TestClusterReconcile sets up.
func checkReconciled(t *testing.T, out reconcileOutput, trainUID string) {
	t.Helper()
	if out.Context != "kubetest" || !out.Simulated {
		t.Errorf("context %q, simulated %v; want kubetest (the inventory's [[kube]] lab), simulated", out.Context, out.Simulated)
	}
	states := map[string]string{}
	for _, p := range out.Pods {
		states[p.Namespace+"/"+p.Name] = fmt.Sprintf("%s %d %v", p.State, p.Held.GPUs, p.InUse)
		if p.Name == "train" && (len(p.Processes) != 1 || p.Processes[0].PID != 1001 || p.UID != trainUID) {
			t.Errorf("ml/train processes %+v, uid %s", p.Processes, p.UID)
		}
	}
	want := map[string]string{"ml/train": "busy 2 [0]", "ml/notebook": "idle 1 []", "ml/far": "unknown 1 []"}
	if !reflect.DeepEqual(states, want) {
		t.Errorf("pods %v, want %v", states, want)
	}
	if len(out.Unallocated) != 1 {
		t.Fatalf("unallocated %+v, want the python of gpu-b", out.Unallocated)
	}
	if u := out.Unallocated[0]; u.Node != "gpu-b" || u.Host != "gpu-b" || u.GPU != 3 || u.PID != 4242 || u.Name != "python" || u.PodUID != "" || !strings.Contains(u.Reason, "outside Kubernetes") {
		t.Errorf("unallocated %+v", u)
	}
	var nodes []string
	for _, n := range out.Nodes {
		nodes = append(nodes, fmt.Sprintf("%s probed=%v busy=%v", n.Node, n.Probed, n.BusyGPUs))
		if n.Node == "gpu-c" && !strings.Contains(n.NotProbed, "host gpu-c refused: dial 127.0.0.1:") {
			t.Errorf("gpu-c not probed because %q, want its host refusing connections", n.NotProbed)
		}
	}
	if want := []string{"gpu-a probed=true busy=[0]", "gpu-b probed=true busy=[3]", "gpu-c probed=false busy=[]"}; !slices.Equal(nodes, want) {
		t.Errorf("nodes %q, want %q", nodes, want)
	}
	if u := out.Totals.Usage; u.Allocated.GPUs != 4 || u.Busy.GPUs != 2 || u.Idle.GPUs != 1 || u.Unknown.GPUs != 1 || out.Totals.UnallocatedGPUs != 1 {
		t.Errorf("totals %+v", out.Totals)
	}
	if len(out.StrandedMIG) != 1 || out.StrandedMIG[0].Node != "gpu-b" || out.StrandedMIG[0].Stranded != 2 || out.Totals.StrandedMIG != 2 {
		t.Errorf("stranded MIG %+v, want gpu-b's two 3g.20gb", out.StrandedMIG)
	}
	if len(out.Namespaces) != 1 || out.Namespaces[0].Usage.Idle.GPUs != 1 {
		t.Errorf("namespaces %+v", out.Namespaces)
	}
	hosts := map[string]string{}
	for _, h := range out.Hosts {
		hosts[h.Host] = h.Node + "|" + h.Unmapped
	}
	if want := map[string]string{"gpu-a": "gpu-a|", "gpu-b": "gpu-b|", "gpu-c": "gpu-c|", "login": "|no node named login"}; !reflect.DeepEqual(hosts, want) {
		t.Errorf("hosts %v, want %v", hosts, want)
	}
}

func createGPUPod(t *testing.T, cp *kubetest.ControlPlane, name, node string, gpus int) *corev1.Pod {
	t.Helper()
	q := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(fmt.Sprint(gpus))}
	p, err := cp.Client.CoreV1().Pods("ml").Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "cuda", Resources: corev1.ResourceRequirements{Limits: q}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitRunning waits, watching the API server, until the pods names of
// namespace ns are Running (kwok's pod-ready stage marks them so).
func waitRunning(t *testing.T, cp *kubetest.ControlPlane, ns string, names ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	pods := cp.Client.CoreV1().Pods(ns)
	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	running := map[string]bool{}
	set := func(p *corev1.Pod) {
		if slices.Contains(names, p.Name) {
			running[p.Name] = p.Status.Phase == corev1.PodRunning
		}
	}
	for i := range list.Items {
		set(&list.Items[i])
	}
	n := len(names)
	w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for count(running) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("the watch of namespace %s ended with %d of %d pods Running", ns, count(running), n)
			}
			if p, isPod := ev.Object.(*corev1.Pod); isPod && ev.Type != watch.Error {
				set(p)
			}
		case <-ctx.Done():
			t.Fatalf("waited 60s for %d pods Running in %s: %v", n, ns, running)
		}
	}
}

func count(m map[string]bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}

// Which cluster, and which node a host is: the inventory's [[kube]] table
// named by --context or holding the hosts, else kubectl's rules; a host
// is the node of its name or its address's short name.
func TestReconcileKubeAndNodes(t *testing.T) {
	inv, err := inventory.Parse("inv.toml", []byte(`
[[host]]
name = "h1"
address = "gpu01.example.net"
[[host]]
name = "h2"
address = "10.0.0.2"
[[host]]
name = "h3"
address = "x"
[[kube]]
name = "lab"
kubeconfig = "~/lab.kubeconfig"
context = "lab-admin"
nodes = "h1,h2"
[[kube]]
name = "prod"
kubeconfig = "prod.kubeconfig"
nodes = "h2"
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		src      cluster.Source
		explicit bool
		hosts    []string
		want     cluster.Source
		kube     string
		err      string
	}{
		{"by --context", cluster.Source{Context: "prod"}, false, []string{"h1"}, cluster.Source{Kubeconfig: "prod.kubeconfig"}, "prod", ""},
		{"by nodes", cluster.Source{}, false, []string{"h1"}, cluster.Source{Kubeconfig: "/home/u/lab.kubeconfig", Context: "lab-admin"}, "lab", ""},
		{"two contexts", cluster.Source{}, false, []string{"h2"}, cluster.Source{}, "", `kube contexts "lab" and "prod"`},
		{"--kubeconfig wins", cluster.Source{Kubeconfig: "/k", Context: "lab"}, true, nil, cluster.Source{Kubeconfig: "/k", Context: "lab-admin"}, "lab", ""},
		{"kubectl's rules", cluster.Source{Context: "other"}, false, []string{"h3"}, cluster.Source{Context: "other"}, "", ""},
	} {
		got, kube, err := app.KubeSource(inv, tc.src, tc.explicit, tc.hosts, "/home/u")
		name := ""
		if kube != nil {
			name = kube.Name
		}
		if (err != nil) != (tc.err != "") || err != nil && !strings.Contains(err.Error(), tc.err) || err == nil && (got.Kubeconfig != tc.want.Kubeconfig || got.Context != tc.want.Context || name != tc.kube) {
			t.Errorf("%s: kubeSource = %+v, %q, %v; want %+v, %q, %q", tc.name, got, name, err, tc.want, tc.kube, tc.err)
		}
	}

	lab := &inv.Kube[0]
	nodes := map[string]bool{"gpu01": true, "h2": true, "h3": true}
	for _, tc := range []struct{ host, node, why string }{
		{"h1", "gpu01", ""},
		{"h2", "h2", ""},
		{"h3", "", "not one of kube context lab's nodes (h1,h2)"},
	} {
		if node, why := nodeOf(inv, lab, nodes, tc.host); node != tc.node || why != tc.why {
			t.Errorf("nodeOf(%s) = %q, %q; want %q, %q", tc.host, node, why, tc.node, tc.why)
		}
	}
	if node, why := nodeOf(inv, nil, map[string]bool{}, "h1"); node != "" || why != "no node named h1 or gpu01.example.net or gpu01" {
		t.Errorf("nodeOf(h1) with no nodes = %q, %q", node, why)
	}
}

// mapHosts: a host without NVML or unreachable leaves its node not
// probed, with why; two hosts of one node keep the first; a GPU node no
// host maps to says so.
func TestReconcileMapHosts(t *testing.T) {
	inv, err := inventory.Parse("inv.toml", []byte("[[host]]\nname = \"a\"\naddress = \"n1.example.net\"\n[[host]]\nname = \"n1\"\naddress = \"10.0.0.1\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	gpu := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}
	objs := &cluster.Objects{}
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		objs.Nodes = append(objs.Nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}, Status: corev1.NodeStatus{Allocatable: gpu}})
	}
	ok := &report.Snapshot{NVML: report.NVMLState{Available: true}}
	results := []app.ProbeResult{
		{Host: "a", Class: "ok", Snapshot: ok},
		{Host: "n1", Class: "ok", Snapshot: ok},
		{Host: "n2", Class: "no-nvml", Error: "libnvidia-ml.so.1: cannot open", Snapshot: &report.Snapshot{}},
		{Host: "n3", Class: "unreachable", Error: "dial: no route to host"},
	}
	var out reconcileOutput
	probes := mapHosts(inv, nil, objs, results, &out)
	got := map[string]string{}
	for node, p := range probes {
		got[node] = fmt.Sprintf("%s|%v|%s", p.Host, p.Snapshot != nil, p.Err)
	}
	want := map[string]string{
		"n1": "a|true|",
		"n2": "n2|false|host n2 has no NVML: libnvidia-ml.so.1: cannot open",
		"n3": "n3|false|host n3 unreachable: dial: no route to host",
		"n4": "|false|no host selected by -H maps to it",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("mapHosts = %v\nwant %v", got, want)
	}
	if h := out.Hosts[1]; h.Host != "n1" || h.Node != "" || h.Unmapped != "node n1 is already host a's" {
		t.Errorf("the second host of node n1: %+v", h)
	}
}

// The summary counts every selected host: one whose probe failed and that
// maps to no node is named there (one on a node is among "nodes not
// probed").
func TestReconcileSummaryNamesUnmappedHostsThatFailed(t *testing.T) {
	hosts := []reconcileHost{
		{Host: "dgx01", Node: "dgx01", Class: "ok"},
		{Host: "dgx02", Node: "dgx02", Class: "refused"},
		{Host: "dgx09", Unmapped: "no node", Class: "refused"},
		{Host: "dgx10", Unmapped: "no node", Class: "error"},
		{Host: "login", Unmapped: "no node", Class: "ok"},
	}
	if got, want := hostsNotProbed(hosts), "; 2 selected hosts on no node not probed: 1 refused (dgx09), 1 error (dgx10)"; got != want {
		t.Errorf("hostsNotProbed = %q, want %q", got, want)
	}
}
