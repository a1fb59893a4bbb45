// Package labs is the MIU (minimum increment unit) of gpulab: a scenario
// with quantified success criteria and counterexamples, a comparison table
// across modes, and a lab record that lets a stranger reproduce the
// conclusion in thirty minutes.
//
// Labs are TOML files, embedded (builtin/*.toml) or a user's own (--labs
// DIR), validated strictly on load: unknown keys, unknown parsers, CEL
// expressions that do not compile and criteria that read metrics no step
// measures are errors with file:line:col.
package labs

import (
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/step"
	"slices"
)

// Maturity levels, in order: a lab is a draft until it ran on real
// hardware, reproducible once a stranger reproduced it, and carries
// production notes once real production experience is added.
var Maturities = []string{"draft", "validated", "reproducible", "production-notes"}

// Phases of the uniform lab flow, in the order they run. Cleanup always
// runs, also after a failure, a lost host or Ctrl-C.
var Phases = []string{"setup", "run", "observe", "check", "cleanup"}

// Impacts of a criterion: a failed critical or major criterion fails the
// lab; a failed minor one is a warning.
var Impacts = []string{"critical", "major", "minor"}

// Lab is one MIU.
type Lab struct {
	ID   string `toml:"id" json:"id"`
	Name string `toml:"name" json:"name"` // one line: what it solves
	// Goal is the promise the lab verifies (quota fulfilled, isolation
	// effective, P99 controlled).
	Goal     string `toml:"goal" json:"goal"`
	Plane    string `toml:"plane" json:"plane"`
	Maturity string `toml:"maturity" json:"maturity"`
	// EstimateMinutes is what a run should take, for the timer's ETA.
	EstimateMinutes int    `toml:"estimate_minutes" json:"estimate_minutes"`
	Cost            string `toml:"cost" json:"cost"`
	// Principle is the short overview of why the result comes out as it
	// does, shown after the verification checklist.
	Principle   string      `toml:"principle" json:"principle"`
	Constraints Constraints `toml:"constraints" json:"constraints"`
	// Params are values given at run time (--set name=value): commands
	// name them {{name}} (shell-quoted on the host), criteria read them as
	// params.name (strings: double(params.slo_ms)).
	Params        []step.Param   `toml:"param" json:"params,omitempty"`
	Prerequisites []Prerequisite `toml:"prerequisite" json:"prerequisites"`
	Steps         []Step         `toml:"step" json:"steps"`
	// Derived metrics are CEL expressions over other metrics (and params),
	// computed as soon as their inputs are measured: an interference
	// coefficient is shared ÷ alone.
	Derived    map[string]string `toml:"derived" json:"derived,omitempty"`
	Criteria   []Criterion       `toml:"criterion" json:"criteria"`
	Counter    []Criterion       `toml:"counterexample" json:"counterexamples"`
	Comparison []ComparisonRow   `toml:"comparison" json:"comparison"`
	Result     ResultRow         `toml:"result" json:"result"`
	StopLoss   string            `toml:"stop_loss" json:"stop_loss"`
	Source     string            `toml:"-" json:"source"`
	// MetricsFrom maps each metric to the step that measures it.
	MetricsFrom map[string]string `toml:"-" json:"-"`
	programs    map[string]*program
}

// Constraints say where the lab's conclusion holds.
type Constraints struct {
	Hardware   string `toml:"hardware" json:"hardware"`
	MIG        string `toml:"mig" json:"mig"`
	Kubernetes string `toml:"kubernetes" json:"kubernetes"`
	Workload   string `toml:"workload" json:"workload"`
}

// Prerequisite is checked before the lab starts, by a command where one
// can check it (its exit status, or a CEL expression over its parsed
// output `out`), otherwise listed for the operator to confirm.
type Prerequisite struct {
	Description string `toml:"description" json:"description"`
	Command     string `toml:"command" json:"command,omitempty"`
	Parser      string `toml:"parser" json:"parser,omitempty"`
	Expect      string `toml:"expect" json:"expect,omitempty"`
}

// NeedsWritableHost is a step's need for the host's / to be writable:
// through Kubernetes the node pods mount it read-only unless the run is
// given --writable-host (over SSH the login's own permissions apply).
const NeedsWritableHost = "writable-host"

// WritesHost is the first step that needs the host's / writable, or nil.
func (l *Lab) WritesHost() *Step {
	for i := range l.Steps {
		if slices.Contains(l.Steps[i].Needs, NeedsWritableHost) {
			return &l.Steps[i]
		}
	}
	return nil
}

// Step is one command of a phase, run on each selected host (or on the
// first one), whose output a parser turns into a value `out` from which
// named metrics are computed with CEL.
type Step struct {
	ID        string             `toml:"id" json:"id"`
	Phase     string             `toml:"phase" json:"phase"`
	Title     string             `toml:"title" json:"title"`
	Command   string             `toml:"command" json:"command"`
	Parser    string             `toml:"parser" json:"parser,omitempty"`
	Timeout   inventory.Duration `toml:"timeout" json:"timeout"`
	Hosts     string             `toml:"hosts" json:"hosts,omitempty"`
	Needs     []string           `toml:"needs" json:"needs,omitempty"`
	Dangerous bool               `toml:"dangerous" json:"dangerous,omitempty"`
	// Metrics maps a metric name to a CEL expression over the step's
	// parsed output `out`, its `stdout` and its `exit_code`.
	Metrics map[string]string `toml:"metrics" json:"metrics,omitempty"`
	// Sample, when set, has the probe take a snapshot of the host every
	// Sample while the command runs (in a session of its own); the step's
	// metrics read them as `samples` (see Sample).
	Sample inventory.Duration `toml:"sample" json:"sample,omitempty"`
	// Solve is what --solve runs instead of Command in a demo.
	Solve string `toml:"solve" json:"solve,omitempty"`
	// PromQL makes the step an observation point instead of a command:
	// gpulab asks the Prometheus HTTP API at Prometheus (a URL, {{params}}
	// allowed) once for the whole run, as an instant query, or as a range
	// query over the last Range every Resolution. `out` is then
	// {result_type, series: [{metric, value | values, times}]}.
	PromQL     string             `toml:"promql" json:"promql,omitempty"`
	Prometheus string             `toml:"prometheus" json:"prometheus,omitempty"`
	Range      inventory.Duration `toml:"range" json:"range,omitempty"`
	Resolution inventory.Duration `toml:"resolution" json:"resolution,omitempty"`
	// Cluster makes the step a reading of the run's Kubernetes cluster
	// with client-go, once for the run: "pending" (out is {pods, blocked},
	// each with its why and evidence, as gpulab cluster pending --json),
	// "nodes", "quotas" or "fragmentation" (out is their --json). The
	// cluster is the inventory's [[kube]] context whose nodes the run's
	// hosts are. Namespace ({{params}} allowed; "" for all) scopes
	// pending, quotas and fragmentation.
	Cluster   string `toml:"cluster" json:"cluster,omitempty"`
	Namespace string `toml:"namespace" json:"namespace,omitempty"`
	// Probe makes the step a run of gpulab's NVML probe on the host
	// (pushed, as a runbook's probe step), sampling for Window: `out` is
	// its snapshot (gpulab probe --json's), and `checks` holds each of
	// its checks by name (checks['nvlink-fabric'].status: PASS, WARN,
	// FAIL or SKIPPED; an UNKNOWN check is no value, and a metric reading
	// it is not measured).
	Probe  bool               `toml:"probe" json:"probe,omitempty"`
	Window inventory.Duration `toml:"window" json:"window,omitempty"`
}

// input is what the step's metrics read: its parser's value, or the
// probe's snapshot (step.ProbeInput).
func (s Step) input() string {
	if s.Probe {
		return step.ProbeInput
	}
	return s.Parser
}

// Criterion is a quantified success criterion, or a counterexample (what
// the system must reject; the lab passes only if the rejection happens).
type Criterion struct {
	ID          string `toml:"id" json:"id"`
	Description string `toml:"description" json:"description"`
	// Expr is a CEL expression over `metrics` (a map of the lab's
	// metrics) and `hosts` (how many hosts ran the lab); it must be a bool.
	Expr   string `toml:"expr" json:"expr"`
	Impact string `toml:"impact" json:"impact"`
	// Waiver, when set, is the reason a failure is accepted: the verdict
	// is WARN and the record says why.
	Waiver string `toml:"waiver" json:"waiver,omitempty"`
}

// ComparisonRow is one mode in the lab's comparison table; a cell that
// reads "metric:NAME" is filled from a finished run.
type ComparisonRow struct {
	Mode          string `toml:"mode" json:"mode"`
	ResourceUnit  string `toml:"resource_unit" json:"resource_unit"`
	Isolation     string `toml:"isolation" json:"isolation"`
	Interference  string `toml:"interference" json:"interference"`
	Fragmentation string `toml:"fragmentation" json:"fragmentation"`
	Governance    string `toml:"governance" json:"governance"`
	OpsComplexity string `toml:"ops_complexity" json:"ops_complexity"`
}

// ResultRow says how the lab fills the standard result table: the workload
// and mode it runs, and which metrics are its throughput and latencies.
type ResultRow struct {
	Workload   string `toml:"workload" json:"workload"`
	Mode       string `toml:"mode" json:"mode"`
	Request    string `toml:"request" json:"request"`
	Throughput string `toml:"throughput" json:"throughput,omitempty"` // metric name
	Unit       string `toml:"unit" json:"unit,omitempty"`
	P50        string `toml:"p50" json:"p50,omitempty"`
	P95        string `toml:"p95" json:"p95,omitempty"`
	P99        string `toml:"p99" json:"p99,omitempty"`
}
