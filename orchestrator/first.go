package orchestrator

import (
	"context"
	"sync"
)

// First elects the host that runs a run's once-only steps (a runbook's or
// a lab's hosts = "first", a cluster-wide reading): the first host in
// selection order that was reached and ran them to their end. Host 0
// unreachable, those steps run on host 1, not on nobody; host 0 lost
// while it ran them, host 1 runs them again. Observe must see the
// engine's events (ForEach's emit); Is is asked from a host's work, which
// runs only on a host that connected; the host elected says Settle when
// its once-only steps are done.
type First struct {
	mu        sync.Mutex
	resolved  []chan struct{} // closed when the host connected or was done
	connected []bool
	closed    []bool
	settled   []chan struct{} // closed when the host's once-only steps ended, or it was done
	ran       []bool          // its once-only steps ran to their end
	settledOK []bool          // settled[i] closed
	elected   int             // the host running them now, -1 when none
	// failover: a host lost while (or before) it runs them hands them to
	// the next host reached (NewFailoverFirst). Without it the first host
	// reached has them, whatever happens to it: a lab's once-only steps
	// are spread over its phases, and the other hosts do not wait for
	// them.
	failover bool
}

// NewFailoverFirst tracks n hosts, the steps handed on when the host
// elected is lost before it settles (a runbook's, which run before
// anything else needs them).
func NewFailoverFirst(n int) *First {
	f := NewFirst(n)
	f.failover = true
	return f
}

// NewFirst tracks n hosts.
func NewFirst(n int) *First {
	f := &First{resolved: make([]chan struct{}, n), connected: make([]bool, n), closed: make([]bool, n),
		settled: make([]chan struct{}, n), ran: make([]bool, n), settledOK: make([]bool, n), elected: -1}
	for i := range f.resolved {
		f.resolved[i], f.settled[i] = make(chan struct{}), make(chan struct{})
	}
	return f
}

// Observe records a host connected, or done without having connected.
func (f *First) Observe(ev Event) {
	if ev.Index < 0 || ev.Index >= len(f.resolved) || ev.Kind != HostConnected && ev.Kind != HostDone {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if ev.Kind == HostConnected {
		f.connected[ev.Index] = true
	}
	if !f.closed[ev.Index] {
		f.closed[ev.Index] = true
		close(f.resolved[ev.Index])
	}
	if ev.Kind == HostDone {
		f.settle(ev.Index, false) // done without saying so: lost, cancelled
	}
}

// Settle says host i's once-only steps ended: ran says they ran to their
// end on the host (a command exiting non-zero is an answer); false (the
// connection lost, a timeout) hands them to the next host reached.
func (f *First) Settle(i int, ran bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.settle(i, ran)
}

func (f *First) settle(i int, ran bool) {
	if i < 0 || i >= len(f.settled) || f.settledOK[i] {
		return
	}
	f.settledOK[i], f.ran[i] = true, ran
	close(f.settled[i])
	if f.elected == i && !ran {
		f.elected = -1
	}
}

// Is reports whether host i (connected) runs the once-only steps: it
// waits until every host before it failed to connect, or connected and
// settled, and says false when one of them ran the steps to their end, or
// when ctx ends first. A host asked again (each once-only step asks)
// gets the same answer.
func (f *First) Is(ctx context.Context, i int) bool {
	f.mu.Lock()
	if f.elected == i {
		f.mu.Unlock()
		return true
	}
	f.mu.Unlock()
	for j := range i {
		select {
		case <-f.resolved[j]:
		case <-ctx.Done():
			return false
		}
		f.mu.Lock()
		c := f.connected[j]
		f.mu.Unlock()
		if !c {
			continue
		}
		if !f.failover {
			return false
		}
		// j was reached: it runs the steps, unless it is lost while it
		// does (or before it gets to them).
		select {
		case <-f.settled[j]:
		case <-ctx.Done():
			return false
		}
		f.mu.Lock()
		ran := f.ran[j]
		f.mu.Unlock()
		if ran {
			return false
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.elected == -1 && !(f.settledOK[i] && !f.ran[i]) { // a host that handed them on never has them back
		f.elected = i
	}
	return f.elected == i
}

// HandedOn reports whether host i was elected and handed the once-only
// steps on (lost or timed out in them).
func (f *First) HandedOn(i int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return i >= 0 && i < len(f.settledOK) && f.settledOK[i] && !f.ran[i]
}

// Elected is the host Is elected last, or -1 when none was (no host
// reached, none asked, or the one elected was lost before it settled).
func (f *First) Elected() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.elected
}

// Follow returns an emit function for ForEach that observes each event
// and passes it on to next (nil: to nobody).
func (f *First) Follow(next func(Event)) func(Event) {
	return func(ev Event) {
		f.Observe(ev)
		if next != nil {
			next(ev)
		}
	}
}
