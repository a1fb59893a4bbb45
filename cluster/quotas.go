package cluster

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Quota is one ResourceQuota: for each resource it limits, the hard limit
// and what the namespace uses of it, GPU resources first.
type Quota struct {
	Namespace string          `json:"namespace"`
	Name      string          `json:"name"`
	Resources []QuotaResource `json:"resources"`
}

// QuotaResource is one limited resource of a quota.
type QuotaResource struct {
	Name string `json:"name"` // requests.nvidia.com/gpu, pods, limits.cpu ...
	Hard string `json:"hard"` // as the quota says it: "8", "64Gi"
	Used string `json:"used"`
	// GPU says the resource is a GPU one (requests.nvidia.com/gpu,
	// count of pods asking one...).
	GPU bool `json:"gpu"`
	// Full says nothing more can be admitted: used ≥ hard.
	Full bool `json:"full"`
}

// Quotas are the namespace's ResourceQuotas ("" for all), by namespace and
// name.
func (o *Objects) Quotas(ns string) []Quota {
	out := []Quota{}
	for _, q := range o.ResourceQuotas {
		if ns != "" && q.Namespace != ns {
			continue
		}
		out = append(out, quota(q))
	}
	slices.SortFunc(out, func(a, b Quota) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return out
}

func quota(q *corev1.ResourceQuota) Quota {
	out := Quota{Namespace: q.Namespace, Name: q.Name, Resources: []QuotaResource{}}
	hard := q.Status.Hard
	if len(hard) == 0 { // the quota controller has not counted it yet
		hard = q.Spec.Hard
	}
	for name, h := range hard {
		r := QuotaResource{Name: string(name), Hard: h.String(), Used: "0", GPU: quotaGPU(name)}
		if u, ok := q.Status.Used[name]; ok {
			r.Used = u.String()
			r.Full = u.Cmp(h) >= 0
		} else if len(q.Status.Hard) == 0 {
			r.Used = "" // not counted
		}
		out.Resources = append(out.Resources, r)
	}
	slices.SortFunc(out.Resources, func(a, b QuotaResource) int {
		if a.GPU != b.GPU {
			if a.GPU {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// quotaGPU says whether a quota's resource limits GPUs: requests.<gpu>,
// limits.<gpu>, count/... never.
func quotaGPU(name corev1.ResourceName) bool {
	n := string(name)
	for _, p := range []string{"requests.", "limits."} {
		if strings.HasPrefix(n, p) {
			return GPUResource(corev1.ResourceName(strings.TrimPrefix(n, p)))
		}
	}
	return GPUResource(name)
}

// Blocked is a workload with no pod to wait for a node: a quota refused
// its pods (its controller's FailedCreate event says "exceeded quota"), or
// Kueue has not admitted it (its Job stays suspended).
type Blocked struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"` // Job, ReplicaSet, StatefulSet ...
	Name      string `json:"name"`
	By        string `json:"by"` // "ResourceQuota NAME", "Kueue ClusterQueue NAME"
	// Evidence are the facts: the event, the workload's condition.
	Evidence []string `json:"evidence"`
	Count    int32    `json:"count,omitempty"` // how many times the quota refused it
	Why      string   `json:"why"`
}

// Blocked lists the workloads of namespace ns ("" for all) that have no
// pod because a quota refused them or Kueue holds them, by namespace,
// kind and name.
func (o *Objects) Blocked(ns string) []Blocked {
	out := o.quotaBlocked(ns)
	ix := o.index()
	pods := map[string]bool{} // UIDs of pods and of their owners
	for _, p := range o.Pods {
		pods[string(p.UID)] = true
		for _, r := range p.OwnerReferences {
			pods[string(r.UID)] = true
		}
	}
	for _, w := range o.Queues.Workloads {
		if w.Admitted || pods[w.OwnerUID] || (ns != "" && w.Namespace != ns) {
			continue
		}
		kind, name, _ := strings.Cut(w.Owner, "/")
		pp := PendingPod{Namespace: w.Namespace, Name: name}
		var b strings.Builder
		fmt.Fprintf(&b, "%s/%s (%s) has no pod yet:", w.Namespace, name, cmp.Or(kind, "Workload"))
		ix.kueue(&b, &pp, w)
		out = append(out, Blocked{Namespace: w.Namespace, Kind: cmp.Or(kind, "Workload"), Name: cmp.Or(name, w.Name),
			By: "Kueue ClusterQueue " + cmp.Or(ix.localQueues[w.Namespace+"/"+w.Queue], "(queue "+w.Queue+")"), Evidence: pp.Evidence, Why: b.String()})
	}
	slices.SortFunc(out, func(a, b Blocked) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Kind, b.Kind), strings.Compare(a.Name, b.Name))
	})
	return out
}

func (o *Objects) quotaBlocked(ns string) []Blocked {
	latest := map[string]*corev1.Event{}
	for _, e := range o.Events {
		if e.Reason != "FailedCreate" || (ns != "" && e.Namespace != ns) {
			continue
		}
		k := e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name
		if old, ok := latest[k]; !ok || eventTime(e).After(eventTime(old).Time) {
			latest[k] = e
		}
	}
	out := []Blocked{}
	for _, e := range latest {
		r := parseQuotaRefusal(e.Message)
		if r == nil || o.refusalOutdated(e) {
			continue
		}
		io := e.InvolvedObject
		b := Blocked{Namespace: io.Namespace, Kind: io.Kind, Name: io.Name, By: "ResourceQuota " + r.quota,
			Evidence: []string{"event FailedCreate: " + e.Message}, Count: max(e.Count, 1)}
		var s strings.Builder
		fmt.Fprintf(&s, "%s/%s (%s) cannot create its pods: quota %s refuses them", io.Namespace, io.Name, io.Kind, r.quota)
		if r.requested != "" {
			fmt.Fprintf(&s, " (asks %s, the namespace uses %s of %s)", r.requested, r.used, r.limited)
		}
		s.WriteString(". No pod exists, so the scheduler never sees it and no pod shows Pending.")
		fmt.Fprintf(&s, " It starts when pods of %s that hold the quota end, or when the quota is raised.", io.Namespace)
		b.Why = s.String()
		out = append(out, b)
	}
	return out
}

// refusalOutdated says a Job's quota refusal no longer holds: the Job is
// gone or going (or is another Job of the same name), or it has pods now. Only
// Jobs are checked (gpulab reads no other controllers), and only when
// they could be read.
func (o *Objects) refusalOutdated(e *corev1.Event) bool {
	io := e.InvolvedObject
	if io.Kind != "Job" || !o.JobsRead {
		return false
	}
	i := slices.IndexFunc(o.Jobs, func(j *batchv1.Job) bool { return j.Namespace == io.Namespace && j.Name == io.Name })
	if i < 0 || (io.UID != "" && o.Jobs[i].UID != io.UID) || o.Jobs[i].DeletionTimestamp != nil {
		return true
	}
	uid := o.Jobs[i].UID
	return slices.ContainsFunc(o.Pods, func(p *corev1.Pod) bool {
		return !terminated(p) && slices.ContainsFunc(p.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == uid })
	})
}

type quotaRefusal struct{ quota, requested, used, limited string }

// parseQuotaRefusal reads the API server's quota refusal, as the
// controllers repeat it in their FailedCreate events:
//
//	Error creating: pods "train-x" is forbidden: exceeded quota: gpu-quota,
//	requested: requests.nvidia.com/gpu=4, used: requests.nvidia.com/gpu=8,
//	limited: requests.nvidia.com/gpu=8
//
// nil when the message is not one.
func parseQuotaRefusal(msg string) *quotaRefusal {
	_, rest, ok := strings.Cut(msg, "exceeded quota: ")
	if !ok {
		return nil
	}
	r := &quotaRefusal{}
	name, rest, _ := strings.Cut(rest, ", requested: ")
	r.quota = strings.TrimSpace(name)
	req, rest, _ := strings.Cut(rest, ", used: ")
	used, lim, _ := strings.Cut(rest, ", limited: ")
	r.requested, r.used, r.limited = strings.TrimSpace(req), strings.TrimSpace(used), strings.TrimSpace(lim)
	return r
}
