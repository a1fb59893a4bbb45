package cluster

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Refused is a controller's object (a Job, a ReplicaSet) whose pods the
// API server refuses to create: it has no pod to wait for a node, only
// FailedCreate events. The common case is a ResourceQuota.
type Refused struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"` // the controller's object: Job, ReplicaSet, …
	Name      string `json:"name"`
	// Message is the latest FailedCreate event's, Count how many times it
	// was recorded in all.
	Message string `json:"message"`
	Count   int32  `json:"count"`
	// Quota is the quota that refused it, when the message says so, with
	// what was asked, used and allowed of Resource.
	Quota                    string `json:"quota,omitempty"`
	Resource                 string `json:"resource,omitempty"`
	Requested, Used, Limited int64  `json:"-"`
	// Why says it in one paragraph.
	Why string `json:"why"`
}

// exceededQuota is the quota admission's refusal, as the API server writes
// it: "exceeded quota: NAME, requested: RES=N, used: RES=N, limited: RES=N".
var exceededQuota = regexp.MustCompile(`exceeded quota: ([^,]+), requested: ([^=,]+)=(\d+), used: [^=,]+=(\d+), limited: [^=,]+=(\d+)`)

// Refused lists the objects whose pods could not be created, by namespace
// and name, from their latest FailedCreate event each.
func (o *Objects) Refused() []Refused {
	type key struct{ ns, kind, name string }
	latest := map[key]*corev1.Event{}
	counts := map[key]int32{}
	for _, e := range o.Events {
		if e.Reason != "FailedCreate" {
			continue
		}
		k := key{e.InvolvedObject.Namespace, e.InvolvedObject.Kind, e.InvolvedObject.Name}
		counts[k] += max(e.Count, 1)
		if old := latest[k]; old == nil || eventTime(e).After(eventTime(old).Time) {
			latest[k] = e
		}
	}
	out := make([]Refused, 0, len(latest))
	for k, e := range latest {
		r := Refused{Namespace: k.ns, Kind: k.kind, Name: k.name, Count: counts[k],
			Message: strings.TrimPrefix(e.Message, "(combined from similar events): ")}
		if m := exceededQuota.FindStringSubmatch(r.Message); m != nil {
			r.Quota, r.Resource = m[1], m[2]
			fmt.Sscan(m[3], &r.Requested)
			fmt.Sscan(m[4], &r.Used)
			fmt.Sscan(m[5], &r.Limited)
		}
		r.Why = refusedWhy(r)
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Refused) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name), strings.Compare(a.Kind, b.Kind))
	})
	return out
}

func refusedWhy(r Refused) string {
	what := fmt.Sprintf("%s %s/%s has no pod to schedule: the API server refused to create it", r.Kind, r.Namespace, r.Name)
	if r.Count > 1 {
		what += fmt.Sprintf(" (%d attempts)", r.Count)
	}
	if r.Quota == "" {
		return what + ": " + strings.TrimSuffix(r.Message, ".") + "."
	}
	free := r.Limited - r.Used
	return fmt.Sprintf("%s: ResourceQuota %s/%s allows %d %s, %d are used, and a pod asks for %d (%d free). "+
		"No node is the problem: free %d in %s (end a pod there), lower the request, or raise the quota.",
		what, r.Namespace, r.Quota, r.Limited, r.Resource, r.Used, r.Requested, max(free, 0), r.Requested-max(free, 0), r.Namespace)
}
