package cluster_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/internal/kubetest"
)

func pod(name string, res corev1.ResourceName, n int, node string) *corev1.Pod {
	q := corev1.ResourceList{res: resource.MustParse(fmt.Sprint(n))}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeName:   node, // bound as the scheduler would bind it
			Containers: []corev1.Container{{Name: "c", Image: "cuda", Resources: corev1.ResourceRequirements{Limits: q}}},
		},
	}
}

// Against a real API server: a whole-GPU node, a MIG node (mixed
// strategy), a tainted node and a node without GPUs; pods holding GPUs,
// read through a kubeconfig file with kubectl's loading rules.
func TestNodesFromARealAPIServer(t *testing.T) {
	cp := kubetest.Start(t)
	ctx := t.Context()
	cp.AddNode(t, kubetest.GPUNode("gpu-a", 8))
	mig := kubetest.GPUNode("gpu-mig", 0)
	for _, rl := range []corev1.ResourceList{mig.Status.Capacity, mig.Status.Allocatable} {
		delete(rl, "nvidia.com/gpu")
		rl["nvidia.com/mig-1g.5gb"] = resource.MustParse("7")
	}
	mig.Labels["nvidia.com/mig.strategy"] = "mixed"
	cp.AddNode(t, mig)
	tainted := kubetest.GPUNode("gpu-tainted", 4)
	tainted.Spec.Taints = []corev1.Taint{{Key: "nvidia.com/gpu", Value: "maintenance", Effect: corev1.TaintEffectNoSchedule}}
	cp.AddNode(t, tainted)
	plain := kubetest.GPUNode("cpu-only", 0)
	delete(plain.Status.Capacity, "nvidia.com/gpu")
	delete(plain.Status.Allocatable, "nvidia.com/gpu")
	cp.AddNode(t, plain)

	pods := cp.Client.CoreV1().Pods(metav1.NamespaceDefault)
	for _, p := range []*corev1.Pod{pod("train", "nvidia.com/gpu", 2, "gpu-a"), pod("infer", "nvidia.com/gpu", 3, "gpu-a"),
		pod("slice", "nvidia.com/mig-1g.5gb", 2, "gpu-mig")} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing")) // --kubeconfig wins over $KUBECONFIG
	client, err := cluster.Source{Kubeconfig: cp.Kubeconfig}.Connect()
	if err != nil {
		t.Fatal(err)
	}
	ctxName := client.Context
	nodes, err := cluster.Nodes(context.Background(), client)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]cluster.GPUNode{}
	for _, n := range nodes {
		got[n.Name] = n
	}
	if len(nodes) != 3 || got["cpu-only"].Name != "" {
		t.Fatalf("GPU nodes %v (context %q), want gpu-a, gpu-mig, gpu-tainted", nodes, ctxName)
	}
	if a := got["gpu-a"]; a.Allocatable["nvidia.com/gpu"] != 8 || a.Allocated["nvidia.com/gpu"] != 5 || a.Free("nvidia.com/gpu") != 3 || a.Pods != 2 {
		t.Errorf("gpu-a: %+v, want 5 of 8 allocated by 2 pods", a)
	}
	if m := got["gpu-mig"]; m.Allocatable["nvidia.com/mig-1g.5gb"] != 7 || m.Allocated["nvidia.com/mig-1g.5gb"] != 2 || m.MIGStrategy != "mixed" {
		t.Errorf("gpu-mig: %+v", m)
	}
	if tn := got["gpu-tainted"]; len(tn.Taints) != 1 || tn.Taints[0] != "nvidia.com/gpu=maintenance:NoSchedule" || tn.Allocated["nvidia.com/gpu"] != 0 {
		t.Errorf("gpu-tainted: %+v", tn)
	}

	// $KUBECONFIG, as kubectl reads it, when no --kubeconfig is given; a
	// context that is not there is an error naming it.
	t.Setenv("KUBECONFIG", cp.Kubeconfig)
	if _, err := (cluster.Source{}).Connect(); err != nil {
		t.Errorf("$KUBECONFIG: %v", err)
	}
	if _, err := (cluster.Source{Context: "nope"}).Connect(); err == nil {
		t.Errorf("--context nope: no error")
	}
}
