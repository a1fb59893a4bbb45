package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/client-go/util/retry"

	"github.com/gpulab/gpulab/internal/kubetest"
	"github.com/gpulab/gpulab/internal/sshtest"
)

// gpulab cluster nodes against a real API server: text, --json, and the
// exit codes of a bad kubeconfig (2) and an unreachable cluster (1).
func TestClusterNodes(t *testing.T) {
	cp := kubetest.Start(t)
	cp.AddNode(t, kubetest.GPUNode("gpu-b", 8))
	cp.AddNode(t, kubetest.GPUNode("gpu-a", 4))
	q := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("3")}
	if _, err := cp.Client.CoreV1().Pods(metav1.NamespaceDefault).Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "train"},
		Spec:       corev1.PodSpec{NodeName: "gpu-b", Containers: []corev1.Container{{Name: "c", Image: "cuda", Resources: corev1.ResourceRequirements{Limits: q}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// gpu-c: what the cluster says of its GPUs: NVSentinel's condition,
	// EKS's, a device-plugin gap, IBM Autopilot's label.
	sick := kubetest.GPUNode("gpu-c", 8)
	sick.Labels["autopilot.ibm.com/gpuhealth"] = "ERR"
	sick.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("7")
	cp.AddNode(t, sick)
	since := metav1.NewTime(time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC))
	nodes := cp.Client.CoreV1().Nodes()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := nodes.Get(t.Context(), "gpu-c", metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status.Conditions = append(n.Status.Conditions,
			corev1.NodeCondition{Type: "GpuXidError", Status: corev1.ConditionTrue, Reason: "GpuXidErrorIsNotHealthy", Message: "ErrorCode:79 GPU:3 GPU has fallen off the bus", LastTransitionTime: since},
			corev1.NodeCondition{Type: "AcceleratedHardwareReady", Status: corev1.ConditionFalse, Reason: "NvidiaXID79Error", LastTransitionTime: since},
			corev1.NodeCondition{Type: "GpuThermalWatch", Status: corev1.ConditionFalse, Reason: "GpuThermalWatchIsHealthy", LastTransitionTime: since})
		_, err = nodes.UpdateStatus(t.Context(), n, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": t.TempDir(), "KUBECONFIG": ""}
	r := run(t, env, "cluster", "nodes", "--kubeconfig", cp.Kubeconfig)
	r.expect(t, 0, "NODE   STATUS  GPU HEALTH     RESOURCE        ALLOCATED  ALLOCATABLE  CAPACITY  FREE  TAINTS\n"+
		"gpu-a  Ready   no signal      nvidia.com/gpu  0          4            4         4\n"+
		"gpu-b  Ready   no signal      nvidia.com/gpu  3          8            8         5\n"+
		"gpu-c  Ready   UNHEALTHY (4)  nvidia.com/gpu  0          7            8         7\n", "")
	r.expect(t, 0, "GPU health, as the cluster states it:\n"+
		"  gpu-c: NVSentinel: GpuXidError=True (GpuXidErrorIsNotHealthy ErrorCode:79 GPU:3 GPU has fallen off the bus) since 2026-12-06T09:00:00Z\n"+
		"  gpu-c: EKS node monitoring agent: AcceleratedHardwareReady=False (NvidiaXID79Error) since 2026-12-06T09:00:00Z\n"+
		"  gpu-c: IBM Autopilot: autopilot.ibm.com/gpuhealth=ERR\n"+
		"  gpu-c: device plugin: nvidia.com/gpu (allocatable 7 of capacity 8: it marked 1 device(s) unhealthy)\n", "")
	if strings.Contains(r.stdout, "GpuThermalWatch") {
		t.Errorf("a condition that clears a problem is shown as one:\n%s", r.stdout)
	}

	run(t, env, "cluster", "nodes", "--kubeconfig", cp.Kubeconfig, "--wide").expect(t, 0, "PRODUCT  MEMORY  DRIVER  MIG STRATEGY  KUBELET     RUNTIME     OS", "")
	r = run(t, env, "cluster", "nodes", "--kubeconfig", cp.Kubeconfig, "--json")
	var got []struct {
		Name      string           `json:"name"`
		Allocated map[string]int64 `json:"allocated"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) != 3 || got[1].Allocated["nvidia.com/gpu"] != 3 {
		t.Errorf("--json: %v %+v\n%s", err, got, r.stdout)
	}

	bad := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(bad, []byte("apiVersion: v1\nkind: Config\nclusters: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, env, "cluster", "nodes", "--kubeconfig", bad).expect(t, 2, "", "kubeconfig")
	run(t, env, "cluster", "nodes", "--kubeconfig", cp.Kubeconfig, "--context", "nope").expect(t, 2, "", "nope")

	data, err := os.ReadFile(cp.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	down := filepath.Join(t.TempDir(), "kubeconfig")
	port := sshtest.FreePort(t)
	text := string(data)
	i := strings.Index(text, "server: ")
	j := strings.Index(text[i:], "\n")
	text = text[:i] + fmt.Sprintf("server: https://127.0.0.1:%d", port) + text[i+j:]
	if err := os.WriteFile(down, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, env, "cluster", "nodes", "--kubeconfig", down).expect(t, 1, "", "connection refused")

	// pending and why: nothing waits, then a pod asking for 12 GPUs
	// waits, and the scheduler's word comes with its paragraph.
	run(t, env, "cluster", "pending", "-A", "--kubeconfig", cp.Kubeconfig).expect(t, 0, "no pod waits for a node", "")
	big := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("12")}
	if _, err := cp.Client.CoreV1().Pods(metav1.NamespaceDefault).Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "big"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "cuda", Resources: corev1.ResourceRequirements{Limits: big}}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cp.WaitScheduled(t, metav1.NamespaceDefault, "big")
	r = run(t, env, "cluster", "why", "big", "-n", "default", "--kubeconfig", cp.Kubeconfig)
	r.expect(t, 1, "default/big waits for a node for 12 nvidia.com/gpu on one node. The scheduler: none of 3 nodes fits (3 Insufficient nvidia.com/gpu). It can never run as asked: the nodes it may use offer at most 8 nvidia.com/gpu (gpu-b: allocatable 8 of capacity 8), fewer than the 12 it asks for one node.", "")
	run(t, env, "cluster", "pending", "-A", "--kubeconfig", cp.Kubeconfig, "--json").expect(t, 1, `"name": "big"`, "")
	run(t, env, "cluster", "why", "nope", "-n", "default", "--kubeconfig", cp.Kubeconfig).expect(t, 3, "", `nothing named "nope" waits`)
	run(t, env, "cluster", "why", "big", "-n", "kube-system", "--kubeconfig", cp.Kubeconfig).expect(t, 3, "", `a pod of that name waits in default (-n default)`)
	run(t, env, "cluster", "nodes", "-n", "default", "--kubeconfig", cp.Kubeconfig).expect(t, 2, "", "-n does not apply to nodes")
}

// With no kubeconfig anywhere, every cluster command says what gpulab
// looked for and how to point it at a cluster, not client-go's
// KUBERNETES_MASTER.
func TestNoClusterConfigured(t *testing.T) {
	env := noEnv(t)
	for _, args := range [][]string{{"cluster", "nodes"}, {"cluster", "pending", "-A"}, {"cluster", "quotas"}} {
		r := run(t, env, args...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, "no cluster configured: gpulab looked for $KUBECONFIG (not set), "+filepath.Join(env["HOME"], ".kube", "config")+" (not there)") ||
			!strings.Contains(r.stderr, "--kubeconfig FILE") || strings.Contains(r.stderr, "KUBERNETES_MASTER") {
			t.Errorf("gpulab %s: exit %d, stderr %q", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	// $KUBECONFIG naming a file that is not there says so.
	env["KUBECONFIG"] = filepath.Join(env["HOME"], "nope")
	run(t, env, "cluster", "nodes").expect(t, ExitUsage, "", "gpulab looked for $KUBECONFIG="+env["KUBECONFIG"]+" (no such file)")
}

// --context simulated, where no kubeconfig names that context, is the
// simulated fleet's cluster: every cluster command can be tried on it,
// SIMULATED said first (on standard error with --json).
func TestClusterCommandsOnTheSimulatedCluster(t *testing.T) {
	env := noEnv(t)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"cluster", "nodes"}, ExitOK, "dgx01  Ready"},
		{[]string{"cluster", "pending", "-A"}, ExitFailed, "research/llm-finetune-8gpu-"},
		// Without -n it looks in "default", as kubectl does, and never says
		// "none" alone where others wait (it said "no pod waits" here).
		{[]string{"cluster", "pending"}, ExitOK, "no pod waits for a node in namespace default, and no workload there is held by a quota or a queue\n1 pod waits for a node in other namespaces (-A lists them, and the workloads quotas hold there)\n"},
		{[]string{"cluster", "quotas", "-n", "ml-team"}, ExitOK, "gpu-quota"},
		{[]string{"cluster", "fragmentation"}, ExitFailed, "8 nvidia.com/gpu          1        0 of 4"}, // the 8-GPU job fits no node: fragmented
	} {
		r := run(t, env, append(c.args, "--context", "simulated")...)
		if r.code != c.code || !strings.HasPrefix(r.stdout, "SIMULATED cluster: ") || !strings.Contains(r.stdout, c.want) {
			t.Errorf("gpulab %s --context simulated: exit %d (want %d)\n%s%s", strings.Join(c.args, " "), r.code, c.code, r.stdout, r.stderr)
		}
	}
	r := run(t, env, "cluster", "nodes", "--context", "simulated", "--json")
	var nodes []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &nodes); err != nil || len(nodes) != 4 || !strings.HasPrefix(r.stderr, "SIMULATED cluster: ") {
		t.Errorf("--json: %v, %d nodes, stderr %q", err, len(nodes), r.stderr)
	}
	// The documents that are objects say SIMULATED too (nodes' is a list:
	// its standard error says it).
	for _, args := range [][]string{{"pending", "-A"}, {"quotas", "-A"}, {"fragmentation"}} {
		r := run(t, env, append(append([]string{"cluster"}, args...), "--context", "simulated", "--json")...)
		var doc struct{ Simulated bool }
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || !doc.Simulated {
			t.Errorf("cluster %s --json: %v, simulated %v\n%s", strings.Join(args, " "), err, doc.Simulated, r.stdout)
		}
	}
	// reconcile starts the demo's fleet for the run and joins its hosts'
	// processes with the cluster's pods: the notebook holds a GPU idle, the
	// sick host runs a process outside Kubernetes (exit 1 for both).
	r = run(t, env, "cluster", "reconcile", "--context", "simulated")
	for _, want := range []string{
		"SIMULATED fleet\ncluster simulated: 4 nodes, 4 probed\n",
		"research/notebook-alice-0 on dgx01 holds 1 GPU: no process of it on any GPU of dgx01",
		"host dgx01 (node dgx01) GPU 6: PID 4242 python3",
	} {
		if r.code != ExitFailed || !strings.HasPrefix(r.stdout, "SIMULATED cluster: ") || !strings.Contains(r.stdout, want) {
			t.Errorf("reconcile --context simulated: exit %d, want 1 and %q\n%s%s", r.code, want, r.stdout, r.stderr)
		}
	}
	r = run(t, env, "cluster", "reconcile", "--context", "simulated", "-H", "dgx02", "--json")
	var out struct {
		Simulated bool `json:"simulated"`
		Hosts     []struct{ Host, Node, Outcome string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != ExitOK || !out.Simulated ||
		len(out.Hosts) != 1 || out.Hosts[0].Node != "dgx02" || out.Hosts[0].Outcome != "ok" || !strings.HasPrefix(r.stderr, "SIMULATED cluster: ") {
		t.Errorf("reconcile --context simulated -H dgx02 --json: exit %d, %v, %+v\n%s", r.code, err, out, r.stderr)
	}
	// Its hosts are the simulated fleet's: another inventory's are not
	// joined with its pods, and --mock has nothing to add.
	run(t, env, "cluster", "reconcile", "--context", "simulated", "--inventory", "inventory.toml").expect(t, ExitUsage, "", "probes the simulated fleet it starts for the run")
	run(t, env, "cluster", "reconcile", "--context", "simulated", "--mock", "dgxa100").expect(t, ExitUsage, "", "simulates a DGX A100 already")
	// -H selects among the fleet's hosts: another name is refused, never
	// looked up and dialled.
	run(t, env, "cluster", "reconcile", "--context", "simulated", "-H", "dgx0[1-5]").expect(t, ExitUsage, "",
		`-H "dgx0[1-5]" selects dgx05, which is not a host of the simulated fleet (dgx[01-04])`)
	run(t, env, "cluster", "reconcile", "--context", "simulated", "-H", "").expect(t, ExitUsage, "", "-H '': which hosts?")
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), "gpulab-reconcile-*")); len(left) > 0 {
		t.Errorf("the simulated fleet's directories were left: %v", left)
	}
}
