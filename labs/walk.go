package labs

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/gpulab/gpulab/orchestrator"
)

// walk keeps a guided run's hosts in step: the operator is asked about a
// step once every host still in the main phases has reached it, so that
// the question comes after every host's lines of the step before, never
// in the middle of them.
//
// A host is in the walk from its start (the hosts the engine's window
// starts at once are in from the beginning, later ones when they connect)
// until it is done with the main phases: finished, stopped by a failed
// prerequisite or step, or never connected.
type walk struct {
	mu      sync.Mutex
	in      map[int]bool
	out     map[int]bool
	arrived map[string]int // hosts that reached each step
	changed chan struct{}  // closed, and replaced, on every change
}

func newWalk(window, hosts int) *walk {
	w := &walk{in: map[int]bool{}, out: map[int]bool{}, arrived: map[string]int{}, changed: make(chan struct{})}
	for i := range min(window, hosts) {
		w.in[i] = true
	}
	return w
}

// notify wakes the hosts waiting for a step; w.mu is held.
func (w *walk) notify() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// join puts host i in the walk (once; never after it left).
func (w *walk) join(i int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.in[i] && !w.out[i] {
		w.in[i] = true
		w.notify()
	}
}

// leave takes host i out of the walk: no step waits for it any more.
func (w *walk) leave(i int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.out[i] {
		w.out[i] = true
		delete(w.in, i)
		w.notify()
	}
}

// arrive says a host reached step id and waits until every host in the
// walk has; false when ctx ended first.
func (w *walk) arrive(ctx context.Context, id string) bool {
	w.mu.Lock()
	w.arrived[id]++
	w.notify()
	for w.arrived[id] < len(w.in) {
		ch := w.changed
		w.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
		w.mu.Lock()
	}
	w.mu.Unlock()
	return true
}

// events follows the engine's hosts: one that connects joins, one that
// is done (or never connected) leaves.
func (w *walk) events(ev orchestrator.Event) {
	switch ev.Kind {
	case orchestrator.HostConnecting:
		w.join(ev.Index)
	case orchestrator.HostDone:
		w.leave(ev.Index)
	}
}

// prerequisiteIDs names each prerequisite's step after what it checks:
// its description as a slug ("nvidia-smi-answers"), made unique with its
// number when two read the same; "prerequisite-N" when the description
// has no letters or digits.
func prerequisiteIDs(ps []Prerequisite) []string {
	ids := make([]string, len(ps))
	seen := map[string]bool{}
	for k, p := range ps {
		id := slug(checked(p.Description), 40)
		switch {
		case id == "":
			id = fmt.Sprintf("prerequisite-%d", k+1)
		case seen[id]:
			id = fmt.Sprintf("%s-%d", id, k+1)
		}
		seen[id] = true
		ids[k] = id
	}
	return ids
}

// checked is what a prerequisite's description says it checks, without
// the remedy it may go on to give: "numactl is installed (apt-get install
// numactl)" and "numactl is installed: apt-get install numactl" are
// "numactl is installed".
func checked(desc string) string {
	for _, sep := range []string{" (", ": ", " — ", " - ", "; "} {
		if i := strings.Index(desc, sep); i > 0 {
			desc = desc[:i]
		}
	}
	return desc
}

// slug is s in lower case, each run of other characters than letters and
// digits (of any script) one "-", at most n bytes, cut at a "-" when it
// can, never inside a character.
func slug(s string, n int) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	out := b.String()
	if len(out) > n {
		for n > 0 && !utf8.RuneStart(out[n]) {
			n--
		}
		out = out[:n]
		if i := strings.LastIndexByte(out, '-'); i > n/2 {
			out = out[:i]
		}
	}
	return out
}
