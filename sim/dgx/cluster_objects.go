package dgx

import (
	"encoding/json"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/types"
)

// KubeObjects is the simulated cluster's state as its API server would
// serve it, in client-go's types: what kubectl get -o json prints on the
// simulated hosts, decoded. It is SIMULATED: no API server holds it.
type KubeObjects struct {
	Namespaces      []corev1.Namespace
	Nodes           []corev1.Node
	Pods            []corev1.Pod
	Jobs            []batchv1.Job
	Events          []corev1.Event
	Quotas          []corev1.ResourceQuota
	PriorityClasses []schedulingv1.PriorityClass
}

// KubeObjects renders the cluster's objects now: nodes with their
// nvidia.com/gpu (and, on the sick host, nvidia.com/mig-*) capacity and
// the GPU feature discovery labels, the pods bound and pending (a pending
// pod's PodScheduled condition carries the scheduler's latest message),
// the Jobs, the events the API keeps (the scheduler's FailedScheduling,
// the Job controller's FailedCreate "exceeded quota", each pointing at
// its object's UID), the quotas with their status, and the priority
// classes.
func (c *Cluster) KubeObjects() (*KubeObjects, error) {
	s := c.state()
	raw := map[string][]map[string]any{}
	for kind, items := range map[string][]kubeItem{
		"namespaces": s.namespaceItems(), "nodes": s.nodeItems(), "pods": s.podItems(), "jobs": s.jobItems(),
		"events": s.eventItems(), "quotas": s.quotaItems(), "priorityclasses": s.priorityItems(),
	} {
		for _, it := range items {
			raw[kind] = append(raw[kind], it.obj())
		}
	}
	c.mu.Unlock()
	o := &KubeObjects{}
	for _, d := range []error{
		decodeAll(raw["namespaces"], &o.Namespaces), decodeAll(raw["nodes"], &o.Nodes), decodeAll(raw["pods"], &o.Pods),
		decodeAll(raw["jobs"], &o.Jobs), decodeAll(raw["events"], &o.Events), decodeAll(raw["quotas"], &o.Quotas),
		decodeAll(raw["priorityclasses"], &o.PriorityClasses),
	} {
		if d != nil {
			return nil, fmt.Errorf("sim/dgx: render the cluster's objects: %w", d)
		}
	}
	o.link()
	return o, nil
}

// decodeAll decodes the API's JSON shapes into typed objects.
func decodeAll[T any](in []map[string]any, out *[]T) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// link points each event at its object's UID, as the API's events do,
// and gives each pending pod the scheduler's latest word in its
// PodScheduled condition.
func (o *KubeObjects) link() {
	uids := map[string]types.UID{}
	for _, p := range o.Pods {
		uids["Pod/"+p.Namespace+"/"+p.Name] = p.UID
	}
	for _, j := range o.Jobs {
		uids["Job/"+j.Namespace+"/"+j.Name] = j.UID
	}
	latest := map[types.UID]*corev1.Event{}
	for i := range o.Events {
		e := &o.Events[i]
		io := &e.InvolvedObject
		io.UID = uids[io.Kind+"/"+io.Namespace+"/"+io.Name]
		io.APIVersion = kindAPIVersion(io.Kind)
		e.ReportingController = e.Source.Component
		if e.Reason == "FailedScheduling" && io.UID != "" {
			if old := latest[io.UID]; old == nil || e.LastTimestamp.After(old.LastTimestamp.Time) {
				latest[io.UID] = e
			}
		}
	}
	for i := range o.Pods {
		p := &o.Pods[i]
		e := latest[p.UID]
		if e == nil || p.Spec.NodeName != "" {
			continue
		}
		for k := range p.Status.Conditions {
			if c := &p.Status.Conditions[k]; c.Type == corev1.PodScheduled {
				c.Message, c.LastTransitionTime = e.Message, e.FirstTimestamp
			}
		}
	}
}

// Changes receives a value after a kubectl command changed the cluster
// (run, create, delete): coalesced, one value may stand for several
// changes. Time changes it too (events repeat, pods finish), which no
// value announces: read KubeObjects again now and then.
func (c *Cluster) Changes() <-chan struct{} { return c.changes }

// changed tells Changes, without blocking.
func (c *Cluster) changed() {
	if c == nil {
		return
	}
	select {
	case c.changes <- struct{}{}:
	default:
	}
}
