package kubetest

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// TestControlPlaneSchedulesGPUs is the smoke test of the whole stack: a
// kwok GPU node with 8 nvidia.com/gpu, a pod asking for 2 that the real
// scheduler binds and kwok runs, and one asking for 16 that stays Pending
// with the scheduler's FailedScheduling event naming the GPUs.
func TestControlPlaneSchedulesGPUs(t *testing.T) {
	cp := Start(t)
	t.Logf("control plane ready in %s (etcd, kube-apiserver, kube-scheduler, kwok)", cp.StartUp.Round(time.Millisecond))
	if fi, err := os.Stat(cp.Kubeconfig); err != nil || fi.Size() == 0 {
		t.Fatalf("kubeconfig %s: %v", cp.Kubeconfig, err)
	}

	node := cp.AddNode(t, GPUNode("gpu-node-0", 8))
	if got := node.Status.Allocatable["nvidia.com/gpu"]; got.Value() != 8 {
		t.Fatalf("node allocatable nvidia.com/gpu = %s, want 8", got.String())
	}
	waitFor(t, "node gpu-node-0 Ready", func(ctx context.Context) (bool, error) {
		n, err := cp.Client.CoreV1().Nodes().Get(ctx, "gpu-node-0", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})

	pods := cp.Client.CoreV1().Pods(metav1.NamespaceDefault)
	for _, p := range []*corev1.Pod{gpuPod("fits", 2), gpuPod("too-big", 16)} {
		if _, err := pods.Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %q: %v", p.Name, err)
		}
	}

	waitFor(t, "pod fits bound to gpu-node-0 and Running", func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, "fits", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Spec.NodeName == "gpu-node-0" && p.Status.Phase == corev1.PodRunning, nil
	})

	var event string
	waitFor(t, "a FailedScheduling event for pod too-big", func(ctx context.Context) (bool, error) {
		evs, err := cp.Client.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.name", "too-big").String(),
		})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == "FailedScheduling" {
				event = e.Message
				return true, nil
			}
		}
		return false, nil
	})
	if !strings.Contains(event, "Insufficient nvidia.com/gpu") {
		t.Errorf("FailedScheduling message = %q, want it to name Insufficient nvidia.com/gpu", event)
	}
	p, err := pods.Get(t.Context(), "too-big", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending {
		t.Errorf("pod too-big: node %q phase %s, want unbound and Pending", p.Spec.NodeName, p.Status.Phase)
	}
}

func gpuPod(name string, gpus int) *corev1.Pod {
	gpu := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(fmt.Sprint(gpus))}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:      "cuda",
				Image:     "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
				Resources: corev1.ResourceRequirements{Limits: gpu, Requests: gpu},
			}},
		},
	}
}

// waitFor polls cond until it is true, failing the test after 30 seconds
// with the last error.
func waitFor(t *testing.T, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond(ctx)
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v (last error: %v)", what, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// recordTB stands in for a test so that BinDir's call to testreq.Missing
// can be seen instead of ending the test.
type recordTB struct {
	testing.TB
	skipped []string
}

func (r *recordTB) Helper()                   {}
func (r *recordTB) Skip(args ...any)          { r.skipped = append(r.skipped, fmt.Sprint(args...)) }
func (r *recordTB) Fatal(args ...any)         { r.skipped = append(r.skipped, fmt.Sprint(args...)) }
func (r *recordTB) Fatalf(f string, a ...any) { r.skipped = append(r.skipped, fmt.Sprintf(f, a...)) }

func TestBinDirMissingSaysHowToBuild(t *testing.T) {
	t.Setenv("CI", "")
	t.Setenv("GPULAB_KUBE_BIN", t.TempDir())
	r := &recordTB{TB: t}
	BinDir(r)
	if len(r.skipped) == 0 || !strings.Contains(r.skipped[0], "make kube-testenv") {
		t.Errorf("BinDir(empty dir) skipped with %q, want a skip naming `make kube-testenv`", r.skipped)
	}
}

// A port that another process takes between the pick and the bind (here
// the scheduler's, held by the test) costs one start, not the test: the
// control plane comes up on other ports and answers.
func TestStartSurvivesATakenPort(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	calls := 0
	pickPorts = func(n int) ([]int, error) {
		calls++
		ps, err := freePorts(n)
		if calls == 1 && err == nil {
			ps[3] = held.Addr().(*net.TCPAddr).Port // kube-scheduler's
		}
		return ps, err
	}
	defer func() { pickPorts = freePorts }()
	cp := Start(t)
	if calls != 2 {
		t.Errorf("the control plane was started %d times, want 2 (one lost to the taken port)", calls)
	}
	if _, err := cp.Client.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{}); err != nil {
		t.Errorf("the control plane started again does not answer: %v", err)
	}
}
