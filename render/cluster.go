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

// NodeTable is gpulab cluster nodes' table: a row per node and GPU
// resource, the node's name, status and taints on its first; wide adds
// what GPU feature discovery and the kubelet say of the node.
func NodeTable(nodes []cluster.GPUNode, wide bool) Table {
	heads := []string{"NODE", "STATUS", "RESOURCE", "ALLOCATED", "ALLOCATABLE", "CAPACITY", "FREE", "TAINTS"}
	if wide {
		heads = append(heads, "PRODUCT", "MIG STRATEGY", "KUBELET", "RUNTIME", "OS")
	}
	t := NewTable(heads...)
	for _, n := range nodes {
		for i, r := range NodeResources(n) {
			name, status, taints := visible.String(n.Name), NodeStatus(n), visible.String(strings.Join(n.Taints, ","))
			if i > 0 {
				name, status, taints = "", "", ""
			}
			row := []string{name, status, visible.String(r), fmt.Sprint(n.Allocated[r]), fmt.Sprint(n.Allocatable[r]),
				fmt.Sprint(n.Capacity[r]), fmt.Sprint(n.Free(r)), taints}
			if wide && i == 0 {
				row = append(row, visible.String(cmp.Or(n.Product, "-")), visible.String(cmp.Or(n.MIGStrategy, "-")),
					visible.String(n.Kubelet), visible.String(n.Runtime), visible.String(n.OS))
			}
			t.Add(row...)
		}
	}
	return t
}
