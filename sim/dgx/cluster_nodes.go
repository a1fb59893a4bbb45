package dgx

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeWrite is what a client may change on a simulated node, as an
// update through the API server does: its cordon (spec.unschedulable),
// its taints and its annotations, with the managedFields the API server
// computes for the writer (the mirror computes them, with client-go's
// field manager). A write that names a ResourceVersion is refused when
// the node changed since (ErrConflict), as the API server refuses it.
type NodeWrite struct {
	Name            string
	ResourceVersion string
	Unschedulable   bool
	Taints          []corev1.Taint
	Annotations     map[string]string
	ManagedFields   []metav1.ManagedFieldsEntry
}

// The refusals of WriteNode and EvictPod, as the API server's: 409
// Conflict, 404 Not Found.
var (
	ErrConflict = errors.New("the object has been modified; please apply your changes to the latest version and try again")
	ErrNotFound = errors.New("not found")
)

// cordonTaint is the taint the node lifecycle controller keeps on a
// cordoned node (TaintNodesByCondition): shown, never stored.
var cordonTaint = corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}

// WriteNode makes w on its node, as the API server would take a node
// update, and what the control plane does about it follows: the kubelet
// says the node is (not) schedulable in an event; the scheduler places
// no new pod on a cordoned node nor on one with a NoSchedule taint no
// pod tolerates; a NoExecute taint evicts the node's pods (the taint
// manager's TaintManagerEviction), but for the DaemonSets' (which the
// simulation leaves, so that a released node has them).
func (c *Cluster) WriteNode(w NodeWrite) error {
	s := c.state()
	defer c.mu.Unlock()
	n := s.node[w.Name]
	switch {
	case n == nil:
		return fmt.Errorf("nodes %q %w", w.Name, ErrNotFound)
	case w.ResourceVersion != "" && w.ResourceVersion != n.resourceVersion():
		return fmt.Errorf("Operation cannot be fulfilled on nodes %q: %w", w.Name, ErrConflict)
	}
	if n.unschedulable != w.Unschedulable {
		status := map[bool]string{true: "NodeNotSchedulable", false: "NodeSchedulable"}[w.Unschedulable]
		s.event("", "Node", n.name, "Normal", status, "kubelet", "Node "+n.name+" status is now: "+status, s.now)
	}
	n.unschedulable = w.Unschedulable
	n.taints = slices.DeleteFunc(slices.Clone(w.Taints), func(t corev1.Taint) bool { return t.MatchTaint(&cordonTaint) })
	n.annotations = maps.Clone(w.Annotations)
	n.managed = slices.Clone(w.ManagedFields)
	n.version++
	if slices.ContainsFunc(n.taints, func(t corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute }) {
		s.taintEvict(n)
	}
	s.reconcile(s.now)
	c.changed()
	return nil
}

// EvictPod is the eviction API on the simulated cluster, which has no
// PodDisruptionBudget: the pod is deleted (its controller makes a new
// one, which the scheduler places elsewhere).
func (c *Cluster) EvictPod(ns, name string) error {
	s := c.state()
	defer c.mu.Unlock()
	if !s.deletePod(ns, name, s.now) {
		return fmt.Errorf("pods %q %w", name, ErrNotFound)
	}
	s.reconcile(s.now)
	c.changed()
	return nil
}

// taintEvict is the taint manager on a node with a NoExecute taint: every
// pod that runs there goes, but the DaemonSets'.
func (s *kstate) taintEvict(n *knode) {
	var gone []*kpod
	for _, p := range s.pods {
		if p.node == n.name && p.ownerKind != "DaemonSet" && !p.finished(s.now) {
			gone = append(gone, p)
		}
	}
	for _, p := range gone {
		s.event(p.ns, "Pod", p.name, "Normal", "TaintManagerEviction", "taint-eviction-controller", "Marking for deletion Pod "+p.ns+"/"+p.name, s.now)
		s.deletePod(p.ns, p.name, s.now)
	}
}

// resourceVersion is the node's, as its objects carry it.
func (n *knode) resourceVersion() string { return strconv.Itoa(1000 + n.version) }

// shownTaints are the node's taints as the API serves them: the cordon's
// own first, while cordoned.
func (n *knode) shownTaints() []corev1.Taint {
	if !n.unschedulable {
		return n.taints
	}
	return append([]corev1.Taint{cordonTaint}, n.taints...)
}

// nodeMisfit is why the scheduler's node filters keep p off n, in its
// words (NodeUnschedulable, then TaintToleration, which stop at the
// first), "" when they do not. The simulation's pods tolerate no taint
// but the DaemonSets' the cordon's.
func nodeMisfit(p *kpod, n *knode) string {
	if n.unschedulable && p.ownerKind != "DaemonSet" {
		return "node(s) were unschedulable"
	}
	for _, t := range n.taints {
		if t.Effect != corev1.TaintEffectPreferNoSchedule {
			return fmt.Sprintf("node(s) had untolerated taint {%s: %s}", t.Key, t.Value)
		}
	}
	return ""
}

// nodeWritten adds what clients wrote on n to its object: metadata
// (resourceVersion, annotations, managedFields) and spec (unschedulable,
// taints).
func (n *knode) nodeWritten(obj map[string]any) {
	md, spec := obj["metadata"].(map[string]any), obj["spec"].(map[string]any)
	md["resourceVersion"] = n.resourceVersion()
	if len(n.annotations) > 0 {
		md["annotations"] = anyMap(n.annotations)
	}
	if len(n.managed) > 0 {
		md["managedFields"] = jsonValue(n.managed)
	}
	if n.unschedulable {
		spec["unschedulable"] = true
	}
	if t := n.shownTaints(); len(t) > 0 {
		spec["taints"] = jsonValue(t)
	}
}

// jsonValue is v as the JSON decoder gives it back: maps and lists.
func jsonValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		panic("sim/dgx: " + err.Error()) // API types always marshal
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		panic("sim/dgx: " + err.Error())
	}
	return out
}

// describeTaints are the node's taints as kubectl describe lists them.
func (n *knode) describeTaints() []string {
	var out []string
	for _, t := range n.shownTaints() {
		out = append(out, t.ToString())
	}
	return out
}

// nodeStatus is the STATUS column of kubectl get nodes.
func (n *knode) nodeStatus() string {
	if n.unschedulable {
		return "Ready,SchedulingDisabled"
	}
	return "Ready"
}
