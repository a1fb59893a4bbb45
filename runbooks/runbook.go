// Package runbooks turns the command sheet of GPU-infrastructure triage into
// runbooks: steps that run commands on hosts, parsed into facts, and
// checks that put the facts back on the axes as verdicts, each with its
// evidence and the next thing to look at. Steps, parameters, rules and
// statuses are the step library's (package step); a runbook is the TOML
// that names them, and Execute is its one lifecycle.
//
// Runbooks are TOML files, embedded (builtin/*.toml) or a user's own
// (--runbooks DIR), validated strictly on load.
package runbooks

import (
	"embed"
	"strings"
	"time"

	"github.com/gpulab/gpulab/internal/tomlpos"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/step"
	"github.com/gpulab/gpulab/step/parse"
)

//go:embed builtin/*.toml
var builtin embed.FS

// Runbook is one runbook.
type Runbook struct {
	ID      string       `toml:"id" json:"id"`
	Title   string       `toml:"title" json:"title"`
	Plane   string       `toml:"plane" json:"plane"`
	Symptom string       `toml:"symptom" json:"symptom"`
	Params  []step.Param `toml:"param" json:"params,omitempty"`
	Steps   []Step       `toml:"step" json:"steps"`
	Checks  []step.Check `toml:"check" json:"checks"`
	Source  string       `toml:"-" json:"source"`
}

// Bind checks the values given for rb's parameters (name=value) and
// returns every parameter's value, defaults filled in.
func Bind(rb Runbook, set []string) (map[string]string, error) {
	return step.BindParams("runbook "+rb.ID, rb.Params, set)
}

// Step runs one command on each host.
type Step struct {
	ID      string             `toml:"id" json:"id"`
	Command string             `toml:"command" json:"command"`
	Parser  string             `toml:"parser" json:"parser,omitempty"`
	Timeout inventory.Duration `toml:"timeout" json:"timeout"`
	// Needs lists what the step requires on the host: "root", "kubectl".
	Needs []string `toml:"needs" json:"needs,omitempty"`
	// Dangerous marks a step that changes the host; it runs only when the
	// user confirms (--yes). No built-in step is dangerous.
	Dangerous bool `toml:"dangerous" json:"dangerous,omitempty"`
	// Hosts is "all" (the default) or "first": cluster-wide commands
	// (kubectl) run on the first selected host only.
	Hosts string `toml:"hosts" json:"hosts,omitempty"`
	// Probe makes the step run gpulab's NVML probe on the host (pushed,
	// run and removed, as gpulab probe does) instead of a command; its
	// input is the probe's snapshot (step.ProbeInput), judged by the
	// probe-check rule. Window is how long the probe samples the GPUs
	// for its rates (clock events, PCIe under load, PCIe replays).
	Probe  bool               `toml:"probe" json:"probe,omitempty"`
	Window inventory.Duration `toml:"window" json:"window,omitempty"`
}

// MaxProbeWindow bounds a probe step's window; DefaultProbeTimeout is a
// probe step's time beyond its window when it names none.
const (
	MaxProbeWindow      = time.Minute
	DefaultProbeTimeout = 60 * time.Second
)

type fileSchema struct {
	Runbook
}

// Load reads the built-in runbooks and every *.toml in dirs, and validates
// them; ids must be unique.
func Load(dirs []string) ([]Runbook, error) {
	ps, err := tomlpos.Load(builtin, "builtin/*.toml", dirs, "runbook", parseFile, func(rb *Runbook) (string, string) { return rb.ID, rb.Source })
	if err != nil {
		return nil, err
	}
	out := make([]Runbook, len(ps))
	for i, rb := range ps {
		out[i] = *rb
	}
	return out, nil
}

// Find returns the runbook with id.
func Find(rbs []Runbook, id string) (Runbook, bool) {
	for _, rb := range rbs {
		if rb.ID == id {
			return rb, true
		}
	}
	return Runbook{}, false
}

func parseFile(name string, data []byte) (*Runbook, error) {
	var f fileSchema
	ix, err := tomlpos.Decode(name, data, &f)
	if ix == nil {
		return nil, err
	}
	errs := []error{err}
	rb := f.Runbook
	rb.Source = name
	var bad complain = func(path []any, format string, args ...any) {
		errs = append(errs, ix.Errorf(path, format, args...))
	}
	if !tomlpos.ValidID(rb.ID) {
		bad([]any{"id"}, "runbook id %q: use lower-case letters, digits and '-'", rb.ID)
	}
	if rb.Title == "" {
		bad(nil, "runbook %q has no title", rb.ID)
	}
	if msg := step.OneLine(rb.Title); msg != "" {
		bad([]any{"title"}, "runbook %q: title has %s: a title is one line of plain text", rb.ID, msg)
	}
	step.PlainTexts(rb, "a runbook's", []string{"id", "title"}, func(path []any, msg string) { bad(path, "%s", msg) })
	switch rb.Plane {
	case "control", "data", "workload":
	default:
		bad([]any{"plane"}, "plane %q: want control, data or workload", rb.Plane)
	}
	step.CheckParamDefs(rb.Params, func(i int, key, msg string) { bad([]any{"param", i, key}, "%s", msg) })
	for i, st := range rb.Steps {
		switch {
		case st.Probe && st.Parser != "" && st.Parser != step.ProbeInput:
			bad([]any{"step", i, "parser"}, "step %q runs gpulab's probe (probe = true): its input is the probe's snapshot, not parser %q", st.ID, st.Parser)
		case st.Probe:
			rb.Steps[i].Parser = step.ProbeInput
		case st.Parser == step.ProbeInput:
			bad([]any{"step", i, "parser"}, "step %q: %s is the input of a probe step (probe = true), not a parser of a command's output", st.ID, step.ProbeInput)
		}
	}
	steps := checkSteps(rb, bad)
	checkChecks(rb, steps, bad)
	if err := tomlpos.Join(errs...); err != nil {
		return nil, err
	}
	return &rb, nil
}

// complain records a problem at a path in the file (tomlpos.Index.Errorf).
type complain func(path []any, format string, args ...any)

// checkSteps validates the runbook's [[step]]s and returns their ids.
func checkSteps(rb Runbook, bad complain) map[string]bool {
	steps := map[string]bool{}
	for i, s := range rb.Steps {
		for _, msg := range step.CheckCommand(rb.Params, s.Command) {
			bad([]any{"step", i, "command"}, "step %q %s", s.ID, strings.Replace(msg, "[[param]]", "[[param]] of this runbook", 1))
		}
		if !tomlpos.ValidID(s.ID) || steps[s.ID] {
			bad([]any{"step", i, "id"}, "step id %q is missing, malformed or repeated", s.ID)
		}
		steps[s.ID] = true
		switch {
		case s.Probe && s.Command != "":
			bad([]any{"step", i, "command"}, "step %q runs gpulab's probe (probe = true): it takes no command", s.ID)
		case s.Probe:
			if s.Window.Duration < 0 || s.Window.Duration > MaxProbeWindow {
				bad([]any{"step", i, "window"}, "step %q window %v: between 0 (one reading) and %v", s.ID, s.Window.Duration, MaxProbeWindow)
			}
		case strings.TrimSpace(s.Command) == "":
			bad([]any{"step", i}, "step %q has no command", s.ID)
		case s.Window.Duration != 0:
			bad([]any{"step", i, "window"}, "step %q: window is a probe step's (probe = true)", s.ID)
		}
		if s.Parser != "" && !s.Probe {
			if _, ok := parse.Lookup(s.Parser); !ok {
				bad([]any{"step", i, "parser"}, "step %q: no parser %q%s (gpulab parse list)", s.ID, s.Parser, parse.Hint(s.Parser))
			}
		}
		if s.Hosts != "" && s.Hosts != "all" && s.Hosts != "first" {
			bad([]any{"step", i, "hosts"}, "step %q hosts %q: want all or first", s.ID, s.Hosts)
		}
		for j, n := range s.Needs {
			if n != "root" && n != "kubectl" {
				bad([]any{"step", i, "needs", j}, "step %q needs %q: want root or kubectl", s.ID, n)
			}
		}
		if err := s.Timeout.Within(inventory.MinTimeout, inventory.MaxCommandTimeout); err != nil {
			bad([]any{"step", i, "timeout"}, "step %q timeout %v", s.ID, err)
		}
	}
	return steps
}

// checkChecks validates the runbook's [[check]]s against its steps and
// the step library's rules.
func checkChecks(rb Runbook, steps map[string]bool, bad complain) {
	if len(rb.Checks) == 0 {
		// Its steps would run and nothing would judge them: every host
		// UNKNOWN, a run that cannot pass.
		bad(nil, "runbook %q has no [[check]]: its steps' output would reach no verdict; add a [[check]] with a rule (%s)", rb.ID, strings.Join(step.RuleNames(), ", "))
	}
	for i, c := range rb.Checks {
		if !tomlpos.ValidID(c.ID) {
			bad([]any{"check", i, "id"}, "check id %q: use lower-case letters, digits and '-'", c.ID)
		}
		rule, ok := step.LookupRule(c.Rule)
		if !ok {
			bad([]any{"check", i, "rule"}, "check %q: no rule %q (rules: %s)", c.ID, c.Rule, strings.Join(step.RuleNames(), ", "))
			continue
		}
		if err := step.CheckWith(c.Rule, c.With); err != nil {
			bad([]any{"check", i, "with"}, "check %q: %v", c.ID, err)
		}
		for j, u := range c.Uses {
			if !steps[u] {
				bad([]any{"check", i, "uses", j}, "check %q uses step %q, which this runbook does not have", c.ID, u)
			}
		}
		if len(c.Uses) != len(rule.Inputs) {
			bad([]any{"check", i, "uses"}, "check %q: rule %s takes %d steps (%s), %d given", c.ID, c.Rule, len(rule.Inputs), strings.Join(rule.Inputs, ", "), len(c.Uses))
			continue
		}
		for j, u := range c.Uses {
			for _, s := range rb.Steps {
				if s.ID == u && rule.Inputs[j] != "*" && s.Parser != rule.Inputs[j] {
					bad([]any{"check", i, "uses", j}, "check %q: rule %s wants %s output for its input %d, step %q parses %s", c.ID, c.Rule, rule.Inputs[j], j+1, u, s.Parser)
				}
			}
		}
	}
}
