package cluster_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/internal/kubetest"
)

// Against a real API server and the real scheduler: 7 GPUs are free in
// all (3 on one node, 4 on the other); a pod asking for 1 is placed and
// not listed, which leaves 6 free but never 6 on one node, so a pod asking
// for 6 waits (fragmentation), and a pod asking for 12 waits (not enough
// in the whole cluster).
func TestPendingExplainsFragmentation(t *testing.T) {
	cp := kubetest.Start(t)
	ctx := t.Context()
	cp.AddNode(t, kubetest.GPUNode("gpu-a", 8))
	cp.AddNode(t, kubetest.GPUNode("gpu-b", 4))
	pods := cp.Client.CoreV1().Pods(metav1.NamespaceDefault)
	for _, p := range []*corev1.Pod{pod("running", "nvidia.com/gpu", 5, "gpu-a"), pod("wide", "nvidia.com/gpu", 6, ""), pod("huge", "nvidia.com/gpu", 12, ""), pod("fits", "nvidia.com/gpu", 1, "")} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The scheduler's word on the three pods it is given (events).
	cp.WaitScheduled(t, metav1.NamespaceDefault, "wide", "huge", "fits")
	pending, err := cluster.Pending(context.Background(), kubetestClient(t, cp), "")
	if err != nil || len(pending) != 2 || pending[0].Scheduling == nil || pending[1].Scheduling == nil {
		t.Fatalf("pending: %v %+v", err, pending)
	}
	huge, wide := pending[0], pending[1]
	if huge.Name != "huge" || wide.Name != "wide" {
		t.Fatalf("pending: %+v", pending)
	}
	fits, err := pods.Get(ctx, "fits", metav1.GetOptions{})
	if err != nil || fits.Spec.NodeName == "" {
		t.Errorf("the pod that fits was not placed: %v %+v", err, fits.Spec.NodeName)
	}
	free := 7 - 1 // the pod that fits took 1 of the 7 free
	for _, c := range []struct {
		p    cluster.PendingPod
		want []string
	}{
		{wide, []string{"default/wide waits for a node for 6 nvidia.com/gpu on one node.", "none of 2 nodes fits (2 Insufficient nvidia.com/gpu)", "fragmentation"}},
		{huge, []string{"for 12 nvidia.com/gpu", "It can never run as asked: the nodes it may use offer at most 8 nvidia.com/gpu (gpu-a: allocatable 8 of capacity 8), fewer than the 12 it asks for one node. Ask for at most that many on one node, or add nodes that have more."}},
	} {
		for _, w := range c.want {
			if !strings.Contains(c.p.Why, w) {
				t.Errorf("%s: why lacks %q:\n%s", c.p.Name, w, c.p.Why)
			}
		}
		if c.p.GPUs["nvidia.com/gpu"] == 0 || c.p.Scheduling.Reasons[0].Resource != "nvidia.com/gpu" {
			t.Errorf("%s: %+v", c.p.Name, c.p)
		}
	}

	// The same cluster's fragmentation, per pending shape: 6 GPUs free,
	// no node has 6 or 12, so all 6 are stranded for both shapes.
	o, err := cluster.Read(ctx, kubetestClient(t, cp), "", cluster.Scheduling)
	if err != nil {
		t.Fatal(err)
	}
	shapes := o.Fragmentation("")
	if len(shapes) != 2 {
		t.Fatalf("shapes: %+v, want the two pending ones", shapes)
	}
	for i, want := range []int64{6, 12} {
		s := shapes[i]
		if s.Resource != "nvidia.com/gpu" || s.Count != want || s.Pending != 1 || s.Nodes != 2 || s.NodesThatFit != 0 ||
			s.Free != int64(free) || s.Placeable != 0 || s.Rate != 1 || s.State != []string{"fragmented", "short"}[i] {
			t.Errorf("shape %d: %+v, want %d GPUs: 1 pending, 0 of 2 nodes fit, %d free, rate 1", i, s, want, free)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// kubetestClient is a cluster client for the control plane's admin.
func kubetestClient(t *testing.T, cp *kubetest.ControlPlane) *cluster.Client {
	t.Helper()
	c, err := cluster.NewClient(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
