package cli

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpulab/gpulab/internal/kubetest"
)

func gpuPod(name string, gpus string, node string) *corev1.Pod {
	q := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(gpus)}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "cuda", Resources: corev1.ResourceRequirements{Limits: q}}}}}
}

// quotas, pending (with a Job the quota refuses) and fragmentation, as a
// user runs them against a real API server: text, --json, exit codes.
func TestClusterQuotasPendingFragmentation(t *testing.T) {
	cp := kubetest.Start(t)
	cp.AddNode(t, kubetest.GPUNode("gpu-a", 8))
	cp.AddNode(t, kubetest.GPUNode("gpu-b", 8))
	cp.Namespace(t, "ml")
	cp.Quota(t, "ml", "gpu", corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("14"), "pods": resource.MustParse("10")})
	pods := cp.Client.CoreV1().Pods("ml")
	for _, p := range []*corev1.Pod{gpuPod("a-0", "5", "gpu-a"), gpuPod("b-0", "5", "gpu-b"), gpuPod("wide", "4", "")} {
		if _, err := pods.Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	_, refused := pods.Create(t.Context(), gpuPod("sweep-0", "2", ""), metav1.CreateOptions{})
	if !apierrors.IsForbidden(refused) {
		t.Fatalf("a fourth pod over the quota: %v", refused)
	}
	cp.JobRefused(t, "ml", "sweep", refused)
	env := map[string]string{"HOME": t.TempDir(), "KUBECONFIG": cp.Kubeconfig}

	run(t, env, "cluster", "quotas", "-n", "ml").expect(t, 0,
		"NAMESPACE  QUOTA  RESOURCE                 USED  HARD\nml         gpu    requests.nvidia.com/gpu  14    14    FULL\n                  pods                     3     10\n", "")
	var qr struct {
		Quotas []struct {
			Resources []struct {
				Name string `json:"name"`
				Full bool   `json:"full"`
			} `json:"resources"`
		} `json:"quotas"`
	}
	r := run(t, env, "cluster", "quotas", "-A", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &qr); err != nil || len(qr.Quotas) != 1 || !qr.Quotas[0].Resources[0].Full {
		t.Errorf("quotas --json: %v %+v\n%s", err, qr, r.stdout)
	}

	cp.WaitScheduled(t, "ml", "wide")
	r = run(t, env, "cluster", "pending", "-n", "ml")
	r.expect(t, 1, "ml/wide waits for a node for 4 nvidia.com/gpu on one node. The scheduler: none of 2 nodes fits (2 Insufficient nvidia.com/gpu). "+
		"6 nvidia.com/gpu are free on the 2 nodes it may use but at most 3 on one (gpu-a): fragmentation.", "")
	r.expect(t, 1, "ml/sweep (Job) cannot create its pods: quota gpu refuses them (asks requests.nvidia.com/gpu=2, the namespace uses requests.nvidia.com/gpu=14 of requests.nvidia.com/gpu=14).", "")
	r.expect(t, 1, "  - event FailedCreate: Error creating: pods \"sweep-0\" is forbidden: exceeded quota: gpu", "")
	run(t, env, "cluster", "why", "sweep", "-n", "ml", "--json").expect(t, 1, `"by": "ResourceQuota gpu"`, "")

	run(t, env, "cluster", "fragmentation").expect(t, 1,
		"SHAPE             PENDING  NODES THAT FIT  FREE  BEST NODE  PLACEABLE  FRAGMENTATION  STATE\n4 nvidia.com/gpu  1        0 of 2          6     3          0          100%           fragmented\n", "")
	// --context names the inventory's [[kube]] table, as for reconcile and
	// the workbench; $KUBECONFIG is not what is read then.
	inv := filepath.Join(t.TempDir(), "inventory.toml")
	writeFile(t, inv, "[[kube]]\nname = \"lab\"\nkubeconfig = "+strconv.Quote(cp.Kubeconfig)+"\ncontext = \"kubetest\"\n")
	noKube := map[string]string{"HOME": t.TempDir(), "KUBECONFIG": filepath.Join(t.TempDir(), "missing")}
	run(t, noKube, "cluster", "quotas", "-n", "ml", "--context", "lab", "--inventory", inv).expect(t, 0, "requests.nvidia.com/gpu  14    14    FULL", "")
	run(t, noKube, "cluster", "quotas", "-n", "ml", "--context", "nope", "--inventory", inv).expect(t, 2, "", `context "nope"`)

	if _, err := pods.Create(t.Context(), gpuPod("one", "1", ""), metav1.CreateOptions{}); err == nil || !apierrors.IsForbidden(err) {
		t.Errorf("a pod over the full quota was admitted: %v", err)
	}
}

// Two pending pods of one shape, one that selects zone y (two nodes of 3
// free GPUs each) and one gated that may use any node (gpu-a has 8 free):
// a row each, and the picky pod's is fragmented (exit 1), not "fits" for
// the other pod's node.
func TestClusterFragmentationSplitsAShapeByItsPodsNodes(t *testing.T) {
	cp := kubetest.Start(t)
	for name, zone := range map[string]string{"gpu-a": "x", "gpu-b": "y", "gpu-c": "y"} {
		n := kubetest.GPUNode(name, 8)
		n.Labels["zone"] = zone
		cp.AddNode(t, n)
	}
	cp.Namespace(t, "ml")
	picky := gpuPod("picky", "4", "")
	picky.Spec.NodeSelector = map[string]string{"zone": "y"}
	gated := gpuPod("any", "4", "")
	gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "kueue.x-k8s.io/admission"}}
	pods := cp.Client.CoreV1().Pods("ml")
	for _, p := range []*corev1.Pod{gpuPod("b-0", "5", "gpu-b"), gpuPod("c-0", "5", "gpu-c"), gated, picky} {
		if _, err := pods.Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cp.WaitScheduled(t, "ml", "picky")
	env := map[string]string{"HOME": t.TempDir(), "KUBECONFIG": cp.Kubeconfig}
	r := run(t, env, "cluster", "fragmentation", "-n", "ml")
	r.expect(t, 1, "4 nvidia.com/gpu for ml/any    1        1 of 3          14    8          2          43%            fits\n"+
		"4 nvidia.com/gpu for ml/picky  1        0 of 2          6     3          0          100%           fragmented\n", "")
	r.expect(t, 1, "  4 nvidia.com/gpu for ml/picky: 8 free on nodes its pods may not use: gpu-a does not match its nodeSelector zone=y", "")
	var js struct {
		Shapes []struct {
			Pods  []string `json:"pods"`
			State string   `json:"state"`
		} `json:"shapes"`
	}
	r = run(t, env, "cluster", "fragmentation", "-n", "ml", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &js); err != nil || len(js.Shapes) != 2 || js.Shapes[1].State != "fragmented" || len(js.Shapes[1].Pods) != 1 || js.Shapes[1].Pods[0] != "ml/picky" {
		t.Errorf("fragmentation --json: %v %+v\n%s", err, js, r.stdout)
	}
}
