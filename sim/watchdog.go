package sim

import (
	"context"
	"fmt"
	"io"
	"runtime"
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
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return
		}
		if sample[0].Value.Uint64() <= maxHeap {
			continue
		}
		// Over the limit: what is garbage does not count (many hosts
		// moving data at once leave much of it between collections), so
		// collect and look again.
		runtime.GC()
		metrics.Read(sample)
		if heap := sample[0].Value.Uint64(); heap > maxHeap {
			w.stopAll(heap)
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
