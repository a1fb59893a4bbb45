package fence_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gpulab/gpulab/fence"
	"github.com/gpulab/gpulab/internal/kubetest"
)

func boundPod(name, node string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
	}
}

// A drain evicts through the eviction API: the pod with no budget goes,
// a pod no controller would make again stays (as kubectl drain keeps it
// without --force),
// the one whose PodDisruptionBudget allows no disruption stays and is
// reported blocked with the API server's words (never deleted), and a
// DaemonSet's pod is left.
func drainRespectsDisruptionBudgets(t *testing.T, cp *kubetest.ControlPlane) {
	cp.AddNode(t, kubetest.GPUNode("gpu06", 8))
	ctx := t.Context()
	pods := cp.Client.CoreV1().Pods("default")
	ds := boundPod("dcgm-exporter-x1", "gpu06", nil)
	ds.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "dcgm-exporter", UID: types.UID("3f1c2a4e-0000-4000-8000-000000000001"), Controller: new(true)}}
	owned := func(p *corev1.Pod, kind string) *corev1.Pod {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: p.Name + "-owner", UID: types.UID("3f1c2a4e-0000-4000-8000-0000000000" + fmt.Sprint(10+len(p.Name))), Controller: new(true)}}
		return p
	}
	for _, p := range []*corev1.Pod{owned(boundPod("train-0", "gpu06", nil), "StatefulSet"), owned(boundPod("serve-0", "gpu06", map[string]string{"app": "serve"}), "ReplicaSet"),
		ds, boundPod("scratch-0", "gpu06", nil)} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cp.WaitPods(t, "default", func(ps []corev1.Pod) bool {
		for _, p := range ps {
			if p.Status.Phase != corev1.PodRunning {
				return false
			}
		}
		return len(ps) == 4
	}, "the four pods of gpu06 running")

	// A budget that allows no disruption, its status set as the
	// disruption controller would (there is no controller manager).
	zero := intstr.FromInt32(0)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "serve"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &zero, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "serve"}}}}
	pdbs := cp.Client.PolicyV1().PodDisruptionBudgets("default")
	created, err := pdbs.Create(ctx, pdb, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: created.Generation, DisruptionsAllowed: 0, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
	if _, err := pdbs.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The timeout bounds how long the blocked eviction is tried; the
	// assertions read outcomes, not times.
	got, err := fence.Drain(ctx, cp.Client, "gpu06", fence.DrainOptions{Timeout: 3 * time.Second, Retry: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]fence.DrainedPod{}
	for _, p := range got {
		by[p.Name] = p
	}
	if len(got) != 4 {
		t.Fatalf("drain reported %d pods, want 4: %+v", len(got), got)
	}
	if p := by["scratch-0"]; p.Outcome != fence.Left || !strings.Contains(p.Why, "no controller") {
		t.Errorf("scratch-0: %+v, want left (nothing would make it again)", p)
	}
	if p := by["train-0"]; p.Outcome != fence.Evicted {
		t.Errorf("train-0: %+v, want evicted", p)
	}
	if p := by["serve-0"]; p.Outcome != fence.Blocked || !strings.Contains(p.Why, "disruption budget") {
		t.Errorf("serve-0: %+v, want blocked by its disruption budget", p)
	}
	if p := by["dcgm-exporter-x1"]; p.Outcome != fence.Left || !strings.Contains(p.Why, "DaemonSet") {
		t.Errorf("dcgm-exporter-x1: %+v, want left (a DaemonSet's)", p)
	}
	if _, err := pods.Get(ctx, "serve-0", metav1.GetOptions{}); err != nil {
		t.Errorf("the blocked pod is gone: %v", err)
	}
}
