package orchestrator

import (
	"context"
	"sync"
)

// First elects the host that runs a run's once-only steps (a runbook's or
// a lab's hosts = "first", a cluster-wide reading): the first host in
// selection order that was reached. Host 0 unreachable, those steps run on
// host 1, not on nobody. Observe must see the engine's events
// (ForEach's emit); Is is asked from a host's work, which runs only on a
// host that connected.
type First struct {
	mu        sync.Mutex
	resolved  []chan struct{} // closed when the host connected or was done
	connected []bool
	closed    []bool
	elected   int // -1 until Is elects a host
}

// NewFirst tracks n hosts.
func NewFirst(n int) *First {
	f := &First{resolved: make([]chan struct{}, n), connected: make([]bool, n), closed: make([]bool, n), elected: -1}
	for i := range f.resolved {
		f.resolved[i] = make(chan struct{})
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
}

// Is reports whether host i (connected) is the first host reached: it
// waits until every host before it connected or failed, and says false
// when one of them connected, or when ctx ends first.
func (f *First) Is(ctx context.Context, i int) bool {
	for j := range i {
		select {
		case <-f.resolved[j]:
		case <-ctx.Done():
			return false
		}
		f.mu.Lock()
		c := f.connected[j]
		f.mu.Unlock()
		if c {
			return false
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.elected == -1 {
		f.elected = i
	}
	return f.elected == i
}

// Elected is the host Is elected, or -1 when none was (no host reached, or
// none asked).
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
