package cluster

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
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
// the events of namespace ns ("" for all), every namespace's quotas, the
// priority classes, and the queue objects (Kueue, Volcano, DRA) the API
// server serves.
func Read(ctx context.Context, c *Client, ns string, parts Part) (*Objects, error) {
	o := &Objects{PriorityClasses: map[string]*schedulingv1.PriorityClass{}}
	core := c.Kube.CoreV1()
	if err := listInto(ctx, "nodes", &o.Nodes, func(lo metav1.ListOptions) ([]corev1.Node, string, error) {
		l, err := core.Nodes().List(ctx, lo)
		return items(l, err, func(l *corev1.NodeList) ([]corev1.Node, string) { return l.Items, l.Continue })
	}); err != nil {
		return nil, err
	}
	if err := listInto(ctx, "pods", &o.Pods, func(lo metav1.ListOptions) ([]corev1.Pod, string, error) {
		lo.FieldSelector = "status.phase!=Succeeded,status.phase!=Failed"
		l, err := core.Pods(metav1.NamespaceAll).List(ctx, lo)
		return items(l, err, func(l *corev1.PodList) ([]corev1.Pod, string) { return l.Items, l.Continue })
	}); err != nil {
		return nil, err
	}
	if parts&Scheduling == 0 {
		return o, nil
	}
	for _, reason := range []string{"FailedScheduling", "FailedCreate"} {
		if err := listInto(ctx, reason+" events", &o.Events, func(lo metav1.ListOptions) ([]corev1.Event, string, error) {
			lo.FieldSelector = "reason=" + reason
			l, err := core.Events(ns).List(ctx, lo)
			return items(l, err, func(l *corev1.EventList) ([]corev1.Event, string) { return l.Items, l.Continue })
		}); err != nil {
			return nil, err
		}
	}
	if err := listInto(ctx, "resource quotas", &o.ResourceQuotas, func(lo metav1.ListOptions) ([]corev1.ResourceQuota, string, error) {
		l, err := core.ResourceQuotas(metav1.NamespaceAll).List(ctx, lo)
		return items(l, err, func(l *corev1.ResourceQuotaList) ([]corev1.ResourceQuota, string) { return l.Items, l.Continue })
	}); err != nil {
		return nil, err
	}
	var pcs []*schedulingv1.PriorityClass
	if err := listInto(ctx, "priority classes", &pcs, func(lo metav1.ListOptions) ([]schedulingv1.PriorityClass, string, error) {
		l, err := c.Kube.SchedulingV1().PriorityClasses().List(ctx, lo)
		return items(l, err, func(l *schedulingv1.PriorityClassList) ([]schedulingv1.PriorityClass, string) {
			return l.Items, l.Continue
		})
	}); err != nil {
		return nil, err
	}
	for _, pc := range pcs {
		o.PriorityClasses[pc.Name] = pc
	}
	q, err := readQueues(ctx, c)
	if err != nil {
		return nil, err
	}
	o.Queues = q
	return o, nil
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
	err := eachPage(ctx, func(lo metav1.ListOptions) (string, error) {
		page, cont, err := list(lo)
		if err != nil {
			return "", err
		}
		for i := range page {
			p := &page[i]
			Trim(p)
			*dst = append(*dst, p)
		}
		return cont, nil
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
// images' status), so that 100,000 pods fit in memory. It is the informers'
// transform too; it returns its argument.
func Trim(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
		var keep map[string]string
		if g, ok := m.GetAnnotations()[volcanoGroupAnnotation]; ok {
			keep = map[string]string{volcanoGroupAnnotation: g}
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
	// Dynamic reads the kinds gpulab has no types for (Kueue, Volcano);
	// nil reads none.
	Dynamic dynamic.Interface
	// Context and Namespace are the kubeconfig context's name and namespace.
	Context, Namespace string
}
