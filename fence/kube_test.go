package fence_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpulab/gpulab/fence"
	"github.com/gpulab/gpulab/internal/kubetest"
)

// One control plane for every test of the package (each starts in
// seconds on 2 cores); each test has nodes of its own.
func TestFenceThroughTheAPIServer(t *testing.T) {
	cp := kubetest.Start(t)
	for name, test := range map[string]func(*testing.T, *kubetest.ControlPlane){
		"FenceAndRelease":                fenceAndReleaseThroughTheAPIServer,
		"ReleaseRefusesAnotherActors":    releaseRefusesAnotherActorsFence,
		"ConcurrentFencesOneWins":        concurrentFencesOneWins,
		"ListShowsDrift":                 listShowsDrift,
		"DrainRespectsDisruptionBudgets": drainRespectsDisruptionBudgets,
		"ReleaseLeavesWhatIsNotGpulabs":  releaseLeavesWhatIsNotGpulabs,
	} {
		t.Run(name, func(t *testing.T) { test(t, cp) })
	}
}

func request(record, by, reason string) fence.Request {
	return fence.Request{Reason: reason, Record: record, By: by, At: time.Date(2026, 12, 6, 2, 14, 0, 0, time.UTC)}
}

func fenceNodes(t *testing.T, cs kubernetes.Interface, req fence.Request, names ...string) []fence.Result {
	t.Helper()
	nodes := fence.Client(cs)
	replan := func(n *corev1.Node) fence.Plan { return fence.PlanFence(n, req) }
	return fence.Apply(t.Context(), nodes, fence.Read(t.Context(), nodes, names, replan), replan)
}

func releaseNodes(t *testing.T, cs kubernetes.Interface, names ...string) []fence.Result {
	t.Helper()
	nodes := fence.Client(cs)
	return fence.Apply(t.Context(), nodes, fence.Read(t.Context(), nodes, names, fence.PlanRelease), fence.PlanRelease)
}

func getNode(t *testing.T, cs kubernetes.Interface, name string) *corev1.Node {
	t.Helper()
	n, err := cs.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A fence cordons and taints the node with annotations naming its
// record, as a second client sees it; fencing again changes nothing and
// says so; a release takes back exactly that, and a second release
// changes nothing.
func fenceAndReleaseThroughTheAPIServer(t *testing.T, cp *kubetest.ControlPlane) {
	cp.AddNode(t, kubetest.GPUNode("gpu01", 8))
	other, err := kubernetes.NewForConfig(cp.Config) // a second client, its own connection
	if err != nil {
		t.Fatal(err)
	}
	req := request("fence-20261206-021400-gpu01", "oncall@bastion", "XID 79: GPU fell off the bus (GPU 3)")
	res := fenceNodes(t, cp.Client, req, "gpu01", "gpu99")
	if len(res) != 2 || res[0].Outcome != fence.Done || res[1].Outcome != fence.Refused || !strings.Contains(res[1].Detail, "no node gpu99") {
		t.Fatalf("fence gpu01, gpu99 = %+v", res)
	}
	n := getNode(t, other, "gpu01")
	if !n.Spec.Unschedulable {
		t.Error("gpu01 is not cordoned")
	}
	want := corev1.Taint{Key: fence.TaintKey, Value: "xid-79-gpu-fell-off-the-bus-gpu-3", Effect: corev1.TaintEffectNoSchedule}
	if len(n.Spec.Taints) != 1 || !n.Spec.Taints[0].MatchTaint(&want) || n.Spec.Taints[0].Value != want.Value {
		t.Errorf("taints %+v, want %+v", n.Spec.Taints, want)
	}
	f := fence.ReadFence(n)
	if f == nil || f.Record != req.Record || f.By != req.By || f.Reason != req.Reason || !f.Cordoned || len(f.Drift) > 0 || !f.At.Equal(req.At) {
		t.Errorf("the node's fence = %+v, want record %s by %s", f, req.Record, req.By)
	}
	again := fenceNodes(t, cp.Client, request("fence-2", "someone@else", "again"), "gpu01")
	if again[0].Outcome != fence.Unchanged || !strings.Contains(again[0].Detail, req.Record) {
		t.Errorf("a second fence = %+v, want unchanged naming %s", again[0], req.Record)
	}
	if n2 := getNode(t, other, "gpu01"); len(n2.Spec.Taints) != 1 || fence.ReadFence(n2).Record != req.Record {
		t.Errorf("a second fence changed the node: taints %v, annotations %v", n2.Spec.Taints, n2.Annotations)
	}
	rel := releaseNodes(t, cp.Client, "gpu01")
	if rel[0].Outcome != fence.Done {
		t.Fatalf("release = %+v", rel[0])
	}
	n = getNode(t, other, "gpu01")
	if n.Spec.Unschedulable || len(n.Spec.Taints) != 0 || fence.ReadFence(n) != nil {
		t.Errorf("after release: unschedulable %v, taints %v, annotations %v", n.Spec.Unschedulable, n.Spec.Taints, n.Annotations)
	}
	if rel := releaseNodes(t, cp.Client, "gpu01"); rel[0].Outcome != fence.Unchanged {
		t.Errorf("a second release = %+v, want unchanged", rel[0])
	}
}

// kubectlCordonAndTaint does what kubectl cordon and kubectl taint do,
// under their field manager names.
func kubectlCordonAndTaint(t *testing.T, cs kubernetes.Interface, name string, taint corev1.Taint) {
	t.Helper()
	ctx := t.Context()
	n := getNode(t, cs, name)
	n.Spec.Unschedulable = true
	n, err := cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{FieldManager: "kubectl-cordon"})
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.Taints = append(n.Spec.Taints, taint)
	if _, err := cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{FieldManager: "kubectl-taint"}); err != nil {
		t.Fatal(err)
	}
}

// A node another actor fenced is not gpulab's to release: the refusal
// says who cordoned and tainted it. gpulab may fence it too; its
// release then takes back its own taint only and leaves the other
// actor's cordon and taint.
func releaseRefusesAnotherActorsFence(t *testing.T, cp *kubetest.ControlPlane) {
	cp.AddNode(t, kubetest.GPUNode("gpu02", 8))
	xid := corev1.Taint{Key: "nvidia.com/gpu-xid", Value: "79", Effect: corev1.TaintEffectNoSchedule}
	kubectlCordonAndTaint(t, cp.Client, "gpu02", xid)

	rel := releaseNodes(t, cp.Client, "gpu02")
	if rel[0].Outcome != fence.Refused {
		t.Fatalf("release of another actor's fence = %+v, want refused", rel[0])
	}
	for _, want := range []string{"cordoned by kubectl-cordon", "taint nvidia.com/gpu-xid=79:NoSchedule by kubectl-taint", "not fenced by gpulab"} {
		if !strings.Contains(rel[0].Detail, want) {
			t.Errorf("refusal %q does not say %q", rel[0].Detail, want)
		}
	}

	res := fenceNodes(t, cp.Client, request("r1", "oncall@bastion", "ECC"), "gpu02")
	if res[0].Outcome != fence.Done || len(res[0].Changes) != 2 || !strings.Contains(strings.Join(res[0].Left, "\n"), "kubectl-cordon") {
		t.Fatalf("fence of a cordoned node = %+v: want a taint and annotations, the cordon left", res[0])
	}
	if f := fence.ReadFence(getNode(t, cp.Client, "gpu02")); f == nil || f.Cordoned {
		t.Fatalf("gpulab's fence %+v claims a cordon it did not make", f)
	}
	rel = releaseNodes(t, cp.Client, "gpu02")
	if rel[0].Outcome != fence.Done {
		t.Fatalf("release = %+v", rel[0])
	}
	n := getNode(t, cp.Client, "gpu02")
	if !n.Spec.Unschedulable || len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != xid.Key {
		t.Errorf("release undid another actor's fence: unschedulable %v, taints %v", n.Spec.Unschedulable, n.Spec.Taints)
	}
}

// Two gpulab processes plan a fence of one node from the same version
// of it: the first to write wins; the second writes nothing and says who
// fenced the node and under which record.
func concurrentFencesOneWins(t *testing.T, cp *kubetest.ControlPlane) {
	cp.AddNode(t, kubetest.GPUNode("gpu03", 8))
	a, b := request("record-a", "alice@ops1", "xid 48"), request("record-b", "bob@ops2", "ecc dbe")
	nodes := fence.Client(cp.Client)
	planA := func(n *corev1.Node) fence.Plan { return fence.PlanFence(n, a) }
	planB := func(n *corev1.Node) fence.Plan { return fence.PlanFence(n, b) }
	pa := fence.Read(t.Context(), nodes, []string{"gpu03"}, planA)
	pb := fence.Read(t.Context(), nodes, []string{"gpu03"}, planB)
	if len(pa[0].Changes) == 0 || len(pb[0].Changes) == 0 {
		t.Fatalf("plans %+v %+v: both should fence", pa, pb)
	}
	ra := fence.Apply(t.Context(), nodes, pa, planA)
	rb := fence.Apply(t.Context(), nodes, pb, planB)
	if ra[0].Outcome != fence.Done {
		t.Fatalf("first = %+v", ra[0])
	}
	if rb[0].Outcome != fence.Changed || !strings.Contains(rb[0].Detail, "fenced meanwhile by alice@ops1 (record record-a") {
		t.Fatalf("second = %+v: want it to say alice fenced it", rb[0])
	}
	if f := fence.ReadFence(getNode(t, cp.Client, "gpu03")); f == nil || f.Record != "record-a" {
		t.Errorf("the node's fence is %+v, want record-a's", f)
	}

	// And at once, from two goroutines: exactly one wins.
	releaseNodes(t, cp.Client, "gpu03")
	results := make(chan fence.Result, 2)
	for _, req := range []fence.Request{a, b} {
		go func() {
			plan := func(n *corev1.Node) fence.Plan { return fence.PlanFence(n, req) }
			results <- fence.Apply(context.Background(), nodes, fence.Read(context.Background(), nodes, []string{"gpu03"}, plan), plan)[0]
		}()
	}
	got := map[fence.Outcome]int{}
	for range 2 {
		r := <-results
		got[r.Outcome]++
	}
	// The loser read the node before or after the winner wrote: it lost
	// the race (changed) or found it fenced (unchanged).
	if got[fence.Done] != 1 || got[fence.Changed]+got[fence.Unchanged] != 1 {
		t.Errorf("two fences at once: %v, want one done", got)
	}
}

// A node uncordoned by hand after gpulab fenced it shows the drift in
// List, and a new fence is refused until the old one is released.
func listShowsDrift(t *testing.T, cp *kubetest.ControlPlane) {
	cp.AddNode(t, kubetest.GPUNode("gpu04", 8))
	cp.AddNode(t, kubetest.GPUNode("gpu05", 8))
	fenceNodes(t, cp.Client, request("r4", "oncall@bastion", "row remap pending"), "gpu04", "gpu05")
	n := getNode(t, cp.Client, "gpu04")
	n.Spec.Unschedulable = false
	if _, err := cp.Client.CoreV1().Nodes().Update(t.Context(), n, metav1.UpdateOptions{FieldManager: "kubectl-uncordon"}); err != nil {
		t.Fatal(err)
	}
	all, err := fence.List(t.Context(), cp.Client)
	if err != nil {
		t.Fatal(err)
	}
	var list []fence.Fenced // the other tests' nodes share the cluster
	for _, f := range all {
		if f.Node == "gpu04" || f.Node == "gpu05" {
			list = append(list, f)
		}
	}
	if len(list) != 2 || list[0].Node != "gpu04" || len(list[0].Drift) != 1 || !strings.Contains(list[0].Drift[0], "uncordoned") || len(list[1].Drift) != 0 {
		t.Fatalf("list = %+v: want gpu04 drifted (uncordoned), gpu05 not", list)
	}
	res := fenceNodes(t, cp.Client, request("r5", "x@y", "again"), "gpu04")
	if res[0].Outcome != fence.Refused || !strings.Contains(res[0].Detail, "partly undone") {
		t.Errorf("fence of a drifted node = %+v, want refused", res[0])
	}
}

// A release takes back only what the node shows gpulab did, whatever
// the annotations claim: a cordon someone made again after gpulab's
// stays, and annotations naming another actor's taint and cordon (any
// one who may annotate the node can write them) undo neither.
func releaseLeavesWhatIsNotGpulabs(t *testing.T, cp *kubetest.ControlPlane) {
	cp.AddNode(t, kubetest.GPUNode("gpu07", 8))
	cp.AddNode(t, kubetest.GPUNode("gpu08", 8))
	fenceNodes(t, cp.Client, request("r7", "oncall@bastion", "xid 79"), "gpu07")
	n := getNode(t, cp.Client, "gpu07")
	n.Spec.Unschedulable = false
	n, err := cp.Client.CoreV1().Nodes().Update(t.Context(), n, metav1.UpdateOptions{FieldManager: "kubectl-uncordon"})
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.Unschedulable = true
	if _, err := cp.Client.CoreV1().Nodes().Update(t.Context(), n, metav1.UpdateOptions{FieldManager: "kubectl-cordon"}); err != nil {
		t.Fatal(err)
	}
	rel := releaseNodes(t, cp.Client, "gpu07")
	if rel[0].Outcome != fence.Done || !getNode(t, cp.Client, "gpu07").Spec.Unschedulable || !strings.Contains(strings.Join(rel[0].Left, "\n"), "cordoned again since gpulab's fence, by kubectl-cordon") {
		t.Errorf("release after a person cordoned again = %+v: want the person's cordon left, and said", rel[0])
	}

	xid := corev1.Taint{Key: "nvidia.com/gpu-xid", Value: "79", Effect: corev1.TaintEffectNoSchedule}
	kubectlCordonAndTaint(t, cp.Client, "gpu08", xid)
	n = getNode(t, cp.Client, "gpu08")
	n.Annotations[fence.AnnRecord], n.Annotations[fence.AnnTaint], n.Annotations[fence.AnnCordoned] = "forged", "nvidia.com/gpu-xid:NoSchedule", "true"
	if _, err := cp.Client.CoreV1().Nodes().Update(t.Context(), n, metav1.UpdateOptions{FieldManager: "kubectl-annotate"}); err != nil {
		t.Fatal(err)
	}
	releaseNodes(t, cp.Client, "gpu08")
	n = getNode(t, cp.Client, "gpu08")
	if !n.Spec.Unschedulable || len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != xid.Key {
		t.Errorf("forged annotations made a release undo another actor's fence: unschedulable %v, taints %v", n.Spec.Unschedulable, n.Spec.Taints)
	}
}
