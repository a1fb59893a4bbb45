package labs

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/probes/remote"
	"github.com/gpulab/gpulab/probes/report"
	"github.com/gpulab/gpulab/runbooks"
	"github.com/gpulab/gpulab/runbooks/parse"
)

// DefaultStepTimeout bounds a step that names no timeout.
const DefaultStepTimeout = 10 * time.Minute

// CleanupTimeout bounds the cleanup phase after a cancel: cleanup runs on a
// context of its own, so Ctrl-C never skips it.
const CleanupTimeout = 2 * time.Minute

// RunOptions tune a lab run.
type RunOptions struct {
	// Yes confirms the steps marked dangerous (they change the host).
	Yes bool
	// Solve runs a step's solve command instead of its command, where it
	// has one (fast-forward for demos).
	Solve bool
	// OnEvent, when set, sees the run's progress: steps as they finish on
	// each host and the scores as they change. It is called from the
	// engine's goroutines, one host at a time per host.
	OnEvent func(Event)
	// OnStart, when set, gets the record before anything runs (hosts
	// named, not complete), so that a run killed outright still leaves a
	// record that says it is incomplete.
	OnStart func(*Record)
	// Params are the lab's parameter values (Bind); a step whose
	// parameter has no value is skipped, saying how to give it.
	Params map[string]string
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
	// Guide, when set, makes the run a guided step-through: it is asked
	// before each step of the main phases, once for the whole run (the
	// first host to reach the step asks; the others wait for the answer),
	// whether to run it, skip it or stop. It must return when ctx ends.
	Guide func(ctx context.Context, g GuideStep) GuideAnswer
	// Probe, when set, is installed on each host for the run: it fills
	// the environment declaration and samples the steps that ask for it
	// (Step.Sample). Without it those steps have no samples and say why.
	Probe *remote.Prober
	// Abandon, when set, is the context cleanup runs on after the run's
	// own context ends (by default cleanup outlives a cancel). Cancelling
	// it abandons cleanup: the cleanup commands not run, or cut short, are
	// listed in each host's record (CleanupLeft).
	Abandon context.Context
}

// GuideStep is what a guided run shows before a step.
type GuideStep struct {
	N, Of   int // the step's place among the main phases' steps, from 1
	Phase   string
	Step    Step
	Command string // with the parameters in place (or the PromQL query)
	// Measures are the metrics the step gives, and Criteria the criteria
	// and counterexamples that read them.
	Measures []string
	Criteria []string
}

// GuideAnswer is the operator's choice at a guided step.
type GuideAnswer int

const (
	GuideRun GuideAnswer = iota
	GuideSkip
	GuideStop // end the main phases here; cleanup runs
)

// EventKind says what happened.
type EventKind int

const (
	StepStarted EventKind = iota
	StepFinished
	Sampled // a probe sample of a running step (Step, Sample)
	ScoresChanged
	HostFinished
)

// Event is a lab run's progress on one host.
type Event struct {
	Kind   EventKind
	Index  int // the host's position in the run
	Host   string
	Phase  string
	Step   *StepRecord // StepStarted (command only), StepFinished and Sampled
	Scores []Score     // ScoresChanged and HostFinished
	Sample *Sample     // Sampled
}

// Run runs lab l on every target over one connection per host: the
// prerequisites, then setup, run, observe and check, then cleanup, which
// always runs (after a failed step, a failed prerequisite or a cancel).
// Each host's criteria are scored live as its metrics arrive. The record
// keeps every step's output, so evidence is captured before cleanup.
func Run(ctx context.Context, e *orchestrator.Engine, targets []orchestrator.Target, l *Lab, o RunOptions) *Record {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	rec := newRecord(l, now())
	rec.Params = o.Params
	rec.Guided, rec.Solved = o.Guide != nil, o.Solve && l.HasSolve()
	guide := l.guide(o)
	for _, f := range []*string{&rec.Result.Workload, &rec.Result.Mode, &rec.Result.Request} {
		*f = fillParams(*f, o.Params)
	}
	rec.Hosts = make([]HostRecord, len(targets))
	for i, t := range targets {
		rec.Hosts[i] = HostRecord{Host: t.Name, Metrics: map[string]any{}, MetricErrors: map[string]string{}}
	}
	if o.OnStart != nil {
		o.OnStart(rec)
	}
	var mu sync.Mutex // guards shared (metrics from steps that run on the first host only)
	shared := map[string]any{}
	emit := func(ev Event) {
		if o.OnEvent != nil {
			o.OnEvent(ev)
		}
	}
	hosts := e.ForEach(ctx, targets, nil, func(i int, t orchestrator.Target, conn *orchestrator.Conn, _ *orchestrator.HostResult) {
		h := &rec.Hosts[i]
		h.Host = t.Name
		h.Metrics, h.MetricErrors = map[string]any{}, map[string]string{}
		// The probe is installed once per host, when first needed.
		var probe *remote.Installed
		probeProblem := ""
		installProbe := func() (*remote.Installed, string) {
			if probe == nil && probeProblem == "" {
				if o.Probe == nil {
					probeProblem = "this run has no probe"
				} else if in, _, err := o.Probe.Install(ctx, conn, time.Minute); err != nil {
					probeProblem = "the probe could not be installed: " + err.Error()
				} else {
					probe = in
				}
			}
			return probe, probeProblem
		}
		runStep := func(runCtx context.Context, s Step, phase string) *StepRecord {
			sr := StepRecord{ID: s.ID, Phase: phase, Command: s.Command, ExitCode: -1, Started: now()}
			emit(Event{Kind: StepStarted, Index: i, Host: t.Name, Phase: phase, Step: &sr})
			defer func() {
				sr.Finished = now()
				h.Steps = append(h.Steps, sr)
				emit(Event{Kind: StepFinished, Index: i, Host: t.Name, Phase: phase, Step: &sr})
			}()
			if (s.Hosts == "first" || s.PromQL != "") && i != 0 {
				sr.Skipped = "runs on the first host only"
				return &sr
			}
			if s.Dangerous && !o.Yes {
				sr.Skipped, sr.chosen = "it changes the host and was not confirmed (--yes)", true
				return &sr
			}
			if s.PromQL != "" {
				base := fillParams(s.Prometheus, o.Params)
				if len(runbooks.Placeholders(base)) > 0 {
					sr.Skipped = "no value for the Prometheus URL " + s.Prometheus + " (--set)"
					return &sr
				}
				sr.Command = "PromQL " + s.PromQL + " @ " + base
				if s.Range.Duration > 0 {
					sr.Command += " over " + s.Range.Duration.String()
				}
				res, raw, err := queryPrometheus(runCtx, base, s.PromQL, s.Range.Duration, s.Resolution.Duration, now())
				sr.Stdout = raw
				if err != nil {
					sr.Class, sr.Problem = orchestrator.Error, err.Error()
					return &sr
				}
				sr.Class, sr.ExitCode, sr.value = orchestrator.OK, 0, res
				return &sr
			}
			cmd := s.Command
			if o.Solve && s.Solve != "" {
				cmd, sr.Command = s.Solve, s.Solve
			}
			cmd, missing, err := runbooks.Expand(cmd, o.Params)
			if err != nil {
				sr.Class, sr.Problem = orchestrator.Error, "refused: "+err.Error()
				return &sr
			}
			if len(missing) > 0 {
				sr.Skipped = runbooks.MissingParams(missing)
				return &sr
			}
			sr.Command = cmd // what ran, parameters in place
			var watch *remote.Watch
			if s.Sample.Duration > 0 {
				if in, why := installProbe(); in != nil {
					var first time.Time
					ident := StepRecord{ID: sr.ID, Phase: phase, Command: sr.Command, Started: sr.Started} // sr changes meanwhile
					watch = in.Watch(runCtx, conn, o.Probe, t.Name, s.Sample.Duration, func(snap *report.Snapshot) {
						if snap.NVML.Available {
							if first.IsZero() {
								first = snap.CollectedAt
							}
							smp, step := sampleOf(snap, first), ident
							emit(Event{Kind: Sampled, Index: i, Host: t.Name, Phase: phase, Step: &step, Sample: &smp})
						}
					})
				} else {
					sr.SampleProblem = why
				}
			}
			r := runbooks.RunCommand(runCtx, conn, t, s.ID, cmd, s.Needs, cmp.Or(s.Timeout.Duration, DefaultStepTimeout))
			sr.Class, sr.ExitCode, sr.Stdout, sr.Stderr, sr.Problem, sr.OutputCut = r.Class, r.ExitCode, r.Stdout, r.Stderr, r.Problem, r.Cut
			if watch != nil {
				sr.Samples, sr.SampleProblem = samplesOf(watch.Stop())
			}
			return &sr
		}
		measure := func(s Step, sr *StepRecord) {
			if len(s.Metrics) == 0 {
				return
			}
			if sr.Skipped != "" {
				for m := range s.Metrics {
					h.MetricErrors[m] = "step " + s.ID + " was skipped: " + sr.Skipped
					if sr.chosen {
						h.SkippedMetrics = append(h.SkippedMetrics, m)
					}
				}
				return
			}
			var out any = sr.value
			if s.Parser != "" {
				k, _ := parse.Lookup(s.Parser)
				v, err := k.Parse(sr.Stdout)
				if err != nil {
					sr.ParseError = err.Error()
				}
				out = v
			}
			if sr.Class != orchestrator.OK && sr.Class != orchestrator.Exit {
				for m := range s.Metrics {
					h.MetricErrors[m] = "step " + s.ID + " " + sr.Problem
				}
				return
			}
			vals, errs := l.MeasureStep(s.ID, StepOutput{Out: out, Stdout: sr.Stdout, Stderr: sr.Stderr, ExitCode: sr.ExitCode, Samples: sr.Samples, SampleProblem: sr.SampleProblem, OutputCut: sr.OutputCut})
			for m, v := range vals {
				h.Metrics[m] = v
				if s.Hosts == "first" || s.PromQL != "" {
					mu.Lock()
					shared[m] = v
					mu.Unlock()
				}
			}
			for m, err := range errs {
				why := err.Error()
				if sr.Problem != "" {
					why = "step " + s.ID + " " + sr.Problem + " (" + why + ")"
				}
				h.MetricErrors[m] = why
			}
			l.Derive(h.Metrics, h.MetricErrors, o.Params)
			h.Scores = l.Score(h.Metrics, h.MetricErrors, o.Params, len(targets), false)
			emit(Event{Kind: ScoresChanged, Index: i, Host: t.Name, Scores: h.Scores})
		}

		h.Environment = captureEnvironment(ctx, conn)
		if i == 0 && l.usesKubernetes() {
			rec.Kubernetes = captureKubernetes(ctx, conn, t.Name)
		}
		if o.Probe != nil {
			if in, why := installProbe(); in != nil {
				snap, r := in.Snapshot(ctx, conn, o.Probe, t.Name)
				h.Environment.fromProbe(snap, r)
			} else {
				h.Environment.Probe = why
			}
		}
		before := countStability(ctx, conn)

		// Cleanup always runs, on a context that a cancel does not end.
		defer func() {
			base := context.WithoutCancel(ctx)
			if o.Abandon != nil {
				base = o.Abandon
			}
			cctx, cancel := context.WithTimeout(base, CleanupTimeout)
			defer cancel()
			abandoned := func() bool { return o.Abandon != nil && o.Abandon.Err() != nil }
			// Stability over the run, read before cleanup touches anything;
			// a lab's own metric of the same name wins.
			for m, v := range stabilityMetrics(before, countStability(cctx, conn)) {
				if l.MetricsFrom[m] == "stability" {
					h.Metrics[m] = v
				}
			}
			for _, s := range l.Steps {
				if s.Phase != "cleanup" {
					continue
				}
				if abandoned() {
					line, _, _ := runbooks.Expand(s.Command, o.Params)
					h.CleanupLeft = append(h.CleanupLeft, cmp.Or(line, s.Command))
					continue
				}
				sr := runStep(cctx, s, "cleanup")
				switch {
				case sr.Problem != "" && abandoned():
					h.CleanupLeft = append(h.CleanupLeft, sr.Command+" (cut short)")
				case sr.Problem != "":
					h.CleanupProblems = append(h.CleanupProblems, s.ID+": "+sr.Problem)
				}
			}
			h.CleanupRan = !abandoned()
			if !abandoned() {
				probe.Remove(cctx, conn)
			} else if probe != nil {
				h.CleanupLeft = append(h.CleanupLeft, "the probe's copy on the host (removed by its next run, or by hand)")
			}
		}()

		for k, p := range l.Prerequisites {
			if p.Command == "" {
				h.Prerequisites = append(h.Prerequisites, PrereqRecord{Description: p.Description, Status: "confirm"})
				continue
			}
			sr := runStep(ctx, Step{ID: fmt.Sprintf("prerequisite-%d", k+1), Command: p.Command, Timeout: inventory.Duration{Duration: time.Minute}}, "prerequisite")
			pr := PrereqRecord{Description: p.Description, Command: p.Command, Status: "ok"}
			switch {
			case sr.Problem != "":
				pr.Status, pr.Problem = "failed", sr.Problem
			case p.Expect != "":
				kind, _ := parse.Lookup(p.Parser)
				v, _ := kind.Parse(sr.Stdout)
				cv, _ := asCELValue(v)
				got, err := l.programs[fmt.Sprintf("prerequisite:%d", k)].eval(map[string]any{"out": cv, "stdout": sr.Stdout, "stderr": sr.Stderr, "exit_code": int64(sr.ExitCode)})
				if b, _ := got.(bool); err != nil || !b {
					pr.Status, pr.Problem = "failed", "expected "+p.Expect
					if err != nil {
						pr.Problem += ": " + err.Error()
					}
				}
			}
			h.Prerequisites = append(h.Prerequisites, pr)
			if pr.Status == "failed" && h.Stopped == "" {
				h.Stopped = "prerequisite not met: " + p.Description + " (" + pr.Problem + ")"
			}
		}
		if h.Stopped != "" {
			return // every prerequisite is checked and recorded first
		}
		for _, ph := range Phases[:len(Phases)-1] {
			for _, s := range l.Steps {
				if s.Phase != ph {
					continue
				}
				if ctx.Err() != nil {
					h.Stopped = "interrupted"
					return
				}
				switch guide(ctx, s) {
				case GuideStop:
					if ctx.Err() != nil {
						h.Stopped = "interrupted"
					} else {
						h.Stopped = "stopped by the operator before step " + s.ID
					}
					return
				case GuideSkip:
					sr := StepRecord{ID: s.ID, Phase: ph, Command: s.Command, ExitCode: -1, Started: now(), Finished: now(), Skipped: "skipped by the operator (guided run)", chosen: true}
					h.Steps = append(h.Steps, sr)
					emit(Event{Kind: StepFinished, Index: i, Host: t.Name, Phase: ph, Step: &sr})
					measure(s, &sr)
					continue
				}
				sr := runStep(ctx, s, ph)
				measure(s, sr)
				// Stop-loss: a failed setup or run step ends the main phases;
				// observe and check steps report what they saw and go on.
				if sr.Problem != "" && (ph == "setup" || ph == "run") {
					h.Stopped = "step " + s.ID + " " + sr.Problem
					return
				}
			}
		}
	})
	for i, hr := range hosts {
		h := &rec.Hosts[i]
		h.Host, h.Class, h.Err = hr.Host, hr.Class, hr.Err
		// The host's class is the worst thing that happened to it: a
		// connection lost in a step (or the run cancelled) counts, not a
		// command that merely exited non-zero.
		for _, s := range h.Steps {
			if s.Class >= orchestrator.Lost && s.Class > h.Class {
				h.Class = s.Class
				if h.Err == "" {
					h.Err = "step " + s.ID + ": " + s.Problem
				}
			}
		}
		if h.Metrics == nil {
			h.Metrics, h.MetricErrors = map[string]any{}, map[string]string{}
		}
		if hr.Class != orchestrator.OK && h.Stopped == "" {
			h.Stopped = fmt.Sprintf("host %s: %s", hr.Class, hr.Err)
		}
		for m, v := range shared {
			if _, ok := h.Metrics[m]; !ok {
				h.Metrics[m] = v
				delete(h.MetricErrors, m)
			}
		}
		// A run-wide step (first host only, or a PromQL query) that failed
		// on the first host fails for every host, with its reason.
		if i > 0 {
			for _, s := range l.Steps {
				if s.Hosts != "first" && s.PromQL == "" {
					continue
				}
				for m := range s.Metrics {
					if why, ok := rec.Hosts[0].MetricErrors[m]; ok {
						if _, have := h.Metrics[m]; !have {
							h.MetricErrors[m] = why + " (on " + rec.Hosts[0].Host + ")"
						}
					}
				}
			}
		}
		for m, step := range l.MetricsFrom {
			if _, ok := h.Metrics[m]; !ok && h.MetricErrors[m] == "" {
				switch {
				case step == "stability":
					h.MetricErrors[m] = "this host's kernel log (dmesg) or the driver's GPU list could not be read before and after the run"
				case h.Stopped != "":
					h.MetricErrors[m] = "the lab stopped before step " + step + ": " + h.Stopped
				default:
					h.MetricErrors[m] = "step " + step + " gave no value"
				}
			}
		}
		l.Derive(h.Metrics, h.MetricErrors, o.Params)
		for m, from := range l.MetricsFrom {
			if _, ok := h.Metrics[m]; !ok && from == "derived" && h.MetricErrors[m] == "" {
				h.MetricErrors[m] = "its inputs were not all measured"
			}
		}
		sort.Strings(h.SkippedMetrics)
		h.Scores = l.scoreAll(h.Metrics, h.MetricErrors, h.SkippedMetrics, o.Params, len(targets), true)
		h.Passed = Passed(h.Scores)
		emit(Event{Kind: HostFinished, Index: i, Host: h.Host, Scores: h.Scores})
	}
	rec.finish(now(), ctx.Err() != nil)
	return rec
}

// HasSolve says whether any step has a solve command (--solve changes
// something).
func (l *Lab) HasSolve() bool {
	for _, s := range l.Steps {
		if s.Solve != "" {
			return true
		}
	}
	return false
}

// guide returns the run's step gate: without o.Guide every step runs;
// with it, the operator is asked once per step for the whole run.
func (l *Lab) guide(o RunOptions) func(context.Context, Step) GuideAnswer {
	if o.Guide == nil {
		return func(context.Context, Step) GuideAnswer { return GuideRun }
	}
	type decision struct {
		once   sync.Once
		answer GuideAnswer
	}
	var main []Step
	for _, ph := range Phases[:len(Phases)-1] {
		for _, s := range l.Steps {
			if s.Phase == ph {
				main = append(main, s)
			}
		}
	}
	decisions := map[string]*decision{}
	for _, s := range main {
		decisions[s.ID] = &decision{}
	}
	return func(ctx context.Context, s Step) GuideAnswer {
		d := decisions[s.ID]
		d.once.Do(func() {
			g := GuideStep{Of: len(main), Phase: s.Phase, Step: s}
			for k, m := range main {
				if m.ID == s.ID {
					g.N = k + 1
				}
			}
			cmd := s.Command
			if o.Solve && s.Solve != "" {
				cmd = s.Solve
			}
			g.Command, _, _ = runbooks.Expand(cmd, o.Params)
			if s.PromQL != "" {
				g.Command = "PromQL " + s.PromQL + " @ " + fillParams(s.Prometheus, o.Params)
			}
			for m := range s.Metrics {
				g.Measures = append(g.Measures, m)
			}
			sort.Strings(g.Measures)
			for _, c := range append(append([]Criterion(nil), l.Criteria...), l.Counter...) {
				if l.reads(c, g.Measures) {
					g.Criteria = append(g.Criteria, c.ID)
				}
			}
			d.answer = GuideStop
			if ctx.Err() == nil {
				d.answer = o.Guide(ctx, g)
			}
		})
		return d.answer
	}
}

// reads says whether criterion c reads any of the metrics, directly or
// through derived metrics.
func (l *Lab) reads(c Criterion, metrics []string) bool {
	p := l.programs["criterion:"+c.ID]
	if p == nil {
		p = l.programs["counterexample:"+c.ID]
	}
	seen := map[string]bool{}
	var visit func(names []string) bool
	visit = func(names []string) bool {
		for _, n := range names {
			if seen[n] {
				continue
			}
			seen[n] = true
			if slices.Contains(metrics, n) {
				return true
			}
			if d := l.programs["derived:"+n]; d != nil && visit(d.reads) {
				return true
			}
		}
		return false
	}
	return p != nil && visit(p.reads)
}

// samplesOf turns a watch's snapshots into samples timed from the first;
// a host without NVML gives none, and the reason.
func samplesOf(w remote.WatchResult) ([]Sample, string) {
	var out []Sample
	for _, s := range w.Snapshots {
		if !s.NVML.Available {
			return nil, "no NVML on the host: " + s.NVML.Error
		}
		out = append(out, sampleOf(s, w.Snapshots[0].CollectedAt))
	}
	if len(out) == 0 && w.Problem == "" {
		return nil, "the step ended before the probe's first sample"
	}
	return out, w.Problem
}

// Bind checks name=value strings against the lab's parameters and returns
// every parameter's value, defaults filled in.
func (l *Lab) Bind(set []string) (map[string]string, error) {
	return runbooks.BindParams("lab "+l.ID, l.Params, set)
}

// fillParams puts parameter values into text meant for people (the result
// row), unquoted.
func fillParams(text string, params map[string]string) string {
	for _, name := range runbooks.Placeholders(text) {
		if v := params[name]; v != "" {
			text = strings.ReplaceAll(text, "{{"+name+"}}", v)
		}
	}
	return text
}
