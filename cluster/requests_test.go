package cluster_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/internal/kubetest"
)

func gpus(n int) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(fmt.Sprint(n))}}
}

// sidecarPod has a sidecar (an init container that keeps running) of
// side GPUs, a plain init container of init GPUs and a container of main.
func sidecarPod(name, node string, side, init, main int) *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node,
		Containers: []corev1.Container{{Name: "main", Image: "cuda", Resources: gpus(main)}}}}
	if side > 0 {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "side", Image: "cuda", RestartPolicy: &always, Resources: gpus(side)})
	}
	if init > 0 {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "init", Image: "cuda", Resources: gpus(init)})
	}
	return p
}

// What a pod holds, as the scheduler counts it: sidecars add to the
// containers; a plain init container needs its own plus the sidecars
// started before it, and the pod holds the larger.
func TestPodRequestsCountsSidecars(t *testing.T) {
	for _, c := range []struct {
		side, init, main int
		want             int64
	}{
		{0, 0, 2, 2},
		{2, 0, 2, 4}, // sidecar runs beside main
		{0, 6, 2, 6}, // init alone, before main
		{2, 5, 1, 7}, // init with the sidecar started before it
		{1, 1, 4, 5},
	} {
		p := sidecarPod("p", "", c.side, c.init, c.main)
		if got := cluster.PodRequests(p)["nvidia.com/gpu"]; got.Value() != c.want {
			t.Errorf("sidecar %d, init %d, main %d: %v GPUs, want %d", c.side, c.init, c.main, got.Value(), c.want)
		}
		trimmed, _ := cluster.Trim(p.DeepCopy())
		if got := cluster.PodRequests(trimmed.(*corev1.Pod))["nvidia.com/gpu"]; got.Value() != c.want {
			t.Errorf("trimmed, sidecar %d, init %d, main %d: %v GPUs, want %d", c.side, c.init, c.main, got.Value(), c.want)
		}
	}
}

// The real scheduler agrees: on a 4-GPU node a pod of a 2-GPU sidecar and
// a 2-GPU container is placed and fills it, and gpulab says so; a pod of
// 1 + 1 then waits, asking 2.
func TestSidecarsAgainstTheScheduler(t *testing.T) {
	cp := kubetest.Start(t)
	cp.AddNode(t, kubetest.GPUNode("gpu-a", 4))
	pods := cp.Client.CoreV1().Pods(metav1.NamespaceDefault)
	for _, p := range []*corev1.Pod{sidecarPod("full", "", 2, 0, 2), sidecarPod("more", "", 1, 0, 1)} {
		if _, err := pods.Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c := kubetestClient(t, cp)
	o := waitFor(t, c, "default", func(o *cluster.Objects) bool {
		p := o.Pending("default")
		return len(p) == 1 && p[0].Scheduling != nil
	})
	n := o.GPUNodes()
	if len(n) != 1 || n[0].Allocated["nvidia.com/gpu"] != 4 {
		t.Errorf("gpu-a: %+v, want 4 of 4 allocated by the pod the scheduler placed", n)
	}
	if p := o.Pending("default")[0]; p.Name != "more" || p.GPUs["nvidia.com/gpu"] != 2 || !strings.Contains(p.Why, "Insufficient nvidia.com/gpu") {
		t.Errorf("pending: %+v", p)
	}
}
