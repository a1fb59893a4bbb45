package cluster

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Kueue's names for the pods it manages.
const (
	kueueQueueLabel = "kueue.x-k8s.io/queue-name"
	kueueGate       = "kueue.x-k8s.io/admission"
)

// gates says what holds the pod before the scheduler: its scheduling
// gates, Kueue's workload, Volcano's PodGroup, DRA's claims.
func (ix *index) gates(b *strings.Builder, pp *PendingPod, p *corev1.Pod) {
	for _, g := range p.Spec.SchedulingGates {
		pp.Gates = append(pp.Gates, g.Name)
	}
	if len(pp.Gates) > 0 {
		fmt.Fprintf(b, " It is gated (%s): the scheduler does not consider it until the gate is lifted.", strings.Join(pp.Gates, ", "))
		pp.Evidence = append(pp.Evidence, "scheduling gates: "+strings.Join(pp.Gates, ", "))
	}
	if w, ok := ix.workloadOf(p); ok {
		ix.kueue(b, pp, w)
	} else if q := p.Labels[kueueQueueLabel]; q != "" {
		fmt.Fprintf(b, " It names Kueue queue %s, but no Kueue Workload owns it (is Kueue running?).", q)
	}
	if g := p.Annotations[volcanoGroupAnnotation]; g != "" {
		if pg, ok := ix.podGroups[p.Namespace+"/"+g]; ok && pg.Phase != "Running" {
			fmt.Fprintf(b, " Its Volcano PodGroup %s is %s: its %d pods are placed together or not at all", g, pg.Phase, pg.MinMember)
			if pg.Message != "" {
				fmt.Fprintf(b, " (%s)", strings.TrimSuffix(pg.Message, "."))
			}
			b.WriteString(".")
			pp.Evidence = append(pp.Evidence, fmt.Sprintf("Volcano PodGroup %s: phase %s, minMember %d %s", g, pg.Phase, pg.MinMember, pg.Message))
		}
	}
	ix.claimsOf(b, pp, p)
}

// workloadOf finds the Kueue Workload of a pod: its own (pod integration)
// or its owner's (a Job's).
func (ix *index) workloadOf(p *corev1.Pod) (Workload, bool) {
	if w, ok := ix.workloads[p.UID]; ok {
		return w, true
	}
	for _, r := range p.OwnerReferences {
		if w, ok := ix.workloads[r.UID]; ok {
			return w, true
		}
	}
	return Workload{}, false
}

// kueue says what Kueue says of a workload: admitted or not, why, and its
// ClusterQueue's GPU usage against its nominal quota.
func (ix *index) kueue(b *strings.Builder, pp *PendingPod, w Workload) {
	ev := fmt.Sprintf("Kueue Workload %s/%s in queue %s: admitted=%v", w.Namespace, w.Name, w.Queue, w.Admitted)
	if w.Admitted {
		pp.Evidence = append(pp.Evidence, ev)
		return
	}
	fmt.Fprintf(b, " Kueue has not admitted its Workload %s (queue %s)", w.Name, w.Queue)
	if w.Message != "" {
		fmt.Fprintf(b, ": %s", strings.TrimSuffix(w.Message, "."))
		ev += ", " + w.Message
	}
	b.WriteString(".")
	if cq, ok := ix.clusterQueues[ix.localQueues[w.Namespace+"/"+w.Queue]]; ok {
		for _, r := range slices.Sorted(maps.Keys(cq.Nominal)) {
			if GPUResource(corev1.ResourceName(r)) {
				fmt.Fprintf(b, " ClusterQueue %s uses %d of its %d %s", cq.Name, cq.Used[r], cq.Nominal[r], r)
				if cq.Cohort != "" {
					fmt.Fprintf(b, " (cohort %s may lend more)", cq.Cohort)
				}
				b.WriteString(".")
				ev += fmt.Sprintf("; ClusterQueue %s: %s %d of %d used, %d pending workloads", cq.Name, r, cq.Used[r], cq.Nominal[r], cq.Pending)
			}
		}
		b.WriteString(" It starts when admitted workloads of the queue end, or when the queue's quota is raised.")
	}
	pp.Evidence = append(pp.Evidence, ev)
}

// claimsOf says which of the pod's DRA ResourceClaims are not allocated.
func (ix *index) claimsOf(b *strings.Builder, pp *PendingPod, p *corev1.Pod) {
	names := map[string]string{} // the pod's claim name -> the ResourceClaim's
	for _, c := range p.Spec.ResourceClaims {
		if c.ResourceClaimName != nil {
			names[c.Name] = *c.ResourceClaimName
		}
	}
	for _, st := range p.Status.ResourceClaimStatuses {
		if st.ResourceClaimName != nil {
			names[st.Name] = *st.ResourceClaimName
		}
	}
	for _, podName := range slices.Sorted(maps.Keys(names)) {
		rc, ok := ix.claims[p.Namespace+"/"+names[podName]]
		if !ok {
			fmt.Fprintf(b, " Its ResourceClaim %s does not exist.", names[podName])
			continue
		}
		pp.Evidence = append(pp.Evidence, fmt.Sprintf("ResourceClaim %s: %s, allocated=%v", rc.Name, strings.Join(rc.Requests, ", "), rc.Allocated))
		if !rc.Allocated {
			fmt.Fprintf(b, " Its ResourceClaim %s (%s) is not allocated: no node's ResourceSlices offer those devices free.", rc.Name, strings.Join(rc.Requests, ", "))
		}
	}
	for _, c := range p.Spec.ResourceClaims {
		if c.ResourceClaimTemplateName != nil && names[c.Name] == "" {
			fmt.Fprintf(b, " Its claim %s from template %s has not been made yet (the resource claim controller makes it).", c.Name, *c.ResourceClaimTemplateName)
		}
	}
}

// priority says the pod's priority and what the scheduler said of
// preemption.
func (ix *index) priority(b *strings.Builder, pp *PendingPod, p *corev1.Pod) {
	v := p.Spec.Priority
	if pc := p.Spec.PriorityClassName; pc != "" {
		if pv, ok := ix.prio[pc]; ok && v == nil {
			v = &pv
		}
	}
	pp.Priority = v
	if pp.PriorityClass == "" && (v == nil || *v == 0) { // the default: nothing to say
		return
	}
	who := "Its priority"
	if pp.PriorityClass != "" {
		who = "Its priority class " + pp.PriorityClass
	}
	if v != nil {
		fmt.Fprintf(b, " %s is %d", who, *v)
		ev := fmt.Sprintf("priority %d", *v)
		if pp.PriorityClass != "" {
			ev += " (class " + pp.PriorityClass + ")"
		}
		pp.Evidence = append(pp.Evidence, ev)
	} else {
		fmt.Fprintf(b, " %s does not exist", who)
	}
	if s := pp.Scheduling; s != nil && s.Preemption != "" {
		fmt.Fprintf(b, "; preemption: %s", strings.TrimSuffix(s.Preemption, "."))
	}
	b.WriteString(".")
}

// quota says whether the namespace's GPU quota is full: the pod was
// admitted, but more pods of the namespace would be refused.
func (ix *index) quota(b *strings.Builder, pp *PendingPod) {
	for _, q := range ix.quotas[pp.Namespace] {
		for _, r := range q.Resources {
			if !r.GPU {
				continue
			}
			pp.Evidence = append(pp.Evidence, fmt.Sprintf("quota %s: %s %s of %s used", q.Name, r.Name, r.Used, r.Hard))
			if r.Full {
				fmt.Fprintf(b, " Quota %s of %s is full (%s of %s %s): more pods of the namespace are refused.", q.Name, pp.Namespace, r.Used, r.Hard, r.Name)
			}
		}
	}
}
