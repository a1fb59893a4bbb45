package cluster

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Shape is one GPU request shape (N units of one resource on one node)
// and how the cluster's free units serve it.
type Shape struct {
	Resource string `json:"resource"` // nvidia.com/gpu, nvidia.com/mig-1g.5gb ...
	Count    int64  `json:"count"`    // units one pod asks on one node
	// Pending is how many pending pods ask exactly this and may use the
	// same nodes, Pods which (namespace/name, sorted); 0 and none for the
	// reference shapes shown when nothing of the resource waits. Pods of
	// one resource and count that may use different nodes are shapes of
	// their own.
	Pending int      `json:"pending"`
	Pods    []string `json:"pods,omitempty"`
	// NodesThatFit are the nodes a pod of this shape may use (see
	// Fragmentation) with Count units free.
	NodesThatFit int `json:"nodes_that_fit"`
	// Nodes are the nodes that have the resource and that a pod of this
	// shape may use.
	Nodes int `json:"nodes"`
	// Free is free units on those nodes; Largest on one of them;
	// Placeable how many pods of this shape the scheduler could place
	// there at once.
	Free      int64 `json:"free"`
	Largest   int64 `json:"largest_free_on_one_node"`
	Placeable int64 `json:"placeable"`
	// FreeExcluded are the free units on nodes a pod of this shape may
	// not use (cordoned, not ready, a taint its pods do not tolerate, a
	// selector that leaves them out), and Excluded which nodes and why:
	// shown apart, never counted as placeable.
	FreeExcluded int64  `json:"free_excluded"`
	Excluded     string `json:"excluded,omitempty"`
	// Rate is the share of the free units this shape cannot use (the
	// fragmentation rate the labs compute): 0 when none is free.
	Rate float64 `json:"fragmentation_rate"`
	// State sums it up: "fits" (a node has room), "fragmented" (enough
	// units are free in all, on no one node), "short" (not enough free in
	// the whole cluster: fragmentation is not what holds it).
	State string `json:"state"`
}

// FragmentationRate is the share of free capacity that a request of the
// given size cannot use: free holds each unit's free capacity (free GPUs
// or MIG slices per node, free memory per GPU), and what is left in each
// unit after packing as many whole requests as fit is stranded. The rate
// is stranded ÷ total free, 0 when nothing is free.
func FragmentationRate(free []float64, request float64) (float64, error) {
	if request <= 0 {
		return 0, fmt.Errorf("fragmentation: the request must be positive, not %v", request)
	}
	var total, stranded float64
	for _, f := range free {
		if f < 0 {
			return 0, fmt.Errorf("fragmentation: free capacity %v is negative", f)
		}
		total += f
		stranded += f - request*math.Floor(f/request)
	}
	if total == 0 {
		return 0, nil
	}
	return stranded / total, nil
}

// referenceCounts are the whole-GPU shapes shown when no pod waits for
// the resource: what a newcomer asks first ("could a 4-GPU job start?").
var referenceCounts = []int64{1, 2, 4, 8}

// Fragmentation reports, for each GPU request shape of the pending pods
// (of namespace ns; "" for all) and reference shapes of each resource no
// pod waits for (1, 2, 4 and 8 whole GPUs, 1 MIG slice), how many nodes
// could place it against how many free units exist in total, by resource
// and count.
//
// A node counts for a shape when its pods may use it, as the scheduler's
// filters judge (ready, not cordoned, taints tolerated, nodeSelector and
// required affinity matched: excluded); for a reference shape, when a pod
// with no toleration and no selector may. Pods of one resource and count
// that may use different nodes are different shapes, one row each with
// its pods named: a row is never "fits" for a pod that fits nowhere. The
// free units of the other nodes are counted apart (FreeExcluded), with
// why.
func (o *Objects) Fragmentation(ns string) []Shape {
	nodes := o.GPUNodes()
	objs := map[string]*corev1.Node{}
	for _, n := range o.Nodes {
		objs[n.Name] = n
	}
	classes := o.shapeClasses(ns, nodes, objs)
	out := make([]Shape, 0, len(classes))
	for _, c := range classes {
		s := Shape{Resource: c.res, Count: c.n, Pending: len(c.pods)}
		p := &corev1.Pod{} // a reference shape's: no toleration, no selector
		if len(c.pods) > 0 {
			p = c.pods[0] // its class's nodes are every pod's of it
		}
		for _, cp := range c.pods {
			s.Pods = append(s.Pods, cp.Namespace+"/"+cp.Name)
		}
		slices.Sort(s.Pods)
		out = append(out, s.measure(nodes, func(node string) string {
			if n := objs[node]; n != nil {
				return excluded(p, n)
			}
			return ""
		}))
	}
	slices.SortStableFunc(out, func(a, b Shape) int {
		return cmp.Or(strings.Compare(a.Resource, b.Resource), cmp.Compare(a.Count, b.Count), slices.Compare(a.Pods, b.Pods))
	})
	return out
}

// shapeClass is the pods of one resource and count that may use the same
// nodes (those that have the resource); a reference shape has no pods.
type shapeClass struct {
	res  string
	n    int64
	pods []*corev1.Pod
}

// shapeClasses groups the waiting GPU pods of namespace ns ("" for all)
// by resource, count and the nodes they may use, and adds the reference
// shapes of each resource no pod waits for.
func (o *Objects) shapeClasses(ns string, nodes []GPUNode, objs map[string]*corev1.Node) []*shapeClass {
	var classes []*shapeClass
	byKey := map[string]*shapeClass{}
	waiting := map[string]bool{}
	add := func(res string, n int64, p *corev1.Pod) {
		k := res + "\x00" + fmt.Sprint(n)
		if p != nil {
			for _, gn := range nodes {
				if hasResource(gn, res) && objs[gn.Name] != nil && excluded(p, objs[gn.Name]) == "" {
					k += "\x00" + gn.Name
				}
			}
		}
		c, ok := byKey[k]
		if !ok {
			c = &shapeClass{res: res, n: n}
			byKey[k] = c
			classes = append(classes, c)
		}
		if p != nil {
			c.pods = append(c.pods, p)
		}
	}
	for _, p := range o.Pods {
		if p.Spec.NodeName != "" || terminated(p) || (ns != "" && p.Namespace != ns) {
			continue
		}
		for res, q := range PodRequests(p) {
			if GPUResource(res) && q.Value() > 0 {
				add(string(res), q.Value(), p)
				waiting[string(res)] = true
			}
		}
	}
	for _, res := range resourcesOf(nodes) {
		if waiting[res] || !countable(res) {
			continue
		}
		counts := referenceCounts
		if res != "nvidia.com/gpu" {
			counts = []int64{1}
		}
		for _, n := range counts {
			add(res, n, nil)
		}
	}
	return classes
}

func hasResource(n GPUNode, res string) bool {
	_, has := n.Allocatable[res]
	return has || n.Capacity[res] != 0
}

// countable says whether a resource is counted in devices (not HAMi's
// gpumem in MiB or gpucores in percent, whose reference shapes mean
// nothing).
func countable(res string) bool {
	return !strings.HasSuffix(res, "/gpumem") && !strings.HasSuffix(res, "/gpucores") && !strings.HasSuffix(res, "/gpumem-percentage")
}

func resourcesOf(nodes []GPUNode) []string {
	seen := map[string]bool{}
	for _, n := range nodes {
		for r := range n.Allocatable {
			seen[r] = true
		}
	}
	out := make([]string, 0, len(seen))
	for r := range seen {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

// measure counts what the nodes a pod of this shape may use offer it;
// excluded says why such a pod may not use a node ("" when it may).
func (s Shape) measure(nodes []GPUNode, excluded func(node string) string) Shape {
	var free []float64
	why := map[string]string{}
	var names []string
	for _, n := range nodes {
		if !hasResource(n, s.Resource) {
			continue
		}
		if r := excluded(n.Name); r != "" {
			why[n.Name] = r
			names = append(names, n.Name)
			s.FreeExcluded += max(n.Free(s.Resource), 0)
			continue
		}
		s.Nodes++
		f := max(n.Free(s.Resource), 0)
		free = append(free, float64(f))
		s.Free += f
		s.Largest = max(s.Largest, f)
		if f >= s.Count {
			s.NodesThatFit++
		}
		s.Placeable += f / s.Count
	}
	s.Excluded = exclusions(why, names)
	s.Rate, _ = FragmentationRate(free, float64(s.Count)) // Count > 0, free ≥ 0
	switch {
	case s.NodesThatFit > 0:
		s.State = "fits"
	case s.Free >= s.Count:
		s.State = "fragmented"
	default:
		s.State = "short"
	}
	return s
}
