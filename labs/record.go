package labs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gpulab/gpulab/internal/fileio"
	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/step"
)

// RecordSchema is the version of the lab record's JSON.
const RecordSchema = 1

// Record is a lab run: what ran where, what each host measured, and each
// criterion's verdict with its value, expression and evidence.
type Record struct {
	// summary: read by ReadSummary, without the hosts' steps.
	summary  bool
	Schema   int    `json:"schema"`
	Lab      string `json:"lab"`
	Name     string `json:"name"`
	Maturity string `json:"maturity"`
	// Simulated: the hosts were a simulated fleet (gpulab sim). Nothing in
	// the record is evidence about real hardware, and Maturity is "draft"
	// whatever the lab claims.
	Simulated bool      `json:"simulated,omitempty"`
	Source    string    `json:"source"`
	Started   time.Time `json:"started"`
	Finished  time.Time `json:"finished"`
	// Complete is false while the run goes on, after an interrupted run,
	// and after a run in which no step ran (NotRun): such a record is
	// kept, and says so.
	Complete    bool `json:"complete"`
	Interrupted bool `json:"interrupted,omitempty"`
	Passed      bool `json:"passed"`
	// UndecidedCriteria, set when the run ends, are the criteria that
	// kept a run in which nothing failed from passing (Undecided): the
	// verdict is UNDECIDED, exit 3.
	UndecidedCriteria []string `json:"undecided,omitempty"`
	// NotRun says why no step ran on any host (every host stopped at a
	// prerequisite, was not reached, or was stopped before its first
	// step): such a run measured nothing, and is not complete (Complete
	// false, Interrupted false) rather than failed.
	NotRun string `json:"not_run,omitempty"`
	// Unreached names the hosts whose run was cut short, with their class
	// and why: not reached, their name not resolved, or their connection
	// lost (or a command timed out) before the end. Such a run is not
	// complete and never passed, however the others did.
	Unreached []string          `json:"unreached,omitempty"`
	Params    map[string]string `json:"params,omitempty"`
	// Guided runs asked the operator before each step; Solved runs used
	// the lab's solve commands (a demo fast-forward, not a measurement).
	Guided bool `json:"guided,omitempty"`
	Solved bool `json:"solved,omitempty"`
	// Reproduce are the arguments, after the lab and -H, that the run was
	// started with and another run of it needs: the inventory, ssh_config
	// and known_hosts files, the lab files, the parameters set.
	Reproduce []string `json:"reproduce,omitempty"`
	// ReproduceFleet, when set, is the command that brings the run's
	// hosts back first: they were a simulated fleet that went with the
	// run, its inventory in a temporary directory (gpulab demo). With
	// Reproduce, that command serves the same fleet (same seed, same
	// hosts) for gpulab lab run; without, it opens the workbench the lab
	// runs in again (a lab that reads the demo's simulated cluster).
	ReproduceFleet []string     `json:"reproduce_fleet,omitempty"`
	Hosts          []HostRecord `json:"hosts"`
	// Kubernetes is the cluster side of the environment, for labs that
	// run kubectl.
	Kubernetes *KubeEnvironment `json:"kubernetes,omitempty"`
	Result     ResultRow        `json:"result"`
	// Principle is the lab's short overview of why the result comes out
	// as it does.
	Principle string `json:"principle,omitempty"`
}

// HostRecord is one host's run.
type HostRecord struct {
	Host string `json:"host"`
	// Via is how the host was reached (ssh, or kube and its context).
	orchestrator.Via
	Class         orchestrator.Class `json:"class"`
	Environment   Environment        `json:"environment"`
	Err           string             `json:"error,omitempty"`
	Prerequisites []PrereqRecord     `json:"prerequisites"`
	Steps         []StepRecord       `json:"steps"`
	Metrics       map[string]any     `json:"metrics"`
	MetricErrors  map[string]string  `json:"metric_errors"`
	// SkippedMetrics are the metrics of steps the operator chose to skip
	// (guided, or not confirmed with --yes): their criteria are SKIPPED.
	SkippedMetrics  []string `json:"skipped_metrics,omitempty"`
	Scores          []Score  `json:"scores"`
	Passed          bool     `json:"passed"`
	Stopped         string   `json:"stopped,omitempty"` // why the main phases ended early
	CleanupRan      bool     `json:"cleanup_ran"`
	CleanupProblems []string `json:"cleanup_problems,omitempty"`
	// CleanupLeft are the cleanup commands not run, or cut short, because
	// the operator abandoned cleanup (a second interrupt): what is left on
	// the host to undo by hand.
	CleanupLeft []string `json:"cleanup_left,omitempty"`
}

// PrereqRecord is a prerequisite's outcome: ok, failed, or confirm (no
// command can check it; the operator confirms).
type PrereqRecord struct {
	Description string `json:"description"`
	Command     string `json:"command,omitempty"`
	Status      string `json:"status"`
	Problem     string `json:"problem,omitempty"`
}

// StepRecord is one step on one host, with its output as evidence.
type StepRecord struct {
	ID         string             `json:"id"`
	Phase      string             `json:"phase"`
	Command    string             `json:"command"`
	Class      orchestrator.Class `json:"class"`
	ExitCode   int                `json:"exit_code"`
	Problem    string             `json:"problem,omitempty"`
	Skipped    string             `json:"skipped,omitempty"`
	ParseError string             `json:"parse_error,omitempty"`
	Stdout     string             `json:"stdout"`
	Stderr     string             `json:"stderr,omitempty"`
	// OutputCut says the output was cut at the limit: what is kept is the
	// beginning, and metrics that read it are UNKNOWN.
	OutputCut string    `json:"output_cut,omitempty"`
	Started   time.Time `json:"started"`
	Finished  time.Time `json:"finished"`
	// Samples are the probe's snapshots while the step ran (Step.Sample),
	// and SampleProblem why there are fewer than the run time allows.
	Samples       []Sample `json:"samples,omitempty"`
	SampleProblem string   `json:"sample_problem,omitempty"`
	value         any      // what a promql step read, for its metrics
	chosen        bool     // skipped by the operator's choice (guided, no --yes)
}

func newRecord(l *Lab, start time.Time) *Record {
	return &Record{Schema: RecordSchema, Lab: l.ID, Name: l.Name, Maturity: l.Maturity, Source: l.Source, Started: start, Result: l.Result, Principle: l.Principle}
}

func (r *Record) finish(end time.Time, interrupted bool) {
	r.Finished, r.Interrupted, r.Complete = end, interrupted, !interrupted
	r.Passed = !interrupted && len(r.Hosts) > 0
	r.Unreached = nil
	for _, h := range r.Hosts {
		r.Passed = r.Passed && h.Passed
		if h.Unreached() {
			r.Unreached = append(r.Unreached, h.Host+": "+h.Class.String()+": "+h.Err)
		}
	}
	if len(r.Unreached) > 0 {
		r.Complete, r.Passed = false, false
	}
	r.markNotRun()
	r.UndecidedCriteria = r.Undecided()
}

// Unreached reports whether the host's run was cut short: it was not
// reached, its name could not be resolved, or its connection was lost
// (its class is not ok: a command that merely exited non-zero leaves it
// ok). Its verdicts rest on less than the lab measures.
func (h HostRecord) Unreached() bool {
	return h.Class != orchestrator.OK
}

// Verdict is the run's one-line outcome, as the command line and the
// workbench both state it: PASSED, FAILED, INTERRUPTED, NOT RUN, or
// INCOMPLETE when a selected host was not reached.
func (r *Record) Verdict() string {
	switch {
	case r.Interrupted:
		return "INTERRUPTED (cleanup ran; the record is marked incomplete)"
	case r.NotRun != "":
		return "NOT RUN: no step ran, nothing was measured (" + r.NotRun + "; the record is marked incomplete)"
	case len(r.Unreached) > 0:
		var ran []orchestrator.HostResult
		for _, h := range r.Hosts {
			if h.Unreached() {
				ran = append(ran, orchestrator.HostResult{Host: h.Host, Class: h.Class})
			}
		}
		_, classes, _ := strings.Cut(orchestrator.Summary(ran), ": ")
		v := "INCOMPLETE: not every host ran to the end: " + classes
		if why := r.failedBecause(); why != "" {
			v += "; on the hosts reached, " + why
		}
		return v + "; the lab did not pass, and the record is marked incomplete"
	case !r.Complete:
		return "INCOMPLETE: the run did not reach its end (gpulab stopped before it finished, and the record holds what was saved until then); the lab did not pass"
	case r.passes():
		return "PASSED"
	}
	if ids := r.Undecided(); len(ids) > 0 {
		return fmt.Sprintf("UNDECIDED: nothing judged failed, but %s could not be decided (%s): no evidence either way, so the lab did not pass", text.Plural(len(ids), "criterion", "criteria"), strings.Join(ids, ", "))
	}
	if why := r.failedBecause(); why != "" {
		return "FAILED: " + why
	}
	return "FAILED"
}

// failedBecause says what kept the reached hosts from passing: the
// criteria that failed or were skipped where they count, with their
// hosts ("mesh (critical) FAIL on gpu02"), else, for hosts with nothing
// of that kind, that no criterion passed on evidence. Empty when every
// reached host passed.
func (r *Record) failedBecause() string {
	var parts, bare []string
	for _, g := range FoldScores(r.Hosts) {
		if (g.Status == step.Fail || g.Status == step.Skipped) && g.Impact != "minor" {
			id := g.ID
			if kind := g.Kind(); kind != "" {
				id += " (" + kind + ")"
			}
			parts = append(parts, fmt.Sprintf("%s %s on %s", id, g.Status, g.Hosts))
		}
	}
	// A host reached but stopped before it measured (a prerequisite not
	// met, a step that failed the run): why, folded by reason.
	var reasons []string
	stopped := map[string][]string{}
	for _, h := range r.Hosts {
		if h.Class == orchestrator.OK && h.Stopped != "" {
			if _, ok := stopped[h.Stopped]; !ok {
				reasons = append(reasons, h.Stopped)
			}
			stopped[h.Stopped] = append(stopped[h.Stopped], h.Host)
		}
	}
	for _, why := range reasons {
		parts = append(parts, "stopped on "+inventory.FoldNames(stopped[why])+": "+orchestrator.FirstLine(why))
	}
	if len(parts) > 0 {
		return strings.Join(parts, ", ")
	}
	for _, h := range r.Hosts {
		if h.Class == orchestrator.OK && h.Stopped == "" && len(h.Scores) > 0 && !Passed(h.Scores) && len(h.Undecided()) == 0 {
			bare = append(bare, h.Host)
		}
	}
	if len(bare) > 0 {
		return "no criterion passed on evidence on " + inventory.FoldNames(bare) + " (a WARN is no pass)"
	}
	return ""
}

// Undecided are the criteria and counterexamples that could not be
// decided on some host (UNKNOWN or PENDING), in the lab's order, when
// nothing else kept the run from passing: every host ran to the end and
// no criterion failed or was skipped where it counts. Empty otherwise,
// and for a run that passed. A run that is undecided did not pass: it is
// told apart from a failed one because "the GPU is sick" and "gpulab could
// not tell" call for different actions.
func (r *Record) Undecided() []string {
	if r.passes() || !r.Complete || r.Interrupted || r.NotRun != "" || len(r.Unreached) > 0 || len(r.Hosts) == 0 {
		return nil
	}
	var ids []string
	for _, h := range r.Hosts {
		if h.passes() {
			continue
		}
		undecided := h.Undecided()
		if len(undecided) == 0 {
			return nil // this host failed
		}
		for _, id := range undecided {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// passes is whether the host passed, read from its scores: a record's
// stored passed flag (hand-edited, or written by an older gpulab that
// passed on less) can only lower it.
func (h HostRecord) passes() bool {
	return h.Passed && h.Class == orchestrator.OK && Passed(h.Scores)
}

// passes is whether the run passed, as HostRecord.passes reads each host.
func (r *Record) passes() bool {
	if !r.Passed || len(r.Hosts) == 0 {
		return false
	}
	for _, h := range r.Hosts {
		if !h.passes() {
			return false
		}
	}
	return true
}

// Undecided are the host's criteria that could not be decided (UNKNOWN or
// PENDING) when that alone kept it from passing: it ran to the end and
// nothing that counts failed or was skipped. Empty otherwise.
func (h HostRecord) Undecided() []string {
	if h.passes() || h.Class != orchestrator.OK || h.Stopped != "" { // not reached, or stopped before it measured all
		return nil
	}
	var ids []string
	for _, s := range h.Scores {
		switch s.Status {
		case step.Unknown, Pending:
			ids = append(ids, s.ID)
		case step.Fail, step.Skipped:
			if s.Impact != "minor" {
				return nil
			}
		}
	}
	return ids
}

// markNotRun marks a run in which no step ran on any host: not complete
// and not passed, with the hosts' reasons (folded when they agree).
func (r *Record) markNotRun() {
	if r.Interrupted || len(r.Hosts) == 0 || slices.ContainsFunc(r.Hosts, HostRecord.RanSteps) {
		return
	}
	var why, reasons []string
	for _, h := range r.Hosts {
		reason := h.Stopped
		switch {
		case reason == "" && h.Err != "":
			reason = "host " + h.Class.String() + ": " + h.Err
		case reason == "":
			reason = "every step was skipped"
		}
		why, reasons = append(why, h.Host+": "+reason), append(reasons, reason)
	}
	r.NotRun = strings.Join(why, "; ")
	if len(slices.Compact(reasons)) == 1 && len(r.Hosts) > 1 {
		r.NotRun = "every host: " + reasons[0]
	}
	r.Complete, r.Passed = false, false
}

// RanSteps says whether any of the host's setup, run, observe or check
// steps ran (prerequisites, cleanup and steps skipped do not count).
func (h HostRecord) RanSteps() bool {
	for _, s := range h.Steps {
		if s.Skipped == "" && slices.Contains(Phases[:len(Phases)-1], s.Phase) {
			return true
		}
	}
	return false
}

// WriteJSON writes the record into dir as record.json, atomically: a
// temporary file in the same directory, synced, then renamed into place,
// so a reader sees the old record or the new one, never a torn file.
func (r *Record) WriteJSON(dir string) error {
	return fileio.WriteAtomicFunc(filepath.Join(dir, "record.json"), r.encode)
}

func (r *Record) marshal() ([]byte, error) {
	data, err := json.MarshalIndent(r, "", "  ")
	return append(data, '\n'), err
}

// encode writes the record as indented JSON, one host at a time: a record
// holds up to 16 MiB of output per step and host, and building the whole
// document in memory first (as json.MarshalIndent does) would need several
// times the record's size. The bytes are those MarshalIndent would write.
func (r *Record) encode(w io.Writer) error {
	shallow := *r
	shallow.Hosts = nil
	head, err := json.MarshalIndent(&shallow, "", "  ")
	if err != nil {
		return err
	}
	const slot = "\n  \"hosts\": null"
	at := bytes.Index(head, []byte(slot))
	if at < 0 {
		return errors.New("record: no hosts field")
	}
	if _, err := w.Write(head[:at]); err != nil {
		return err
	}
	if len(r.Hosts) == 0 {
		io.WriteString(w, "\n  \"hosts\": []")
	} else {
		io.WriteString(w, "\n  \"hosts\": [")
		for i := range r.Hosts {
			h, err := json.MarshalIndent(&r.Hosts[i], "    ", "  ")
			if err != nil {
				return err
			}
			if i > 0 {
				io.WriteString(w, ",")
			}
			io.WriteString(w, "\n    ")
			if _, err := w.Write(h); err != nil {
				return err
			}
		}
		io.WriteString(w, "\n  ]")
	}
	if _, err := w.Write(head[at+len(slot):]); err != nil {
		return err
	}
	_, err = io.WriteString(w, "\n")
	return err
}

// Outcome is the step in a few words: "ok", "skipped: why", or its problem.
func (s *StepRecord) Outcome() string {
	switch {
	case s.Skipped != "":
		return "skipped: " + s.Skipped
	case s.Problem != "" && s.OutputCut != "":
		return s.Problem + " (" + s.OutputCut + ")"
	case s.Problem != "":
		return s.Problem
	case s.OutputCut != "":
		return "ok (" + s.OutputCut + ")"
	}
	return "ok"
}
