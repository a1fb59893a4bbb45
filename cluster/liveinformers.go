package cluster

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// The view's informers are client-go's shared informers over list and
// watch functions of its own: each notes when its calls succeed (reach),
// which tells a view back from an outage that the informer follows the
// server again, even one whose kind did not change meanwhile.

type (
	listFunc  func(context.Context, metav1.ListOptions) (runtime.Object, error)
	watchFunc func(context.Context, metav1.ListOptions) (watch.Interface, error)
)

const clusterScope = "at the cluster scope"

// makeInformers makes the informers (nodes, non-terminated pods, quotas
// and priority classes through factory; one per event reason) and their
// listers, in LiveStatus.Denied's order.
func (l *Live) makeInformers(factory informers.SharedInformerFactory) {
	k := l.client.Kube
	l.nodes = l.shared(factory, &corev1.Node{}, &lister{kind: "nodes", scope: clusterScope, unknown: "GPU nodes unknown"}, nil,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return k.CoreV1().Nodes().List(ctx, o)
		},
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return k.CoreV1().Nodes().Watch(ctx, o)
		})
	pods := k.CoreV1().Pods(metav1.NamespaceAll)
	l.pods = l.shared(factory, &corev1.Pod{}, &lister{kind: "pods", scope: clusterScope, unknown: "allocation and pending unknown"},
		func(o *metav1.ListOptions) { o.FieldSelector = "status.phase!=Succeeded,status.phase!=Failed" },
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return pods.List(ctx, o) },
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return pods.Watch(ctx, o) })
	quotas := k.CoreV1().ResourceQuotas(metav1.NamespaceAll)
	l.quotas = l.shared(factory, &corev1.ResourceQuota{}, &lister{kind: "resourcequotas", scope: clusterScope, unknown: "quotas unknown"}, nil,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return quotas.List(ctx, o) },
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return quotas.Watch(ctx, o) })
	prios := k.SchedulingV1().PriorityClasses()
	l.prios = l.shared(factory, &schedulingv1.PriorityClass{}, &lister{kind: "priorityclasses", scope: clusterScope, unknown: "priorities unknown"}, nil,
		func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return prios.List(ctx, o) },
		func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return prios.Watch(ctx, o) })
	scope := clusterScope
	if l.opts.Namespace != "" {
		scope = "in namespace " + l.opts.Namespace
	}
	events := k.CoreV1().Events(l.opts.Namespace)
	for _, reason := range []string{"FailedScheduling", "FailedCreate"} {
		ls := &lister{kind: "events", scope: scope, unknown: "the scheduler's and controllers' events (" + reason + ") unknown"}
		inf := l.informer(&corev1.Event{}, ls, func(o *metav1.ListOptions) { o.FieldSelector = "reason=" + reason },
			func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return events.List(ctx, o) },
			func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) { return events.Watch(ctx, o) })
		_ = inf.SetTransform(Trim) // only fails once started
		l.events = append(l.events, eventInformer{reason, inf})
	}
}

// shared is the factory's informer of obj's type, made by informer.
func (l *Live) shared(factory informers.SharedInformerFactory, obj runtime.Object, ls *lister, tweak func(*metav1.ListOptions), list listFunc, watchf watchFunc) cache.SharedIndexInformer {
	return factory.InformerFor(obj, func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
		return l.informer(obj, ls, tweak, list, watchf)
	})
}

// informer is an informer of obj over list and watch (options changed by
// tweak), which reaches ls when a call succeeds; ls is the view's.
func (l *Live) informer(obj runtime.Object, ls *lister, tweak func(*metav1.ListOptions), list listFunc, watchf watchFunc) cache.SharedIndexInformer {
	if tweak == nil {
		tweak = func(*metav1.ListOptions) {}
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			tweak(&o)
			out, err := list(ctx, o)
			if err == nil {
				l.reach(ls)
			}
			return out, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			tweak(&o)
			w, err := watchf(ctx, o)
			if err == nil {
				l.reach(ls)
			}
			return w, err
		},
	}
	ls.informer = cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, l.client.Kube), obj, cache.SharedIndexInformerOptions{})
	l.listers = append(l.listers, ls)
	return ls.informer
}
