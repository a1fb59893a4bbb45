package cluster_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/internal/kubetest"
)

// waitFor reads the cluster until ok says what the test waits for is
// there (the scheduler's event, a CRD served), or fails after a minute.
func waitFor(t *testing.T, c *cluster.Client, ns string, ok func(*cluster.Objects) bool) *cluster.Objects {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		o, err := cluster.Read(context.Background(), c, ns, cluster.Scheduling)
		if err != nil {
			t.Fatal(err)
		}
		if ok(o) {
			return o
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster never reached the state waited for: %d pods, %d events, queues %v", len(o.Pods), len(o.Events), o.Queues.Served)
		}
		time.Sleep(50 * time.Millisecond) // polling the API server for another component's work
	}
}

func contains(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

// A namespace's GPU quota, counted by the real API server's quota
// admission: two pods of 4 GPUs are admitted, the third is refused with
// the API server's own message, which the Job controller repeats in a
// FailedCreate event on its Job. gpulab reports the quota full, the Job
// blocked by it (it has no pod to be Pending), and a pending pod's
// priority class and the full quota.
func TestQuotaPriorityAndTaint(t *testing.T) {
	cp := kubetest.Start(t)
	ctx := t.Context()
	cp.AddNode(t, kubetest.GPUNode("gpu-a", 8))
	tainted := kubetest.GPUNode("gpu-t", 8)
	tainted.Spec.Taints = []corev1.Taint{{Key: "nvidia.com/gpu", Value: "maintenance", Effect: corev1.TaintEffectNoSchedule}}
	cp.AddNode(t, tainted)
	cp.Namespace(t, "team-a")
	cp.Quota(t, "team-a", "gpu-quota", corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("12")})
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "train-high"}, Value: 1000}
	if _, err := cp.Client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := cp.Client.CoreV1().Pods("team-a")
	for _, p := range []*corev1.Pod{pod("run-0", "nvidia.com/gpu", 4, "gpu-a"), pod("small", "nvidia.com/gpu", 3, ""), pod("big", "nvidia.com/gpu", 5, "")} {
		p.Spec.PriorityClassName = "train-high"
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	_, refused := pods.Create(ctx, pod("job-x-0", "nvidia.com/gpu", 4, ""), metav1.CreateOptions{})
	if !apierrors.IsForbidden(refused) || !strings.Contains(refused.Error(), "exceeded quota") {
		t.Fatalf("the third pod of 4 GPUs: %v, want the API server's quota refusal", refused)
	}
	cp.JobRefused(t, "team-a", "job-x", refused)
	// A refusal whose Job is gone (deleted after the event) is not a wait.
	cp.JobRefused(t, "team-a", "ghost", refused)
	if err := cp.Client.BatchV1().Jobs("team-a").Delete(ctx, "ghost", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	c := kubetestClient(t, cp)
	o := waitFor(t, c, "team-a", func(o *cluster.Objects) bool {
		p := o.Pending("team-a")
		return len(p) == 1 && p[0].Scheduling != nil && len(o.GPUNodes()) == 2 && o.GPUNodes()[0].Allocated["nvidia.com/gpu"] == 7
	})
	q := o.Quotas("team-a")
	if len(q) != 1 || q[0].Resources[0].Name != "requests.nvidia.com/gpu" || q[0].Resources[0].Used != "12" || !q[0].Resources[0].Full {
		t.Errorf("quotas: %+v, want requests.nvidia.com/gpu 12 of 12, full, first", q)
	}
	blocked := o.Blocked("team-a")
	if len(blocked) != 1 || blocked[0].Kind != "Job" || blocked[0].Name != "job-x" || blocked[0].By != "ResourceQuota gpu-quota" {
		t.Fatalf("blocked: %+v", blocked)
	}
	contains(t, "the blocked Job's why", blocked[0].Why, "team-a/job-x (Job) cannot create its pods: quota gpu-quota refuses them",
		"asks requests.nvidia.com/gpu=4, the namespace uses requests.nvidia.com/gpu=12 of requests.nvidia.com/gpu=12")
	big := o.Pending("team-a")[0]
	if big.Priority == nil || *big.Priority != 1000 {
		t.Errorf("priority of big: %v", big.Priority)
	}
	// 1 is free on gpu-a, 8 on the tainted node: only gpu-a's count, and
	// the taint is what keeps it off gpu-t.
	contains(t, "big's why", big.Why, "team-a/big waits for a node for 5 nvidia.com/gpu on one node.",
		"untolerated taint", "Only 1 nvidia.com/gpu are free on the 1 node it may use",
		"Not counted, as it may not use them: gpu-t taint nvidia.com/gpu=maintenance:NoSchedule not tolerated (8 nvidia.com/gpu free there)",
		"gpu-t would have room (8 free), and only that keeps it off: taint nvidia.com/gpu=maintenance:NoSchedule not tolerated",
		"Its priority class train-high is 1000", "Quota gpu-quota of team-a is full (12 of 12 requests.nvidia.com/gpu)")
	contains(t, "big's evidence", strings.Join(big.Evidence, "\n"), "event FailedScheduling: 0/2 nodes are available", "quota gpu-quota: requests.nvidia.com/gpu 12 of 12 used")
}

// Kueue's kinds served as CRDs (Kueue itself is not running: the test
// writes the objects it would): a ClusterQueue of 8 GPUs, 8 in use; a
// suspended Job whose Workload is not admitted (no pod exists), and a
// pod held by Kueue's scheduling gate with its own Workload. gpulab
// discovers the kinds, reads them with the dynamic client, and explains
// both.
func TestKueueServedAsCRD(t *testing.T) {
	cp := kubetest.Start(t)
	ctx := t.Context()
	cp.AddNode(t, kubetest.GPUNode("gpu-a", 8))
	cp.Namespace(t, "ml")
	c := kubetestClient(t, cp)
	for _, kind := range []struct{ plural, kind string }{{"clusterqueues", "ClusterQueue"}, {"localqueues", "LocalQueue"}, {"workloads", "Workload"}} {
		crd(t, c, "kueue.x-k8s.io", "v1beta1", kind.plural, kind.kind, kind.plural != "clusterqueues")
	}
	o := waitFor(t, c, "ml", func(o *cluster.Objects) bool {
		return len(slices.DeleteFunc(slices.Clone(o.Queues.Served), func(s string) bool { return !strings.HasPrefix(s, "kueue.x-k8s.io/") })) == 3
	})
	if !slices.Contains(o.Queues.Served, "resource.k8s.io/v1 resourceclaims") || slices.ContainsFunc(o.Queues.Served, func(s string) bool {
		return strings.HasPrefix(s, "scheduling.volcano.sh")
	}) {
		t.Errorf("served: %v, want DRA's v1 kinds (served by 1.37) and no Volcano", o.Queues.Served)
	}

	gvr := func(r string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta1", Resource: r}
	}
	createWithStatus(t, c, gvr("clusterqueues"), "", map[string]any{"kind": "ClusterQueue", "metadata": map[string]any{"name": "gpu-cq"},
		"spec": map[string]any{"cohort": "research", "resourceGroups": []any{map[string]any{"coveredResources": []any{"nvidia.com/gpu"},
			"flavors": []any{map[string]any{"name": "a100", "resources": []any{map[string]any{"name": "nvidia.com/gpu", "nominalQuota": "8"}}}}}}},
		"status": map[string]any{"pendingWorkloads": int64(2), "admittedWorkloads": int64(1),
			"flavorsUsage": []any{map[string]any{"name": "a100", "resources": []any{map[string]any{"name": "nvidia.com/gpu", "total": "8"}}}}}})
	createWithStatus(t, c, gvr("localqueues"), "ml", map[string]any{"kind": "LocalQueue", "metadata": map[string]any{"name": "team"},
		"spec": map[string]any{"clusterQueue": "gpu-cq"}})

	suspend := true
	job, err := cp.Client.BatchV1().Jobs("ml").Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "sweep", Labels: map[string]string{"kueue.x-k8s.io/queue-name": "team"}},
		Spec: batchv1.JobSpec{Suspend: &suspend, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "cuda"}}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gated := pod("gated", "nvidia.com/gpu", 4, "")
	gated.Labels = map[string]string{"kueue.x-k8s.io/queue-name": "team"}
	gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "kueue.x-k8s.io/admission"}}
	gp, err := cp.Client.CoreV1().Pods("ml").Create(ctx, gated, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const notAdmitted = "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor a100, 4 more needed"
	for _, w := range []struct {
		name, kind, owner string
		uid               types.UID
	}{{"job-sweep", "Job", "sweep", job.UID}, {"pod-gated", "Pod", "gated", gp.UID}} {
		createWithStatus(t, c, gvr("workloads"), "ml", map[string]any{"kind": "Workload", "metadata": map[string]any{"name": w.name,
			"ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": w.kind, "name": w.owner, "uid": string(w.uid)}}},
			"spec": map[string]any{"queueName": "team", "podSets": []any{map[string]any{"name": "main", "count": int64(1),
				"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "cuda"}}}}}}},
			"status": map[string]any{"conditions": []any{map[string]any{"type": "QuotaReserved", "status": "False", "reason": "Pending",
				"message": notAdmitted, "lastTransitionTime": "2026-11-30T10:00:00Z"}}}})
	}

	o = waitFor(t, c, "ml", func(o *cluster.Objects) bool {
		p := o.Pending("ml")
		return len(o.Queues.Workloads) == 2 && len(p) == 1 && p[0].Reason == corev1.PodReasonSchedulingGated
	})
	blocked := o.Blocked("ml")
	if len(blocked) != 1 || blocked[0].Kind != "Job" || blocked[0].Name != "sweep" || blocked[0].By != "Kueue ClusterQueue gpu-cq" {
		t.Fatalf("blocked: %+v", blocked)
	}
	contains(t, "the suspended Job's why", blocked[0].Why, "ml/sweep (Job) has no pod yet: Kueue has not admitted its Workload job-sweep (queue team): "+notAdmitted,
		"ClusterQueue gpu-cq uses 8 of its 8 nvidia.com/gpu (cohort research may lend more).")
	p := o.Pending("ml")[0]
	if len(p.Gates) != 1 || p.Gates[0] != "kueue.x-k8s.io/admission" {
		t.Errorf("gates: %v", p.Gates)
	}
	contains(t, "the gated pod's why", p.Why, "ml/gated waits for a node for 4 nvidia.com/gpu on one node.",
		"It is gated (kueue.x-k8s.io/admission): the scheduler does not consider it",
		"Kueue has not admitted its Workload pod-gated (queue team)", "ClusterQueue gpu-cq uses 8 of its 8 nvidia.com/gpu")
	if strings.Contains(p.Why, "The scheduler:") {
		t.Errorf("a gated pod's why quotes the scheduler, which never saw it:\n%s", p.Why)
	}
}

// crd serves a kind as a CustomResourceDefinition that keeps any field,
// with a status subresource.
func crd(t *testing.T, c *cluster.Client, group, version, plural, kind string, namespaced bool) {
	t.Helper()
	scope := "Cluster"
	if namespaced {
		scope = "Namespaced"
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + group},
		"spec": map[string]any{"group": group, "scope": scope,
			"names": map[string]any{"plural": plural, "singular": strings.ToLower(kind), "kind": kind, "listKind": kind + "List"},
			"versions": []any{map[string]any{"name": version, "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema":       map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}}}
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := c.Dynamic.Resource(gvr).Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createWithStatus creates a custom object, then sets its status as its
// controller would.
func createWithStatus(t *testing.T, c *cluster.Client, gvr schema.GroupVersionResource, ns string, obj map[string]any) {
	t.Helper()
	obj["apiVersion"] = gvr.GroupVersion().String()
	status, hasStatus := obj["status"]
	u := &unstructured.Unstructured{Object: obj}
	var r dynamic.ResourceInterface = c.Dynamic.Resource(gvr)
	if ns != "" {
		r = c.Dynamic.Resource(gvr).Namespace(ns)
	}
	var created *unstructured.Unstructured
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		created, err = r.Create(ctx, u, metav1.CreateOptions{})
		return err == nil, nil // the CRD's kind may not be served yet
	})
	if err != nil {
		t.Fatalf("create %s: %v", gvr.Resource, err)
	}
	if hasStatus {
		created.Object["status"] = status
		if _, err := r.UpdateStatus(t.Context(), created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// An explanation reasons from the nodes a pod may use, as the real
// scheduler filters them (its nodeSelector, its tolerations, cordons),
// never from a node it may not use:
//   - pinned asks 7 GPUs on the one node its selector allows, gpu-05,
//     whose capacity is 8 and allocatable 6: it can never run there, which
//     is no fragmentation;
//   - held asks 4 on pool b, whose nodes are cordoned (gpu-c) or tainted
//     (gpu-t): no node may take it, though gpu-s has 8 free;
//   - fragmentation counts, per shape, only what the shape's pods may use,
//     and shows the rest apart.
func TestPendingReasonsFromEligibleNodes(t *testing.T) {
	cp := kubetest.Start(t)
	small := kubetest.GPUNode("gpu-05", 8)
	small.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("6")
	small.Labels["pool"] = "a"
	tainted := kubetest.GPUNode("gpu-t", 8)
	tainted.Labels["pool"] = "b"
	tainted.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "inference", Effect: corev1.TaintEffectNoSchedule}}
	cordoned := kubetest.GPUNode("gpu-c", 8)
	cordoned.Labels["pool"] = "b"
	cordoned.Spec.Unschedulable = true
	spare := kubetest.GPUNode("gpu-s", 8)
	spare.Labels["pool"] = "c"
	for _, n := range []*corev1.Node{small, tainted, cordoned, spare} {
		cp.AddNode(t, n)
	}
	cp.Namespace(t, "ml")
	pinned := pod("pinned", "nvidia.com/gpu", 7, "")
	pinned.Spec.NodeSelector = map[string]string{"pool": "a"}
	held := pod("held", "nvidia.com/gpu", 4, "")
	held.Spec.NodeSelector = map[string]string{"pool": "b"}
	for _, p := range []*corev1.Pod{pinned, held} {
		if _, err := cp.Client.CoreV1().Pods("ml").Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	o := waitFor(t, kubetestClient(t, cp), "ml", func(o *cluster.Objects) bool {
		p := o.Pending("ml")
		return len(p) == 2 && p[0].Scheduling != nil && p[1].Scheduling != nil && len(o.GPUNodes()) == 4
	})
	byName := map[string]cluster.PendingPod{}
	for _, p := range o.Pending("ml") {
		byName[p.Name] = p
	}
	why := byName["pinned"].Why
	contains(t, "pinned's why", why, "It can never run as asked: the nodes it may use offer at most 6 nvidia.com/gpu (gpu-05: allocatable 6 of capacity 8), fewer than the 7 it asks",
		"gpu-05 advertises 2 fewer than it has", "gpu-c cordoned", "gpu-s does not match its nodeSelector pool=a", "gpu-t taint dedicated=inference:NoSchedule not tolerated")
	if strings.Contains(why, "fragmentation") {
		t.Errorf("pinned, which no node it may use can ever hold, is explained as fragmentation:\n%s", why)
	}
	why = byName["held"].Why
	contains(t, "held's why", why, "No node with nvidia.com/gpu may take it:", "gpu-c cordoned", "gpu-t taint dedicated=inference:NoSchedule not tolerated",
		"does not match its nodeSelector pool=b")
	if strings.Contains(why, "gpu-s has") || strings.Contains(why, "the GPUs are there") {
		t.Errorf("held is pointed at free GPUs it may not use:\n%s", why)
	}
	shapes := map[int64]cluster.Shape{}
	for _, s := range o.Fragmentation("ml") {
		shapes[s.Count] = s
	}
	if s := shapes[7]; s.Nodes != 1 || s.Free != 6 || s.Placeable != 0 || s.FreeExcluded != 24 || s.State != "short" {
		t.Errorf("the 7-GPU shape: %+v, want 6 free on the 1 node its pod may use, 24 apart, short", s)
	}
	if s := shapes[4]; s.Nodes != 0 || s.Free != 0 || s.Placeable != 0 || s.FreeExcluded != 30 || !strings.Contains(s.Excluded, "gpu-c cordoned") {
		t.Errorf("the 4-GPU shape: %+v, want nothing placeable, the 30 free GPUs apart with why", s)
	}
}
