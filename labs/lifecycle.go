package labs

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/gpulab/gpulab/internal/fileio"
	"github.com/gpulab/gpulab/orchestrator"
)

// RunSpec is one lab run with its record on disk. Execute owns the run: its
// context, its record directory and every write; the command line and the
// workbench both go through it.
type RunSpec struct {
	Engine  *orchestrator.Engine
	Targets []orchestrator.Target
	Lab     *Lab
	// Options are the run's options. OnStart is Execute's own; OnEvent is
	// called after the journal on disk has the event.
	Options RunOptions
	// Results is the results directory: the record's directory is created
	// in it, and results.csv gets the run's rows.
	Results string
}

// Outcome is a finished run: the record, where it is, and what of it could
// not be written (nil when everything was saved). The record in memory is
// whole whatever the disk did.
type Outcome struct {
	Record   *Record
	Dir      string
	WriteErr error
}

// Execute runs the lab and keeps its record on disk as it goes: the record
// directory is created exclusively (two runs started in the same second
// never share one), record.json is written before the first command and
// again as steps finish, so a run that is abandoned or killed still shows
// what ran; at the end record.json, record.md, junit.xml and the CSV row
// are written. A failure to write never stops the run or loses its
// verdicts: it is returned in WriteErr, saying what was saved and what
// was not ("its record is saved in DIR, but its rows in results.csv were
// not added: …").
func Execute(ctx context.Context, spec RunSpec) Outcome {
	j := &journal{}
	o := spec.Options
	onEvent := o.OnEvent
	o.OnStart = func(rec *Record) {
		j.start(rec, spec.Results)
		if spec.Options.OnStart != nil {
			spec.Options.OnStart(rec)
		}
	}
	o.OnEvent = func(ev Event) {
		j.event(ev)
		if onEvent != nil {
			onEvent(ev)
		}
	}
	rec := Run(ctx, spec.Engine, spec.Targets, spec.Lab, o)
	j.stop()
	out := Outcome{Record: rec, Dir: j.dir}
	var csvErr *CSVRowError
	switch err := j.dirErr; {
	case err != nil:
		out.WriteErr = fmt.Errorf("its record was not saved: %w", err)
	default:
		err = rec.Write(j.dir, filepath.Join(spec.Results, "results.csv"))
		switch {
		case errors.As(err, &csvErr):
			out.WriteErr = fmt.Errorf("its record is saved in %s, but %w", j.dir, err)
		case err != nil:
			out.WriteErr = fmt.Errorf("its record in %s was not saved whole (record.json holds what ran up to the failure, if it could be written): %w", j.dir, err)
		}
	}
	return out
}

// CreateDir creates the record's directory exclusively under results:
// RESULTS/LAB/20261129-103822-gpu[01-04], or with -2, -3... when another
// run has that name (os.Mkdir, not a check then a create).
func (r *Record) CreateDir(results string) (string, error) {
	base := r.Dir(results)
	// Another user who can write (or rename) the directory could swap
	// the record's files for links, or read a run's record before it is
	// shared.
	if err := fileio.MkdirTrusted(filepath.Dir(base), 0o755); err != nil {
		return "", fmt.Errorf("the results directory: %w", err)
	}
	dir, err := fileio.MkdirUnique(base, 0o755)
	if err != nil {
		return "", fmt.Errorf("the record directory: %w", err)
	}
	return dir, nil
}

// journal is the record on disk while the run goes: a copy kept from the
// run's events (the runner's own record is its hosts' to write), written
// by one goroutine whenever it changed, so writes never hold up a host.
type journal struct {
	mu     sync.Mutex
	rec    *Record
	dir    string
	dirErr error
	dirty  chan struct{}
	done   chan struct{}
}

func (j *journal) start(rec *Record, results string) {
	j.rec = rec.copyStub()
	j.dir, j.dirErr = j.rec.CreateDir(results)
	if j.dirErr != nil {
		return
	}
	// The first write is synchronous: record.json exists before any
	// command runs.
	if err := j.rec.WriteJSON(j.dir); err != nil {
		j.dirErr = fmt.Errorf("record.json in %s: %w", j.dir, err)
		return
	}
	j.dirty, j.done = make(chan struct{}, 1), make(chan struct{})
	go j.writer()
}

// writer writes record.json each time the journal changed; it ends when
// dirty is closed.
func (j *journal) writer() {
	defer close(j.done)
	for range j.dirty {
		j.mu.Lock()
		data, err := j.rec.marshal() // small: the journal keeps the head of each output
		j.mu.Unlock()
		if err == nil {
			_ = fileio.WriteAtomic(filepath.Join(j.dir, "record.json"), data) // the final write reports errors
		}
	}
}

func (j *journal) event(ev Event) {
	if j.rec == nil {
		return
	}
	j.mu.Lock()
	if ev.Index >= 0 && ev.Index < len(j.rec.Hosts) {
		h := &j.rec.Hosts[ev.Index]
		switch ev.Kind {
		case StepFinished:
			if ev.Step != nil {
				s := *ev.Step
				s.Stdout, s.Stderr = journalHead(s.Stdout), journalHead(s.Stderr)
				s.Samples = nil
				h.Steps = append(h.Steps, s)
			}
		case ScoresChanged, HostFinished:
			h.Scores = append([]Score(nil), ev.Scores...)
		}
	}
	j.mu.Unlock()
	if j.dirty != nil && (ev.Kind == StepFinished || ev.Kind == HostFinished) {
		select {
		case j.dirty <- struct{}{}:
		default: // a write is already due
		}
	}
}

// journalOutput is how much of a step's output the journal keeps; the
// final record keeps all that the step kept.
const journalOutput = 64 << 10

func journalHead(s string) string {
	if len(s) <= journalOutput {
		return s
	}
	return s[:journalOutput] + fmt.Sprintf("\n[gpulab: %d more bytes in the final record]", len(s)-journalOutput)
}

// stop ends the writer after its last write.
func (j *journal) stop() {
	if j.dirty != nil {
		close(j.dirty)
		<-j.done
	}
}

// copyStub copies the record as it is when the run starts: no steps yet.
func (r *Record) copyStub() *Record {
	c := *r
	c.Hosts = make([]HostRecord, len(r.Hosts))
	for i, h := range r.Hosts {
		c.Hosts[i] = HostRecord{Host: h.Host, Via: h.Via, Metrics: map[string]any{}, MetricErrors: map[string]string{}}
	}
	return &c
}
