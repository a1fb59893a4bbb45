package orchestrator

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Step is one command of a plan.
type Step struct {
	Name    string
	Command string // a shell command line, quoted by the caller
	// Timeout and Inactivity override the target's when set.
	Timeout    time.Duration
	Inactivity time.Duration
	// ContinueOnError runs the next steps even when this one fails.
	ContinueOnError bool
}

// Plan is work for many hosts: the same steps on each.
type Plan struct {
	Targets []Target
	Steps   []Step
}

// Engine fans a plan out over SSH.
type Engine struct {
	Dialer *Dialer
	// Concurrency is how many hosts are worked on at once; a new host starts
	// as soon as one finishes (a sliding window). Default 64.
	Concurrency int
	// StreamOutput sends output chunks as events: the workbench's Fleet
	// tab shows a running command's output as it comes.
	StreamOutput bool
	// Pool, when set, keeps connections open between runs (the
	// workbench): ForEach takes them from it and gives them back.
	Pool *Pool
	// Done, when set, is called with each host's result once it is final
	// (a progress meter), from the host's goroutine: concurrently.
	Done func(*HostResult)
}

func (e *Engine) dial(ctx context.Context, t Target) (*Conn, error) {
	if e.Pool != nil {
		return e.Pool.Get(ctx, t)
	}
	return e.Dialer.Dial(ctx, t)
}

func (e *Engine) release(c *Conn) {
	if e.Pool != nil {
		e.Pool.Put(c)
		return
	}
	c.Close()
}

// EventKind says what an Event reports.
type EventKind int

// Event kinds.
const (
	HostConnecting EventKind = iota
	HostConnected
	StepStarted
	StepOutput
	StepDone
	HostDone
)

// Event is progress on one host. Events of one host arrive in order.
type Event struct {
	Kind  EventKind
	Time  time.Time
	Index int // the host's index in Plan.Targets
	Host  string
	Step  int
	// Output is a chunk of a running step (StepOutput); Stream is 1 or 2.
	Output []byte
	Stream int
	Result *Result     // StepDone
	Done   *HostResult // HostDone
	// Simulated (HostConnected): the host said in its handshake that it
	// is one of gpulab's simulated hosts (SimulatedServerVersion), however
	// it was reached; a view can say so before the host is done.
	Simulated bool
}

// Run works the plan and returns one result per target, in plan order.
// Every target gets a result: hosts not started when ctx is cancelled are
// Cancelled. If events is not nil, progress is sent on it (the caller must
// keep reading) and it is closed before Run returns.
func (e *Engine) Run(ctx context.Context, plan Plan, events chan<- Event) []HostResult {
	if events != nil {
		defer close(events)
	}
	emit := func(ev Event) {
		if events != nil {
			ev.Time = time.Now()
			events <- ev
		}
	}
	return e.ForEach(ctx, plan.Targets, emit, func(i int, t Target, conn *Conn, hr *HostResult) {
		e.runSteps(ctx, i, t, conn, plan.Steps, hr, emit)
	})
}

// RunInOrder works the plan as Run does and calls each with every host's
// result, in plan order, as soon as that host and the hosts before it are
// done. each runs on the caller's goroutine and may change the result (a
// caller that prints each host's output can drop it there, instead of
// holding every host's output until the last host is done). It returns
// every result, as Run does.
func (e *Engine) RunInOrder(ctx context.Context, plan Plan, each func(i int, hr *HostResult)) []HostResult {
	events := make(chan Event, 16)
	var results []HostResult
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		results = e.Run(ctx, plan, events)
	}()
	done := make([]*HostResult, len(plan.Targets))
	next := 0
	for ev := range events {
		if ev.Kind != HostDone {
			continue
		}
		done[ev.Index] = ev.Done
		for next < len(done) && done[next] != nil {
			each(next, done[next])
			done[next] = nil
			next++
		}
	}
	<-finished
	return results
}

// ForEach connects to each target within the sliding window and calls work
// with the open connection, which work may use for any number of commands
// and pushes; it fills hr (Class, Err, Steps). It returns exactly one
// result per target, in target order: dial failures, targets that could
// not be resolved (Target.Unresolved) and hosts never started (ctx
// cancelled) get theirs without calling work. emit may be nil.
func (e *Engine) ForEach(ctx context.Context, targets []Target, emit func(Event), work func(i int, t Target, conn *Conn, hr *HostResult)) []HostResult {
	if emit == nil {
		emit = func(Event) {}
	}
	if done := e.Done; done != nil {
		inner := emit
		emit = func(ev Event) {
			inner(ev)
			if ev.Kind == HostDone {
				done(ev.Done)
			}
		}
	}
	n := e.Concurrency
	if n <= 0 {
		n = 64
	}
	results := make([]HostResult, len(targets))
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i, t := range targets {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			results[i] = HostResult{Host: t.Name, Via: t.Via(), Address: t.HostPort(), Class: Cancelled, Err: "cancelled before this host started", Steps: []Result{}}
			emit(Event{Kind: HostDone, Index: i, Host: t.Name, Done: &results[i]})
			continue
		}
		if !t.Reachable() {
			<-sem
			results[i] = t.unresolvedResult()
			emit(Event{Kind: HostDone, Index: i, Host: t.Name, Done: &results[i]})
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			start := time.Now()
			hr := &results[i]
			*hr = HostResult{Host: t.Name, Via: t.Via(), Address: t.HostPort(), Steps: []Result{}}
			emit(Event{Kind: HostConnecting, Index: i, Host: t.Name})
			conn, err := e.dial(ctx, t)
			hr.Connect = time.Since(start)
			hr.Reused = err == nil && conn.reused
			hr.Simulated = err == nil && conn.Simulated()
			if err != nil {
				hr.Class, hr.Err = Unreachable, err.Error()
				var de *DialError
				if errors.As(err, &de) {
					hr.Class = de.Class
				}
			} else {
				emit(Event{Kind: HostConnected, Index: i, Host: t.Name, Simulated: hr.Simulated})
				work(i, t, conn, hr)
				e.release(conn)
			}
			hr.Total = time.Since(start)
			emit(Event{Kind: HostDone, Index: i, Host: t.Name, Done: hr})
		}()
	}
	wg.Wait()
	return results
}

func (e *Engine) runSteps(ctx context.Context, i int, t Target, conn *Conn, steps []Step, hr *HostResult, emit func(Event)) {
	for si, s := range steps {
		emit(Event{Kind: StepStarted, Index: i, Host: t.Name, Step: si})
		o := RunOptions{Timeout: t.CommandTimeout, Inactivity: t.InactivityTimeout}
		if s.Timeout > 0 {
			o.Timeout = s.Timeout
		}
		if s.Inactivity > 0 {
			o.Inactivity = s.Inactivity
		}
		if e.StreamOutput {
			o.OnOutput = func(stream int, p []byte) {
				emit(Event{Kind: StepOutput, Index: i, Host: t.Name, Step: si, Stream: stream, Output: append([]byte(nil), p...)})
			}
		}
		r := conn.Run(ctx, s.Name, s.Command, o)
		hr.Steps = append(hr.Steps, r)
		hr.Class = max(hr.Class, r.Class)
		emit(Event{Kind: StepDone, Index: i, Host: t.Name, Step: si, Result: &hr.Steps[len(hr.Steps)-1]})
		if r.Class != OK && !s.ContinueOnError {
			if r.Err != "" && hr.Err == "" {
				hr.Err = s.Name + ": " + r.Err
			}
			return
		}
	}
}
