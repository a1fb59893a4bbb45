package cluster

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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
	var pages listBound
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			tweak(&o)
			out, err := list(ctx, o)
			if err == nil {
				err = pages.page(o.Continue, out)
			}
			if err != nil {
				return nil, err
			}
			l.reach(ls)
			return out, nil
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			tweak(&o)
			w, err := watchf(ctx, o)
			if err != nil {
				return nil, err
			}
			l.reach(ls)
			// The reflector falls back to a list after a watch-list that
			// failed and only logs why: the view says it.
			initial := o.SendInitialEvents != nil && *o.SendInitialEvents
			return boundWatch(w, initial, func(err error) { l.watchError(ctx, ls, err) }), nil
		},
	}
	ls.informer = cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, l.client.Kube), obj, cache.SharedIndexInformerOptions{})
	l.listers = append(l.listers, ls)
	return ls.informer
}

// An informer's reads are held to the bounds of one read (nodes.go): the
// pages of one list together, and the initial events of a watch-list
// (client-go's WatchListClient: the informer's list as a watch stream)
// until the server's bookmark says they ended.

// liveListObjects is MaxListObjects for the informers (a test lowers it:
// 200,000 objects through the race detector on a busy machine outran the
// test's deadline).
var liveListObjects = MaxListObjects

// listBound counts the pages of an informer's list (the reflector's pager
// asks them one after another, the first with no continue token).
type listBound struct {
	mu             sync.Mutex
	objects, pages int
}

func (b *listBound) page(cont string, out runtime.Object) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if cont == "" {
		b.objects, b.pages = 0, 0
	}
	b.pages++
	b.objects += meta.LenList(out)
	if b.objects > liveListObjects {
		return errTooManyObjects(liveListObjects)
	}
	if b.pages > liveListObjects/pageSize+1000 {
		return errEndlessPages(b.pages)
	}
	return nil
}

// boundedWatch passes a watch's events on and tells its error events to
// tell. A watch-list's (initial) it ends with an error event naming the
// limit when more than MaxListObjects objects are added before the
// bookmark that ends the initial events.
type boundedWatch struct {
	w    watch.Interface
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
}

func boundWatch(w watch.Interface, initial bool, tell func(error)) watch.Interface {
	b := &boundedWatch{w: w, out: make(chan watch.Event), stop: make(chan struct{})}
	go b.run(initial, tell)
	return b
}

func (b *boundedWatch) run(initial bool, tell func(error)) {
	defer close(b.out)
	defer func() {
		b.w.Stop()
		for range b.w.ResultChan() { // the stream's decoder ends once stopped
		}
	}()
	added := 0
	for ev := range b.w.ResultChan() {
		switch {
		case ev.Type == watch.Error:
			tell(apierrors.FromObject(ev.Object))
		case !initial:
		case ev.Type == watch.Bookmark:
			if m, err := meta.Accessor(ev.Object); err == nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true" {
				initial = false
			}
		case ev.Type == watch.Added:
			if added++; added > liveListObjects {
				err := fmt.Errorf("the initial events of a watch-list: %w", errTooManyObjects(liveListObjects))
				tell(err)
				ev = watch.Event{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusRequestEntityTooLarge,
					Reason: metav1.StatusReasonRequestEntityTooLarge, Message: err.Error()}}
				select {
				case b.out <- ev:
				case <-b.stop:
				}
				return
			}
		}
		select {
		case b.out <- ev:
		case <-b.stop:
			return
		}
	}
}

func (b *boundedWatch) ResultChan() <-chan watch.Event { return b.out }

func (b *boundedWatch) Stop() {
	b.once.Do(func() {
		close(b.stop)
		b.w.Stop() // a run waiting for the next event ends now
	})
}
