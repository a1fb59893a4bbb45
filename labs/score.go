package labs

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/step"
)

// Status is a criterion's state: PENDING while its evidence is still to
// come, then PASS, FAIL, WARN, SKIPPED or UNKNOWN (the same words as a
// runbook's verdicts). Missing evidence is UNKNOWN, never PASS.
type Status = step.Status

// Pending is a criterion whose metrics are not all measured yet.
const Pending Status = "PENDING"

// Score is one criterion's verdict with what it rests on.
type Score struct {
	ID          string `json:"id"`
	Description string `json:"description"`
	Counter     bool   `json:"counterexample"`
	Impact      string `json:"impact"`
	Expr        string `json:"expr"`
	Status      Status `json:"status"`
	// Values are the metrics the expression read, as measured.
	Values map[string]any `json:"values"`
	// Evidence names the step that measured each metric read.
	Evidence map[string]string `json:"evidence"`
	Summary  string            `json:"summary"`
	Waiver   string            `json:"waiver,omitempty"`
}

// Kind is the criterion's weight, and "counterexample" for a counter
// criterion: "critical, counterexample".
func (s Score) Kind() string {
	if !s.Counter {
		return s.Impact
	}
	if s.Impact == "" {
		return "counterexample"
	}
	return s.Impact + ", counterexample"
}

// Measure computes the metrics a step defines from its parsed output
// (nil when it has no parser or the parser found nothing), its stdout and
// exit code. A metric that cannot be computed is left out, with why.
func (l *Lab) Measure(stepID string, out any, stdout string, exitCode int) (map[string]any, map[string]error) {
	return l.MeasureStep(stepID, StepOutput{Out: out, Stdout: stdout, ExitCode: exitCode})
}

// StepOutput is what a step's metrics read.
type StepOutput struct {
	Out any // the parser's value (or a PromQL step's answer)
	// ParseError is the parser's complaint about the output: a metric
	// that reads out (or checks) is then not computed, for the value is
	// what the parser made of output it could not read, zeros and empty
	// lists that would read as "no error".
	ParseError     string
	Stdout, Stderr string
	ExitCode       int
	Samples        []Sample // probe samples taken while it ran
	// SampleProblem says why a sampling step has no samples (no probe,
	// no NVML on the host); metrics that fail without them say so.
	SampleProblem string
	// OutputCut says the output was cut at its limit: a metric that reads
	// the output (out, stdout, stderr) is then not computed, for the end
	// it would need is missing.
	OutputCut string
}

// command is how the step's command ended, as the step library's rules
// read it: measured steps ran on the host, so they exited 0 or did not.
func (so StepOutput) command() step.CommandResult {
	r := step.CommandResult{Class: orchestrator.OK, ExitCode: so.ExitCode, Stdout: so.Stdout, Stderr: so.Stderr, Cut: so.OutputCut}
	if so.ExitCode != 0 {
		r.Class, r.Problem = orchestrator.Exit, fmt.Sprintf("exited %d", so.ExitCode)
	}
	return r
}

// MeasureStep computes a step's metrics from its output.
func (l *Lab) MeasureStep(stepID string, so StepOutput) (map[string]any, map[string]error) {
	vals, errs := map[string]any{}, map[string]error{}
	var st *Step
	for i := range l.Steps {
		if l.Steps[i].ID == stepID {
			st = &l.Steps[i]
		}
	}
	if st == nil || len(st.Metrics) == 0 {
		return vals, errs
	}
	cv, err := asCELValue(so.Out)
	samples, serr := asCELValue(so.Samples)
	if err != nil || serr != nil {
		for m := range st.Metrics {
			errs[m] = cmp.Or(err, serr)
		}
		return vals, errs
	}
	if samples == nil {
		samples = []any{}
	}
	checks := map[string]any{}
	// The step library's rules, the same a runbook names, judge the
	// parser's value; metrics read their verdicts as checks, so that a lab
	// and a runbook judge alike.
	undecided := map[string]string{}
	var perr error
	if so.ParseError != "" {
		perr = errors.New(so.ParseError)
	}
	in := step.Read(stepID, st.input(), so.command(), so.Out, perr)
	judged := step.JudgeOutput(st.input(), in)
	if st.Probe {
		judged = step.JudgeProbe(in)
	}
	for name, v := range judged {
		if v.Status == step.Unknown {
			// An undecided check is no value: a metric reading it is not
			// measured (it would compare "UNKNOWN" with "PASS" and fail).
			undecided[name] = v.Summary
			continue
		}
		checks[name] = map[string]any{"status": string(v.Status), "summary": v.Summary}
	}
	vars := map[string]any{"out": cv, "stdout": so.Stdout, "stderr": so.Stderr, "exit_code": int64(so.ExitCode), "samples": samples, "checks": checks}
	for m := range st.Metrics {
		prg := l.programs["metric:"+m]
		if err := so.noEvidenceFor(prg, stepID, st.input()); err != nil {
			errs[m] = err
			continue
		}
		v, err := prg.eval(vars)
		switch {
		case err != nil && prg.vars["checks"] && undecidedIn(prg.expr, undecided) != "":
			name := undecidedIn(prg.expr, undecided)
			errs[m] = fmt.Errorf("the check %s is UNKNOWN: %s", name, undecided[name])
		case err != nil:
			errs[m] = err
		case v == nil:
			errs[m] = fmt.Errorf("the output has no value for it (null)")
		default:
			vals[m] = v
		}
	}
	return vals, errs
}

// noEvidenceFor is why what a step gave is no evidence for a metric that
// reads what prg reads, nil when it is: no samples for one that reads
// samples, output the parser could not read, output cut at its limit, or
// what a command that failed printed (unless the metric reads exit_code,
// and so says how it takes a failure).
func (so StepOutput) noEvidenceFor(prg *program, stepID, parser string) error {
	reads := prg.vars
	switch {
	case reads["samples"] && len(so.Samples) == 0:
		// An empty list would make filter(...).size() a confident 0: no
		// samples is no evidence.
		return fmt.Errorf("no probe samples: %s", cmp.Or(so.SampleProblem, "the step "+stepID+" was not sampled"))
	case so.ParseError != "" && (reads["out"] || reads["checks"]):
		return fmt.Errorf("the %s parser could not read the step's output (%s): a value read from it would be no evidence", parser, orchestrator.FirstLine(so.ParseError))
	case so.OutputCut != "" && (reads["out"] || reads["stdout"] || reads["stderr"] || reads["checks"]):
		return fmt.Errorf("the step's output was cut (%s): a value read from part of it could be wrong", so.OutputCut)
	case so.ExitCode != 0 && !reads["exit_code"] && (reads["out"] || reads["stdout"] || reads["stderr"]):
		// What a failed command printed can read as a pass ("ALL
		// PASSED", a table of zeros, an empty list). Checks are judged
		// by their rules, which see failures where they mean one.
		return fmt.Errorf("the step's command exited %d: what it printed is no evidence (a metric that reads exit_code may judge a failed command)", so.ExitCode)
	}
	return nil
}

// undecidedIn names the undecided check an expression reads, or "".
func undecidedIn(expr string, undecided map[string]string) string {
	for _, name := range slices.Sorted(maps.Keys(undecided)) {
		if strings.Contains(expr, "'"+name+"'") || strings.Contains(expr, `"`+name+`"`) {
			return name
		}
	}
	return ""
}

// Score judges every criterion and counterexample on the metrics measured
// so far. final says whether more evidence can still come: before the end
// a criterion lacking a metric is PENDING, after it UNKNOWN. why gives,
// for a metric that could not be measured, the reason.
//
// params are the run's parameter values (Bind).
func (l *Lab) Score(metrics map[string]any, why map[string]string, params map[string]string, hosts int, final bool) []Score {
	return l.scoreAll(metrics, why, nil, params, hosts, final)
}

// scoreAll is Score where skipped names the metrics the operator chose not
// to measure: a criterion that lacks only those is SKIPPED, not UNKNOWN.
func (l *Lab) scoreAll(metrics map[string]any, why map[string]string, skipped []string, params map[string]string, hosts int, final bool) []Score {
	var out []Score
	for _, set := range []struct {
		table   string
		cs      []Criterion
		counter bool
	}{{"criterion", l.Criteria, false}, {"counterexample", l.Counter, true}} {
		for _, c := range set.cs {
			out = append(out, l.score(l.programs[set.table+":"+c.ID], c, set.counter, metrics, why, skipped, params, hosts, final))
		}
	}
	return out
}

func (l *Lab) score(p *program, c Criterion, counter bool, metrics map[string]any, why map[string]string, skipped []string, params map[string]string, hosts int, final bool) Score {
	s := Score{ID: c.ID, Description: c.Description, Counter: counter, Impact: c.Impact, Expr: c.Expr,
		Values: map[string]any{}, Evidence: map[string]string{}, Waiver: c.Waiver}
	var missing []string
	for _, m := range p.reads {
		s.Evidence[m] = "step " + l.MetricsFrom[m]
		if v, ok := metrics[m]; ok {
			s.Values[m] = v
		} else {
			missing = append(missing, m)
		}
	}
	paramsGiven := true
	for _, name := range p.params {
		paramsGiven = paramsGiven && params[name] != ""
	}
	if len(missing) > 0 && paramsGiven {
		// The metrics at hand may decide it already: false && ?, true || ?.
		vars := map[string]any{"metrics": metrics, "params": orEmpty(params), "hosts": int64(hosts)}
		if ok, decided := p.decide(vars, missing); decided {
			v := verdict(s, c, ok, measured(s.Values)+"against "+c.Expr+" (decided without "+strings.Join(prefixed(missing), ", ")+")")
			// A pass needs a metric that was measured: "hosts >= 1 ||
			// metrics.gpus >= 8" decided by the host count alone has
			// measured nothing.
			if v.Status != step.Pass || len(s.Values) > 0 {
				return v
			}
		}
	}
	if len(missing) > 0 {
		if !final {
			s.Status, s.Summary = Pending, "waiting for "+strings.Join(prefixed(missing), ", ")
			return s
		}
		s.Status, s.Summary = l.unmeasured(missing, why, skipped)
		return s
	}
	for _, name := range p.params {
		if params[name] == "" {
			s.Status, s.Summary = step.Unknown, "no value for params."+name+" (--set "+name+"=...)"
			return s
		}
	}
	v, err := p.eval(map[string]any{"metrics": metrics, "params": orEmpty(params), "hosts": int64(hosts)})
	if err != nil {
		s.Status, s.Summary = step.Unknown, "cannot evaluate "+c.Expr+": "+err.Error()
		return s
	}
	ok, isBool := v.(bool)
	if !isBool {
		s.Status, s.Summary = step.Unknown, fmt.Sprintf("%s gave %v, not a bool", c.Expr, v)
		return s
	}
	return verdict(s, c, ok, measured(s.Values)+"against "+c.Expr)
}

// unmeasured is the status and summary of a criterion whose metrics are
// missing at the end of a run: metrics missing for the same reason share
// one sentence; when the operator chose to skip every step they come from,
// the criterion is SKIPPED, not UNKNOWN.
func (l *Lab) unmeasured(missing []string, why map[string]string, skipped []string) (step.Status, string) {
	var reasons []string
	byReason := map[string][]string{}
	chosen := true
	for _, m := range missing {
		reason := why[m]
		if reason == "" {
			reason = "step " + l.MetricsFrom[m] + " gave no value"
		}
		chosen = chosen && slices.Contains(skipped, m)
		if byReason[reason] == nil {
			reasons = append(reasons, reason)
		}
		byReason[reason] = append(byReason[reason], "metrics."+m)
	}
	var parts []string
	for _, r := range reasons {
		verb := " was"
		if len(byReason[r]) > 1 {
			verb = " were"
		}
		parts = append(parts, strings.Join(byReason[r], ", ")+verb+" not measured: "+r)
	}
	if chosen {
		return step.Skipped, "skipped: " + strings.Join(parts, "; ")
	}
	return step.Unknown, "no evidence: " + strings.Join(parts, "; ")
}

// verdict sets the status a criterion's result gives: a failure is WARN
// when waived (saying why) or minor.
func verdict(s Score, c Criterion, ok bool, summary string) Score {
	s.Summary = summary
	switch {
	case ok:
		s.Status = step.Pass
	case c.Waiver != "":
		s.Status, s.Summary = step.Warn, s.Summary+" (waived: "+c.Waiver+")"
	case c.Impact == "minor":
		s.Status = step.Warn
	default:
		s.Status = step.Fail
	}
	return s
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func prefixed(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "metrics." + n
	}
	return out
}

// measured prints "metrics.a = 1.5, metrics.b = true " for a summary.
func measured(vals map[string]any) string {
	if len(vals) == 0 {
		return ""
	}
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(vals)) {
		parts = append(parts, fmt.Sprintf("metrics.%s = %s", n, FormatValue(vals[n])))
	}
	return strings.Join(parts, ", ") + " "
}

// FormatValue prints a metric value: floats with at most 3 decimals.
func FormatValue(v any) string {
	switch x := v.(type) {
	case float64:
		s := fmt.Sprintf("%.3f", x)
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		return s
	case string:
		return fmt.Sprintf("%q", x)
	}
	return fmt.Sprint(v)
}

// Passed reports whether scores let the lab pass: at least one criterion
// passed on evidence; none is UNKNOWN or PENDING, whatever its impact (a
// criterion that could not be decided is never a pass); and no critical
// or major criterion or counterexample FAILED or was SKIPPED (a skipped
// check verified nothing).
func Passed(scores []Score) bool {
	evidence := false
	for _, s := range scores {
		switch s.Status {
		case step.Unknown, Pending:
			return false
		case step.Pass:
			evidence = true
		}
		if s.Impact == "minor" {
			continue
		}
		switch s.Status {
		case step.Fail, step.Skipped:
			return false
		}
	}
	return evidence
}

// Derive computes the derived metrics whose inputs are all in metrics and
// adds them; a derived metric that cannot be computed (a division by zero)
// goes to why.
func (l *Lab) Derive(metrics map[string]any, why map[string]string, params map[string]string) {
	if params == nil {
		params = map[string]string{}
	}
	for m := range l.Derived {
		p := l.programs["derived:"+m]
		if _, done := metrics[m]; done || p == nil {
			continue
		}
		ready := true
		for _, r := range p.reads {
			if _, ok := metrics[r]; !ok {
				ready = false
			}
		}
		if !ready {
			continue
		}
		v, err := p.eval(map[string]any{"metrics": metrics, "params": params, "hosts": int64(1)})
		if err != nil {
			why[m] = "cannot compute " + l.Derived[m] + ": " + err.Error()
			continue
		}
		if f, ok := v.(float64); ok && (f != f || f > 1e308 || f < -1e308) {
			why[m] = l.Derived[m] + " is not a number (" + FormatValue(f) + ")"
			continue
		}
		metrics[m] = v
		delete(why, m)
	}
}
