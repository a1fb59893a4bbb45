package cluster

import (
	"reflect"
	"strings"
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
		if !reflect.DeepEqual(got[i], want[i]) {
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

// Edge cases of reasoning from the nodes a pod may use: GPUs in capacity
// that the device plugin does not advertise, a not-ready node a pod
// tolerates, and a large node that only a cordon keeps the pod off (it is
// not "never").
func TestRoomEdges(t *testing.T) {
	gpu := func(n string) corev1.ResourceList {
		return corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(n)}
	}
	pending := func(name string, n string) *corev1.Pod {
		p := boundPod("", "nvidia.com/gpu", n)
		p.Name, p.Namespace, p.Status.Phase = name, "ml", corev1.PodPending
		return p
	}
	why := func(o *Objects) string {
		t.Helper()
		p := o.Pending("ml")
		if len(p) != 1 {
			t.Fatalf("pending: %+v", p)
		}
		return p[0].Why
	}
	// Capacity 8, nothing allocatable: the node is named, with its capacity.
	bare := readyNode("gpu-x", gpu("8"))
	bare.Status.Allocatable = corev1.ResourceList{}
	o := &Objects{Nodes: []*corev1.Node{bare}, Pods: []*corev1.Pod{pending("one", "1")}}
	if w := why(o); !strings.Contains(w, "(gpu-x: allocatable 0 of capacity 8)") || !strings.Contains(w, "gpu-x advertises 8 fewer than it has") {
		t.Errorf("a node with GPUs in capacity only:\n%s", w)
	}
	if s := o.Fragmentation("ml"); len(s) != 1 || s[0].Nodes != 1 || s[0].State != "short" {
		t.Errorf("its shape: %+v, want the node counted (with nothing free)", s)
	}
	// Not ready, and the pod tolerates every taint: it may use the node.
	sick := readyNode("gpu-n", gpu("8"))
	sick.Status.Conditions[0].Status = corev1.ConditionFalse
	tolerant := pending("tolerant", "8")
	tolerant.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	o = &Objects{Nodes: []*corev1.Node{sick}, Pods: []*corev1.Pod{tolerant}}
	if w := why(o); strings.Contains(w, "not ready") || !strings.Contains(w, "gpu-n, which it may use, has 8") {
		t.Errorf("a not-ready node a pod tolerates:\n%s", w)
	}
	// The 8-GPU node is cordoned, the ready one has 4: not "never".
	cordoned := readyNode("gpu-c", gpu("8"))
	cordoned.Spec.Unschedulable = true
	o = &Objects{Nodes: []*corev1.Node{cordoned, readyNode("gpu-4", gpu("4"))}, Pods: []*corev1.Pod{pending("big", "8")}}
	if w := why(o); strings.Contains(w, "never") || !strings.Contains(w, "gpu-c has 8, and only this keeps it off: cordoned") {
		t.Errorf("a large node behind a cordon:\n%s", w)
	}
}

// Pods of one shape that may use different nodes are a row each: a pod
// that selects the 2-free node is short even though the other pod of its
// shape fits on the 8-free node (the rows were one, and said fits).
func TestFragmentationSplitsShapesByEligibleNodes(t *testing.T) {
	gpu := func(n string) corev1.ResourceList {
		return corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(n)}
	}
	zoned := func(name, zone string) *corev1.Node {
		n := readyNode(name, gpu("8"))
		n.Labels = map[string]string{"zone": zone}
		return n
	}
	pending := func(name string, sel map[string]string) *corev1.Pod {
		p := boundPod("", "nvidia.com/gpu", "4")
		p.Name, p.Namespace, p.Status.Phase, p.Spec.NodeSelector = name, "ml", corev1.PodPending, sel
		return p
	}
	o := &Objects{
		Nodes: []*corev1.Node{zoned("a", "x"), zoned("b", "y")},
		Pods: []*corev1.Pod{boundPod("b", "nvidia.com/gpu", "6"),
			pending("picky", map[string]string{"zone": "y"}), pending("any", nil), pending("any-2", nil)},
	}
	got := o.Fragmentation("ml")
	want := []Shape{
		{Resource: "nvidia.com/gpu", Count: 4, Pending: 2, Pods: []string{"ml/any", "ml/any-2"}, Nodes: 2, NodesThatFit: 1, Free: 10, Largest: 8, Placeable: 2, Rate: 2.0 / 10, State: "fits"},
		{Resource: "nvidia.com/gpu", Count: 4, Pending: 1, Pods: []string{"ml/picky"}, Nodes: 1, Free: 2, Largest: 2, FreeExcluded: 8, Excluded: "a does not match its nodeSelector zone=y", Rate: 1, State: "short"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("shapes:\n%+v\nwant\n%+v", got, want)
	}
}
