package cluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func readyNode(name string, res corev1.ResourceList) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Capacity: res, Allocatable: res,
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
}

func boundPod(node string, res corev1.ResourceName, n string) *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{res: resource.MustParse(n)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

// With nothing pending, the reference shapes: whole GPUs 1, 2, 4, 8 on
// nodes with 3 and 8 free (and a cordoned node with 8, which does not
// count: it is shown apart), and one slice of each MIG profile.
func TestFragmentationReferenceShapes(t *testing.T) {
	gpu := func(n string) corev1.ResourceList {
		return corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(n)}
	}
	cordoned := readyNode("c", gpu("8"))
	cordoned.Spec.Unschedulable = true
	o := &Objects{
		Nodes: []*corev1.Node{readyNode("a", gpu("8")), readyNode("b", gpu("8")), cordoned,
			readyNode("m", corev1.ResourceList{"nvidia.com/mig-1g.5gb": resource.MustParse("7")})},
		Pods: []*corev1.Pod{boundPod("a", "nvidia.com/gpu", "5"), boundPod("m", "nvidia.com/mig-1g.5gb", "3")},
	}
	got := o.Fragmentation("")
	want := []Shape{
		{Resource: "nvidia.com/gpu", Count: 1, Nodes: 2, NodesThatFit: 2, Free: 11, Largest: 8, Placeable: 11, FreeExcluded: 8, Excluded: "c cordoned", Rate: 0, State: "fits"},
		{Resource: "nvidia.com/gpu", Count: 2, Nodes: 2, NodesThatFit: 2, Free: 11, Largest: 8, Placeable: 5, FreeExcluded: 8, Excluded: "c cordoned", Rate: 1.0 / 11, State: "fits"},
		{Resource: "nvidia.com/gpu", Count: 4, Nodes: 2, NodesThatFit: 1, Free: 11, Largest: 8, Placeable: 2, FreeExcluded: 8, Excluded: "c cordoned", Rate: 3.0 / 11, State: "fits"},
		{Resource: "nvidia.com/gpu", Count: 8, Nodes: 2, NodesThatFit: 1, Free: 11, Largest: 8, Placeable: 1, FreeExcluded: 8, Excluded: "c cordoned", Rate: 3.0 / 11, State: "fits"},
		{Resource: "nvidia.com/mig-1g.5gb", Count: 1, Nodes: 1, NodesThatFit: 1, Free: 4, Largest: 4, Placeable: 4, Rate: 0, State: "fits"},
	}
	if len(got) != len(want) {
		t.Fatalf("shapes:\n%+v\nwant\n%+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("shape %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestFragmentationRate(t *testing.T) {
	for _, c := range []struct {
		free    []float64
		request float64
		want    float64
		err     bool
	}{
		{[]float64{3, 4}, 4, 3.0 / 7, false},
		{[]float64{8, 8}, 4, 0, false},
		{nil, 1, 0, false},
		{[]float64{1}, 0, 0, true},
		{[]float64{-1}, 1, 0, true},
	} {
		got, err := FragmentationRate(c.free, c.request)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("FragmentationRate(%v, %v) = %v, %v; want %v (error %v)", c.free, c.request, got, err, c.want, c.err)
		}
	}
}
