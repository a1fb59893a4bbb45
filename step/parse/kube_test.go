package parse

import (
	"strings"
	"testing"
)

func TestKubeFixtures(t *testing.T) {
	n, err := ParseDescribeNode(fixture(t, "kubectl-describe-node", "eks-g4dn-xlarge-t4-full-nvidia-gpu-allocated.txt"))
	g := n.GPU["nvidia.com/gpu"]
	if err != nil || *g.Capacity != 1 || *g.Allocatable != 1 || *g.Requested != 1 || n.Allocated["cpu"].Requests != "350m" || n.Labels["node.kubernetes.io/instance-type"] != "g4dn.xlarge" {
		t.Errorf("eks node: %v %+v %+v", err, n.GPU, n.Labels["node.kubernetes.io/instance-type"])
	}
	n, _ = ParseDescribeNode(fixture(t, "kubectl-describe-node", "a100-80gb-mig-mixed-allocatable-gpu-and-mig.txt"))
	if *n.GPU["nvidia.com/mig-1g.10gb"].Allocatable != 6 || *n.GPU["nvidia.com/mig-3g.40gb"].Allocatable != 0 {
		t.Errorf("mixed MIG node: %+v", n.GPU)
	}
	n, err = ParseDescribeNode(fixture(t, "kubectl-describe-node", "rtx2080ti-timeslicing-6-grep-gpu.txt"))
	if err == nil || !strings.Contains(err.Error(), "grepped output") || *n.GPU["nvidia.com/gpu"].Allocatable != 6 {
		t.Errorf("grepped node: %v %+v", err, n.GPU)
	}
	p, err := ParseDescribePod(fixture(t, "kubectl-describe-pod", "aks-vllm-pending-insufficient-gpu-autoscaler.txt"))
	if err != nil || p.Name != "vllm-1" || p.Namespace != "llm" || len(p.Events) != 7 {
		t.Fatalf("aks pod: %v %+v", err, p)
	}
	s := p.Events[3].Scheduling
	if *s.Available != 0 || *s.Total != 3 || len(s.Reasons) != 2 || s.Reasons[0].Nodes != 1 || !strings.Contains(s.Reasons[0].Reason, "untolerated taint") || s.Reasons[1].Resource != "nvidia.com/gpu" || !strings.HasPrefix(s.Preemption, "0/3 nodes") {
		t.Errorf("scheduling reasons: %+v", s)
	}
	if p.Events[2].Age != "2m12s (x2 over 7m14s)" {
		t.Errorf("age with repeats: %q", p.Events[2].Age)
	}
	evs, err := ParseGetEvents(fixture(t, "kubectl-get-events", "gpu-pod-insufficient-then-scheduled-field-selector.txt"))
	if err != nil || len(evs) != 8 || evs[0].Age != "9m3s" || evs[0].Object != "pod/gpu-operator-test" || evs[7].Scheduling.Reasons[0].Nodes != 2 || evs[1].Scheduling != nil {
		t.Errorf("events: %v %+v", err, evs)
	}
	if _, err := ParseGetEvents("NAME READY\nx 1/1\n"); err == nil || !strings.Contains(err.Error(), "line 1: no header with REASON") {
		t.Errorf("not events: %v", err)
	}
}
