package runbooks

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/probes/remote"
	"github.com/gpulab/gpulab/probes/report"
	"github.com/gpulab/gpulab/step"
	"github.com/gpulab/gpulab/step/parse"
)

// HostRun is a runbook's outcome on one host.
type HostRun struct {
	Host string `json:"host"`
	orchestrator.Via
	Class    orchestrator.Class `json:"class"` // how reaching the host went
	Err      string             `json:"error,omitempty"`
	Steps    []StepRun          `json:"steps"`
	Verdicts []step.Verdict     `json:"verdicts"`
}

// StepRun is one step on one host.
type StepRun struct {
	ID       string             `json:"id"`
	Command  string             `json:"command"`
	Class    orchestrator.Class `json:"class"`
	ExitCode int                `json:"exit_code"`
	Problem  string             `json:"problem,omitempty"`
	Value    any                `json:"facts,omitempty"`
	ParseErr string             `json:"parse_error,omitempty"`
	// Cut says the output was cut at the limit: the checks read only its
	// beginning, and none of them passes on it.
	Cut    string `json:"output_cut,omitempty"`
	Output string `json:"-"`
}

// RunOptions shape a run.
type RunOptions struct {
	// Yes confirms dangerous steps; without it they are skipped.
	Yes bool
	// Events, when set, receives the engine's progress (closed at the end).
	Events chan<- orchestrator.Event
	// Params are the runbook's parameter values (Bind); a step whose
	// parameter has no value is skipped.
	Params map[string]string
	// OnHost, when set, is called with each host's run as soon as it is
	// complete (from the engine's goroutines: it must be safe for that).
	OnHost func(i int, r HostRun)
	// ExpectArgs are a host's probe arguments from the inventory
	// (--expect), for the probe steps; nil: none.
	ExpectArgs func(host string) []string
	// Prober installs gpulab's probe for the probe steps (remote.Prober:
	// the embedded build); nil: a probe step is UNKNOWN, saying why.
	Prober *remote.Prober
}

// Run runs rb on every target over one connection per host and judges its
// checks. A host that cannot be reached gets UNKNOWN verdicts with the
// reason; it never stops the others.
func Run(ctx context.Context, e *orchestrator.Engine, targets []orchestrator.Target, rb Runbook, o RunOptions) []HostRun {
	runs := make([]HostRun, len(targets))
	var emit func(orchestrator.Event)
	if o.Events != nil {
		defer close(o.Events)
		emit = func(ev orchestrator.Event) { o.Events <- ev }
	}
	// Steps that run once run on the first host reached, in selection
	// order: the first host unreachable, they run on the next.
	first := orchestrator.NewFailoverFirst(len(targets))
	lastFirst := -1 // the last step that runs once: the elected host settles after it
	for k, s := range rb.Steps {
		if s.Hosts == "first" {
			lastFirst = k
		}
	}
	hosts := e.ForEach(ctx, targets, first.Follow(emit), func(i int, t orchestrator.Target, conn *orchestrator.Conn, hr *orchestrator.HostResult) {
		runs[i] = HostRun{Host: t.Name, Via: t.Via()}
		inputs := map[string]step.Input{}
		for k, s := range rb.Steps {
			if s.Hosts == "first" && first.HandedOn(i) {
				// This host was lost in an earlier cluster-wide step: the
				// rest of them are not this host's to skip, they did not
				// run here.
				why := "did not run: the host was lost in an earlier cluster-wide step (the next host reached runs them)"
				runs[i].Steps = append(runs[i].Steps, StepRun{ID: s.ID, Command: s.Command, ExitCode: -1, Class: orchestrator.Lost, Problem: why})
				inputs[s.ID] = step.Input{Step: s.ID, Problem: why, Class: orchestrator.Lost, ExitCode: -1}
				continue
			}
			if s.Hosts == "first" && !first.Is(ctx, i) {
				sr := StepRun{ID: s.ID, Command: s.Command, ExitCode: -1, Class: orchestrator.OK, Problem: "runs on the first host only"}
				runs[i].Steps = append(runs[i].Steps, sr)
				inputs[s.ID] = step.Input{Step: s.ID, Problem: "runs on the first host only", Skip: true}
				continue
			}
			sr, in := runStep(ctx, conn, t, s, o)
			runs[i].Steps = append(runs[i].Steps, sr)
			inputs[s.ID] = in
			if s.Hosts == "first" {
				switch {
				case sr.Class == orchestrator.Lost || sr.Class == orchestrator.TimeoutCommand || sr.Class == orchestrator.Inactive:
					// Lost or timed out in a cluster-wide step: the next
					// host reached runs them all again. (A step refused
					// or not confirmed here would be so on any host.)
					first.Settle(i, false)
				case k == lastFirst:
					first.Settle(i, true)
				}
			}
			// The host's class is the worst thing that happened to it
			// (Class.HostFault), not a command's exit status.
			if sr.Class.HostFault() && sr.Class > hr.Class {
				hr.Class = sr.Class
				if hr.Err == "" {
					hr.Err = "step " + s.ID + ": " + sr.Problem
				}
			}
		}
		runs[i].Verdicts = judgeAll(rb, inputs)
		if o.OnHost != nil {
			r := runs[i]
			r.Host, r.Class, r.Err = t.Name, hr.Class, hr.Err
			o.OnHost(i, r)
		}
	})
	for i, h := range hosts {
		runs[i].Host, runs[i].Class, runs[i].Err = h.Host, h.Class, h.Err
		if runs[i].Verdicts == nil { // never connected
			runs[i] = Unreached(rb, h)
			if o.OnHost != nil {
				o.OnHost(i, runs[i])
			}
		}
	}
	return runs
}

// Unreached is the run of a host that was never reached (its dial failed,
// or its name could not be resolved): every check UNKNOWN, saying why.
func Unreached(rb Runbook, h orchestrator.HostResult) HostRun {
	inputs := map[string]step.Input{}
	for _, s := range rb.Steps {
		inputs[s.ID] = step.Input{Step: s.ID, Problem: fmt.Sprintf("did not run: host %s (%s)", h.Class, h.Err), Class: h.Class, ExitCode: -1}
	}
	return HostRun{Host: h.Host, Via: h.Via, Class: h.Class, Err: h.Err, Steps: []StepRun{}, Verdicts: judgeAll(rb, inputs)}
}

func judgeAll(rb Runbook, inputs map[string]step.Input) []step.Verdict {
	out := make([]step.Verdict, 0, len(rb.Checks))
	for _, c := range rb.Checks {
		in := make([]step.Input, len(c.Uses))
		for k, u := range c.Uses {
			in[k] = inputs[u]
		}
		out = append(out, step.Judge(c, in))
	}
	return out
}

func runStep(ctx context.Context, conn *orchestrator.Conn, t orchestrator.Target, s Step, o RunOptions) (StepRun, step.Input) {
	sr := StepRun{ID: s.ID, Command: s.Command, ExitCode: -1}
	in := step.Input{Step: s.ID}
	if s.Dangerous && !o.Yes {
		sr.Problem = "skipped: it changes the host and was not confirmed (--yes)"
		sr.Class = orchestrator.Cancelled
		in.Problem = "was skipped (dangerous, not confirmed)"
		return sr, in
	}
	if s.Probe {
		return runProbeStep(ctx, conn, t, s, o)
	}
	line, missing, err := step.Expand(s.Command, o.Params)
	if err != nil {
		sr.Problem, sr.Class = "refused: "+err.Error(), orchestrator.Error
		in.Problem, in.Class = "was refused: "+err.Error(), orchestrator.Error
		return sr, in
	}
	if len(missing) > 0 {
		sr.Problem, sr.Class = "skipped: "+step.MissingParams(missing), orchestrator.OK
		in.Problem, in.Skip = "was skipped: "+step.MissingParams(missing), true
		return sr, in
	}
	r := step.RunCommand(ctx, conn, t, s.ID, line, s.Needs, s.Timeout.Duration)
	sr.Class, sr.ExitCode, sr.Output, sr.Problem, sr.Cut = r.Class, r.ExitCode, r.Stdout, r.Problem, r.Cut
	var perr error
	if s.Parser != "" && (r.Class == orchestrator.OK || sr.Output != "") {
		k, _ := parse.Lookup(s.Parser)
		if sr.Value, perr = k.Parse(sr.Output); perr != nil {
			sr.ParseErr = perr.Error()
		}
	}
	return sr, step.Read(s.ID, s.Parser, r, sr.Value, perr)
}

// runProbeStep pushes gpulab's probe to the host, runs it with the
// step's window and reads its snapshot: the step's input.
func runProbeStep(ctx context.Context, conn *orchestrator.Conn, t orchestrator.Target, s Step, o RunOptions) (StepRun, step.Input) {
	sr := StepRun{ID: s.ID, Command: "gpulab probe", ExitCode: -1}
	if s.Window.Duration > 0 {
		sr.Command += " --window " + s.Window.Duration.String()
	}
	in := step.Input{Step: s.ID}
	if o.Prober == nil {
		// Not the host's fault: this run has no probe to give it.
		sr.Problem, sr.Class = "not run: this run has no probe to push", orchestrator.OK
		in.Problem = "was not run: this run has no probe to push"
		return sr, in
	}
	installed, class, err := o.Prober.Install(ctx, conn, s.Timeout.Duration)
	if err != nil {
		sr.Problem, sr.Class = "the probe could not be installed: "+err.Error(), class
		in.Problem, in.Class = "was not run: the probe could not be installed: "+err.Error(), class
		return sr, in
	}
	args := []string{"--host", t.Name}
	if s.Window.Duration > 0 {
		args = append(args, "--window", s.Window.Duration.String())
	}
	if o.ExpectArgs != nil {
		args = append(args, o.ExpectArgs(t.Name)...)
	}
	timeout := s.Timeout.Duration
	if timeout == 0 {
		timeout = DefaultProbeTimeout
	}
	r := step.RunCommand(ctx, conn, t, s.ID, installed.Line(o.Prober, true, args...), s.Needs, timeout+s.Window.Duration)
	sr.Class, sr.ExitCode, sr.Output, sr.Problem, sr.Cut = r.Class, r.ExitCode, r.Stdout, r.Problem, r.Cut
	installed.RemoveIfStopped(ctx, conn, r.Class)
	var snap *report.Snapshot
	var perr error
	if r.Class == orchestrator.OK || sr.Output != "" {
		if snap, perr = remote.Decode([]byte(sr.Output)); perr != nil {
			sr.ParseErr = perr.Error()
		} else {
			sr.Value = snap
		}
	}
	if err := remote.WrongHost(snap, t.Name); err != nil {
		perr, snap = err, nil
		sr.Value, sr.ParseErr = nil, perr.Error()
	}
	var value any
	if snap != nil {
		value = snap
	}
	return sr, step.Read(s.ID, step.ProbeInput, r, value, perr)
}

// Folded is one check's verdicts with identical hosts folded.
type Folded struct {
	Check  string        `json:"check"`
	Title  string        `json:"title"`
	Groups []FoldedGroup `json:"groups"`
}

// FoldedGroup is the hosts that got the same verdict with the same facts.
type FoldedGroup struct {
	Hosts   string      `json:"hosts"` // node set
	Count   int         `json:"count"`
	Status  step.Status `json:"status"`
	Summary string      `json:"summary"`
	Hint    string      `json:"hint,omitempty"`
	// Facts are the evidence of a verdict that is not PASS, the same on
	// every host of the group (hosts whose facts differ fold apart): what
	// the operator reads before acting.
	Facts []string `json:"facts,omitempty"`
}

// Fold folds verdicts at the level of facts: "gpu[01-07]: 8 GPUs, NV12
// full mesh; gpu05: GPU3–GPU5 SYS".
func Fold(rb Runbook, runs []HostRun) []Folded {
	var out []Folded
	for ci, c := range rb.Checks {
		f := Folded{Check: c.ID, Title: c.Title}
		type key struct {
			s           step.Status
			summ, facts string
		}
		groups := map[key][]string{}
		var order []key
		hints := map[key]string{}
		facts := map[key][]string{}
		for _, r := range runs {
			if ci >= len(r.Verdicts) {
				continue
			}
			v := r.Verdicts[ci]
			k := key{s: v.Status, summ: v.Summary}
			var fs []string
			if v.Status != step.Pass {
				fs = verdictFacts(v)
				k.facts = strings.Join(fs, "\n")
			}
			if _, ok := groups[k]; !ok {
				order = append(order, k)
				hints[k], facts[k] = v.Hint, fs
			}
			groups[k] = append(groups[k], r.Host)
		}
		for _, k := range order {
			g := FoldedGroup{Hosts: inventory.FoldNames(groups[k]), Count: len(groups[k]), Status: k.s, Summary: k.summ, Facts: facts[k]}
			if k.s != step.Pass && k.s != step.Skipped {
				// A check that does not apply asks nothing of the operator.
				g.Hint = hints[k]
			}
			f.Groups = append(f.Groups, g)
		}
		out = append(out, f)
	}
	return out
}

// verdictFacts are a verdict's evidence facts, each once, in order.
func verdictFacts(v step.Verdict) []string {
	var out []string
	for _, e := range v.Evidence {
		if e.Fact != "" && !slices.Contains(out, e.Fact) {
			out = append(out, e.Fact)
		}
	}
	return out
}

// Worst is the most serious status across runs: FAIL, then WARN, UNKNOWN,
// PASS. A run in which no check passed is never PASS: SKIPPED when every
// check was skipped, UNKNOWN when there was no verdict at all (no host, a
// runbook without checks).
func Worst(runs []HostRun) step.Status {
	var all []step.Verdict
	for _, r := range runs {
		all = append(all, r.Verdicts...)
	}
	return step.Worst(all)
}

// HostStatus is one host's status, as Worst judges a run: its most
// serious verdict, never PASS without a check that passed.
func (r HostRun) HostStatus() step.Status { return step.Worst(r.Verdicts) }

// Unreached reports whether the host ran nothing: it could not be
// reached, or its name could not be resolved.
func (r HostRun) Unreached() bool { return r.Class != orchestrator.OK && len(r.Steps) == 0 }

// CutShort reports whether the host's run did not go to its end: it was
// not reached, or its connection was lost (or the run stopped) while its
// steps ran. A command that merely exited non-zero leaves it whole.
func (r HostRun) CutShort() bool { return r.Class != orchestrator.OK }

// Summary is the one line that counts a runbook run's hosts by their
// status, for the command line and the workbench alike, naming the hosts
// that did not pass and, apart, those that were never reached and why:
// "4 hosts: 3 PASS, 1 UNKNOWN (dgx05); not reached: 1 error (dgx05)".
func Summary(runs []HostRun) string {
	order := []step.Status{step.Pass, step.Warn, step.Fail, step.Unknown, step.Skipped}
	by := map[step.Status][]string{}
	var unreached, cut []orchestrator.HostResult
	for _, r := range runs {
		st := r.HostStatus()
		by[st] = append(by[st], r.Host)
		switch {
		case r.Unreached():
			unreached = append(unreached, orchestrator.HostResult{Host: r.Host, Class: r.Class})
		case r.CutShort():
			cut = append(cut, orchestrator.HostResult{Host: r.Host, Class: r.Class})
		}
	}
	var parts []string
	for _, st := range order {
		hosts := by[st]
		if len(hosts) == 0 {
			continue
		}
		p := fmt.Sprintf("%d %s", len(hosts), st)
		if st != step.Pass {
			p += " (" + inventory.FoldNames(hosts) + ")"
		}
		parts = append(parts, p)
	}
	line := text.Plural(len(runs), "host", "hosts") + ": " + strings.Join(parts, ", ")
	if len(unreached) > 0 {
		_, classes, _ := strings.Cut(orchestrator.Summary(unreached), ": ")
		line += "; not reached: " + classes
	}
	if len(cut) > 0 {
		_, classes, _ := strings.Cut(orchestrator.Summary(cut), ": ")
		line += "; cut short: " + classes
	}
	if skipped := skippedChecks(runs); len(skipped) > 0 {
		line += "; not checked: " + strings.Join(skipped, ", ") + " (SKIPPED)"
	}
	if hidden := hiddenUnknown(runs); len(hidden) > 0 {
		line += "; also UNKNOWN: " + strings.Join(hidden, ", ")
	}
	return line
}

// hiddenUnknown are the checks UNKNOWN on a host whose count above is a
// WARN or a FAIL: the host's worst status hides that they were not
// decided, and the exit status (3) would be unexplained.
func hiddenUnknown(runs []HostRun) []string {
	var ids []string
	for _, r := range runs {
		if r.HostStatus() == step.Unknown {
			continue
		}
		for _, v := range r.Verdicts {
			if v.Status == step.Unknown && !slices.Contains(ids, v.Check) {
				ids = append(ids, v.Check)
			}
		}
	}
	return ids
}

// skippedChecks are the checks SKIPPED on some host because their step was
// (a parameter not given, a dangerous step not confirmed), not by design
// (a cluster-wide step that runs on the first host only, a mesh check on a
// host without NVLink): a host's PASS says nothing of them, so the summary
// names them.
func skippedChecks(runs []HostRun) []string {
	var ids []string
	for _, r := range runs {
		for _, v := range r.Verdicts {
			if v.Status == step.Skipped && strings.Contains(v.Summary, " was skipped") && !slices.Contains(ids, v.Check) {
				ids = append(ids, v.Check)
			}
		}
	}
	return ids
}

// AnyVerdict reports whether any host has a verdict at all: a run
// without one (no host, no check) decided nothing.
func AnyVerdict(runs []HostRun) bool {
	return slices.ContainsFunc(runs, func(r HostRun) bool { return len(r.Verdicts) > 0 })
}

// AnyUnknown reports whether any verdict of any host is UNKNOWN: a check
// that could not be decided, for want of evidence.
func AnyUnknown(runs []HostRun) bool {
	for _, r := range runs {
		for _, v := range r.Verdicts {
			if v.Status == step.Unknown {
				return true
			}
		}
	}
	return false
}

// Outcome is a finished runbook run: every selected host's run, in
// selection order, the verdicts folded, and the lines that sum it up, each
// computed here once for whoever shows it (the command line, the
// workbench).
type Outcome struct {
	Runs    []HostRun
	Folded  []Folded
	Worst   step.Status
	Summary string
	// CutShort: some host did not run to its end (not reached, its name
	// not resolved, its connection lost); such a run failed, whatever its
	// checks say, --allow-unknown or not.
	CutShort bool
}

// Execute runs rb on targets (Run) and sums the run up: the counterpart
// of labs.Execute, so that a runbook run has one lifecycle whoever starts
// it.
func Execute(ctx context.Context, e *orchestrator.Engine, targets []orchestrator.Target, rb Runbook, o RunOptions) Outcome {
	runs := Run(ctx, e, targets, rb, o)
	out := Outcome{Runs: runs, Folded: Fold(rb, runs), Worst: Worst(runs), Summary: Summary(runs)}
	for _, r := range runs {
		out.CutShort = out.CutShort || r.CutShort()
	}
	return out
}
