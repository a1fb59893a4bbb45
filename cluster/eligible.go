package cluster

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/gpulab/gpulab/inventory"
)

// excluded says why the scheduler may not place pod p on node n, as its
// filters would (NodeUnschedulable, TaintToleration with the node
// controller's not-ready taint, NodeAffinity with the pod's nodeSelector):
// the first reason, "" when it may. Room is not weighed here: a node the
// pod may use can still be full.
func excluded(p *corev1.Pod, n *corev1.Node) string {
	if r := exclusionsOf(p, n); len(r) > 0 {
		return r[0]
	}
	return ""
}

// exclusionsOf is every reason the scheduler may not place p on n: a node
// that one thing alone keeps the pod off has one.
func exclusionsOf(p *corev1.Pod, n *corev1.Node) []string {
	var out []string
	if n.Spec.Unschedulable && !tolerates(p, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}) {
		out = append(out, "cordoned")
	}
	// The scheduler has no readiness filter of its own: a node that is
	// not ready carries the node controller's not-ready (or unreachable)
	// taint, which a pod may tolerate.
	if !nodeReady(n) && !tolerates(p, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}) {
		out = append(out, "not ready")
	}
	if t, bad := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), n.Spec.Taints, p.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, true); bad {
		out = append(out, "taint "+taintString(t)+" not tolerated")
	}
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(p).Match(n); err != nil || !ok {
		out = append(out, "does not match "+selectorOf(p))
	}
	return out
}

func tolerates(p *corev1.Pod, t corev1.Taint) bool {
	return slices.ContainsFunc(p.Spec.Tolerations, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(klog.Background(), &t, true) })
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// selectorOf names what of the pod chooses its nodes: its nodeSelector
// (k=v, ...) and, when it has one, its required node affinity.
func selectorOf(p *corev1.Pod) string {
	var parts []string
	if len(p.Spec.NodeSelector) > 0 {
		var kv []string
		for _, k := range sortedKeys(p.Spec.NodeSelector) {
			kv = append(kv, k+"="+p.Spec.NodeSelector[k])
		}
		parts = append(parts, "its nodeSelector "+strings.Join(kv, ","))
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		parts = append(parts, "its required node affinity")
	}
	if len(parts) == 0 {
		return "its node selection"
	}
	return strings.Join(parts, " and ")
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// exclusions says which nodes a pod may not use and why, the nodes of one
// reason folded: "gpu-05 cordoned; gpu-[06-07] taint x=y:NoSchedule not
// tolerated". names are in the order met.
func exclusions(why map[string]string, names []string) string {
	by := map[string][]string{}
	var order []string
	for _, n := range names {
		r := why[n]
		if r == "" {
			continue
		}
		if _, ok := by[r]; !ok {
			order = append(order, r)
		}
		by[r] = append(by[r], n)
	}
	parts := make([]string, 0, len(order))
	for _, r := range order {
		parts = append(parts, fmt.Sprintf("%s %s", inventory.FoldNames(by[r]), r))
	}
	return strings.Join(parts, "; ")
}
