// Package heapwatch samples the heap in use while a test's work runs, for
// tests that hold memory per host to a bound.
package heapwatch

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Start samples runtime.MemStats.HeapInuse every 20 ms until the returned
// function is called; that function returns the highest value seen.
func Start() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-finished
		return peak.Load()
	}
}
