package sim

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// watchdog stops every running command of the fleet when the heap passes
// maxHeap, telling each why on its standard error.
type watchdog struct {
	mu       sync.Mutex
	sessions map[*watched]struct{}
	next     int
}

type watched struct {
	stop   context.CancelFunc
	stderr io.Writer
	host   string
}

// add registers a session; the returned func removes it.
func (w *watchdog) add(host string, stop context.CancelFunc, stderr io.Writer) func() {
	s := &watched{stop: stop, stderr: stderr, host: host}
	w.mu.Lock()
	if w.sessions == nil {
		w.sessions = map[*watched]struct{}{}
	}
	w.sessions[s] = struct{}{}
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		delete(w.sessions, s)
		w.mu.Unlock()
	}
}

// run samples the heap every interval until ctx ends.
func (w *watchdog) run(ctx context.Context, every time.Duration) {
	// Goroutine stacks count too: a fork bomb's goroutines hold more in
	// their stacks than in the heap (the watchdog never fired on one).
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	held := func() (uint64, bool) {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 || sample[1].Value.Kind() != metrics.KindUint64 {
			return 0, false
		}
		return sample[0].Value.Uint64() + sample[1].Value.Uint64(), true
	}
	t := time.NewTicker(every)
	defer t.Stop()
	stopped := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, ok := held()
		if !ok {
			return
		}
		if n <= maxHeap {
			if stopped {
				// The stopped commands' memory is garbage now: give it
				// back to the machine (the runtime keeps it mapped for
				// minutes otherwise: 2.5 GB resident after a bomb).
				debug.FreeOSMemory()
				stopped = false
			}
			continue
		}
		// Over the limit: what is garbage does not count (many hosts
		// moving data at once leave much of it between collections), so
		// collect and look again.
		runtime.GC()
		if n, _ = held(); n > maxHeap {
			w.stopAll(n)
			stopped = true
		}
	}
}

func (w *watchdog) stopAll(heap uint64) {
	w.mu.Lock()
	stopped := make([]*watched, 0, len(w.sessions))
	for s := range w.sessions {
		stopped = append(stopped, s)
	}
	w.mu.Unlock()
	for _, s := range stopped {
		fmt.Fprintf(s.stderr, "gpulab sim: %s: stopped: the simulation's memory reached %d MiB (at most %d MiB): every running simulated command was stopped\n",
			s.host, heap>>20, maxHeap>>20)
		s.stop()
	}
}
