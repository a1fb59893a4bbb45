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
	"k8s.io/klog/v2"

	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/step/parse"
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
	// Priority is its priority class's value.
	Priority *int32 `json:"priority,omitempty"`
	// Gates are its scheduling gates: the scheduler does not look at it
	// until they are removed (Kueue's admission gate, for one).
	Gates []string `json:"gates,omitempty"`
	// Evidence are the facts the paragraph rests on, one per line: the
	// event, the quota's usage, the queue's word.
	Evidence []string `json:"evidence"`
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
	ix := o.index()
	out := []PendingPod{}
	for _, p := range o.Pods {
		if p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending || (ns != "" && p.Namespace != ns) {
			continue
		}
		out = append(out, ix.explain(p, latest[p.UID]))
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

// index holds what explains pending pods, looked up by pod.
type index struct {
	nodes     []GPUNode
	nodesRead bool                      // false: RBAC forbade listing nodes
	allPods   string                    // "": every namespace's pods were read; else the only namespace read
	taints    map[string][]corev1.Taint // by node
	nodeObjs  map[string]*corev1.Node   // by name: what a pod's eligibility is judged on
	quotas    map[string][]Quota        // by namespace
	workloads map[types.UID]Workload    // Kueue's, by the UID of the pod or Job that owns it
	podGroups map[string]PodGroup       // Volcano's, by namespace/name
	claims    map[string]ResourceClaim
	prio      map[string]int32 // priority class values, by name
	// localQueues maps namespace/name to its ClusterQueue.
	localQueues   map[string]string
	clusterQueues map[string]ClusterQueue
}

// index is computed once per Objects (Pending and Blocked both need it,
// and at 20,000 pods it is most of their cost): an Objects is not changed
// once it is analysed.
func (o *Objects) index() *index {
	o.memo.Do(func() { o.ix = o.buildIndex() })
	return o.ix
}

func (o *Objects) buildIndex() *index {
	ix := &index{nodes: o.GPUNodes(), quotas: map[string][]Quota{}, workloads: map[types.UID]Workload{}, podGroups: map[string]PodGroup{},
		claims: map[string]ResourceClaim{}, taints: map[string][]corev1.Taint{}, prio: map[string]int32{}, localQueues: map[string]string{}, clusterQueues: map[string]ClusterQueue{}}
	ix.nodesRead, ix.allPods = !o.NodesForbidden, o.PodsOnly
	ix.nodeObjs = map[string]*corev1.Node{}
	for _, n := range o.Nodes {
		ix.taints[n.Name] = n.Spec.Taints
		ix.nodeObjs[n.Name] = n
	}
	for _, q := range o.Quotas(metav1.NamespaceAll) {
		ix.quotas[q.Namespace] = append(ix.quotas[q.Namespace], q)
	}
	for _, w := range o.Queues.Workloads {
		ix.workloads[types.UID(w.OwnerUID)] = w
	}
	for _, g := range o.Queues.PodGroups {
		ix.podGroups[g.Namespace+"/"+g.Name] = g
	}
	for _, c := range o.Queues.ResourceClaims {
		ix.claims[c.Namespace+"/"+c.Name] = c
	}
	for _, lq := range o.Queues.LocalQueues {
		ix.localQueues[lq.Namespace+"/"+lq.Name] = lq.ClusterQueue
	}
	for _, cq := range o.Queues.ClusterQueues {
		ix.clusterQueues[cq.Name] = cq
	}
	for name, pc := range o.PriorityClasses {
		ix.prio[name] = pc.Value
	}
	return ix
}

func (ix *index) explain(p *corev1.Pod, ev *corev1.Event) PendingPod {
	pp := PendingPod{Namespace: p.Namespace, Name: p.Name, GPUs: map[string]int64{}, PriorityClass: p.Spec.PriorityClassName, Evidence: []string{}}
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
		pp.Evidence = append(pp.Evidence, "event FailedScheduling: "+ev.Message)
	} else if pp.Message != "" {
		pp.Evidence = append(pp.Evidence, "condition PodScheduled="+string(corev1.ConditionFalse)+" "+pp.Reason+": "+pp.Message)
	}
	pp.Scheduling = parse.ParseScheduling(msg)
	var b strings.Builder
	b.WriteString(asks(pp))
	ix.gates(&b, &pp, p)
	scheduler(&b, pp)
	for _, r := range slices.Sorted(maps.Keys(pp.GPUs)) {
		ix.room(&b, p, r, pp.GPUs[r])
	}
	ix.priority(&b, &pp, p)
	ix.quota(&b, &pp)
	pp.Why = b.String()
	return pp
}

// asks is the paragraph's first sentence: who waits, for what.
func asks(pp PendingPod) string {
	s := pp.Namespace + "/" + pp.Name + " waits for a node"
	if len(pp.GPUs) > 0 {
		var parts []string
		for _, r := range slices.Sorted(maps.Keys(pp.GPUs)) {
			parts = append(parts, fmt.Sprintf("%d %s", pp.GPUs[r], r))
		}
		s += " for " + strings.Join(parts, " and ") + " on one node"
	}
	return s + "."
}

// scheduler says what the scheduler said.
func scheduler(b *strings.Builder, pp PendingPod) {
	if s := pp.Scheduling; s != nil && s.Total != nil && len(s.Reasons) > 0 {
		var parts []string
		for _, r := range s.Reasons {
			parts = append(parts, fmt.Sprintf("%d %s", r.Nodes, r.Reason))
		}
		fmt.Fprintf(b, " The scheduler: none of %d nodes fits (%s).", *s.Total, strings.Join(parts, ", "))
	} else if s != nil && s.Total != nil {
		fmt.Fprintf(b, " The scheduler: none of %d nodes fits, for reasons it did not give.", *s.Total)
	} else if pp.Message != "" && pp.Reason != corev1.PodReasonSchedulingGated {
		fmt.Fprintf(b, " The scheduler: %s.", strings.TrimSuffix(pp.Message, "."))
	}
}

// room says, for one GPU resource the pod asks, what the nodes it may use
// (its tolerations, nodeSelector and required affinity against their
// taints, labels, cordon and readiness: excluded) offer: one with room
// (then something else holds it), none whose allocatable is large enough
// (it can never run as asked), free units spread over several
// (fragmentation), or too few free. Only free units on nodes it may use
// are quoted as placeable; the others are named apart, with why.
func (ix *index) room(b *strings.Builder, p *corev1.Pod, r string, want int64) {
	if !ix.nodesRead {
		fmt.Fprintf(b, " Whether %d %s are free on a node is unknown: these credentials may not list nodes (RBAC).", want, r)
		return
	}
	if ix.allPods != "" {
		fmt.Fprintf(b, " (Only namespace %s's pods could be read: what other namespaces hold is counted as free.)", ix.allPods)
	}
	v := ix.survey(p, r)
	names, why, may := v.names, v.why, v.may
	free, best, alloc, freeOut, bestOut, allocOut := v.free, v.best, v.alloc, v.freeOut, v.bestOut, v.allocOut
	bestNode, allocNode, bestOutNode, allocOutNode := v.bestNode, v.allocNode, v.bestOutNode, v.allocOutNode
	out := exclusions(why, names)
	apart := ""
	if out != "" {
		apart = fmt.Sprintf(" Not counted, as it may not use them: %s (%d %s free there).", out, freeOut, r)
		if bestOut >= want && best < want {
			apart += fmt.Sprintf(" %s would have room (%d free), and only that keeps it off: %s.", bestOutNode, bestOut, why[bestOutNode])
		}
	}
	switch {
	case len(names) == 0:
		fmt.Fprintf(b, " No node has %s at all.", r)
	case len(may) == 0:
		fmt.Fprintf(b, " No node with %s may take it: %s.", r, out)
		if bestOut >= want {
			fmt.Fprintf(b, " %s has %d %s free: %s is all that keeps it off it.", bestOutNode, bestOut, r, why[bestOutNode])
		}
	case best >= want:
		fmt.Fprintf(b, " %s, which it may use, has %d %s free: the GPUs are there, so what holds it is the scheduler's other reasons (affinity to other pods, topology spread, ports, volumes, gates, quota).%s", bestNode, best, r, apart)
	case alloc < want && allocOut >= want:
		fmt.Fprintf(b, " None of the %s it may use is large enough (at most %d %s allocatable, on %s); %s has %d, and only this keeps it off: %s.%s", text.Plural(len(may), "node", "nodes"), alloc, r, allocNode, allocOutNode, allocOut, why[allocOutNode], apart)
	case alloc < want:
		n := nodeNamed(may, allocNode)
		fmt.Fprintf(b, " It can never run as asked: the nodes it may use offer at most %d %s (%s: allocatable %d of capacity %d), fewer than the %d it asks for one node.", alloc, r, allocNode, alloc, n.Capacity[r], want)
		if c := n.Capacity[r]; c > alloc {
			fmt.Fprintf(b, " %s advertises %d fewer than it has: the device plugin left them out (GPUs it found unhealthy, or a MIG or sharing configuration).", allocNode, c-alloc)
		}
		if apart == "" {
			b.WriteString(" Ask for at most that many on one node, or add nodes that have more.")
		} else {
			b.WriteString(" Ask for at most that many on one node, or let it use the nodes it is kept off:" + apart)
		}
	case free >= want:
		fmt.Fprintf(b, " %d %s are free on the %s it may use but at most %d on one (%s): fragmentation. It runs when one node has %d free (pods there end, or are moved where nothing pins them to their node), or as a request that spans nodes.%s", free, r, text.Plural(len(may), "node", "nodes"), best, cmp.Or(bestNode, "none"), want, apart)
	default:
		fmt.Fprintf(b, " Only %d %s are free on the %s it may use: it waits for running pods there to end, or for more nodes.%s", free, r, text.Plural(len(may), "node", "nodes"), apart)
	}
}

// roomSurvey is what the nodes with a GPU resource offer a pod: names,
// the nodes that have the resource; why, the first reason the pod may not
// use one; may, those it may use, with their free units in all (free), the
// most on one (best, on bestNode) and the largest allocatable (alloc, on
// allocNode); the Out figures are the same for the nodes it is kept off
// by one reason alone, the one that changes (allocOut: not its own
// selection).
type roomSurvey struct {
	names                                          []string
	why                                            map[string]string
	may                                            []GPUNode
	free, best, alloc, freeOut, bestOut, allocOut  int64
	bestNode, allocNode, bestOutNode, allocOutNode string
}

// survey tallies what the nodes with resource r offer pod p.
func (ix *index) survey(p *corev1.Pod, r string) roomSurvey {
	v := roomSurvey{why: map[string]string{}}
	sole := map[string]bool{} // one reason alone keeps the pod off the node
	for _, n := range ix.nodes {
		if _, has := n.Allocatable[r]; !has && n.Capacity[r] == 0 {
			continue
		}
		v.names = append(v.names, n.Name)
		f := max(n.Free(r), 0)
		if node := ix.nodeObjs[n.Name]; node != nil {
			if rs := exclusionsOf(p, node); len(rs) > 0 {
				v.why[n.Name], sole[n.Name] = rs[0], len(rs) == 1
			}
		}
		if v.why[n.Name] != "" {
			v.freeOut += f
			if f > v.bestOut && sole[n.Name] {
				v.bestOut, v.bestOutNode = f, n.Name
			}
			// A node the pod's own selection leaves out does not make it
			// runnable as asked; one a cordon, a taint or readiness
			// keeps it off does, once that changes.
			if a := n.Allocatable[r]; sole[n.Name] && !strings.HasPrefix(v.why[n.Name], "does not match") && (v.allocOutNode == "" || a > v.allocOut) {
				v.allocOut, v.allocOutNode = a, n.Name
			}
			continue
		}
		v.may = append(v.may, n)
		v.free += f
		if f > v.best {
			v.best, v.bestNode = f, n.Name
		}
		if a := n.Allocatable[r]; v.allocNode == "" || a > v.alloc {
			v.alloc, v.allocNode = a, n.Name
		}
	}
	return v
}

func nodeNamed(nodes []GPUNode, name string) GPUNode {
	for _, n := range nodes {
		if n.Name == name {
			return n
		}
	}
	return GPUNode{}
}

// untolerated is the first NoSchedule or NoExecute taint of a node that
// the pod does not tolerate, as key=value:effect; "" when it tolerates all.
func untolerated(p *corev1.Pod, taints []corev1.Taint) string {
	for i := range taints {
		t := &taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !slices.ContainsFunc(p.Spec.Tolerations, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(klog.Background(), t, true) }) {
			return taintString(*t)
		}
	}
	return ""
}
