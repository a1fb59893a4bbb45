package labs

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/probes/remote"
	"github.com/gpulab/gpulab/probes/report"
	"github.com/gpulab/gpulab/step"
	"github.com/gpulab/gpulab/step/parse"
)

// Run runs lab l on every target over one connection per host: the
// prerequisites, then setup, run, observe and check, then cleanup, which
// always runs (after a failed step, a failed prerequisite or a cancel).
// Each host's criteria are scored live as its metrics arrive. The record
// keeps every step's output, so evidence is captured before cleanup.
func Run(ctx context.Context, e *orchestrator.Engine, targets []orchestrator.Target, l *Lab, o RunOptions) *Record {
	r := newRun(ctx, e, l, o, targets)
	if o.OnStart != nil {
		o.OnStart(r.rec)
	}
	var follow func(orchestrator.Event)
	if r.walk != nil {
		follow = r.walk.events
	}
	results := e.ForEach(ctx, targets, r.first.Follow(follow), func(i int, t orchestrator.Target, conn *orchestrator.Conn, _ *orchestrator.HostResult) {
		x := &hostRun{labRun: r, i: i, t: t, conn: conn, h: &r.rec.Hosts[i]}
		x.work()
	})
	for i, hr := range results {
		r.finalize(i, hr)
		if hr.Simulated { // however the host was reached
			r.rec.Simulated, r.rec.Maturity = true, "draft"
		}
	}
	r.rec.finish(r.now(), ctx.Err() != nil)
	return r.rec
}

// labRun is what every host of a run shares.
type labRun struct {
	ctx   context.Context
	lab   *Lab
	o     RunOptions
	rec   *Record
	now   func() time.Time
	guide func(context.Context, Step) GuideAnswer
	walk  *walk // a guided run's hosts in step (nil unguided)
	hosts int

	mu     sync.Mutex     // guards shared
	shared map[string]any // metrics of steps that run on the first host only
	// first elects the first host reached, which runs the steps that run
	// once (hosts = "first", PromQL, cluster readings).
	first *orchestrator.First
}

func newRun(ctx context.Context, e *orchestrator.Engine, l *Lab, o RunOptions, targets []orchestrator.Target) *labRun {
	r := &labRun{ctx: ctx, lab: l, o: o, now: o.Now, hosts: len(targets), shared: map[string]any{}, first: orchestrator.NewFirst(len(targets))}
	if o.Guide != nil {
		window := e.Concurrency
		if window <= 0 {
			window = 64 // the engine's default
		}
		r.walk = newWalk(window, len(targets))
	}
	r.guide = l.guide(o, r.walk)
	if r.now == nil {
		r.now = time.Now
	}
	r.rec = newRecord(l, r.now())
	r.rec.Params = o.Params
	r.rec.Reproduce, r.rec.ReproduceFleet = o.Reproduce, o.ReproduceFleet
	if o.Simulated {
		r.rec.Simulated, r.rec.Maturity = true, "draft"
	}
	r.rec.Guided, r.rec.Solved = o.Guide != nil, o.Solve && l.HasSolve()
	for _, f := range []*string{&r.rec.Result.Workload, &r.rec.Result.Mode, &r.rec.Result.Request} {
		*f = fillParams(*f, o.Params)
	}
	r.rec.Hosts = make([]HostRecord, len(targets))
	for i, t := range targets {
		r.rec.Hosts[i] = HostRecord{Host: t.Name, Via: t.Via(), Metrics: map[string]any{}, MetricErrors: map[string]string{}}
	}
	return r
}

func (r *labRun) emit(ev Event) {
	if r.o.OnEvent != nil {
		r.o.OnEvent(ev)
	}
}

// hostRun is one host's part of a run, on its connection.
type hostRun struct {
	*labRun
	i    int
	t    orchestrator.Target
	conn *orchestrator.Conn
	h    *HostRecord

	probe        *remote.Installed // installed once, when first needed
	probeProblem string
}

// work runs the host's phases: the environment declaration, the
// prerequisites, the main phases, and cleanup, which always runs.
func (x *hostRun) work() {
	x.h.Host = x.t.Name
	x.h.Metrics, x.h.MetricErrors = map[string]any{}, map[string]string{}
	// Last, after cleanup: a connection that died under any command
	// (the environment, a prerequisite, cleanup) cut the host's run short.
	defer func() {
		if !x.conn.Alive() && x.h.Class < orchestrator.Lost {
			x.h.Class, x.h.Err = orchestrator.Lost, "the connection to the host was lost during the run"
		}
	}()
	x.declareEnvironment()
	before := countStability(x.ctx, x.conn)
	defer x.cleanup(before)
	if x.prerequisites() {
		x.mainPhases()
	}
	if x.walk != nil {
		x.walk.leave(x.i) // before cleanup: the next question waits no more for this host
	}
}

func (x *hostRun) installProbe() (*remote.Installed, string) {
	if x.probe == nil && x.probeProblem == "" {
		if x.o.Probe == nil {
			x.probeProblem = "this run has no probe"
		} else if in, _, err := x.o.Probe.Install(x.ctx, x.conn, time.Minute); err != nil {
			x.probeProblem = "the probe could not be installed: " + err.Error()
		} else {
			x.probe = in
		}
	}
	return x.probe, x.probeProblem
}

// declareEnvironment reads the host's environment (and, on the first host
// of a lab that uses Kubernetes, the cluster's) for the record.
func (x *hostRun) declareEnvironment() {
	x.h.Environment = captureEnvironment(x.ctx, x.conn)
	// A simulated host says so in its SSH handshake, whether or not its
	// probe answers (under load it may not, and the record must still say
	// SIMULATED).
	x.h.Environment.Simulated = x.conn.Simulated()
	if x.lab.usesKubernetes() && x.first.Is(x.ctx, x.i) {
		x.declareKubernetes()
	}
	if x.o.Probe != nil {
		if in, why := x.installProbe(); in != nil {
			snap, r := in.Snapshot(x.ctx, x.conn, x.o.Probe, x.t.Name)
			x.h.Environment.fromProbe(snap, r)
		} else {
			x.h.Environment.Probe = why
		}
	}
}

// declareKubernetes reads the cluster with client-go when the run has
// one, else (or when the API server cannot be read from here) with
// kubectl on the first host, which may reach a cluster gpulab cannot.
func (x *hostRun) declareKubernetes() {
	why := x.o.ClusterProblem
	if x.o.Cluster != nil {
		k, err := readKubernetes(x.ctx, x.o.Cluster)
		if err == nil {
			x.rec.Kubernetes = k
			return
		}
		why = "client-go, context " + x.o.Cluster.Context + ": " + err.Error()
	}
	k := captureKubernetes(x.ctx, x.conn, x.t.Name)
	if why != "" {
		k.Error = strings.TrimPrefix(k.Error+"; "+why, "; ")
	}
	x.rec.Kubernetes = k
}

// runStep runs one step (a command, or a PromQL query) and records it.
func (x *hostRun) runStep(ctx context.Context, s Step, phase string) *StepRecord {
	sr := StepRecord{ID: s.ID, Phase: phase, Command: s.Command, ExitCode: -1, Started: x.now()}
	x.emit(Event{Kind: StepStarted, Index: x.i, Host: x.t.Name, Phase: phase, Step: &sr})
	defer func() {
		sr.Finished = x.now()
		x.h.Steps = append(x.h.Steps, sr)
		x.emit(Event{Kind: StepFinished, Index: x.i, Host: x.t.Name, Phase: phase, Step: &sr})
	}()
	switch {
	case (s.Hosts == "first" || s.PromQL != "" || s.Cluster != "") && !x.first.Is(ctx, x.i):
		sr.Skipped = "runs on the first host only"
	case s.Dangerous && !x.o.Yes:
		sr.Skipped, sr.chosen = "it changes the host and was not confirmed (--yes)", true
	case s.PromQL != "":
		x.promql(ctx, s, &sr)
	case s.Cluster != "":
		x.readCluster(ctx, s, &sr)
	case s.Probe:
		x.probeStep(ctx, s, &sr)
	default:
		x.command(ctx, s, phase, &sr)
		x.parse(s, &sr)
	}
	return &sr
}

// parse reads a command step's output with its parser, before the record
// keeps the step: the value for its metrics, and the parser's complaint
// for the record (a metric never reads a value the parser rejected).
func (x *hostRun) parse(s Step, sr *StepRecord) {
	if s.Parser == "" || sr.Skipped != "" || sr.Class != orchestrator.OK && sr.Class != orchestrator.Exit {
		return
	}
	k, _ := parse.Lookup(s.Parser)
	v, err := k.Parse(sr.Stdout)
	sr.value = v
	if err != nil {
		sr.ParseError = err.Error()
	}
}

// probeStep runs gpulab's probe on the host with the step's window: its
// snapshot is the step's value, its JSON the step's output.
func (x *hostRun) probeStep(ctx context.Context, s Step, sr *StepRecord) {
	sr.Command = "gpulab probe"
	args := []string{"--host", x.t.Name}
	if s.Window.Duration > 0 {
		sr.Command += " --window " + s.Window.Duration.String()
		args = append(args, "--window", s.Window.Duration.String())
	}
	if x.o.ExpectArgs != nil {
		args = append(args, x.o.ExpectArgs(x.t.Name)...)
	}
	in, why := x.installProbe()
	if in == nil {
		// Not the host's fault: its metrics are not measured, and say why.
		sr.Skipped = "the probe did not run: " + why
		return
	}
	r := step.RunCommand(ctx, x.conn, x.t, s.ID, in.Line(x.o.Probe, false, args...), s.Needs, cmp.Or(s.Timeout.Duration, DefaultStepTimeout)+s.Window.Duration)
	sr.Class, sr.ExitCode, sr.Stdout, sr.Stderr, sr.Problem, sr.OutputCut = r.Class, r.ExitCode, r.Stdout, r.Stderr, r.Problem, r.Cut
	if r.Class != orchestrator.OK && r.Stdout == "" {
		return
	}
	snap, err := remote.Decode([]byte(r.Stdout))
	if err == nil {
		err = remote.WrongHost(snap, x.t.Name)
	}
	if err != nil {
		sr.ParseError = err.Error()
		return
	}
	sr.value = snap
}

// promql asks Prometheus the step's query, once for the run.
func (x *hostRun) promql(ctx context.Context, s Step, sr *StepRecord) {
	base := fillParams(s.Prometheus, x.o.Params)
	if len(step.Placeholders(base)) > 0 {
		sr.Skipped = "no value for the Prometheus URL " + s.Prometheus + " (--set)"
		return
	}
	sr.Command = "PromQL " + s.PromQL + " @ " + base
	if s.Range.Duration > 0 {
		sr.Command += " over " + s.Range.Duration.String()
	}
	res, raw, err := queryPrometheus(ctx, base, s.PromQL, s.Range.Duration, s.Resolution.Duration, x.now())
	sr.Stdout = raw
	if err != nil {
		sr.Class, sr.Problem = orchestrator.Error, err.Error()
		return
	}
	sr.Class, sr.ExitCode, sr.value = orchestrator.OK, 0, res
}

// command runs the step's command (or its solve), parameters in place,
// with the probe sampling beside it when the step asks.
func (x *hostRun) command(ctx context.Context, s Step, phase string, sr *StepRecord) {
	cmd := s.Command
	if x.o.Solve && s.Solve != "" {
		cmd, sr.Command = s.Solve, s.Solve
	}
	cmd, missing, err := step.Expand(cmd, x.o.Params)
	switch {
	case err != nil:
		sr.Class, sr.Problem = orchestrator.Error, "refused: "+err.Error()
		return
	case len(missing) > 0:
		sr.Skipped = step.MissingParams(missing)
		return
	}
	sr.Command = cmd // what ran, parameters in place
	var watch *remote.Watch
	if s.Sample.Duration > 0 {
		watch = x.sample(ctx, s, phase, sr)
	}
	r := step.RunCommand(ctx, x.conn, x.t, s.ID, cmd, s.Needs, cmp.Or(s.Timeout.Duration, DefaultStepTimeout))
	sr.Class, sr.ExitCode, sr.Stdout, sr.Stderr, sr.Problem, sr.OutputCut = r.Class, r.ExitCode, r.Stdout, r.Stderr, r.Problem, r.Cut
	if watch != nil {
		sr.Samples, sr.SampleProblem = samplesOf(watch.Stop())
	}
}

// sample starts the probe's watch beside the step; nil, with the reason
// in the record, when there is no probe.
func (x *hostRun) sample(ctx context.Context, s Step, phase string, sr *StepRecord) *remote.Watch {
	in, why := x.installProbe()
	if in == nil {
		sr.SampleProblem = why
		return nil
	}
	var first time.Time
	ident := StepRecord{ID: sr.ID, Phase: phase, Command: sr.Command, Started: sr.Started} // sr changes meanwhile
	return in.Watch(ctx, x.conn, x.o.Probe, x.t.Name, s.Sample.Duration, func(snap *report.Snapshot) {
		if snap.NVML.Available {
			if first.IsZero() {
				first = snap.CollectedAt
			}
			smp, step := sampleOf(snap, first), ident
			x.emit(Event{Kind: Sampled, Index: x.i, Host: x.t.Name, Phase: phase, Step: &step, Sample: &smp})
		}
	})
}

// measure computes a step's metrics and rescores the host.
func (x *hostRun) measure(s Step, sr *StepRecord) {
	if len(s.Metrics) == 0 {
		return
	}
	h := x.h
	if sr.Skipped != "" {
		for m := range s.Metrics {
			h.MetricErrors[m] = "step " + s.ID + " was skipped: " + sr.Skipped
			if sr.chosen {
				h.SkippedMetrics = append(h.SkippedMetrics, m)
			}
		}
		return
	}
	if sr.Class != orchestrator.OK && sr.Class != orchestrator.Exit {
		for m := range s.Metrics {
			h.MetricErrors[m] = "step " + s.ID + " " + sr.Problem
		}
		return
	}
	vals, errs := x.lab.MeasureStep(s.ID, StepOutput{Out: sr.value, ParseError: sr.ParseError, Stdout: sr.Stdout, Stderr: sr.Stderr, ExitCode: sr.ExitCode, Samples: sr.Samples, SampleProblem: sr.SampleProblem, OutputCut: sr.OutputCut})
	for m, v := range vals {
		h.Metrics[m] = v
		if s.Hosts == "first" || s.PromQL != "" {
			x.mu.Lock()
			x.shared[m] = v
			x.mu.Unlock()
		}
	}
	for m, err := range errs {
		why := err.Error()
		if sr.Problem != "" {
			why = "step " + s.ID + " " + sr.Problem + " (" + why + ")"
		}
		h.MetricErrors[m] = why
	}
	x.lab.Derive(h.Metrics, h.MetricErrors, x.o.Params)
	h.Scores = x.lab.Score(h.Metrics, h.MetricErrors, x.o.Params, x.hosts, false)
	x.emit(Event{Kind: ScoresChanged, Index: x.i, Host: x.t.Name, Scores: h.Scores})
}

// prerequisites checks and records every prerequisite; it reports whether
// the host may go on to the main phases.
func (x *hostRun) prerequisites() bool {
	ids := prerequisiteIDs(x.lab.Prerequisites)
	for k, p := range x.lab.Prerequisites {
		if p.Command == "" {
			x.h.Prerequisites = append(x.h.Prerequisites, PrereqRecord{Description: p.Description, Status: "confirm"})
			continue
		}
		sr := x.runStep(x.ctx, Step{ID: ids[k], Command: p.Command, Timeout: inventory.Duration{Duration: time.Minute}}, "prerequisite")
		pr := PrereqRecord{Description: p.Description, Command: p.Command, Status: "ok"}
		switch {
		case sr.Problem != "":
			pr.Status, pr.Problem = "failed", sr.Problem
		case p.Expect != "":
			kind, _ := parse.Lookup(p.Parser)
			v, perr := kind.Parse(sr.Stdout)
			if perr != nil {
				// What the parser made of output it could not read is no
				// answer to the expectation, either way.
				pr.Status, pr.Problem = "failed", fmt.Sprintf("the %s parser could not read the output (%s), so %s is not known", p.Parser, orchestrator.FirstLine(perr.Error()), p.Expect)
				break
			}
			cv, _ := asCELValue(v)
			got, err := x.lab.programs[fmt.Sprintf("prerequisite:%d", k)].eval(map[string]any{"out": cv, "stdout": sr.Stdout, "stderr": sr.Stderr, "exit_code": int64(sr.ExitCode)})
			if b, _ := got.(bool); err != nil || !b {
				pr.Status, pr.Problem = "failed", "expected "+p.Expect
				if err != nil {
					pr.Problem += ": " + err.Error()
				}
			}
		}
		x.h.Prerequisites = append(x.h.Prerequisites, pr)
		if pr.Status == "failed" && x.h.Stopped == "" {
			x.h.Stopped = "prerequisite not met: " + p.Description + " (" + pr.Problem + ")"
		}
	}
	return x.h.Stopped == "" // every prerequisite is checked and recorded first
}

// mainPhases runs setup, run, observe and check in order, asking the
// guide (if any) before each step; a failed setup or run step ends them
// (stop-loss), observe and check steps report what they saw and go on.
func (x *hostRun) mainPhases() {
	for _, ph := range Phases[:len(Phases)-1] {
		for _, s := range x.lab.Steps {
			if s.Phase != ph {
				continue
			}
			if x.ctx.Err() != nil {
				x.h.Stopped = "interrupted"
				return
			}
			switch answer := x.guide(x.ctx, s); answer {
			case GuideStop, GuideEndOfInput:
				x.h.Stopped = "stopped by the operator before step " + s.ID
				switch {
				case x.ctx.Err() != nil:
					x.h.Stopped = "interrupted"
				case answer == GuideEndOfInput:
					x.h.Stopped = "the answers ended (end of input) before step " + s.ID
				}
				return
			case GuideSkip:
				sr := StepRecord{ID: s.ID, Phase: ph, Command: s.Command, ExitCode: -1, Started: x.now(), Finished: x.now(), Skipped: "skipped by the operator (guided run)", chosen: true}
				x.h.Steps = append(x.h.Steps, sr)
				x.emit(Event{Kind: StepFinished, Index: x.i, Host: x.t.Name, Phase: ph, Step: &sr})
				x.measure(s, &sr)
				continue
			}
			sr := x.runStep(x.ctx, s, ph)
			x.measure(s, sr)
			if sr.Problem != "" && (ph == "setup" || ph == "run") {
				x.h.Stopped = "step " + s.ID + " " + sr.Problem
				return
			}
		}
	}
}

// cleanup runs the lab's cleanup steps on a context a cancel of the run
// does not end (Abandon's, when set: cancelling it abandons cleanup, and
// what was not run is recorded), after reading the stability counters.
func (x *hostRun) cleanup(before kernelState) {
	base := context.WithoutCancel(x.ctx)
	if x.o.Abandon != nil {
		base = x.o.Abandon
	}
	cctx, cancel := context.WithTimeout(base, CleanupTimeout)
	defer cancel()
	abandoned := func() bool { return x.o.Abandon != nil && x.o.Abandon.Err() != nil }
	h := x.h
	// Stability over the run, read before cleanup touches anything; a
	// lab's own metric of the same name wins. A host where no step ran
	// has nothing to measure it over.
	// Only a host where a step ran has a run to count over; after an
	// interrupt the operator is waiting, and a hung host would hold them
	// the read's whole 30 s: it gets 5.
	var after kernelState
	if h.RanSteps() {
		sctx, cancelRead := cctx, context.CancelFunc(func() {})
		if x.ctx.Err() != nil {
			sctx, cancelRead = context.WithTimeout(cctx, 5*time.Second)
		}
		after = countStability(sctx, x.conn)
		cancelRead()
	}
	metrics, why := stabilityMetrics(before, after)
	for m, v := range metrics {
		if x.lab.MetricsFrom[m] == "stability" && h.RanSteps() {
			h.Metrics[m] = v
		}
	}
	for m, reason := range why {
		if _, have := h.Metrics[m]; !have && x.lab.MetricsFrom[m] == "stability" && h.RanSteps() {
			h.MetricErrors[m] = reason
		}
	}
	for _, s := range x.lab.Steps {
		if s.Phase != "cleanup" {
			continue
		}
		if abandoned() {
			line, _, _ := step.Expand(s.Command, x.o.Params)
			h.CleanupLeft = append(h.CleanupLeft, cmp.Or(line, s.Command))
			continue
		}
		sr := x.runStep(cctx, s, "cleanup")
		switch {
		case sr.Problem != "" && abandoned():
			h.CleanupLeft = append(h.CleanupLeft, sr.Command+" (cut short)")
		case sr.Problem != "":
			h.CleanupProblems = append(h.CleanupProblems, s.ID+": "+sr.Problem)
		}
	}
	h.CleanupRan = !abandoned()
	switch {
	case !abandoned():
		x.probe.Remove(cctx, x.conn)
	case x.probe != nil:
		h.CleanupLeft = append(h.CleanupLeft, "the probe's copy on the host (removed by its next run, or by hand)")
	}
}

// finalize closes host i's record once every host is done: its class, the
// run-wide metrics it shares, the reasons for metrics it lacks, and its
// final scores.
func (r *labRun) finalize(i int, hr orchestrator.HostResult) {
	h := &r.rec.Hosts[i]
	seen, seenErr := h.Class, h.Err // what the host's own run saw (a lost connection)
	h.Host, h.Class, h.Err = hr.Host, hr.Class, hr.Err
	if seen > h.Class {
		h.Class, h.Err = seen, seenErr
	}
	// The host's class is the worst thing that happened to it
	// (Class.HostFault), as in a runbook's run; not a command's exit
	// status, which the criteria judge.
	for _, s := range h.Steps {
		if s.Class.HostFault() && s.Class > h.Class {
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
	// A host whose own run was cut short (not reached, lost, stopped)
	// takes no run-wide value from the first host: its criteria would pass
	// on a run it never had. They read UNKNOWN, "did not run", instead.
	for m, v := range r.shared {
		if _, ok := h.Metrics[m]; !ok && h.Stopped == "" {
			h.Metrics[m] = v
			delete(h.MetricErrors, m)
		}
	}
	if i != r.firstHost() {
		r.inheritRunWideErrors(h)
	}
	r.explainMissing(h)
	sort.Strings(h.SkippedMetrics)
	h.Scores = r.lab.scoreAll(h.Metrics, h.MetricErrors, h.SkippedMetrics, r.o.Params, r.hosts, true)
	// A host cut short (lost, not reached) did not pass, whatever the
	// steps it ran said.
	h.Passed = Passed(h.Scores) && h.Class == orchestrator.OK
	r.emit(Event{Kind: HostFinished, Index: i, Host: h.Host, Scores: h.Scores})
}

// inheritRunWideErrors: a run-wide step (first host only, or a PromQL
// query) that failed on the first host fails for every host, with its
// reason.
func (r *labRun) inheritRunWideErrors(h *HostRecord) {
	first := r.rec.Hosts[r.firstHost()]
	for _, s := range r.lab.Steps {
		if s.Hosts != "first" && s.PromQL == "" {
			continue
		}
		for m := range s.Metrics {
			if why, ok := first.MetricErrors[m]; ok {
				if _, have := h.Metrics[m]; !have {
					h.MetricErrors[m] = why + " (on " + first.Host + ")"
				}
			}
		}
	}
}

// firstHost is the index of the host that ran the run's once-only steps
// (0 when no host was reached).
func (r *labRun) firstHost() int { return max(r.first.Elected(), 0) }

// explainMissing gives every metric the host lacks a reason, and derives
// the derived metrics.
func (r *labRun) explainMissing(h *HostRecord) {
	for m, step := range r.lab.MetricsFrom {
		if _, ok := h.Metrics[m]; !ok && h.MetricErrors[m] == "" {
			switch {
			case step == "stability" && !h.RanSteps():
				h.MetricErrors[m] = "not measured: no step ran on this host"
				if h.Stopped != "" {
					h.MetricErrors[m] += " (" + h.Stopped + ")"
				}
			case step == "stability":
				h.MetricErrors[m] = "this host's kernel log (dmesg) or the driver's GPU list could not be read before and after the run"
			case h.Stopped != "":
				h.MetricErrors[m] = "step " + step + " did not run: " + h.Stopped
			default:
				h.MetricErrors[m] = "step " + step + " gave no value"
			}
		}
	}
	r.lab.Derive(h.Metrics, h.MetricErrors, r.o.Params)
	for m, from := range r.lab.MetricsFrom {
		if _, ok := h.Metrics[m]; !ok && from == "derived" && h.MetricErrors[m] == "" {
			h.MetricErrors[m] = "its inputs were not all measured"
		}
	}
}
