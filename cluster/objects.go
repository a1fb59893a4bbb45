package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Objects is what gpulab reads of a cluster, trimmed to the fields it
// uses (Trim). Everything it reports (GPU nodes, pending pods and why,
// quotas, fragmentation, reconciliation) is computed from an Objects, so
// a one-shot read (Read, in pages) and a live view kept by informers give
// the same answers.
type Objects struct {
	Nodes []*corev1.Node
	// Pods are the non-terminated pods of every namespace: bound ones hold
	// what they requested, unbound ones wait.
	Pods []*corev1.Pod
	// Events are the scheduler's FailedScheduling events on pods and the
	// controllers' FailedCreate events (a quota refusing a Job's pod).
	Events         []*corev1.Event
	ResourceQuotas []*corev1.ResourceQuota
	// PriorityClasses by name.
	PriorityClasses map[string]*schedulingv1.PriorityClass
	// Queues are the batch schedulers' objects, read only when the API
	// server serves their kinds (discovered, never required).
	Queues Queues
	// Jobs are namespace ns's Jobs (trimmed to their metadata and status),
	// when JobsRead: a quota's refusal is reported only for a Job that
	// still exists.
	Jobs     []*batchv1.Job
	JobsRead bool
	// NodesForbidden says RBAC forbade listing nodes; PodsOnly names the
	// one namespace whose pods were read when the others' were forbidden
	// ("" when every namespace's were). Unreadable says what was left out
	// and what is unknown because of it. The zero values: all was read.
	NodesForbidden bool
	PodsOnly       string
	Unreadable     []string

	memo sync.Once // index, on the first analysis that needs it
	ix   *index
}

// Part names what Read reads beyond nodes and pods.
type Part uint

const (
	// Scheduling is the events, quotas, priority classes and queues that
	// explain why a pod waits.
	Scheduling Part = 1 << iota
)

// Read lists what gpulab needs of the cluster, every list in pages of
// pageSize: the nodes and the non-terminated pods; with Scheduling also
// the events and Jobs of namespace ns ("" for all), the quotas (of ns, or
// all), the priority classes, and the queue objects (Kueue, Volcano, DRA)
// the API server serves.
//
// Read-only access to a namespace is enough with Scheduling: what RBAC
// forbids is left out and said in Unreadable (nodes: whether GPUs are free
// is unknown; pods of other namespaces: only ns's are read), never a
// failure, unless ns's own pods cannot be read. Without Scheduling every
// list is required.
func Read(ctx context.Context, c *Client, ns string, parts Part) (*Objects, error) {
	o := &Objects{PriorityClasses: map[string]*schedulingv1.PriorityClass{}}
	tolerant := parts&Scheduling != 0
	if err := o.readNodesAndPods(ctx, c, ns, tolerant); err != nil {
		return nil, err
	}
	if !tolerant {
		return o, nil
	}
	if err := o.readScheduling(ctx, c, ns); err != nil {
		return nil, err
	}
	return o, nil
}

// forbidden keeps a list RBAC refuses as a note of what is unknown, and
// returns every other error.
func (o *Objects) forbidden(err error, what, unknown string) error {
	if err == nil || !apierrors.IsForbidden(errors.Unwrap(err)) && !apierrors.IsForbidden(err) {
		return err
	}
	o.Unreadable = append(o.Unreadable, fmt.Sprintf("%s: forbidden (RBAC)%s", what, unknown))
	return nil
}

func (o *Objects) readNodesAndPods(ctx context.Context, c *Client, ns string, tolerant bool) error {
	core := c.Kube.CoreV1()
	err := listInto(ctx, "nodes", &o.Nodes, func(lo metav1.ListOptions) ([]corev1.Node, string, error) {
		l, err := core.Nodes().List(ctx, lo)
		return items(l, err, func(l *corev1.NodeList) ([]corev1.Node, string) { return l.Items, l.Continue })
	})
	if tolerant && err != nil {
		o.NodesForbidden = true
		err = o.forbidden(err, "list nodes", ": whether the GPUs a pod asks are free is unknown")
	}
	if err != nil {
		return err
	}
	listPods := func(in string) error {
		return listInto(ctx, "pods", &o.Pods, func(lo metav1.ListOptions) ([]corev1.Pod, string, error) {
			lo.FieldSelector = "status.phase!=Succeeded,status.phase!=Failed"
			l, err := core.Pods(in).List(ctx, lo)
			return items(l, err, func(l *corev1.PodList) ([]corev1.Pod, string) { return l.Items, l.Continue })
		})
	}
	err = listPods(metav1.NamespaceAll)
	if tolerant && ns != "" && err != nil && apierrors.IsForbidden(errors.Unwrap(err)) {
		o.PodsOnly = ns
		o.Unreadable = append(o.Unreadable, "list pods at the cluster scope: forbidden (RBAC): only namespace "+ns+"'s are read, so what other namespaces hold on the nodes is unknown")
		err = listPods(ns)
	}
	return err
}

// readScheduling reads what explains a wait, each part optional under
// RBAC.
func (o *Objects) readScheduling(ctx context.Context, c *Client, ns string) error {
	core := c.Kube.CoreV1()
	for _, reason := range []string{"FailedScheduling", "FailedCreate"} {
		err := listInto(ctx, reason+" events", &o.Events, func(lo metav1.ListOptions) ([]corev1.Event, string, error) {
			lo.FieldSelector = "reason=" + reason
			l, err := core.Events(ns).List(ctx, lo)
			return items(l, err, func(l *corev1.EventList) ([]corev1.Event, string) { return l.Items, l.Continue })
		})
		if err := o.forbidden(err, "list "+reason+" events", ": the scheduler's and the controllers' words are missing"); err != nil {
			return err
		}
	}
	err := listInto(ctx, "jobs", &o.Jobs, func(lo metav1.ListOptions) ([]batchv1.Job, string, error) {
		l, err := c.Kube.BatchV1().Jobs(ns).List(ctx, lo)
		return items(l, err, func(l *batchv1.JobList) ([]batchv1.Job, string) { return l.Items, l.Continue })
	})
	o.JobsRead = err == nil
	if err := o.forbidden(err, "list jobs", ": a quota's refusal is reported without checking its Job still exists"); err != nil {
		return err
	}
	err = listInto(ctx, "resource quotas", &o.ResourceQuotas, func(lo metav1.ListOptions) ([]corev1.ResourceQuota, string, error) {
		l, err := core.ResourceQuotas(ns).List(ctx, lo)
		return items(l, err, func(l *corev1.ResourceQuotaList) ([]corev1.ResourceQuota, string) { return l.Items, l.Continue })
	})
	if err := o.forbidden(err, "list resource quotas", ""); err != nil {
		return err
	}
	var pcs []*schedulingv1.PriorityClass
	err = listInto(ctx, "priority classes", &pcs, func(lo metav1.ListOptions) ([]schedulingv1.PriorityClass, string, error) {
		l, err := c.Kube.SchedulingV1().PriorityClasses().List(ctx, lo)
		return items(l, err, func(l *schedulingv1.PriorityClassList) ([]schedulingv1.PriorityClass, string) {
			return l.Items, l.Continue
		})
	})
	if err := o.forbidden(err, "list priority classes", ": a pod's priority is its own spec.priority"); err != nil {
		return err
	}
	for _, pc := range pcs {
		o.PriorityClasses[pc.Name] = pc
	}
	q, unreadable, err := readQueues(ctx, c)
	o.Queues, o.Unreadable = q, append(o.Unreadable, unreadable...)
	return err
}

// items unpacks a typed list call's answer.
func items[L any, T any](l *L, err error, get func(*L) ([]T, string)) ([]T, string, error) {
	if err != nil {
		return nil, "", err
	}
	it, cont := get(l)
	return it, cont, nil
}

// listInto appends every page of a list, each item trimmed, to dst.
func listInto[T any](ctx context.Context, what string, dst *[]*T, list func(metav1.ListOptions) ([]T, string, error)) error {
	err := eachPage(ctx, func(lo metav1.ListOptions) (string, int, error) {
		page, cont, err := list(lo)
		if err != nil {
			return "", 0, err
		}
		for i := range page {
			p := &page[i]
			Trim(p)
			*dst = append(*dst, p)
		}
		return cont, len(page), nil
	})
	if err != nil {
		return fmt.Errorf("list %s: %w", what, err)
	}
	return nil
}

// volcanoGroupAnnotation names a pod's Volcano PodGroup.
const volcanoGroupAnnotation = "scheduling.k8s.io/group-name"

// Trim drops the fields gpulab never reads from an object it keeps
// (managed fields, annotations but Volcano's group, container commands, environment, volumes,
// images' status), so that 100,000 pods fit in memory. A node keeps
// gpulab's own annotations (gpulab.io/: a fence's) and its managed
// fields, which say who cordoned or tainted it: a node is small, and
// there are few. It is the informers' transform too; it returns its
// argument.
func Trim(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		_, node := obj.(*corev1.Node)
		if !node {
			m.SetManagedFields(nil)
		}
		var keep map[string]string
		for k, v := range m.GetAnnotations() {
			if k == volcanoGroupAnnotation || node && strings.HasPrefix(k, "gpulab.io/") {
				if keep == nil {
					keep = map[string]string{}
				}
				keep[k] = v
			}
		}
		m.SetAnnotations(keep)
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		trimContainers(o.Spec.Containers)
		trimContainers(o.Spec.InitContainers)
		o.Spec.EphemeralContainers = nil
		o.Spec.Volumes = nil
		o.Status.ContainerStatuses = nil
		o.Status.InitContainerStatuses = nil
		o.Status.EphemeralContainerStatuses = nil
	case *batchv1.Job:
		o.Spec.Template = corev1.PodTemplateSpec{}
	case *corev1.Node:
		o.Status.Images = nil
		o.Status.VolumesAttached = nil
		o.Status.VolumesInUse = nil
	}
	return obj, nil
}

func trimContainers(cs []corev1.Container) {
	for i := range cs {
		cs[i] = corev1.Container{Name: cs[i].Name, Resources: cs[i].Resources, RestartPolicy: cs[i].RestartPolicy} // a sidecar's requests count
	}
}

// Nodes reads every node that has a GPU resource and what the
// non-terminated pods bound to it request.
func Nodes(ctx context.Context, c *Client) ([]GPUNode, error) {
	o, err := Read(ctx, c, "", 0)
	if err != nil {
		return nil, err
	}
	return o.GPUNodes(), nil
}

// Pending lists the pods of namespace ns ("" for all) waiting for a node,
// each explained.
func Pending(ctx context.Context, c *Client, ns string) ([]PendingPod, error) {
	o, err := Read(ctx, c, ns, Scheduling)
	if err != nil {
		return nil, err
	}
	return o.Pending(ns), nil
}

// Client is a connection to one cluster's API server.
type Client struct {
	Kube kubernetes.Interface
	// Config is the rest.Config the client was made from, with its rate
	// limits: what an exec stream (orchestrator.KubeTransport) is opened
	// with.
	Config *rest.Config
	// Dynamic reads the kinds gpulab has no types for (Kueue, Volcano);
	// nil reads none.
	Dynamic dynamic.Interface
	// Context and Namespace are the kubeconfig context's name and namespace.
	Context, Namespace string
}
