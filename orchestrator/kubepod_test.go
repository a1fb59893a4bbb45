package orchestrator_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/gpulab/gpulab/internal/kubetest"
	"github.com/gpulab/gpulab/orchestrator"
)

// The pod gpulab runs on a node, against the real API server: accepted
// as built, pinned to its node past a NoExecute taint and running there
// (kwok plays the kubelet), the host's / read-only at /host; cleanup
// deletes the run's pods and a stale one of another run, and leaves a
// pod gpulab did not create (the test lists what is left).
func TestNodePodsAndCleanup(t *testing.T) {
	cp := kubetest.Start(t)
	ctx := t.Context()
	cp.AddNode(t, kubetest.GPUNode("gpu-a", 8))
	fenced := kubetest.GPUNode("gpu-fenced", 8)
	fenced.Spec.Taints = []corev1.Taint{{Key: "gpulab.io/fenced", Value: "xid79", Effect: corev1.TaintEffectNoExecute}}
	cp.AddNode(t, fenced)
	pods := cp.Client.CoreV1().Pods(metav1.NamespaceDefault)
	var names []string
	for _, n := range []string{"gpu-a", "gpu-fenced"} {
		p, err := pods.Create(ctx, orchestrator.NodePod(n, orchestrator.NodePodOptions{Namespace: metav1.NamespaceDefault, RunID: "run-1", Deadline: 10 * time.Minute}), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create the node pod on %s: %v", n, err)
		}
		names = append(names, p.Name)
		c := p.Spec.Containers[0]
		if p.Spec.NodeName != n || !p.Spec.HostPID || !p.Spec.HostNetwork || !*c.SecurityContext.Privileged || !c.VolumeMounts[0].ReadOnly ||
			*p.Spec.ActiveDeadlineSeconds != 600 || *p.Spec.AutomountServiceAccountToken || p.Labels[orchestrator.RunLabel] != "run-1" {
			t.Errorf("%s: the pod as the API server keeps it: %+v", n, p.Spec)
		}
	}
	cp.WaitPods(t, metav1.NamespaceDefault, func(ps []corev1.Pod) bool {
		running := 0
		for _, p := range ps {
			if slices.Contains(names, p.Name) && p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == 2
	}, "both node pods Running on their nodes")
	// A pod of a crashed run, and two that are not gpulab's node pods:
	// another tool's, and one that carries gpulab's managed-by label
	// alone, ended.
	stale, err := pods.Create(ctx, orchestrator.NodePod("gpu-a", orchestrator.NodePodOptions{Namespace: metav1.NamespaceDefault, RunID: "crashed", Deadline: 10 * time.Minute}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "not-ours", Labels: map[string]string{orchestrator.ManagedByLabel: "someone-else"}},
		Spec: corev1.PodSpec{NodeName: "gpu-a", Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	lookalike := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "someones-job", Labels: map[string]string{orchestrator.ManagedByLabel: orchestrator.ManagedBy}},
		Spec: corev1.PodSpec{NodeName: "gpu-a", Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
	for _, p := range []*corev1.Pod{other, lookalike} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setPhase(t, cp, lookalike.Name, corev1.PodSucceeded)
	n, err := orchestrator.CleanupNodePods(ctx, cp.Client, metav1.NamespaceDefault, "run-1")
	if err != nil || n != 2 {
		t.Fatalf("cleanup of run-1: %d deleted, %v", n, err)
	}
	// A later run leaves the other run's pod while it runs (no clock is
	// read: its state is the cluster's), and removes it once its deadline
	// has ended it (the kubelet fails it; here the test does).
	if n, err := orchestrator.CleanupNodePods(ctx, cp.Client, metav1.NamespaceDefault, "run-2"); err != nil || n != 0 {
		t.Fatalf("cleanup with the crashed run's pod running: %d deleted, %v", n, err)
	}
	setPhase(t, cp, stale.Name, corev1.PodFailed)
	if n, err := orchestrator.CleanupNodePods(ctx, cp.Client, metav1.NamespaceDefault, "run-2"); err != nil || n != 1 {
		t.Fatalf("cleanup of leftovers: %d deleted, %v", n, err)
	}
	cp.WaitPods(t, metav1.NamespaceDefault, func(ps []corev1.Pod) bool {
		return len(ps) == 2 && (ps[0].Name == "not-ours" || ps[1].Name == "not-ours")
	}, "only the two pods gpulab did not create left")
	if err := pods.Delete(ctx, lookalike.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// A namespace whose Pod Security refuses privileged pods: the refusal
	// is named, with the label that allows a node pod; no pod is left.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "locked", Labels: map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}}}
	if _, err := cp.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No controller manager here makes a namespace's default service
	// account: the ServiceAccount admission plugin wants it.
	if _, err := cp.Client.CoreV1().ServiceAccounts("locked").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = orchestrator.CreateNodePod(ctx, cp.Client, "gpu-a", orchestrator.NodePodOptions{Namespace: "locked", RunID: "run-3"})
	if err == nil || !strings.Contains(err.Error(), "namespace locked refuses gpulab's node pod (Pod Security admission") ||
		!strings.Contains(err.Error(), "pod-security.kubernetes.io/enforce=privileged") {
		t.Errorf("a baseline namespace: %v", err)
	}
	if l, err := cp.Client.CoreV1().Pods("locked").List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Errorf("pods left in the locked namespace: %v %v", l, err)
	}
}

// setPhase sets pod's phase, as its kubelet would.
func setPhase(t *testing.T, cp *kubetest.ControlPlane, name string, phase corev1.PodPhase) {
	t.Helper()
	pods := cp.Client.CoreV1().Pods(metav1.NamespaceDefault)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := pods.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Status.Phase = phase
		_, err = pods.UpdateStatus(t.Context(), p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("set the phase of pod %s: %v", name, err)
	}
}
