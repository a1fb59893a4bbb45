package cluster

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpulab/gpulab/runbooks/parse"
)

// PendingPod is a pod the scheduler has not placed, and why.
type PendingPod struct {
	Namespace     string           `json:"namespace"`
	Name          string           `json:"name"`
	GPUs          map[string]int64 `json:"gpus"` // GPU resources it asks for
	PriorityClass string           `json:"priority_class,omitempty"`
	// Reason and Message are its PodScheduled condition's.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Scheduling is its latest FailedScheduling event, in parts.
	Scheduling *parse.Scheduling `json:"scheduling,omitempty"`
	// Why says in one paragraph why it waits and what would place it.
	Why string `json:"why"`
}

// Pending lists the pods of namespace ns ("" for all) waiting for a
// node, each with its latest FailedScheduling event and a paragraph that
// explains it against the GPU nodes' free resources, by namespace and name.
func (o *Objects) Pending(ns string) []PendingPod {
	latest := map[types.UID]*corev1.Event{}
	for _, e := range o.Events {
		if e.Reason != "FailedScheduling" || e.InvolvedObject.Kind != "Pod" {
			continue
		}
		uid := e.InvolvedObject.UID
		if old, ok := latest[uid]; !ok || eventTime(e).After(eventTime(old).Time) {
			latest[uid] = e
		}
	}
	nodes := o.GPUNodes()
	out := []PendingPod{}
	for _, p := range o.Pods {
		if p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending || (ns != "" && p.Namespace != ns) {
			continue
		}
		out = append(out, explain(p, latest[p.UID], nodes))
	}
	slices.SortFunc(out, func(a, b PendingPod) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return out
}

func eventTime(e *corev1.Event) metav1.Time {
	switch {
	case !e.EventTime.IsZero():
		return metav1.Time{Time: e.EventTime.Time}
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp
	}
	return e.CreationTimestamp
}

func explain(p *corev1.Pod, ev *corev1.Event, nodes []GPUNode) PendingPod {
	pp := PendingPod{Namespace: p.Namespace, Name: p.Name, GPUs: map[string]int64{}, PriorityClass: p.Spec.PriorityClassName}
	for res, q := range PodRequests(p) {
		if GPUResource(res) {
			pp.GPUs[string(res)] = q.Value()
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			pp.Reason, pp.Message = c.Reason, c.Message
		}
	}
	msg := pp.Message
	if ev != nil && ev.Message != "" {
		msg = ev.Message
	}
	pp.Scheduling = parse.ParseScheduling(msg)
	pp.Why = why(pp, nodes)
	return pp
}

// why is the paragraph: what the pod asks, what the scheduler said, and
// for each GPU resource it asks, whether one node could hold it or the
// free units are spread over several (fragmentation).
func why(pp PendingPod, nodes []GPUNode) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%s waits for a node", pp.Namespace, pp.Name)
	if len(pp.GPUs) > 0 {
		var asks []string
		for _, r := range slices.Sorted(maps.Keys(pp.GPUs)) {
			asks = append(asks, fmt.Sprintf("%d %s", pp.GPUs[r], r))
		}
		fmt.Fprintf(&b, " for %s on one node", strings.Join(asks, " and "))
	}
	b.WriteString(".")
	if s := pp.Scheduling; s != nil && s.Total != nil {
		var parts []string
		for _, r := range s.Reasons {
			parts = append(parts, fmt.Sprintf("%d %s", r.Nodes, r.Reason))
		}
		fmt.Fprintf(&b, " The scheduler: none of %d nodes fits (%s).", *s.Total, strings.Join(parts, ", "))
	} else if pp.Message != "" {
		fmt.Fprintf(&b, " The scheduler: %s.", strings.TrimSuffix(pp.Message, "."))
	}
	for _, r := range slices.Sorted(maps.Keys(pp.GPUs)) {
		want := pp.GPUs[r]
		var total, best int64
		bestNode := ""
		for _, n := range nodes {
			if n.Unschedulable || !n.Ready {
				continue
			}
			f := n.Free(r)
			total += max(f, 0)
			if f > best {
				best, bestNode = f, n.Name
			}
		}
		switch {
		case best >= want:
			fmt.Fprintf(&b, " %s has %d %s free: the GPUs are there, so look at the other reasons (taints, selectors, quota).", bestNode, best, r)
		case total >= want:
			fmt.Fprintf(&b, " %d %s are free in the cluster but at most %d on one node (%s): fragmentation. Packing the running pods, or a request that spans nodes, would place it.", total, r, best, cmp.Or(bestNode, "none"))
		default:
			fmt.Fprintf(&b, " Only %d %s are free in the whole cluster: it waits for running pods to end, or for more nodes.", total, r)
		}
	}
	return b.String()
}
