package dgx

import (
	"fmt"
	"math/bits"
	"sort"
	"strings"
	"time"
)

// What the cluster's objects look like at a moment: a pod's phase and
// its container's state, the events the API would list.

// podState is a pod as the kubelet reports it at some moment.
type podState struct {
	phase    string // Pending, Running, Succeeded, Failed
	reason   string // the container's terminated reason: Completed, Error, StartError
	message  string
	ready    bool
	exit     int
	finished time.Time
}

func (p *kpod) state(now time.Time) podState {
	switch {
	case p.node == "":
		return podState{phase: "Pending"}
	case p.run.startError != "":
		return podState{phase: "Failed", reason: "StartError", message: p.run.startError, exit: 128, finished: p.started}
	case !p.run.ends || now.Before(p.started.Add(p.run.lasts)):
		return podState{phase: "Running", ready: true}
	}
	st := podState{phase: "Succeeded", reason: "Completed", exit: p.run.exit, finished: p.started.Add(p.run.lasts)}
	if p.run.exit != 0 {
		st.phase, st.reason = "Failed", "Error"
	}
	if p.restartPolicy == "Always" || p.restartPolicy == "OnFailure" && p.run.exit != 0 {
		// The kubelet restarts it, and backs off: the simulation does not
		// count the restarts.
		return podState{phase: "Running", reason: "CrashLoopBackOff"}
	}
	return st
}

// finished reports whether p has ended (and so holds nothing).
func (p *kpod) finished(now time.Time) bool {
	ph := p.state(now).phase
	return ph == "Succeeded" || ph == "Failed"
}

// status is the STATUS column of kubectl get pods.
func (st podState) status() string {
	if st.reason != "" {
		return st.reason
	}
	return st.phase
}

// eventTTL is how long the API server keeps an event after its last
// occurrence (kube-apiserver's --event-ttl default).
const eventTTL = time.Hour

// eventView is an event as the API lists it.
type eventView struct {
	key               string // the event's name: object.hex(first): the API's order within a namespace
	ns, kind, object  string
	typ, reason, from string
	msg               string
	first, last       time.Time
	count             int
}

// target is its OBJECT column: "pod/name".
func (e eventView) target() string { return strings.ToLower(e.kind) + "/" + e.object }

// events lists the events the API keeps now, in its order (namespace,
// then name).
func (s *kstate) eventViews() []eventView { return s.eventViewsOf(s.events) }

// eventViewsOf lists what the API keeps now of events, in its order.
func (s *kstate) eventViewsOf(events []*kevent) []eventView {
	var out []eventView
	for _, e := range events {
		for _, v := range e.views(s.now) {
			if s.now.Sub(v.last) < eventTTL && !v.last.After(s.now) {
				v.key = v.object + "." + fmt.Sprintf("%x", v.first.UnixNano())
				out = append(out, v)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].ns != out[j].ns {
			return out[i].ns < out[j].ns
		}
		return out[i].key < out[j].key
	})
	return out
}

// views expands an event into what the API holds at now.
func (e *kevent) views(now time.Time) []eventView {
	v := eventView{ns: e.ns, kind: e.kind, object: e.object, typ: e.typ, reason: e.reason, from: e.from, first: e.first, last: e.first, count: 1}
	end := now
	if !e.until.IsZero() && e.until.Before(now) {
		end = e.until
	}
	switch {
	case e.retries:
		return e.retryViews(v, end)
	case e.every > 0:
		n := int(end.Sub(e.first) / e.every)
		v.last, v.count = e.first.Add(time.Duration(n)*e.every), n+1
	}
	v.msg = e.msg(0)
	return []eventView{v}
}

// retryAt is when the Job controller makes its k-th attempt after the
// first: backoff from 1s, doubling, at most 60s.
func retryAt(k int) time.Duration {
	if k <= 6 {
		return time.Duration(1<<k-1) * time.Second
	}
	return 63*time.Second + time.Duration(k-6)*time.Minute
}

// lastRetry is the last attempt made by elapsed.
func lastRetry(elapsed time.Duration) int {
	if elapsed < 63*time.Second {
		return bits.Len64(uint64(elapsed/time.Second)+1) - 1
	}
	return 6 + int((elapsed-63*time.Second)/time.Minute)
}

// retryViews: the first ten attempts are events of their own; the
// aggregator folds the rest into one, "(combined from similar events)",
// whose count and message follow the latest.
func (e *kevent) retryViews(v eventView, end time.Time) []eventView {
	if end.Before(e.first) {
		return nil
	}
	last := lastRetry(end.Sub(e.first))
	var out []eventView
	for k := 0; k <= min(last, 9); k++ {
		w := v
		w.first = e.first.Add(retryAt(k))
		w.last, w.msg = w.first, e.msg(k)
		out = append(out, w)
	}
	if last >= 10 {
		w := v
		w.first, w.last = e.first.Add(retryAt(10)), e.first.Add(retryAt(last))
		w.count, w.msg = last-9, "(combined from similar events): "+e.msg(last)
		out = append(out, w)
	}
	return out
}

// event records a one-off event at at; the same event again (same
// object, reason and message) counts up instead, as the event
// correlator does.
func (s *kstate) event(ns, kind, object, typ, reason, from, msg string, at time.Time) {
	s.events = append(s.events, &kevent{ns: ns, kind: kind, object: object, typ: typ, reason: reason, from: from, first: at, msg: constMsg(msg)})
}

// eventOnce records an event unless the same one is already recorded.
func (s *kstate) eventOnce(ns, kind, object, typ, reason, from, msg string, at time.Time) {
	for _, e := range s.events {
		if e.ns == ns && e.object == object && e.reason == reason && e.msg(0) == msg {
			return
		}
	}
	s.event(ns, kind, object, typ, reason, from, msg, at)
}

// endSeries stops the repeating events of an object for reason.
func (s *kstate) endSeries(ns, kind, object, reason string, at time.Time) {
	for _, e := range s.events {
		if e.ns == ns && e.kind == kind && e.object == object && e.reason == reason && e.until.IsZero() && (e.every > 0 || e.retries) {
			e.until = at
		}
	}
}

// podsOn lists the pods bound to a node that have not finished, in the
// API's order (namespace, name).
func (s *kstate) podsOn(node string) []*kpod {
	if s.byNode != nil {
		return s.byNode[node]
	}
	var out []*kpod
	for _, p := range s.pods {
		if p.node == node && !p.finished(s.now) {
			out = append(out, p)
		}
	}
	sortPods(out)
	return out
}

// indexPods makes podsOn answer from one pass over the pods, until the
// returned function is called (describe nodes of a large fleet).
func (s *kstate) indexPods() (done func()) {
	s.byNode = map[string][]*kpod{}
	for _, p := range s.pods {
		if p.node != "" && !p.finished(s.now) {
			s.byNode[p.node] = append(s.byNode[p.node], p)
		}
	}
	for _, ps := range s.byNode {
		sortPods(ps)
	}
	return func() { s.byNode = nil }
}

func sortPods(ps []*kpod) {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].ns != ps[j].ns {
			return ps[i].ns < ps[j].ns
		}
		return ps[i].name < ps[j].name
	})
}

// findPod is the pod ns/name, nil if there is none.
func (s *kstate) findPod(ns, name string) *kpod {
	for _, p := range s.pods {
		if p.ns == ns && p.name == name {
			return p
		}
	}
	return nil
}

// hasNamespace reports whether the namespace exists.
func (s *kstate) hasNamespace(ns string) bool {
	for _, n := range s.namespaces {
		if n.name == ns {
			return true
		}
	}
	return false
}
