package dgx

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpulab/gpulab/cluster"
)

// The simulated cluster in client-go's types reads as gpulab reads a
// real one: GPU nodes (the sick one with MIG slices), a pod pending for
// fragmentation with the scheduler's event, and a Job the quota refuses
// (FailedCreate, exceeded quota) pointing at the Job's UID.
func TestKubeObjectsReadAsACluster(t *testing.T) {
	f := newKubeFleet(t, 0, 4)
	ko, err := f.c.KubeObjects()
	if err != nil {
		t.Fatal(err)
	}
	o := &cluster.Objects{ResourceQuotas: ptrs(ko.Quotas)}
	o.Nodes, o.Pods = ptrs(ko.Nodes), ptrs(ko.Pods)
	o.Events = ptrs(ko.Events)
	nodes := o.GPUNodes()
	if len(nodes) != 4 {
		t.Fatalf("GPU nodes = %d, want 4", len(nodes))
	}
	mig := 0
	for _, n := range nodes {
		if n.Product != "NVIDIA-A100-SXM4-40GB" || !n.Ready || n.Allocated["nvidia.com/gpu"] == 0 {
			t.Errorf("node %s: %+v", n.Name, n)
		}
		for r := range n.Capacity {
			if strings.HasPrefix(r, "nvidia.com/mig-") {
				mig++
			}
		}
	}
	if mig == 0 {
		t.Errorf("no node advertises a MIG slice (the sick host has them): %+v", nodes)
	}
	pending := o.Pending("")
	if len(pending) != 1 || pending[0].Namespace != "research" || !strings.HasPrefix(pending[0].Name, "llm-finetune-8gpu-") {
		t.Fatalf("pending = %+v, want research's llm-finetune-8gpu pod", pending)
	}
	if p := pending[0]; p.Scheduling == nil || !strings.Contains(p.Message, "0/4 nodes are available") || !strings.Contains(p.Why, "fragmentation") {
		t.Errorf("the pending pod lacks the scheduler's word or the fragmentation: %+v", p)
	}
	var refused *corev1.Event
	for i, e := range ko.Events {
		if e.Reason == "FailedCreate" && e.InvolvedObject.Name == "eval-sweep" {
			refused = &ko.Events[i]
		}
	}
	if refused == nil || refused.InvolvedObject.Kind != "Job" || refused.InvolvedObject.UID == "" ||
		!strings.Contains(refused.Message, "is forbidden: exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=4") {
		t.Errorf("eval-sweep's FailedCreate: %+v", refused)
	}
	if len(ko.Quotas) != 1 || ko.Quotas[0].Status.Used.Name("requests.nvidia.com/gpu", "").Value() == 0 {
		t.Errorf("quotas: %+v", ko.Quotas)
	}
	if len(ko.PriorityClasses) != 5 || len(ko.Jobs) == 0 || len(ko.Namespaces) == 0 {
		t.Errorf("%d priority classes, %d jobs, %d namespaces", len(ko.PriorityClasses), len(ko.Jobs), len(ko.Namespaces))
	}
}

// A kubectl that changes the cluster tells Changes; one that reads it
// does not.
func TestClusterChangesOnKubectlMutations(t *testing.T) {
	f := newKubeFleet(t, 0, 2)
	f.ok(t, "get", "pods", "-A")
	select {
	case <-f.c.Changes():
		t.Fatal("kubectl get told a change")
	default:
	}
	f.ok(t, "run", "probe-pod", "--image=busybox", "--restart=Never")
	select {
	case <-f.c.Changes():
	default:
		t.Fatal("kubectl run told no change")
	}
}

func ptrs[T any](s []T) []*T {
	out := make([]*T, len(s))
	for i := range s {
		out[i] = &s[i]
	}
	return out
}
