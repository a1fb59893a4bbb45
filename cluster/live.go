package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// LiveState is where a Live view's connection to its API server stands.
type LiveState int

const (
	// Waiting: the informers have not listed everything yet.
	Waiting LiveState = iota
	// Synced: the caches hold the cluster and follow its watch events.
	Synced
	// Lost: the API server stopped answering; the caches hold what it
	// said last, and the informers retry on their own.
	Lost
	// Refused: the API server answers but refuses the credentials (401
	// Unauthorized, or 403 for every request): a token that expired or
	// was revoked, a client certificate it does not trust.
	Refused
	// Reconnecting: the API server answers again after it was Lost or
	// Refused, and some informers have delivered nothing since (their
	// reflectors retry with a backoff of up to 30 s): the caches may
	// still hold what changed meanwhile.
	Reconnecting
)

func (s LiveState) String() string {
	switch s {
	case Synced:
		return "synced"
	case Lost:
		return "lost"
	case Refused:
		return "refused"
	case Reconnecting:
		return "reconnecting"
	}
	return "waiting"
}

// LiveStatus is a Live view's connection at one moment.
type LiveStatus struct {
	State LiveState
	// Server is the API server's host:port ("" when the client has no
	// REST configuration, as a fake clientset).
	Server string
	// Since is when the state began: for Lost, the first failed list or
	// watch.
	Since time.Time
	// Err is the latest error while Lost; while Refused, the refusal
	// ("Unauthorized").
	Err string
	// Denied are the kinds the server refuses to list ("nodes", "pods",
	// "resourcequotas", "priorityclasses", "events"), in that order: the
	// view's lists of them are empty because they are unknown, not
	// because there are none.
	Denied []string
	// Listing are the kinds not listed yet (nor denied), in Denied's
	// order: their lists are empty because they are not known yet.
	Listing []string
	// Warning says what is denied and what it leaves unknown ("cannot
	// list pods at the cluster scope (RBAC): allocation and pending
	// unknown"), then the latest other list or watch error that is not
	// the server being gone (a kind it does not serve); "" when none.
	Warning string
}

// Denies reports whether the server refuses to list kind (Denied).
func (s LiveStatus) Denies(kind string) bool { return slices.Contains(s.Denied, kind) }

// Knows reports whether the view's list of kind is the server's: listed,
// neither denied nor still listing.
func (s LiveStatus) Knows(kind string) bool {
	return !s.Denies(kind) && !slices.Contains(s.Listing, kind)
}

// String says it in a line: "API server 127.0.0.1:6443 unreachable since
// 19:22:05 (dial tcp …: connection refused)".
func (s LiveStatus) String() string {
	server := "the API server"
	if s.Server != "" {
		server = "API server " + s.Server
	}
	switch s.State {
	case Synced:
		return server + ": synced"
	case Lost:
		return fmt.Sprintf("%s unreachable since %s (%s); showing what it said last, retrying", server, s.Since.Format("15:04:05"), s.Err)
	case Refused:
		return fmt.Sprintf("%s refused: %s (the credentials) since %s; showing what it said last, retrying", server, s.Err, s.Since.Format("15:04:05"))
	case Reconnecting:
		return server + ": reconnecting (back since " + s.Since.Format("15:04:05") + "; the watches have not all delivered yet: showing what it said before)"
	}
	return server + ": listing…"
}

// LiveOptions tune a Live view; the zero value is the default.
type LiveOptions struct {
	// Namespace limits the scheduling events to one namespace ("" for
	// all); nodes, pods and quotas are always every namespace's.
	Namespace string
	// Interval is the shortest time between two notifications on
	// Changes (default 250ms): a burst of watch events is one change.
	Interval time.Duration
	// Check is how often the API server is asked whether it answers
	// (default 2s): a reflector retries a refused watch quietly, so its
	// errors alone would not say the server is gone.
	Check time.Duration
	// Queues is how often the batch schedulers' and DRA's objects
	// (Queues: Kueue, Volcano, ResourceClaims and slices) are read again
	// (default 30s). They have no informers: their kinds are discovered
	// at run time and they are few, so they are listed whole, in pages.
	Queues time.Duration
	// Now reads the clock for LiveStatus.Since (nil: time.Now).
	Now func() time.Time
	// OnStatus, when set, is called with every new status, in order (a
	// log of the connection); it must not block.
	OnStatus func(LiveStatus)
}

// Live is a cluster's Objects kept current by shared informers (nodes,
// non-terminated pods, FailedScheduling and FailedCreate events, resource
// quotas, priority classes), each object trimmed as it arrives (Trim). Its
// lists are streamed or paged by the informers, never one call for the
// whole cluster, and nothing blocks its reader: Snapshot reads the
// caches. A lost API server is a state (Status), not an error: the
// caches keep what it said last and the informers reconnect by
// themselves. Start it with StartLive; it stops when the context ends.
type Live struct {
	client *Client
	opts   LiveOptions

	nodes, pods, quotas, prios cache.SharedIndexInformer
	events                     []eventInformer
	listers                    []*lister // all of them, in Denied's order

	dirty   chan struct{} // a watch event or a state change, not yet told
	changes chan struct{} // told, at most once per Interval; closed at the end
	done    chan struct{} // closed once every goroutine has ended

	mu     sync.Mutex
	status LiveStatus
	queues Queues // read every Queues
	// denied are the informers whose list the server forbids, and other
	// the latest other warning: status.Denied and Warning are made of them.
	denied map[*lister]string
	other  string
	// outage is each informer's last resource version when the server
	// was lost or refused (nil when it is not): it has delivered again
	// once that changed or a list or watch call succeeded (reached).
	outage map[*lister]string
}

// lister is one of the view's informers, with the kind it lists and what
// its being denied leaves unknown.
type lister struct {
	kind, scope, unknown string
	informer             cache.SharedIndexInformer
	// reached: a list or watch call of the informer has succeeded since
	// the last outage began (under Live.mu).
	reached bool
}

// eventInformer is the informer of one reason's events (each has its
// own field selector, so one shared informer cannot serve both).
type eventInformer struct {
	reason   string
	informer cache.SharedIndexInformer
}

// StartLive starts the informers on c and returns at once; the view
// fills as they list (Status says Waiting, then Synced). Everything stops
// when ctx ends: Changes is closed then, and Done once every goroutine
// has returned.
func StartLive(ctx context.Context, c *Client, opts LiveOptions) *Live {
	if opts.Interval <= 0 {
		opts.Interval = 250 * time.Millisecond
	}
	if opts.Check <= 0 {
		opts.Check = 2 * time.Second
	}
	if opts.Queues <= 0 {
		opts.Queues = 30 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	l := &Live{client: c, opts: opts, dirty: make(chan struct{}, 1), changes: make(chan struct{}, 1), done: make(chan struct{}), denied: map[*lister]string{}}
	l.status = LiveStatus{State: Waiting, Server: serverOf(c.Kube), Since: opts.Now()}
	factory := informers.NewSharedInformerFactoryWithOptions(c.Kube, 0, informers.WithTransform(Trim))
	l.makeInformers(factory)
	for _, ls := range l.listers {
		inf := ls.informer
		_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, _ *cache.Reflector, err error) { l.watchError(ctx, ls, err) }) // only fails once started
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { l.poke() },
			UpdateFunc: func(any, any) { l.poke() },
			DeleteFunc: func(any) { l.poke() },
		})
	}
	var wg sync.WaitGroup
	factory.Start(ctx.Done())
	for _, e := range l.events {
		wg.Go(func() { e.informer.RunWithContext(ctx) })
	}
	wg.Go(func() { l.waitSynced(ctx) })
	wg.Go(func() { l.notify(ctx) })
	wg.Go(func() { l.check(ctx) })
	wg.Go(func() { l.readQueues(ctx) })
	go func() {
		wg.Wait()
		factory.Shutdown() // waits for the factory's informers
		close(l.done)
	}()
	return l
}

// serverOf is the API server's host:port, when the client talks REST.
func serverOf(k kubernetes.Interface) string {
	if k == nil {
		return ""
	}
	rc, ok := k.CoreV1().RESTClient().(*rest.RESTClient)
	if !ok || rc == nil {
		return ""
	}
	return rc.Get().URL().Host
}

// ping asks the API server for its version.
func ping(ctx context.Context, k kubernetes.Interface) error {
	if rc, ok := k.Discovery().RESTClient().(*rest.RESTClient); ok && rc != nil {
		return rc.Get().AbsPath("/version").Do(ctx).Error()
	}
	_, err := k.Discovery().ServerVersion() // a fake: no REST to bound
	return err
}

// Changes receives a value when the cluster or the connection changed
// since the last one (coalesced: at most one per Interval, however many
// watch events came). It is closed when the view stops.
func (l *Live) Changes() <-chan struct{} { return l.changes }

// Done is closed once the view has stopped: its informers and goroutines
// have all returned.
func (l *Live) Done() <-chan struct{} { return l.done }

// Client is the client the view reads with.
func (l *Live) Client() *Client { return l.client }

// Status is the connection's state now.
func (l *Live) Status() LiveStatus {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.status
	st.Listing = nil
	for _, ls := range l.listers {
		if _, denied := l.denied[ls]; !denied && !ls.informer.HasSynced() && !slices.Contains(st.Listing, ls.kind) {
			st.Listing = append(st.Listing, ls.kind)
		}
	}
	return st
}

// Snapshot is the cluster as the caches hold it now, cheap enough to
// call on every change (the objects are the caches', shared: read them,
// never change them). Queues are as last read (LiveOptions.Queues).
func (l *Live) Snapshot() *Objects {
	o := &Objects{PriorityClasses: map[string]*schedulingv1.PriorityClass{}}
	l.mu.Lock()
	o.Queues = l.queues
	l.mu.Unlock()
	o.Nodes = listOf[corev1.Node](l.nodes)
	o.Pods = listOf[corev1.Pod](l.pods)
	o.ResourceQuotas = listOf[corev1.ResourceQuota](l.quotas)
	for _, pc := range listOf[schedulingv1.PriorityClass](l.prios) {
		o.PriorityClasses[pc.Name] = pc
	}
	for _, e := range l.events {
		// A server that ignores the field selector (a fake clientset)
		// sends every event to both informers: keep each reason's own.
		for _, ev := range listOf[corev1.Event](e.informer) {
			if ev.Reason == e.reason {
				o.Events = append(o.Events, ev)
			}
		}
	}
	return o
}

func listOf[T any](inf cache.SharedIndexInformer) []*T {
	items := inf.GetStore().List()
	out := make([]*T, 0, len(items))
	for _, it := range items {
		if t, ok := it.(*T); ok {
			out = append(out, t)
		}
	}
	return out
}

// poke marks the view changed; notify tells it.
func (l *Live) poke() {
	select {
	case l.dirty <- struct{}{}:
	default:
	}
}

// notify forwards pokes to Changes, at most one per Interval, and closes
// Changes when ctx ends.
func (l *Live) notify(ctx context.Context) {
	defer close(l.changes)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.dirty:
		}
		select {
		case l.changes <- struct{}{}:
		default: // the reader has one it has not taken: it will read this change too
		}
		t.Reset(l.opts.Interval)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// synced reports whether every informer has listed once or is denied;
// called under the lock.
func (l *Live) synced() bool {
	for _, ls := range l.listers {
		if _, denied := l.denied[ls]; !denied && !ls.informer.HasSynced() {
			return false
		}
	}
	return true
}

// waitSynced turns Waiting into Synced once every informer has listed or
// been forbidden to.
func (l *Live) waitSynced(ctx context.Context) {
	syncs := make([]cache.InformerSynced, 0, len(l.listers))
	for _, ls := range l.listers {
		// A kind the server forbids will not list: what it leaves
		// unknown is said (Warning), and the rest is synced.
		syncs = append(syncs, func() bool { return ls.informer.HasSynced() || l.isDenied(ls) })
	}
	if !cache.WaitForCacheSync(ctx.Done(), syncs...) {
		return
	}
	l.setState(func(s *LiveStatus) bool {
		if s.State != Waiting {
			return false // lost meanwhile: the retry loop will say when it is back
		}
		s.State, s.Since = Synced, l.opts.Now()
		return true
	})
}

// watchError is every informer's watch error handler (ls's). A network
// error makes the view Lost at once (check says when the server is
// back), refused credentials Refused; a list the server forbids marks
// its kind Denied; any other error but a watch's normal end is kept as
// a Warning.
func (l *Live) watchError(ctx context.Context, ls *lister, err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || apierrors.IsResourceExpired(err) || apierrors.IsGone(err) || ctx.Err() != nil {
		return // a watch that ended as watches do: the reflector lists again
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne) || utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err):
		l.lost(err)
	case apierrors.IsUnauthorized(err):
		l.refused(err)
	case apierrors.IsForbidden(err):
		l.deny(ls, "cannot list "+ls.kind+" "+ls.scope+" (RBAC): "+ls.unknown)
	default:
		l.mu.Lock()
		l.other = err.Error()
		l.mu.Unlock()
		l.setState(l.warnings)
	}
}

// deny marks ls's kind Denied with why.
func (l *Live) deny(ls *lister, why string) {
	l.mu.Lock()
	l.denied[ls] = why
	l.mu.Unlock()
	l.setState(l.warnings)
}

func (l *Live) isDenied(ls *lister) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.denied[ls]
	return ok
}

// allowed forgets the denials of the informers that have listed since
// (RBAC granted meanwhile).
func (l *Live) allowed() {
	l.mu.Lock()
	n := len(l.denied)
	for ls := range l.denied {
		if ls.informer.HasSynced() {
			delete(l.denied, ls)
		}
	}
	changed := len(l.denied) != n
	l.mu.Unlock()
	if changed {
		l.setState(l.warnings)
	}
}

// warnings makes the status's Denied and Warning of the denials and the
// other warning; called under the lock.
func (l *Live) warnings(s *LiveStatus) bool {
	s.Denied = nil
	var parts []string
	for _, ls := range l.listers {
		if why, ok := l.denied[ls]; ok {
			if !slices.Contains(s.Denied, ls.kind) {
				s.Denied = append(s.Denied, ls.kind)
			}
			parts = append(parts, why)
		}
	}
	if l.other != "" {
		parts = append(parts, l.other)
	}
	s.Warning = strings.Join(parts, "; ")
	return true
}

// refused marks the view Refused because of err (since the first).
func (l *Live) refused(err error) {
	l.setState(func(s *LiveStatus) bool {
		s.Err = string(apierrors.ReasonForError(err))
		if s.Err == "" {
			s.Err = err.Error()
		}
		if s.State != Refused {
			l.outageBegins()
			s.State, s.Since = Refused, l.opts.Now()
		}
		return true
	})
}

// lost marks the view Lost because of err (since the first error).
func (l *Live) lost(err error) {
	l.setState(func(s *LiveStatus) bool {
		s.Err = err.Error()
		if s.State != Lost {
			l.outageBegins()
			s.State, s.Since = Lost, l.opts.Now()
		}
		return true
	})
}

// outageBegins notes each informer's resource version, once per outage;
// called under the lock.
func (l *Live) outageBegins() {
	if l.outage != nil {
		return
	}
	l.outage = map[*lister]string{}
	for _, ls := range l.listers {
		l.outage[ls], ls.reached = ls.informer.LastSyncResourceVersion(), false
	}
}

// back is the server answering again: a view Lost or Refused is
// Reconnecting until every informer has delivered since (Waiting if the
// caches never listed).
func (l *Live) back() {
	l.setState(func(s *LiveStatus) bool {
		if s.State != Lost && s.State != Refused {
			return false
		}
		l.other = ""
		l.warnings(s)
		s.State, s.Since, s.Err = Reconnecting, l.opts.Now(), ""
		if !l.synced() {
			s.State, l.outage = Waiting, nil // back, and still listing for the first time
		}
		return true
	})
	l.reconnected()
}

// reconnected makes a Reconnecting view Synced once every informer has
// delivered again.
func (l *Live) reconnected() {
	l.setState(func(s *LiveStatus) bool {
		if s.State != Reconnecting || !l.delivered() {
			return false
		}
		s.State, s.Since, l.outage = Synced, l.opts.Now(), nil
		return true
	})
}

// reach notes that a list or watch call of ls's informer succeeded.
func (l *Live) reach(ls *lister) {
	l.mu.Lock()
	was := ls.reached
	ls.reached = true
	l.mu.Unlock()
	if !was {
		l.reconnected()
	}
}

// delivered reports whether every informer the server lets list has
// listed or had a watch event (or bookmark) since the outage began;
// called under the lock.
func (l *Live) delivered() bool {
	for _, ls := range l.listers {
		if _, denied := l.denied[ls]; denied {
			continue
		}
		if rv := ls.informer.LastSyncResourceVersion(); !ls.reached && (rv == "" || rv == l.outage[ls]) {
			return false
		}
	}
	return true
}

// check asks the API server for its version every Check: no answer makes
// the view Lost, refused credentials Refused; an answer after that makes
// it Reconnecting, then Synced once every informer has delivered again
// (back), the reflectors listing or watching again by themselves.
func (l *Live) check(ctx context.Context) {
	t := time.NewTicker(l.opts.Check)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, max(l.opts.Check, 5*time.Second))
		err := ping(pctx, l.client.Kube)
		cancel()
		if ctx.Err() != nil {
			return
		}
		switch {
		case apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err):
			l.refused(err)
			continue
		case err != nil:
			l.lost(err)
			continue
		}
		l.allowed()
		l.back()
	}
}

// readQueues reads the queue objects now and every Queues; a change is
// told on Changes. A failed read keeps the last (check says whether the
// server is gone).
func (l *Live) readQueues(ctx context.Context) {
	t := time.NewTicker(l.opts.Queues)
	defer t.Stop()
	for {
		q, _, err := readQueues(ctx, l.client) // a kind RBAC forbids is left out
		if err == nil {
			l.mu.Lock()
			changed := !reflect.DeepEqual(q, l.queues)
			l.queues = q
			l.mu.Unlock()
			if changed {
				l.poke()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// setState changes the status under the lock; a change is told on
// Changes.
func (l *Live) setState(change func(*LiveStatus) bool) {
	l.mu.Lock()
	changed := change(&l.status)
	st := l.status
	if changed && l.opts.OnStatus != nil {
		l.opts.OnStatus(st) // under the lock: in order
	}
	l.mu.Unlock()
	if changed {
		l.poke()
	}
}
