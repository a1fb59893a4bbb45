package collect

import (
	"testing"
	"time"
)

// TestWaitMSNeverWrapsAround: a deadline already passed stops the wait
// (a negative time left was a 49-day wait as a uint32); a wait is at
// least a millisecond and at most a second.
func TestWaitMSNeverWrapsAround(t *testing.T) {
	for _, c := range []struct {
		left time.Duration
		ms   uint32
		ok   bool
	}{{-3 * time.Millisecond, 0, false}, {0, 0, false}, {300 * time.Microsecond, 1, true}, {40 * time.Millisecond, 40, true}, {5 * time.Second, 1000, true}} {
		if ms, ok := waitMS(c.left); ms != c.ms || ok != c.ok {
			t.Errorf("waitMS(%v) = %d, %v; want %d, %v", c.left, ms, ok, c.ms, c.ok)
		}
	}
}
