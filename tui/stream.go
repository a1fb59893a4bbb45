package tui

import (
	"context"

	tea "github.com/charmbracelet/bubbletea"
)

// runStream is a view's run in flight, the one way the Fleet, Runbooks and
// Labs tabs run things: the run's id (updates of an earlier run are
// dropped), its cancel, and the channel its updates come on, delivered to
// Update in batches so that a burst costs one frame.
type runStream[T any] struct {
	id     int
	cancel context.CancelFunc
	ch     <-chan T
}

// runTab is what every tab that runs something on hosts holds (Fleet,
// Runbooks, Labs), embedded in each: its styles and size, the workbench's
// lifetime its runs descend from, the run in flight, and how its hosts are
// drawn (a SIM badge when simulated; mask hides host names before a pane
// cuts its lines to its width, nil: shown).
type runTab[T any] struct {
	styles        Styles
	base          context.Context
	stream        runStream[T]
	running       bool
	simulated     bool
	mask          *masker
	width, height int
}

// streamMsg is a batch of a run's updates; closed says the run ended.
type streamMsg[T any] struct {
	id     int
	items  []T
	closed bool
}

// start begins a new run: work runs in the background on a context from
// base and sends its updates on ch, which it closes when it is done.
func (s *runStream[T]) start(base context.Context, buf int, work func(ctx context.Context, ch chan<- T)) tea.Cmd {
	s.stop()
	s.id++
	ctx, cancel := context.WithCancel(base)
	ch := make(chan T, buf)
	s.cancel, s.ch = cancel, ch
	go work(ctx, ch)
	return s.wait()
}

// wait takes the next updates (every one already queued) and re-arms
// through Update while the run goes on.
func (s *runStream[T]) wait() tea.Cmd {
	ch, id := s.ch, s.id
	return func() tea.Msg {
		batch, closed := nextBatch(ch, 1<<16)
		return streamMsg[T]{id: id, items: batch, closed: closed}
	}
}

// current reports whether m is an update of the run in flight.
func (s *runStream[T]) current(m streamMsg[T]) bool { return m.id == s.id && s.ch != nil }

// stop cancels the run in flight, if any.
func (s *runStream[T]) stop() {
	if s.cancel != nil {
		s.cancel()
	}
}

// nextBatch waits for one item of ch, then takes whatever else is already
// queued (up to limit), so a burst of events costs one frame. closed says
// ch was closed; an empty batch means it was closed before anything came.
func nextBatch[T any](ch <-chan T, limit int) (batch []T, closed bool) {
	it, ok := <-ch
	if !ok {
		return nil, true
	}
	batch = []T{it}
	for len(batch) < limit {
		select {
		case it, ok := <-ch:
			if !ok {
				return batch, true
			}
			batch = append(batch, it)
		default:
			return batch, false
		}
	}
	return batch, false
}
