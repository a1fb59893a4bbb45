package labs

import (
	"embed"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gpulab/gpulab/internal/tomlpos"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/step"
	"github.com/gpulab/gpulab/step/parse"
)

//go:embed builtin/*.toml
var builtin embed.FS

var (
	metricRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
)

// Load reads the built-in labs and every *.toml in dirs (or the files
// named), validates them and compiles their expressions; ids are unique.
func Load(dirs []string) ([]*Lab, error) {
	return tomlpos.Load(builtin, "builtin/*.toml", dirs, "lab", Parse, func(l *Lab) (string, string) { return l.ID, l.Source })
}

// Find returns the lab with id.
func Find(ls []*Lab, id string) (*Lab, bool) {
	for _, l := range ls {
		if l.ID == id {
			return l, true
		}
	}
	return nil, false
}

// Parse reads and validates one lab file.
func Parse(name string, data []byte) (*Lab, error) {
	var l Lab
	ix, err := tomlpos.Decode(name, data, &l)
	if ix == nil {
		return nil, err
	}
	l.Source = name
	c := &labCheck{l: &l, ix: ix, errs: []error{err}, params: map[string]bool{}}
	c.header()
	c.texts()
	c.prerequisites()
	c.steps()
	c.derived()
	// Every run measures its stability (new Xids, OOM kills, GPUs lost)
	// unless the lab measures a metric of the same name itself.
	for _, m := range StabilityMetrics {
		if _, own := l.MetricsFrom[m]; !own {
			l.MetricsFrom[m] = "stability"
		}
	}
	if len(l.Criteria) == 0 {
		c.bad(nil, "lab %q has no [[criterion]]: a lab's success is quantified, never \"looks fine\"", l.ID)
	}
	ids := map[string]bool{}
	c.criteria("criterion", l.Criteria, ids)
	c.criteria("counterexample", l.Counter, ids)
	c.comparison()
	c.result()
	if err := tomlpos.Join(c.errs...); err != nil {
		return nil, err
	}
	return &l, nil
}

// labCheck validates a lab file section by section, collecting every
// problem at its file:line.
type labCheck struct {
	l      *Lab
	ix     *tomlpos.Index
	errs   []error
	params map[string]bool // the lab's parameter names
}

func (c *labCheck) bad(path []any, format string, args ...any) {
	e := c.ix.Errorf(path, "")
	e.Msg = fmt.Sprintf(format, args...)
	c.errs = append(c.errs, e)
}

// texts refuses a control character anywhere in the lab's texts (its
// goal, descriptions, titles, commands: step.PlainTexts); the id and name
// have their own, stricter checks.
func (c *labCheck) texts() {
	step.PlainTexts(*c.l, "a lab's", []string{"id", "name"}, func(path []any, msg string) { c.bad(path, "%s", msg) })
}

// header checks the lab's own keys and its parameters.
func (c *labCheck) header() {
	l := c.l
	if !tomlpos.ValidID(l.ID) {
		c.bad([]any{"id"}, "lab id %q: use lower-case letters, digits and '-'", l.ID)
	}
	for _, f := range []struct{ key, v string }{{"name", l.Name}, {"goal", l.Goal}} {
		if strings.TrimSpace(f.v) == "" {
			c.bad(nil, "lab %q has no %s", l.ID, f.key)
		}
	}
	// A name is drawn in lists and headers: a tab, a newline or an escape
	// in it would break them.
	if msg := step.OneLine(l.Name); msg != "" {
		c.bad([]any{"name"}, "lab %q: name has %s: a name is one line of plain text", l.ID, msg)
	}
	switch l.Plane {
	case "control", "data", "workload":
	default:
		c.bad([]any{"plane"}, "plane %q: want control, data or workload", l.Plane)
	}
	if !slices.Contains(Maturities, l.Maturity) {
		c.bad([]any{"maturity"}, "maturity %q: want one of %s", l.Maturity, strings.Join(Maturities, ", "))
	}
	if l.EstimateMinutes < 1 || l.EstimateMinutes > MaxEstimateMinutes {
		c.bad([]any{"estimate_minutes"}, "lab %q: estimate_minutes %d: want 1 to %d minutes (a day)", l.ID, l.EstimateMinutes, MaxEstimateMinutes)
	}
	l.programs = map[string]*program{}
	l.MetricsFrom = map[string]string{}
	step.CheckParamDefs(l.Params, func(i int, key, msg string) { c.bad([]any{"param", i, key}, "%s", msg) })
	for _, p := range l.Params {
		c.params[p.Name] = true
	}
}

// placeholders checks a field that is not a shell command.
func (c *labCheck) placeholders(path []any, what, text string) {
	for _, name := range step.Placeholders(text) {
		if !c.params[name] {
			c.bad(path, "%s uses {{%s}}, which is not a [[param]] of this lab", what, name)
		}
	}
}

// command checks a shell command: its parameters, and how the shell reads
// the places where they sit.
func (c *labCheck) command(path []any, what, command string) {
	for _, msg := range step.CheckCommand(c.l.Params, command) {
		c.bad(path, "%s %s", what, strings.Replace(msg, "[[param]]", "[[param]] of this lab", 1))
	}
}

func (c *labCheck) parser(path []any, p string) {
	if p != "" {
		if _, ok := parse.Lookup(p); !ok {
			c.bad(path, "no parser %q%s (gpulab parse list)", p, parse.Hint(p))
		}
	}
}

func (c *labCheck) prerequisites() {
	for i, p := range c.l.Prerequisites {
		if strings.TrimSpace(p.Description) == "" {
			c.bad([]any{"prerequisite", i}, "prerequisite %d has no description", i+1)
		}
		c.parser([]any{"prerequisite", i, "parser"}, p.Parser)
		c.command([]any{"prerequisite", i, "command"}, fmt.Sprintf("prerequisite %d", i+1), p.Command)
		if p.Expect == "" {
			continue
		}
		if p.Command == "" || p.Parser == "" {
			c.bad([]any{"prerequisite", i, "expect"}, "prerequisite %d: expect reads the parsed output of a command: give command and parser", i+1)
		} else if prg, err := compile(stepEnv, p.Expect, true); err != nil {
			c.bad([]any{"prerequisite", i, "expect"}, "prerequisite %d: %v", i+1, err)
		} else {
			c.l.programs[fmt.Sprintf("prerequisite:%d", i)] = prg
			c.shapes([]any{"prerequisite", i, "expect"}, fmt.Sprintf("prerequisite %d", i+1), prg, p.Parser)
		}
	}
}

func (c *labCheck) steps() {
	seen := map[string]bool{}
	for i, s := range c.l.Steps {
		if !tomlpos.ValidID(s.ID) || seen[s.ID] {
			c.bad([]any{"step", i, "id"}, "step id %q is missing, malformed or repeated", s.ID)
		}
		seen[s.ID] = true
		if !slices.Contains(Phases, s.Phase) {
			c.bad([]any{"step", i, "phase"}, "step %q phase %q: want one of %s", s.ID, s.Phase, strings.Join(Phases, ", "))
		}
		c.stepKind(i, s)
		c.stepLimits(i, s)
		c.parser([]any{"step", i, "parser"}, s.Parser)
		c.command([]any{"step", i, "command"}, fmt.Sprintf("step %q", s.ID), s.Command)
		c.command([]any{"step", i, "solve"}, fmt.Sprintf("step %q solve", s.ID), s.Solve)
		if s.Hosts != "" && s.Hosts != "all" && s.Hosts != "first" {
			c.bad([]any{"step", i, "hosts"}, "step %q hosts %q: want all or first", s.ID, s.Hosts)
		}
		for j, n := range s.Needs {
			if n != "root" && n != "kubectl" && n != NeedsWritableHost {
				c.bad([]any{"step", i, "needs", j}, "step %q needs %q: want root, kubectl or %s", s.ID, n, NeedsWritableHost)
			}
		}
		c.stepMetrics(i, s)
	}
}

// MaxProbeWindow is the longest sampling window a probe step asks for.
const MaxProbeWindow = 10 * time.Minute

// stepKind checks that a step is a command, a PromQL query, a cluster
// reading or a run of the probe, and the keys that belong to each.
func (c *labCheck) stepKind(i int, s Step) {
	if s.Probe {
		if s.Command != "" || s.PromQL != "" || s.Cluster != "" || s.Parser != "" || s.Sample.Duration != 0 || s.Solve != "" {
			c.bad([]any{"step", i, "probe"}, "step %q runs gpulab's probe (probe = true): its output is the probe's snapshot; command, promql, cluster, parser, sample and solve belong to other steps", s.ID)
		}
		if err := s.Window.Within(0, MaxProbeWindow); err != nil {
			c.bad([]any{"step", i, "window"}, "step %q window %v", s.ID, err)
		}
		return
	}
	if s.Window.Duration != 0 {
		c.bad([]any{"step", i, "window"}, "step %q: window is a probe step's sampling window (probe = true)", s.ID)
	}
	if s.Cluster != "" || s.Namespace != "" {
		c.clusterStep(i, s)
		return
	}
	switch {
	case s.PromQL != "" && s.Command != "":
		c.bad([]any{"step", i, "promql"}, "step %q has both a command and a promql query: a step is one or the other", s.ID)
	case s.PromQL != "":
		checkRange(c.bad, i, s)
		c.prometheus(i, s)
		if s.Parser != "" {
			c.bad([]any{"step", i, "parser"}, "step %q: a promql step's output is the query result; it takes no parser", s.ID)
		}
	case s.Range.Duration != 0 || s.Resolution.Duration != 0:
		c.bad([]any{"step", i, "range"}, "step %q: range and resolution belong to promql steps", s.ID)
	case strings.TrimSpace(s.Command) == "":
		c.bad([]any{"step", i}, "step %q has no command (or promql)", s.ID)
	}
}

// prometheus checks where a promql step asks: the operator's machine
// makes the request, so where it goes is the operator's choice, never the
// lab file's (a contributed lab could have it fetch any URL, an internal
// one, and keep the answer in a record meant to be shared). The lab names
// a [[param]] with no default, which the operator sets (--set).
func (c *labCheck) prometheus(i int, s Step) {
	path := []any{"step", i, "prometheus"}
	names := step.Placeholders(s.Prometheus)
	if len(names) != 1 || strings.TrimSpace(s.Prometheus) != "{{"+names[0]+"}}" {
		c.bad(path, "step %q: prometheus = %q: a lab file does not choose where gpulab queries Prometheus (the operator's machine makes the request); "+
			"write prometheus = \"{{prom_url}}\" with a [[param]] prom_url of type url and no default, which the operator sets (--set prom_url=http://prometheus:9090)", s.ID, s.Prometheus)
		return
	}
	c.placeholders(path, fmt.Sprintf("step %q prometheus", s.ID), s.Prometheus)
	for _, p := range c.l.Params {
		if p.Name == names[0] && p.Default != "" {
			c.bad(path, "step %q: prometheus = %q: [[param]] %s has a default (%s): where gpulab queries Prometheus is the operator's choice (--set %s=URL), not the lab file's; remove the default", s.ID, s.Prometheus, p.Name, p.Default, p.Name)
		}
	}
}

// clusterStep checks a step that reads the cluster with client-go.
func (c *labCheck) clusterStep(i int, s Step) {
	switch {
	case !slices.Contains(ClusterReadings, s.Cluster):
		c.bad([]any{"step", i, "cluster"}, "step %q: cluster = %q: want one of %s", s.ID, s.Cluster, strings.Join(ClusterReadings, ", "))
	case s.Command != "" || s.PromQL != "":
		c.bad([]any{"step", i, "cluster"}, "step %q has a cluster reading and a command or promql query: a step is one of them", s.ID)
	case s.Parser != "" || s.Sample.Duration != 0 || s.Range.Duration != 0 || s.Resolution.Duration != 0:
		c.bad([]any{"step", i, "cluster"}, "step %q: a cluster step's output is what gpulab reads of the cluster; parser, sample, range and resolution belong to other steps", s.ID)
	case s.Namespace != "" && s.Cluster == "nodes":
		c.bad([]any{"step", i, "namespace"}, "step %q: namespace scopes cluster = \"pending\", \"quotas\" or \"fragmentation\", not %q", s.ID, s.Cluster)
	}
	c.placeholders([]any{"step", i, "namespace"}, fmt.Sprintf("step %q namespace", s.ID), s.Namespace)
}

// stepLimits checks a step's sampling interval and timeout.
func (c *labCheck) stepLimits(i int, s Step) {
	switch {
	case s.Sample.Duration != 0 && s.PromQL != "":
		c.bad([]any{"step", i, "sample"}, "step %q: a promql step runs nothing on the hosts to sample; sample belongs to command steps", s.ID)
	case s.Sample.Duration != 0 && s.Sample.Duration < MinSample:
		c.bad([]any{"step", i, "sample"}, "step %q sample %v: the probe samples every %v at most", s.ID, s.Sample, MinSample)
	case s.Sample.Duration > MaxSample:
		c.bad([]any{"step", i, "sample"}, "step %q sample %v", s.ID, s.Sample.Within(MinSample, MaxSample))
	}
	if err := s.Timeout.Within(inventory.MinTimeout, inventory.MaxCommandTimeout); err != nil {
		c.bad([]any{"step", i, "timeout"}, "step %q timeout %v", s.ID, err)
	}
}

// stepMetrics compiles a step's metrics; each name is measured once.
func (c *labCheck) stepMetrics(i int, s Step) {
	for _, m := range slices.Sorted(maps.Keys(s.Metrics)) {
		path := []any{"step", i, "metrics", m}
		if !metricRE.MatchString(m) {
			c.bad(path, "metric name %q: use lower-case letters, digits and '_'", m)
		}
		if prev, ok := c.l.MetricsFrom[m]; ok {
			c.bad(path, "metric %q is already measured by step %q", m, prev)
			continue
		}
		prg, err := compile(stepEnv, s.Metrics[m], false)
		if err != nil {
			c.bad(path, "metric %s: %v", m, err)
			continue
		}
		c.l.MetricsFrom[m] = s.ID
		c.l.programs["metric:"+m] = prg
		c.shapes(path, "metric "+m, prg, s.input())
	}
}

// shapes holds the keys prg reads to what its step's parser writes (and
// to samples and checks): a key the output cannot have is an error here,
// at the key, not an UNKNOWN "no such key" at run time.
func (c *labCheck) shapes(path []any, what string, prg *program, parser string) {
	var out *parse.Shape
	if k, ok := parse.Lookup(parser); ok {
		out = k.ShapeOf()
	}
	rules := step.RulesOf(parser)
	if parser == step.ProbeInput {
		rules = step.ProbeStepChecks() // checks by the probe's check names
	}
	for _, problem := range readShapes(prg, out, rules) {
		hint := ""
		switch {
		case problem.root == "checks":
			hint = " (checks holds the runbooks' rules that judge the step's output"
			if parser != "" {
				hint += ", its parser " + parser + "'s"
			}
			hint += ")"
		case problem.root == "samples":
			hint = " (docs/labs.md, Reference, says what samples holds)"
		case problem.root == "out" && out != nil:
			hint = fmt.Sprintf(" (gpulab parse %s --shape)", parser)
		}
		c.bad(path, "%s: %s%s", what, problem.msg, hint)
	}
}

// derived compiles the derived metrics, which read measured metrics only.
func (c *labCheck) derived() {
	l := c.l
	names := slices.Sorted(maps.Keys(l.Derived))
	for _, m := range names {
		path := []any{"derived", m}
		if !metricRE.MatchString(m) {
			c.bad(path, "metric name %q: use lower-case letters, digits and '_'", m)
		}
		if prev, ok := l.MetricsFrom[m]; ok {
			c.bad(path, "metric %q is already measured by step %q", m, prev)
			continue
		}
		prg, err := compile(criterionEnv, l.Derived[m], false)
		if err != nil {
			c.bad(path, "derived metric %s: %v", m, err)
			continue
		}
		for _, r := range prg.reads {
			if _, ok := l.MetricsFrom[r]; !ok || l.Derived[r] != "" {
				c.bad(path, "derived metric %s reads metrics.%s, which no step measures", m, r)
			}
		}
		for _, r := range prg.params {
			if !c.params[r] {
				c.bad(path, "derived metric %s reads params.%s, which is not a [[param]] of this lab", m, r)
			}
		}
		l.programs["derived:"+m] = prg
	}
	for _, m := range names {
		if l.programs["derived:"+m] != nil {
			l.MetricsFrom[m] = "derived"
		}
	}
}

// criteria compiles a table of criteria (or counterexamples); ids are
// unique across both tables.
func (c *labCheck) criteria(table string, cs []Criterion, ids map[string]bool) {
	l := c.l
	for i, cr := range cs {
		if !tomlpos.ValidID(cr.ID) || ids[cr.ID] {
			c.bad([]any{table, i, "id"}, "%s id %q is missing, malformed or repeated", table, cr.ID)
		}
		ids[cr.ID] = true
		if strings.TrimSpace(cr.Description) == "" {
			c.bad([]any{table, i}, "%s %q has no description", table, cr.ID)
		}
		if !slices.Contains(Impacts, cr.Impact) {
			c.bad([]any{table, i, "impact"}, "%s %q impact %q: want critical, major or minor", table, cr.ID, cr.Impact)
		}
		prg, err := compile(criterionEnv, cr.Expr, true)
		if err != nil {
			c.bad([]any{table, i, "expr"}, "%s %q: %v", table, cr.ID, err)
			continue
		}
		for _, m := range prg.params {
			if !c.params[m] {
				c.bad([]any{table, i, "expr"}, "%s %q reads params.%s, which is not a [[param]] of this lab", table, cr.ID, m)
			}
		}
		if len(prg.reads) == 0 {
			// "hosts > 0" or "true" would pass before, or without, any
			// step measuring anything.
			c.bad([]any{table, i, "expr"}, "%s %q reads no metric: it would pass without evidence; judge what a step measures (metrics.NAME)", table, cr.ID)
		}
		for _, m := range prg.reads {
			if _, ok := l.MetricsFrom[m]; !ok {
				c.bad([]any{table, i, "expr"}, "%s %q reads metrics.%s, which no step measures (measured: %s)", table, cr.ID, m, strings.Join(l.metricNames(), ", "))
			}
		}
		l.programs[table+":"+cr.ID] = prg
	}
}

func (c *labCheck) comparison() {
	for i, r := range c.l.Comparison {
		if strings.TrimSpace(r.Mode) == "" {
			c.bad([]any{"comparison", i}, "comparison row %d has no mode", i+1)
		}
		for _, cell := range []struct{ key, v string }{{"resource_unit", r.ResourceUnit}, {"isolation", r.Isolation}, {"interference", r.Interference},
			{"fragmentation", r.Fragmentation}, {"governance", r.Governance}, {"ops_complexity", r.OpsComplexity}} {
			if m, ok := strings.CutPrefix(cell.v, "metric:"); ok {
				if _, known := c.l.MetricsFrom[m]; !known {
					c.bad([]any{"comparison", i, cell.key}, "comparison %q %s points at metric %q, which no step measures", r.Mode, cell.key, m)
				}
			}
		}
	}
}

func (c *labCheck) result() {
	res := c.l.Result
	for _, f := range []struct{ key, v string }{{"throughput", res.Throughput}, {"p50", res.P50}, {"p95", res.P95}, {"p99", res.P99}} {
		if _, known := c.l.MetricsFrom[f.v]; f.v != "" && !known {
			c.bad([]any{"result", f.key}, "result %s is metric %q, which no step measures", f.key, f.v)
		}
	}
	if res.Throughput != "" && res.Unit == "" {
		c.bad([]any{"result", "throughput"}, "result throughput %q has no unit: say what it counts (tokens/s, GB/s, ...)", res.Throughput)
	}
}

// Ranges of a lab's numbers.
const (
	// MaxEstimateMinutes is a day: a lab is meant to be reproduced in
	// thirty minutes.
	MaxEstimateMinutes = 24 * 60
	// MinSample and MaxSample bound the interval between two probe
	// samples; the probe refuses to sample more often than MinSample.
	MinSample = 100 * time.Millisecond
	MaxSample = time.Hour
	// MaxPromRange is the longest range a promql step asks for.
	MaxPromRange = 7 * 24 * time.Hour
	// MinPromResolution is the finest resolution of a range query.
	MinPromResolution = time.Second
	// MaxPromPoints is the most points Prometheus answers for one series
	// of a range query (range ÷ resolution).
	MaxPromPoints = 11000
)

// checkRange checks the range and resolution of promql step i.
func checkRange(bad func([]any, string, ...any), i int, s Step) {
	rng, res := s.Range, s.Resolution
	if err := rng.Within(MinPromResolution, MaxPromRange); err != nil {
		bad([]any{"step", i, "range"}, "step %q range %v", s.ID, err)
		return
	}
	switch {
	case res.Duration == 0:
	case rng.Duration == 0:
		bad([]any{"step", i, "resolution"}, "step %q: resolution belongs to a range query: give a range too", s.ID)
	case res.Within(MinPromResolution, rng.Duration) != nil:
		bad([]any{"step", i, "resolution"}, "step %q resolution %v", s.ID, res.Within(MinPromResolution, rng.Duration))
	case rng.Duration/res.Duration > MaxPromPoints:
		bad([]any{"step", i, "resolution"}, "step %q: range %v every %v is %d points; Prometheus answers at most %d a series", s.ID, rng, res, rng.Duration/res.Duration, MaxPromPoints)
	}
}

func (l *Lab) metricNames() []string {
	var n []string
	for m := range l.MetricsFrom {
		n = append(n, m)
	}
	sort.Strings(n)
	if len(n) == 0 {
		return []string{"none"}
	}
	return n
}
