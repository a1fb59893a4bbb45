package render

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/internal/visible"
)

// NodeStatus is a Kubernetes node's STATUS as kubectl get nodes writes
// it: Ready or NotReady, then ",SchedulingDisabled" when it is cordoned.
func NodeStatus(n cluster.GPUNode) string {
	s := "Ready"
	if !n.Ready {
		s = "NotReady"
	}
	if n.Unschedulable {
		s += ",SchedulingDisabled"
	}
	return s
}

// NodeResources are a node's GPU resources, a row each in both front
// ends' node tables: every resource it has a capacity or an allocatable
// amount of (a resource the kubelet holds back shows as capacity with
// nothing allocatable, never as no resource), sorted.
func NodeResources(n cluster.GPUNode) []string {
	set := maps.Clone(n.Capacity)
	if set == nil {
		set = map[string]int64{}
	}
	for r := range n.Allocatable {
		set[r] = 0
	}
	return slices.Sorted(maps.Keys(set))
}

// NodeHealth is a node's GPU health as the cluster states it: "no signal"
// when nothing the cluster publishes says the GPUs are unwell (which is
// no reading gpulab made: a cluster with no health agent says nothing), else "UNHEALTHY" and how many signals say so
// ("UNHEALTHY (2)"; NodeHealthLines says which, and who).
func NodeHealth(n cluster.GPUNode) string {
	if len(n.Health) == 0 {
		return "no signal"
	}
	return fmt.Sprintf("UNHEALTHY (%d)", len(n.Health))
}

// NodeStatusHealth is NodeStatus and, where the cluster calls the node's
// GPUs unhealthy, "!" ("Ready!": the Cluster tab's STATUS, narrow enough
// for 80 columns; the tab's warning line and gpulab cluster nodes say
// who said so).
func NodeStatusHealth(n cluster.GPUNode) string {
	if len(n.Health) == 0 {
		return NodeStatus(n)
	}
	return NodeStatus(n) + "!"
}

// NodeHealthLines are the signals of the nodes someone calls unhealthy,
// a line each: "gpu-3: NVSentinel: GpuXidError=True (...) since ...".
func NodeHealthLines(nodes []cluster.GPUNode) []string {
	var out []string
	for _, n := range nodes {
		for _, h := range n.Health {
			out = append(out, visible.String(n.Name+": "+h.String()))
		}
	}
	return out
}

// NodeTable is gpulab cluster nodes' table: a row per node and GPU
// resource, the node's name, status, GPU health and taints on its first;
// wide adds what GPU feature discovery and the kubelet say of the node.
func NodeTable(nodes []cluster.GPUNode, wide bool) Table {
	heads := []string{"NODE", "STATUS", "GPU HEALTH", "RESOURCE", "ALLOCATED", "ALLOCATABLE", "CAPACITY", "FREE", "TAINTS"}
	if wide {
		heads = append(heads, "PRODUCT", "MEMORY", "DRIVER", "MIG STRATEGY", "KUBELET", "RUNTIME", "OS")
	}
	t := NewTable(heads...)
	for _, n := range nodes {
		for i, r := range NodeResources(n) {
			name, status, health, taints := visible.String(n.Name), NodeStatus(n), NodeHealth(n), visible.String(strings.Join(n.Taints, ","))
			if i > 0 {
				name, status, health, taints = "", "", "", ""
			}
			row := []string{name, status, health, visible.String(r), fmt.Sprint(n.Allocated[r]), fmt.Sprint(n.Allocatable[r]),
				fmt.Sprint(n.Capacity[r]), fmt.Sprint(n.Free(r)), taints}
			if wide && i == 0 {
				row = append(row, visible.String(cmp.Or(n.Product, "-")), visible.String(cmp.Or(n.Memory, "-")), visible.String(cmp.Or(n.Driver, "-")),
					visible.String(cmp.Or(n.MIGStrategy, "-")), visible.String(n.Kubelet), visible.String(n.Runtime), visible.String(n.OS))
			}
			t.Add(row...)
		}
	}
	return t
}
