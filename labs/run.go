package labs

import (
	"context"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/probes/remote"
	"github.com/gpulab/gpulab/step"
)

// DefaultStepTimeout bounds a step that names no timeout.
const DefaultStepTimeout = 10 * time.Minute

// CleanupTimeout bounds the cleanup phase after a cancel: cleanup runs on a
// context of its own, so Ctrl-C never skips it.
const CleanupTimeout = 2 * time.Minute

// RunOptions tune a lab run.
type RunOptions struct {
	// Simulated says the hosts are a simulated fleet (gpulab sim): the
	// record says so and claims no maturity above draft.
	Simulated bool
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
	// Reproduce and ReproduceFleet go into the record (Record.Reproduce,
	// Record.ReproduceFleet).
	Reproduce      []string
	ReproduceFleet []string
	// Probe, when set, is installed on each host for the run: it fills
	// the environment declaration and samples the steps that ask for it
	// (Step.Sample). Without it those steps have no samples and say why.
	Probe *remote.Prober
	// ExpectArgs are a host's probe arguments from the inventory's
	// expect (--expect gpus=8,...), for a probe step; nil: none.
	ExpectArgs func(host string) []string
	// Cluster, when set, is the Kubernetes cluster the run's hosts belong
	// to, read with client-go: for the environment declaration (kubectl
	// over SSH on the first host is the fallback) and for the steps that
	// read it (Step.Cluster). ClusterProblem says why there is none when
	// the hosts do belong to one (its kubeconfig could not be loaded).
	Cluster        *cluster.Client
	ClusterProblem string
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
	// GuideEndOfInput is GuideStop because the answers ended (the end of
	// the input they are read from), not because the operator chose it.
	GuideEndOfInput
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

// ReadsCluster says whether any step reads the run's Kubernetes cluster
// with client-go (Step.Cluster).
func (l *Lab) ReadsCluster() bool {
	return slices.ContainsFunc(l.Steps, func(s Step) bool { return s.Cluster != "" })
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
//
// With w, the question about a step waits until every host in the walk
// has reached it (see walk).
func (l *Lab) guide(o RunOptions, w *walk) func(context.Context, Step) GuideAnswer {
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
		if w != nil && !w.arrive(ctx, s.ID) {
			return GuideStop
		}
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
			g.Command, _, _ = step.Expand(cmd, o.Params)
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
	return step.BindParams("lab "+l.ID, l.Params, set)
}

// fillParams puts parameter values into text meant for people (the result
// row), unquoted.
func fillParams(text string, params map[string]string) string {
	for _, name := range step.Placeholders(text) {
		if v := params[name]; v != "" {
			text = strings.ReplaceAll(text, "{{"+name+"}}", v)
		}
	}
	return text
}
