package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Queues are the objects of the batch schedulers and of dynamic resource
// allocation that decide whether a pod may be scheduled before the
// scheduler sees it: Kueue's ClusterQueues and Workloads, Volcano's
// PodGroups, and DRA's ResourceClaims and ResourceSlices. Each is read
// only when the API server serves its kind; Served says which were.
type Queues struct {
	Served         []string        `json:"served"` // "kueue.x-k8s.io/v1beta1 clusterqueues"
	ClusterQueues  []ClusterQueue  `json:"cluster_queues,omitempty"`
	LocalQueues    []LocalQueue    `json:"local_queues,omitempty"`
	Workloads      []Workload      `json:"workloads,omitempty"`
	PodGroups      []PodGroup      `json:"pod_groups,omitempty"`
	ResourceClaims []ResourceClaim `json:"resource_claims,omitempty"`
	ResourceSlices []ResourceSlice `json:"resource_slices,omitempty"`
}

// ClusterQueue is Kueue's: the nominal quota of each resource (summed
// over its flavors) and what admitted workloads use of it.
type ClusterQueue struct {
	Name      string           `json:"name"`
	Cohort    string           `json:"cohort,omitempty"`
	Nominal   map[string]int64 `json:"nominal"`
	Used      map[string]int64 `json:"used"`
	Pending   int64            `json:"pending_workloads"`
	Admitted  int64            `json:"admitted_workloads"`
	StopAfter string           `json:"stop_policy,omitempty"`
}

// LocalQueue is Kueue's namespaced queue, pointing at a ClusterQueue.
type LocalQueue struct {
	Namespace    string `json:"namespace"`
	Name         string `json:"name"`
	ClusterQueue string `json:"cluster_queue"`
}

// Workload is Kueue's unit of admission: a Job's or a pod's (Owner).
type Workload struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Queue     string `json:"queue"`
	Owner     string `json:"owner,omitempty"` // Kind/name
	OwnerUID  string `json:"owner_uid,omitempty"`
	Admitted  bool   `json:"admitted"`
	// Message is why it is not admitted yet (its QuotaReserved condition).
	Message string `json:"message,omitempty"`
}

// PodGroup is Volcano's gang: its pods are scheduled together or not at
// all.
type PodGroup struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Queue     string `json:"queue,omitempty"`
	MinMember int64  `json:"min_member"`
	Phase     string `json:"phase"`
	Message   string `json:"message,omitempty"`
}

// ResourceClaim is a DRA claim: what devices it asks for and whether it
// is allocated.
type ResourceClaim struct {
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	Requests  []string `json:"requests"` // "2 of gpu.nvidia.com"
	Allocated bool     `json:"allocated"`
	Node      string   `json:"node,omitempty"`
}

// ResourceSlice is a DRA driver's devices on one node.
type ResourceSlice struct {
	Node    string `json:"node,omitempty"`
	Driver  string `json:"driver"`
	Pool    string `json:"pool"`
	Devices int    `json:"devices"`
}

// The kinds read when served.
var (
	kueueGroup    = "kueue.x-k8s.io"
	volcanoGroup  = "scheduling.volcano.sh"
	draGroup      = "resource.k8s.io"
	queueVersions = map[string][]string{
		kueueGroup:   {"v1beta2", "v1beta1"},
		volcanoGroup: {"v1beta1"},
		draGroup:     {"v1"},
	}
)

// readQueues reads the queue kinds the API server serves. A group that is
// not served is not an error, nor a kind RBAC forbids (it is said in the
// notes returned): these are discovered, never required.
func readQueues(ctx context.Context, c *Client) (Queues, []string, error) {
	q := Queues{Served: []string{}}
	var unreadable []string
	served, err := servedResources(c)
	if apierrors.IsForbidden(err) || apierrors.IsForbidden(errors.Unwrap(err)) {
		return q, []string{"discovery: forbidden (RBAC): Kueue, Volcano and DRA objects are not read"}, nil
	}
	if err != nil {
		return q, nil, err
	}
	for _, r := range []struct {
		group, resource string
		read            func(context.Context, *Client, schema.GroupVersionResource, *Queues) error
	}{
		{kueueGroup, "clusterqueues", readClusterQueues},
		{kueueGroup, "localqueues", readLocalQueues},
		{kueueGroup, "workloads", readWorkloads},
		{volcanoGroup, "podgroups", readPodGroups},
		{draGroup, "resourceclaims", readClaims},
		{draGroup, "resourceslices", readSlices},
	} {
		gvr, ok := served[r.group+"/"+r.resource]
		if !ok || (c.Dynamic == nil && r.group != draGroup) {
			continue
		}
		q.Served = append(q.Served, gvr.GroupVersion().String()+" "+gvr.Resource)
		if err := r.read(ctx, c, gvr, &q); err != nil {
			if apierrors.IsForbidden(err) {
				unreadable = append(unreadable, fmt.Sprintf("list %s.%s: forbidden (RBAC): served but not read", r.resource, r.group))
				continue
			}
			return q, unreadable, fmt.Errorf("list %s.%s: %w", r.resource, r.group, err)
		}
	}
	return q, unreadable, nil
}

// servedResources asks discovery which of the queue kinds are served, in
// the first version gpulab reads that the server serves.
func servedResources(c *Client) (map[string]schema.GroupVersionResource, error) {
	groups, err := c.Kube.Discovery().ServerGroups()
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	out := map[string]schema.GroupVersionResource{}
	for _, g := range groups.Groups {
		want, ok := queueVersions[g.Name]
		if !ok {
			continue
		}
		for _, v := range want {
			if !slices.ContainsFunc(g.Versions, func(gv metav1.GroupVersionForDiscovery) bool { return gv.Version == v }) {
				continue
			}
			rl, err := c.Kube.Discovery().ServerResourcesForGroupVersion(g.Name + "/" + v)
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("discovery of %s/%s: %w", g.Name, v, err)
			}
			for _, r := range rl.APIResources {
				key := g.Name + "/" + r.Name
				if _, seen := out[key]; !seen && !strings.Contains(r.Name, "/") {
					out[key] = schema.GroupVersionResource{Group: g.Name, Version: v, Resource: r.Name}
				}
			}
		}
	}
	return out, nil
}

// eachObject lists a dynamic kind in pages.
func eachObject(ctx context.Context, c *Client, gvr schema.GroupVersionResource, f func(*unstructured.Unstructured)) error {
	return eachPage(ctx, func(lo metav1.ListOptions) (string, int, error) {
		l, err := c.Dynamic.Resource(gvr).List(ctx, lo)
		if err != nil {
			return "", 0, err
		}
		for i := range l.Items {
			f(&l.Items[i])
		}
		return l.GetContinue(), len(l.Items), nil
	})
}

func str(o map[string]any, path ...string) string {
	s, _, _ := unstructured.NestedString(o, path...)
	return s
}

func num(o map[string]any, path ...string) int64 {
	if n, ok, _ := unstructured.NestedInt64(o, path...); ok {
		return n
	}
	if s, ok, _ := unstructured.NestedString(o, path...); ok {
		return quantity(s)
	}
	if f, ok, _ := unstructured.NestedFloat64(o, path...); ok {
		return int64(f)
	}
	return 0
}

func slice(o map[string]any, path ...string) []map[string]any {
	l, _, _ := unstructured.NestedSlice(o, path...)
	out := make([]map[string]any, 0, len(l))
	for _, e := range l {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func readClusterQueues(ctx context.Context, c *Client, gvr schema.GroupVersionResource, q *Queues) error {
	return eachObject(ctx, c, gvr, func(u *unstructured.Unstructured) {
		o := u.Object
		cq := ClusterQueue{Name: u.GetName(), Cohort: str(o, "spec", "cohort"), Nominal: map[string]int64{}, Used: map[string]int64{},
			Pending: num(o, "status", "pendingWorkloads"), Admitted: num(o, "status", "admittedWorkloads"), StopAfter: str(o, "spec", "stopPolicy")}
		if cq.Cohort == "" {
			cq.Cohort = str(o, "spec", "cohortName") // v1beta2
		}
		for _, rg := range slice(o, "spec", "resourceGroups") {
			for _, fl := range slice(rg, "flavors") {
				for _, r := range slice(fl, "resources") {
					cq.Nominal[str(r, "name")] += num(r, "nominalQuota")
				}
			}
		}
		for _, fl := range slice(o, "status", "flavorsUsage") {
			for _, r := range slice(fl, "resources") {
				cq.Used[str(r, "name")] += num(r, "total")
			}
		}
		q.ClusterQueues = append(q.ClusterQueues, cq)
	})
}

func readLocalQueues(ctx context.Context, c *Client, gvr schema.GroupVersionResource, q *Queues) error {
	return eachObject(ctx, c, gvr, func(u *unstructured.Unstructured) {
		q.LocalQueues = append(q.LocalQueues, LocalQueue{Namespace: u.GetNamespace(), Name: u.GetName(), ClusterQueue: str(u.Object, "spec", "clusterQueue")})
	})
}

func readWorkloads(ctx context.Context, c *Client, gvr schema.GroupVersionResource, q *Queues) error {
	return eachObject(ctx, c, gvr, func(u *unstructured.Unstructured) {
		w := Workload{Namespace: u.GetNamespace(), Name: u.GetName(), Queue: str(u.Object, "spec", "queueName")}
		if refs := u.GetOwnerReferences(); len(refs) > 0 {
			w.Owner, w.OwnerUID = refs[0].Kind+"/"+refs[0].Name, string(refs[0].UID)
		}
		for _, cond := range slice(u.Object, "status", "conditions") {
			switch str(cond, "type") {
			case "Admitted":
				w.Admitted = str(cond, "status") == "True"
			case "QuotaReserved":
				if str(cond, "status") != "True" {
					w.Message = str(cond, "message")
				}
			}
		}
		q.Workloads = append(q.Workloads, w)
	})
}

func readPodGroups(ctx context.Context, c *Client, gvr schema.GroupVersionResource, q *Queues) error {
	return eachObject(ctx, c, gvr, func(u *unstructured.Unstructured) {
		pg := PodGroup{Namespace: u.GetNamespace(), Name: u.GetName(), Queue: str(u.Object, "spec", "queue"),
			MinMember: num(u.Object, "spec", "minMember"), Phase: str(u.Object, "status", "phase")}
		for _, cond := range slice(u.Object, "status", "conditions") {
			if str(cond, "type") == "Unschedulable" && str(cond, "status") == "True" {
				pg.Message = str(cond, "message")
			}
		}
		q.PodGroups = append(q.PodGroups, pg)
	})
}

func readClaims(ctx context.Context, c *Client, _ schema.GroupVersionResource, q *Queues) error {
	return eachPage(ctx, func(lo metav1.ListOptions) (string, int, error) {
		l, err := c.Kube.ResourceV1().ResourceClaims(metav1.NamespaceAll).List(ctx, lo)
		if err != nil {
			return "", 0, err
		}
		for i := range l.Items {
			q.ResourceClaims = append(q.ResourceClaims, claim(&l.Items[i]))
		}
		return l.Continue, len(l.Items), nil
	})
}

func claim(rc *resourcev1.ResourceClaim) ResourceClaim {
	out := ResourceClaim{Namespace: rc.Namespace, Name: rc.Name, Requests: []string{}}
	for _, r := range rc.Spec.Devices.Requests {
		switch {
		case r.Exactly != nil:
			n := r.Exactly.Count
			if r.Exactly.AllocationMode == resourcev1.DeviceAllocationModeAll {
				out.Requests = append(out.Requests, "all of "+r.Exactly.DeviceClassName)
				continue
			}
			out.Requests = append(out.Requests, fmt.Sprintf("%d of %s", max(n, 1), r.Exactly.DeviceClassName))
		case len(r.FirstAvailable) > 0:
			out.Requests = append(out.Requests, "first available of "+r.FirstAvailable[0].DeviceClassName)
		}
	}
	if a := rc.Status.Allocation; a != nil {
		out.Allocated = true
		if ns := a.NodeSelector; ns != nil {
			for _, t := range ns.NodeSelectorTerms {
				for _, f := range t.MatchFields {
					if f.Key == "metadata.name" && len(f.Values) == 1 {
						out.Node = f.Values[0]
					}
				}
			}
		}
	}
	return out
}

func readSlices(ctx context.Context, c *Client, _ schema.GroupVersionResource, q *Queues) error {
	return eachPage(ctx, func(lo metav1.ListOptions) (string, int, error) {
		l, err := c.Kube.ResourceV1().ResourceSlices().List(ctx, lo)
		if err != nil {
			return "", 0, err
		}
		for _, s := range l.Items {
			node := ""
			if s.Spec.NodeName != nil {
				node = *s.Spec.NodeName
			}
			q.ResourceSlices = append(q.ResourceSlices, ResourceSlice{Node: node, Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name, Devices: len(s.Spec.Devices)})
		}
		return l.Continue, len(l.Items), nil
	})
}

// quantity reads a Kubernetes quantity ("8", "40Gi") as a whole number, 0
// when it is not one.
func quantity(s string) int64 {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0
	}
	return q.Value()
}
