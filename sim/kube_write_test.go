package sim

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/sim/dgx"
)

// A node's update through the mirror reaches the simulation, which the
// hosts' kubectl and the scheduler read: in this process, and through a
// fleet's child process.
func TestMirrorTakesNodeWrites(t *testing.T) {
	t.Run("in this process", func(t *testing.T) {
		_, faults := dgx.Plan(0, 4)
		names := []string{"dgx01", "dgx02", "dgx03", "dgx04"}
		c := dgx.NewCluster(names, faults)
		client, err := MirrorCluster(t.Context(), c, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		h := dgx.New(names[0], 0, faults[0])
		h.Cluster = c
		nodeWrites(t, client.Kube, func(args ...string) string {
			var out, errOut bytes.Buffer
			if code, _ := h.Run(t.Context(), dgx.IO{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut}, append([]string{"kubectl"}, args...)); code != 0 {
				t.Fatalf("kubectl %v: exit %d: %s", args, code, errOut.String())
			}
			return out.String()
		})
	})
	t.Run("through the fleet's process", func(t *testing.T) {
		c, files := spawnFleet(t, Config{Hosts: 4, Seed: 0})
		client, err := c.KubeClient(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		g := newGpulab(t, files, orchestrator.Overrides{})
		nodeWrites(t, client.Kube, func(args ...string) string {
			r := g.run(t, "dgx01", "kubectl "+strings.Join(args, " "))
			if r.ExitCode != 0 || r.Class != orchestrator.OK {
				t.Fatalf("kubectl %v on dgx01: %s exit %d: %s", args, r.Class, r.ExitCode, r.Stderr)
			}
			return string(r.Stdout)
		})
	})
}

// nodeWrites cordons and taints dgx02 as gpulab's fence does (an update
// from the version read, field manager gpulab), then checks what every
// reader of the simulation sees, the refusals an API server makes, and
// an eviction.
func nodeWrites(t *testing.T, cs kubernetes.Interface, kubectl func(args ...string) string) {
	ctx := t.Context()
	nodes := cs.CoreV1().Nodes()
	n, err := nodes.Get(ctx, "dgx02", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale := n.DeepCopy()
	at := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	n.Spec.Unschedulable = true
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "gpulab.io/fenced", Value: "xid-79", Effect: corev1.TaintEffectNoSchedule, TimeAdded: &at})
	n.Annotations = map[string]string{"gpulab.io/fence-record": "20261206-021400-dgx02"}
	if _, err := nodes.Update(ctx, n, metav1.UpdateOptions{FieldManager: "gpulab"}); err != nil {
		t.Fatalf("update: %v", err)
	}
	got, err := nodes.Get(ctx, "dgx02", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Spec.Unschedulable || got.Annotations["gpulab.io/fence-record"] == "" ||
		!slices.ContainsFunc(got.Spec.Taints, func(x corev1.Taint) bool { return x.Key == "gpulab.io/fenced" && x.TimeAdded.Equal(&at) }) ||
		!slices.ContainsFunc(got.Spec.Taints, func(x corev1.Taint) bool { return x.Key == corev1.TaintNodeUnschedulable }) {
		t.Errorf("dgx02 read back: unschedulable %v, taints %v, annotations %v", got.Spec.Unschedulable, got.Spec.Taints, got.Annotations)
	}
	if i := slices.IndexFunc(got.ManagedFields, func(m metav1.ManagedFieldsEntry) bool { return m.Manager == "gpulab" }); i < 0 ||
		!strings.Contains(string(got.ManagedFields[i].FieldsV1.Raw), `"f:unschedulable"`) {
		t.Errorf("no managedFields entry of gpulab with f:unschedulable: %+v", got.ManagedFields)
	}
	if out := kubectl("get", "nodes"); !strings.Contains(out, "dgx02   Ready,SchedulingDisabled") {
		t.Errorf("kubectl get nodes on a host:\n%s", out)
	}
	if out := kubectl("describe", "node", "dgx02"); !strings.Contains(out, "gpulab.io/fenced=xid-79:NoSchedule") || !strings.Contains(out, "Unschedulable:      true") ||
		!strings.Contains(out, "gpulab.io/fence-record: 20261206-021400-dgx02") || !strings.Contains(out, "NodeNotSchedulable") {
		t.Errorf("kubectl describe node dgx02 on a host:\n%s", out)
	}
	// A pod no other node fits says why dgx02 did not take it.
	for _, name := range []string{"dgx01", "dgx03", "dgx04"} {
		o, _ := nodes.Get(ctx, name, metav1.GetOptions{})
		if name == "dgx04" {
			o.Spec.Taints = append(o.Spec.Taints, corev1.Taint{Key: "maintenance", Value: "true", Effect: corev1.TaintEffectNoSchedule})
		} else {
			o.Spec.Unschedulable = true
		}
		if _, err := nodes.Update(ctx, o, metav1.UpdateOptions{FieldManager: "kubectl"}); err != nil {
			t.Fatal(err)
		}
	}
	kubectl("run", "after-fence", "--image=nvcr.io/nvidia/cuda:12.2.0-base-ubuntu22.04", "--restart=Never")
	if out := kubectl("describe", "pod", "after-fence"); !strings.Contains(out, "0/4 nodes are available: 1 node(s) had untolerated taint {maintenance: true}, 3 node(s) were unschedulable. preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.") {
		t.Errorf("the scheduler's word on a pod while every node is cordoned or fenced:\n%s", out)
	}
	// An update from the version read before the fence is refused, as
	// the API server refuses it; so is a change beyond the cordon, the
	// taints and the annotations.
	stale.Spec.Unschedulable = true
	if _, err := nodes.Update(ctx, stale, metav1.UpdateOptions{FieldManager: "gpulab"}); !apierrors.IsConflict(err) {
		t.Errorf("an update from a stale version: %v, want a conflict", err)
	}
	cur, _ := nodes.Get(ctx, "dgx02", metav1.GetOptions{})
	cur.Labels["team"] = "a"
	if _, err := nodes.Update(ctx, cur, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("an update of a label: %v, want it refused", err)
	}
	evicts(t, cs, ctx)
}

// evicts: the eviction API removes a pod of dgx02 (its ReplicaSet's or
// Job's), which the list by node then lacks; a list by node holds only
// that node's pods.
func evicts(t *testing.T, cs kubernetes.Interface, ctx context.Context) {
	byNode := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", "dgx02").String()}
	pods, err := cs.CoreV1().Pods("").List(ctx, byNode)
	if err != nil {
		t.Fatal(err)
	}
	var victim *corev1.Pod
	for i, p := range pods.Items {
		if p.Spec.NodeName != "dgx02" {
			t.Fatalf("a list of dgx02's pods holds %s/%s of %q", p.Namespace, p.Name, p.Spec.NodeName)
		}
		if c := metav1.GetControllerOf(&p); c != nil && c.Kind != "DaemonSet" && victim == nil {
			victim = &pods.Items[i]
		}
	}
	if victim == nil {
		t.Fatalf("no pod of dgx02 with a controller but a DaemonSet: %d pods", len(pods.Items))
	}
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: victim.Name, Namespace: victim.Namespace}}
	if err := cs.PolicyV1().Evictions(victim.Namespace).Evict(ctx, ev); err != nil {
		t.Fatalf("evict %s/%s: %v", victim.Namespace, victim.Name, err)
	}
	if _, err := cs.CoreV1().Pods(victim.Namespace).Get(ctx, victim.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("%s/%s after its eviction: %v, want it gone", victim.Namespace, victim.Name, err)
	}
	if err := cs.PolicyV1().Evictions(victim.Namespace).Evict(ctx, ev); !apierrors.IsNotFound(err) {
		t.Errorf("a second eviction of %s/%s: %v, want not found", victim.Namespace, victim.Name, err)
	}
}
