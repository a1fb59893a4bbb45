package step

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/step/parse"
)

// Status is a check's outcome.
type Status string

// Statuses. UNKNOWN means the evidence is missing; it is never a PASS.
const (
	Pass    Status = "PASS"
	Fail    Status = "FAIL"
	Warn    Status = "WARN"
	Skipped Status = "SKIPPED"
	Unknown Status = "UNKNOWN"
)

// Verdict is a check's answer on one host.
type Verdict struct {
	Check  string `json:"check"`
	Title  string `json:"title"`
	Status Status `json:"status"`
	// Summary is the fact in one line; hosts with the same summary fold.
	Summary  string     `json:"summary"`
	Evidence []Evidence `json:"evidence"`
	Hint     string     `json:"hint,omitempty"`
}

// Evidence is a fact and where it came from.
type Evidence struct {
	Step string `json:"step"`
	Fact string `json:"fact"`
	Line int    `json:"line,omitempty"` // line of the step's output, when known
}

// Input is one step's result as a rule sees it.
type Input struct {
	Step    string
	Ran     bool   // the command ran and exited 0
	Output  string // stdout
	Problem string // why it did not run or exit 0, or could not be parsed
	// Class and ExitCode say how the command ended, for the hint of an
	// UNKNOWN verdict (a missing tool, a refused sudo, a timeout).
	Class    orchestrator.Class
	ExitCode int
	Value    any // the parser's value (partial when ParseErr is set)
	ParseErr error
	// Cut says the output was cut at the limit ("stdout cut at 16.0 MiB
	// of 17.0 MiB"): what was read is only its beginning.
	Cut string
	// Skip marks a step that does not run on this host by design (a
	// cluster-wide step on the first host only): its checks are SKIPPED.
	Skip bool
}

// Check turns facts into a verdict with a named rule.
type Check struct {
	ID    string         `toml:"id" json:"id"`
	Title string         `toml:"title" json:"title"`
	Rule  string         `toml:"rule" json:"rule"`
	Uses  []string       `toml:"uses" json:"uses"`
	Hint  string         `toml:"hint" json:"hint"`
	With  map[string]any `toml:"with" json:"with,omitempty"`
}

// Rule is a named check function.
type Rule struct {
	// Inputs are the parser kinds of the steps the rule reads, in order
	// ("*" for any).
	Inputs []string
	// SeesFailures lets the rule judge a step whose command exited
	// non-zero itself (a driver that is not loaded is the finding, not
	// missing evidence); a command that never ran to its end is UNKNOWN
	// for every rule.
	SeesFailures bool
	Fn           func(in []Input, with map[string]any) Verdict
	// With names the keys of a check's with table the rule reads, each a
	// string, and says what each holds; a key not named is refused at
	// load (a typo would be a check that silently ignores what it was
	// told to demand).
	With map[string]string
	// CheckWith, when set, vets a check's with table further as its
	// runbook loads: a check that could never fail is refused there.
	CheckWith func(with map[string]any) error
}

// CheckWith vets the with table of a check that names rule: only the
// keys the rule reads, each a string, then the rule's own CheckWith.
func CheckWith(rule string, with map[string]any) error {
	r, ok := rules[rule]
	if !ok {
		return fmt.Errorf("no rule %q", rule)
	}
	for _, k := range slices.Sorted(maps.Keys(with)) {
		what, ok := r.With[k]
		if !ok {
			if len(r.With) == 0 {
				return fmt.Errorf("rule %s reads no with table (with.%s would be ignored)", rule, k)
			}
			var keys []string
			for _, k := range slices.Sorted(maps.Keys(r.With)) {
				keys = append(keys, "with."+k+" ("+r.With[k]+")")
			}
			return fmt.Errorf("rule %s reads no with.%s (it reads %s)", rule, k, strings.Join(keys, ", "))
		}
		if _, isString := with[k].(string); !isString {
			return fmt.Errorf("with.%s is %s, want a string: %s", k, tomlKind(with[k]), what)
		}
	}
	if r.CheckWith != nil {
		return r.CheckWith(with)
	}
	return nil
}

// tomlKind names the kind of a decoded TOML value.
func tomlKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	case int64, float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("a %T", v)
}

var rules = map[string]Rule{}

// Worst is the most serious status among verdicts: FAIL, then WARN,
// UNKNOWN, PASS. Verdicts none of which passed are never PASS: SKIPPED
// when every one was skipped, UNKNOWN when there are none.
func Worst(vs []Verdict) Status {
	rank := map[Status]int{Pass: 0, Skipped: 0, Unknown: 1, Warn: 2, Fail: 3}
	w, passed, skipped := Pass, false, false
	for _, v := range vs {
		passed = passed || v.Status == Pass
		skipped = skipped || v.Status == Skipped
		if rank[v.Status] > rank[w] {
			w = v.Status
		}
	}
	switch {
	case w != Pass || passed:
		return w
	case skipped:
		return Skipped
	}
	return Unknown
}

// LookupRule returns the rule called name.
func LookupRule(name string) (Rule, bool) {
	r, ok := rules[name]
	return r, ok
}

// RuleNames lists the rules a runbook may name.
func RuleNames() []string {
	var n []string
	for k := range rules {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// RulesOf lists the rules that read one output of the given parser kind
// (those JudgeOutput runs), sorted.
func RulesOf(kind string) []string {
	var n []string
	for name, r := range rules {
		if len(r.Inputs) == 1 && r.Inputs[0] == kind {
			n = append(n, name)
		}
	}
	sort.Strings(n)
	return n
}

// JudgeOutput runs every rule that reads one output of the given parser
// kind over in (the step's output: how its command ended, the parser's
// value), and returns each rule's verdict by name: the runbooks'
// judgement through Judge, the same guards included (a command that
// failed, output cut or read in part), for labs to read instead of
// computing their own ("checks['nvlink-mesh'].status").
func JudgeOutput(kind string, in Input) map[string]Verdict {
	out := map[string]Verdict{}
	for name, r := range rules {
		if len(r.Inputs) != 1 || r.Inputs[0] != kind {
			continue
		}
		out[name] = Judge(Check{ID: name, Rule: name}, []Input{in})
	}
	return out
}

// Read is what a rule judges of one step's command r, its output parsed
// by parser into value (perr when the parser complained): the value is evidence
// only when the command ran and exited 0, and a value the parser could
// not read at all is none. Runbooks and labs both build their inputs so.
func Read(id, parser string, r CommandResult, value any, perr error) Input {
	in := Input{Step: id, Ran: r.Class == orchestrator.OK, Class: r.Class, ExitCode: r.ExitCode, Output: r.Stdout, Problem: r.Problem, Cut: r.Cut, ParseErr: perr}
	if !in.Ran {
		return in
	}
	in.Value = value
	if perr != nil && EmptyValue(value) {
		in.Value, in.Problem = nil, "gave output the "+parser+" parser could not read: "+orchestrator.FirstLine(perr.Error())
	}
	return in
}

// Judge runs a check over its inputs. Missing evidence gives UNKNOWN.
func Judge(c Check, in []Input) Verdict {
	r := rules[c.Rule]
	v := Verdict{Check: c.ID, Title: c.Title, Hint: c.Hint, Evidence: []Evidence{}}
	for _, i := range in {
		if i.Skip {
			v.Status, v.Summary = Skipped, "step "+i.Step+" "+i.Problem
			return v
		}
	}
	for _, i := range in {
		// A rule that sees failures judges a command that ran and exited
		// non-zero (a driver that is not loaded is the finding); a command
		// that never ran to its end on the host (not reached, lost, timed
		// out, stopped, refused here) is no evidence, for any rule.
		// kubectl with no cluster configured ran to its end, and read no
		// cluster: no evidence either.
		if !i.Ran && (!r.SeesFailures || i.Class != orchestrator.Exit) || !r.SeesFailures && i.Value == nil || i.Problem == NoClusterProblem {
			v.Status, v.Summary = Unknown, fmt.Sprintf("no evidence: step %s %s", i.Step, i.Problem)
			v.Hint = EvidenceHint(i)
			return v
		}
	}
	var unread *Input // an input the parser read only in part
	why := ""
	for k, i := range in {
		if i.Cut != "" && unread == nil {
			// Only the output's beginning was kept: the rest could hold
			// the failure (an Xid after 16 MiB of harmless lines).
			unread, why = &in[k], fmt.Sprintf("step %s's output was cut at the limit (%s): the rest was not read", i.Step, i.Cut)
		}
		if i.ParseErr == nil || r.SeesFailures && i.Class == orchestrator.Exit {
			continue
		}
		if EmptyValue(i.Value) {
			// Nothing read: "no Xid", "no link down" or "0 failed" from it
			// would be the parser's zero value, not the host's answer.
			v.Status, v.Summary = Unknown, fmt.Sprintf("no evidence: step %s gave output gpulab could not read: %s", i.Step, orchestrator.FirstLine(i.ParseErr.Error()))
			v.Hint = EvidenceHint(i)
			return v
		}
		if unread == nil {
			unread, why = &in[k], fmt.Sprintf("part of step %s's output could not be read (%s)", i.Step, orchestrator.FirstLine(i.ParseErr.Error()))
		}
	}
	out := r.Fn(in, c.With)
	out.Check, out.Title = c.ID, c.Title
	if unread != nil {
		if out.Status == Pass || out.Status == Skipped {
			// What passed (or had nothing to judge) is the part read; the
			// rest could hold the failure.
			out.Status, out.Summary, out.Hint = Unknown, why+": "+out.Summary+" holds only for the part read", EvidenceHint(*unread)
		}
		out.Evidence = append(out.Evidence, Evidence{Step: unread.Step, Fact: why})
	}
	switch {
	case out.Status == Unknown && out.Hint == "":
		// The check's hint is advice for a failure; a verdict without
		// evidence needs a way to the evidence instead.
		out.Hint = "the output did not decide this check: read the evidence, or run the step by hand on the host"
	case out.Hint == "" || out.Status == Pass:
		out.Hint = c.Hint
	}
	if out.Evidence == nil {
		out.Evidence = []Evidence{}
	}
	return out
}

// EmptyValue reports whether a parser's value holds nothing at all: nil,
// an empty list or map, or a struct whose lists and maps are all empty
// (its error then means "not this command's output", and its counts are
// zero values, not readings).
func EmptyValue(v any) bool {
	rv := reflect.ValueOf(v)
	for rv.IsValid() && (rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface) {
		if rv.IsNil() {
			return true
		}
		rv = rv.Elem()
	}
	switch rv.Kind() {
	case reflect.Invalid:
		return true
	case reflect.Slice, reflect.Map:
		return rv.Len() == 0
	case reflect.Struct:
		lists := 0
		for k := range rv.NumField() {
			if f := rv.Field(k); f.Kind() == reflect.Slice || f.Kind() == reflect.Map {
				if f.Len() > 0 {
					return false
				}
				lists++
			}
		}
		return lists > 0
	}
	return false
}

var notFoundRE = regexp.MustCompile(`(?m)([^\s:]+): (?:command )?not found`)

// EvidenceHint says how to get the evidence a step did not give: what to
// look at on the host for a missing tool, a refused sudo, a timeout, an
// unreachable host or output gpulab could not read.
func EvidenceHint(i Input) string {
	p := i.Problem
	switch {
	case i.Class.Unreached():
		return "the host could not be reached or was lost: see its error, then run again"
	case i.Class == orchestrator.Cancelled:
		return "the run was stopped before this step gave its evidence"
	case p == NoClusterProblem:
		return "give the login user a kubeconfig on the host (~/.kube/config, or KUBECONFIG in its environment), or leave out the checks that read the cluster"
	case i.ExitCode == 127 || strings.Contains(p, "not found"):
		tool := "the step's tool"
		if m := notFoundRE.FindStringSubmatch(p); m != nil {
			tool = m[1]
		}
		return fmt.Sprintf("%s is not on the host's PATH: is it installed (for nvidia-smi: is the NVIDIA driver installed)? Check with: command -v %s", tool, tool)
	case strings.Contains(p, "sudo") || strings.Contains(strings.ToLower(p), "permission denied") || strings.Contains(p, "Operation not permitted"):
		return "the step was refused a permission: it needs root; log in as root, or let the user run sudo without a password (sudo -n)"
	case i.Class == orchestrator.TimeoutCommand || i.Class == orchestrator.Inactive:
		return "the command did not finish in time: is the host or a GPU hung (nvidia-smi blocks on a sick GPU)? A longer step timeout waits more"
	case i.ParseErr != nil || strings.Contains(p, "could not read"):
		return "gpulab could not read the step's output: read it in the evidence (an unfamiliar driver or tool version?)"
	case i.Class == orchestrator.Exit:
		return "the step's command failed on the host: run it there by hand to see why"
	}
	return "run the step's command by hand on the host to see why it gave no evidence"
}

func verdict(s Status, summary string, ev ...Evidence) Verdict {
	return Verdict{Status: s, Summary: summary, Evidence: ev}
}

func init() {
	rules["nvlink-mesh"] = Rule{Inputs: []string{"nvidia-smi-topo"}, Fn: nvlinkMesh,
		With: map[string]string{"expect": `the link code every pair must show, e.g. "NV12"`}, CheckWith: nvlinkMeshWith}
	rules["nic-nearest"] = Rule{Inputs: []string{"nvidia-smi-topo"}, Fn: nicNearest}
	rules["affinity-numa"] = Rule{Inputs: []string{"nvidia-smi-topo", "numactl-hardware"}, Fn: affinityNUMA}
	rules["driver-loaded"] = Rule{Inputs: []string{"nvidia-smi"}, SeesFailures: true, Fn: driverLoaded}
	rules["persistence"] = Rule{Inputs: []string{"nvidia-smi"}, Fn: persistence}
	rules["ecc-uncorrected"] = Rule{Inputs: []string{"nvidia-smi-q"}, Fn: eccUncorrected}
	rules["remapped-rows"] = Rule{Inputs: []string{"nvidia-smi-q"}, Fn: remappedRows}
	rules["pcie-width"] = Rule{Inputs: []string{"nvidia-smi-q"}, Fn: pcieWidth}
	rules["throttle"] = Rule{Inputs: []string{"nvidia-smi-q"}, Fn: throttle}
	rules["xid-recent"] = Rule{Inputs: []string{"dmesg-xid"}, Fn: xidRecent}
	rules["rdma-up"] = Rule{Inputs: []string{"rdma-link"}, Fn: rdmaUp}
	rules["ran"] = Rule{Inputs: []string{"*"}, SeesFailures: true, Fn: ran}
	rules["output-matches"] = Rule{Inputs: []string{"*"}, SeesFailures: true, Fn: outputMatches, CheckWith: outputMatchesWith,
		With: map[string]string{"pattern": "a regular expression the output must match", "absent": `"WARN" or "FAIL", what a miss is`}}
	rules["node-allocatable"] = Rule{Inputs: []string{"kubectl-describe-node"}, Fn: nodeAllocatable,
		With: map[string]string{"resource": `the GPU resource the node must offer, e.g. "nvidia.com/gpu"`}}
	rules["pending-reasons"] = Rule{Inputs: []string{"kubectl-get-events"}, Fn: pendingReasons}
	rules["mig-expected"] = Rule{Inputs: []string{"nvidia-smi-mig-lgi"}, Fn: migExpected,
		With: map[string]string{"expect": `the GPU instance profiles, comma-separated, e.g. "3g.20gb,3g.20gb"`}, CheckWith: migExpectedWith}
	rules["mig-mode"] = Rule{Inputs: []string{"nvidia-smi-q"}, Fn: migMode}
	rules["nccl-transport"] = Rule{Inputs: []string{"nccl-debug", "rdma-link"}, Fn: ncclTransport}
	rules["nccl-env"] = Rule{Inputs: []string{"nccl-debug", "rdma-link", "ip-br-link"}, Fn: ncclEnv}
}

// ran: the step's command exists and exits 0.
func ran(in []Input, _ map[string]any) Verdict {
	i := in[0]
	if i.Ran {
		return verdict(Pass, orchestrator.FirstLine(i.Output))
	}
	return verdict(Fail, i.Problem, Evidence{Step: i.Step, Fact: orchestrator.FirstLine(i.Output + " " + i.Problem)})
}

// outputMatches: with.pattern (a regular expression) is found in the
// step's output; with.absent = "WARN" softens a miss.
func outputMatches(in []Input, with map[string]any) Verdict {
	i := in[0]
	pat, _ := with["pattern"].(string)
	re, err := regexp.Compile("(?m)" + pat)
	if err != nil || pat == "" {
		return verdict(Unknown, fmt.Sprintf("the check's pattern %q is not a regular expression", pat))
	}
	if loc := re.FindStringIndex(i.Output); loc != nil {
		m := i.Output[loc[0]:loc[1]]
		line := strings.Count(i.Output[:loc[0]], "\n") + 1
		ev := Evidence{Step: i.Step, Fact: orchestrator.FirstLine(m), Line: line}
		if !i.Ran {
			// The pattern is there, but the command failed: the output
			// may be partial, stale or an error message quoting it.
			return verdict(Unknown, fmt.Sprintf("the output matches %s, but the command %s", pat, i.Problem), ev)
		}
		return verdict(Pass, orchestrator.FirstLine(m), ev)
	}
	ev := Evidence{Step: i.Step, Fact: orchestrator.FirstLine(i.Output + " " + i.Problem)}
	if !i.Ran {
		// No match in what a failed command printed ("kubectl: the
		// server could not be reached") says nothing of what is there.
		return verdict(Unknown, fmt.Sprintf("no match for %s, but the command %s: its output is no evidence either way", pat, i.Problem), ev)
	}
	if i.Cut != "" {
		// The match could be in the part that was not kept.
		return verdict(Unknown, fmt.Sprintf("no match for %s in the part kept: the output was cut at the limit (%s)", pat, i.Cut), ev)
	}
	status := Fail
	if a, _ := with["absent"].(string); a == string(Warn) {
		status = Warn
	}
	return verdict(status, "no match for "+pat, ev)
}

// outputMatchesWith refuses a pattern that is missing, is not a regular
// expression, or matches the empty string (it would pass on any output,
// an empty one included).
func outputMatchesWith(with map[string]any) error {
	pat, ok := with["pattern"].(string)
	if !ok || pat == "" {
		return fmt.Errorf("rule output-matches needs with.pattern, a regular expression")
	}
	re, err := regexp.Compile("(?m)" + pat)
	if err != nil {
		return fmt.Errorf("with.pattern %q is not a regular expression: %v", pat, err)
	}
	if re.MatchString("") {
		return fmt.Errorf("with.pattern %q matches the empty string: the check would pass on any output", pat)
	}
	if a, ok := with["absent"]; ok && a != string(Warn) && a != string(Fail) {
		return fmt.Errorf("with.absent %v: want %q or %q", a, Warn, Fail)
	}
	return nil
}

// nvlinkMeshWith refuses an expect that is no NVLink code.
func nvlinkMeshWith(with map[string]any) error {
	if exp, ok := with["expect"].(string); ok && !nvRE.MatchString(exp) {
		return fmt.Errorf("with.expect %q is not an NVLink code: want NV and the link count, e.g. \"NV12\"", exp)
	}
	return nil
}

// migExpectedWith refuses an expect with an empty profile.
func migExpectedWith(with map[string]any) error {
	exp, ok := with["expect"].(string)
	if !ok {
		return nil
	}
	for _, p := range strings.Split(exp, ",") {
		if strings.TrimSpace(p) == "" {
			return fmt.Errorf("with.expect %q names an empty profile: want profiles separated by commas, e.g. \"3g.20gb,3g.20gb\"", exp)
		}
	}
	return nil
}

// nodeAllocatable: the node offers the GPU resource (with.resource, default
// nvidia.com/gpu or any nvidia.com/mig-*), and allocatable equals capacity.
func nodeAllocatable(in []Input, with map[string]any) Verdict {
	n := in[0].Value.(*parse.Node)
	want, _ := with["resource"].(string)
	var offered []string
	var ev []Evidence
	for r, g := range n.GPU {
		if want != "" && r != want {
			continue
		}
		if want == "" && !strings.HasPrefix(r, "nvidia.com/") {
			continue
		}
		if g.Allocatable != nil && *g.Allocatable > 0 {
			offered = append(offered, fmt.Sprintf("%s=%d", r, *g.Allocatable))
		}
		if g.Capacity != nil && g.Allocatable != nil && *g.Allocatable < *g.Capacity {
			ev = append(ev, Evidence{Step: in[0].Step, Fact: fmt.Sprintf("%s allocatable %d < capacity %d (unhealthy devices?)", r, *g.Allocatable, *g.Capacity)})
		}
	}
	sort.Strings(offered)
	switch {
	case len(offered) == 0:
		return verdict(Fail, "the node offers no GPU resource: the device plugin is not running or sees no device", ev...)
	case len(ev) > 0:
		return verdict(Warn, strings.Join(offered, ", ")+"; some devices unhealthy", ev...)
	}
	return verdict(Pass, strings.Join(offered, ", "))
}

// pendingReasons: FailedScheduling events, their reasons summed.
func pendingReasons(in []Input, _ map[string]any) Verdict {
	evs := in[0].Value.([]parse.Event)
	sum := map[string]int{}
	var ev []Evidence
	other := 0 // FailedScheduling messages not in the "0/N nodes" shape
	for _, e := range evs {
		if e.Reason != "FailedScheduling" && e.Scheduling == nil || strings.HasPrefix(e.Message, "skip schedule deleting pod") {
			continue // not a failure, or the pod was being deleted
		}
		ev = append(ev, Evidence{Step: in[0].Step, Fact: e.Object + ": " + e.Message})
		if e.Scheduling == nil {
			// "running PreFilter plugin VolumeBinding: ...", "pod has
			// unbound immediate PersistentVolumeClaims": a pod that waits
			// all the same, for a reason given in words.
			other++
			continue
		}
		for _, r := range e.Scheduling.Reasons {
			sum[r.Reason] += r.Nodes
		}
	}
	if len(ev) == 0 {
		return verdict(Pass, "no FailedScheduling event")
	}
	var parts []string
	for r, n := range sum {
		parts = append(parts, fmt.Sprintf("%s (%d node-times)", r, n))
	}
	sort.Strings(parts)
	if other > 0 {
		parts = append(parts, fmt.Sprintf("%d with a reason in words (see the evidence)", other))
	}
	return verdict(Fail, fmt.Sprintf("%d FailedScheduling event(s): %s", len(ev), strings.Join(parts, "; ")), ev...)
}

// migExpected: the GPU instances match with.expect, a comma-separated list
// of profiles ("3g.20gb,3g.20gb"); without it, the layout is reported.
func migExpected(in []Input, with map[string]any) Verdict {
	t := in[0].Value.(*parse.MIGTable[parse.MIGInstance])
	var have []string
	for _, r := range t.Rows {
		have = append(have, fmt.Sprintf("GPU%d:%s", r.GPU, r.Name))
	}
	sort.Strings(have)
	exp, _ := with["expect"].(string)
	if exp == "" {
		if len(have) == 0 {
			return verdict(Pass, "no GPU instance ("+t.Message+")")
		}
		return verdict(Pass, strings.Join(have, ", "))
	}
	var want []string
	for _, p := range strings.Split(exp, ",") {
		want = append(want, strings.TrimSpace(p))
	}
	var got []string
	for _, r := range t.Rows {
		got = append(got, r.Name)
	}
	sort.Strings(want)
	sort.Strings(got)
	if strings.Join(want, ",") == strings.Join(got, ",") {
		return verdict(Pass, "MIG layout as expected: "+strings.Join(got, ","))
	}
	return verdict(Fail, fmt.Sprintf("MIG layout %s, expected %s", strings.Join(got, ","), strings.Join(want, ",")),
		Evidence{Step: in[0].Step, Fact: strings.Join(have, ", ")})
}

var nvRE = regexp.MustCompile(`^NV(\d+)$`)

// nvlinkMesh: NVLinked GPUs form a regular pattern: a full mesh (or an
// NVSwitch, which looks like one) or a regular partial mesh such as the
// V100 hybrid cube mesh, where every GPU has the same number of NVLink
// peers and links. A GPU with fewer than its siblings has a link down.
// with.expect = "NV12" demands a full mesh of that width.
func nvlinkMesh(in []Input, with map[string]any) Verdict {
	t := in[0].Value.(*parse.Topo)
	var gpus []string
	for _, g := range t.GPUs {
		gpus = append(gpus, g.Name)
	}
	if len(gpus) < 2 {
		return verdict(Skipped, fmt.Sprintf("%d GPU: no pairs to link", len(gpus)))
	}
	peers, total := map[string]int{}, map[string]int{}
	any := false
	for _, a := range gpus {
		for _, b := range gpus {
			if a == b {
				continue
			}
			if n := nvLinks(t.Links[a][b]); n > 0 {
				peers[a]++
				total[a] += n
				any = true
			}
		}
	}
	if !any {
		return verdict(Skipped, fmt.Sprintf("%d GPUs, no NVLink between them", len(gpus)))
	}
	if exp, ok := with["expect"].(string); ok && exp != "" {
		return fullMesh(in[0].Step, t, gpus, exp)
	}
	maxPeers, maxTotal := 0, 0
	for _, g := range gpus {
		maxPeers, maxTotal = max(maxPeers, peers[g]), max(maxTotal, total[g])
	}
	var short []string
	for _, g := range gpus {
		if peers[g] < maxPeers || total[g] < maxTotal {
			short = append(short, g)
		}
	}
	if len(short) == 0 {
		if maxPeers == len(gpus)-1 {
			return verdict(Pass, fmt.Sprintf("%d GPUs, %s full mesh", len(gpus), t.Links[gpus[0]][gpus[1]]))
		}
		return verdict(Pass, fmt.Sprintf("%d GPUs, regular partial mesh: each NVLinked to %d peers over %d links", len(gpus), maxPeers, maxTotal))
	}
	ev := unlinked(in[0].Step, t, gpus, short)
	if len(ev) == 0 {
		for _, g := range short {
			ev = append(ev, Evidence{Step: in[0].Step, Fact: fmt.Sprintf("%s: %d NVLink peers, %d links (others %d, %d)", g, peers[g], total[g], maxPeers, maxTotal)})
		}
	}
	return verdict(Fail, fmt.Sprintf("%s (NVLink down)", facts(ev)), ev...)
}

// nvLinks is the number of NVLinks a topology code names: 12 for NV12,
// 0 for any other code.
func nvLinks(code string) int {
	if m := nvRE.FindStringSubmatch(code); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// fullMesh demands every pair of gpus linked by exp (NV12).
func fullMesh(stepID string, t *parse.Topo, gpus []string, exp string) Verdict {
	var bad []Evidence
	for a := 0; a < len(gpus); a++ {
		for b := a + 1; b < len(gpus); b++ {
			if c := t.Links[gpus[a]][gpus[b]]; c != exp {
				bad = append(bad, Evidence{Step: stepID, Fact: fmt.Sprintf("%s–%s %s", gpus[a], gpus[b], c)})
			}
		}
	}
	if len(bad) == 0 {
		return verdict(Pass, fmt.Sprintf("%d GPUs, %s full mesh", len(gpus), exp))
	}
	return verdict(Fail, fmt.Sprintf("%s (expected %s)", facts(bad), exp), bad...)
}

// unlinked names the pairs between short GPUs (fewer NVLink peers or
// links than their siblings) that have no NVLink between them.
func unlinked(stepID string, t *parse.Topo, gpus, short []string) []Evidence {
	var ev []Evidence
	shortSet := map[string]bool{}
	for _, g := range short {
		shortSet[g] = true
	}
	for a := 0; a < len(gpus); a++ {
		for b := a + 1; b < len(gpus); b++ {
			ga, gb := gpus[a], gpus[b]
			if shortSet[ga] && shortSet[gb] && nvLinks(t.Links[ga][gb]) == 0 {
				ev = append(ev, Evidence{Step: stepID, Fact: fmt.Sprintf("%s–%s %s", ga, gb, t.Links[ga][gb])})
			}
		}
	}
	return ev
}

func facts(ev []Evidence) string {
	var f []string
	for _, e := range ev {
		f = append(f, e.Fact)
	}
	return strings.Join(f, ", ")
}

var linkRank = map[string]int{"PIX": 1, "PXB": 2, "PHB": 3, "NODE": 4, "SYS": 5, "SOC": 5}

// nicNearest names each GPU's nearest NIC; a GPU whose nearest NIC is
// across the socket interconnect (SYS) is a WARN for RDMA traffic.
func nicNearest(in []Input, _ map[string]any) Verdict {
	t := in[0].Value.(*parse.Topo)
	if len(t.NICs) == 0 {
		return verdict(Skipped, "no NIC in the topology")
	}
	var ev []Evidence
	var far []string
	var parts []string
	for _, g := range t.GPUs {
		bestRank, best := 99, []string{}
		for _, n := range t.NICs {
			c := t.Links[g.Name][n.Name]
			r, ok := linkRank[c]
			if !ok {
				continue
			}
			switch {
			case r < bestRank:
				bestRank, best = r, []string{n.Device + " " + c}
			case r == bestRank:
				best = append(best, n.Device+" "+c)
			}
		}
		fact := fmt.Sprintf("%s → %s", g.Name, strings.Join(best, ", "))
		ev = append(ev, Evidence{Step: in[0].Step, Fact: fact})
		parts = append(parts, fact)
		if bestRank >= linkRank["SYS"] {
			far = append(far, g.Name)
		}
	}
	if len(far) > 0 {
		return verdict(Warn, fmt.Sprintf("%s reach every NIC only across sockets (SYS)", strings.Join(far, ", ")), ev...)
	}
	return verdict(Pass, strings.Join(parts, "; "), ev...)
}

// affinityNUMA: a GPU's CPU affinity should sit within one NUMA node;
// affinity over several nodes (or all CPUs) means its host threads may run
// on the far socket.
func affinityNUMA(in []Input, _ map[string]any) Verdict {
	t := in[0].Value.(*parse.Topo)
	n := in[1].Value.(*parse.NUMA)
	nodeOf := map[int]int{}
	for _, nd := range n.Nodes {
		for _, c := range nd.CPUs {
			nodeOf[c] = nd.Node
		}
	}
	if len(nodeOf) == 0 {
		return verdict(Unknown, "numactl listed no CPUs")
	}
	var ev []Evidence
	var cross, unread []string
	homed := true // every CPU read is in a node numactl listed
	for _, g := range t.GPUs {
		if g.CPUAffinity == nil {
			unread = append(unread, g.Name)
			ev = append(ev, Evidence{Step: in[0].Step, Fact: g.Name + " CPU affinity N/A"})
			continue
		}
		nodes := map[int]bool{}
		var homeless []int // CPUs in no node numactl listed
		for _, c := range cpuList(*g.CPUAffinity) {
			if nd, ok := nodeOf[c]; ok {
				nodes[nd] = true
			} else {
				homeless = append(homeless, c)
			}
		}
		if len(homeless) > 0 {
			unread, homed = append(unread, g.Name), false
			ev = append(ev, Evidence{Step: in[1].Step, Fact: fmt.Sprintf("%s CPU affinity %s: %d of its CPUs (from %d) are in no NUMA node numactl listed", g.Name, *g.CPUAffinity, len(homeless), homeless[0])})
		}
		if len(nodes) > 1 {
			cross = append(cross, g.Name)
			ev = append(ev, Evidence{Step: in[0].Step, Fact: fmt.Sprintf("%s CPU affinity %s spans %d NUMA nodes", g.Name, *g.CPUAffinity, len(nodes))})
		}
	}
	switch {
	case len(n.Nodes) == 1 && homed:
		// Whatever a GPU's affinity reads (N/A included), it is local.
		return verdict(Pass, "one NUMA node: every CPU is local", ev...)
	case len(cross) > 0:
		return verdict(Warn, fmt.Sprintf("%s: CPU affinity spans NUMA nodes", strings.Join(cross, ", ")), ev...)
	case len(unread) > 0:
		return verdict(Unknown, fmt.Sprintf("the NUMA node of %s could not be told (affinity N/A, or CPUs numactl did not list)", strings.Join(unread, ", ")), ev...)
	}
	return verdict(Pass, fmt.Sprintf("every GPU's CPU affinity is within one of %d NUMA nodes", len(n.Nodes)), ev...)
}

func cpuList(s string) []int {
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		for c := a; c <= b && c-a < 4096; c++ {
			out = append(out, c)
		}
	}
	return out
}

// driverLoaded: nvidia-smi answering at all is the first rung of the
// ladder (driver → toolkit → device plugin → allocatable).
func driverLoaded(in []Input, _ map[string]any) Verdict {
	i := in[0]
	if !i.Ran && i.Class == orchestrator.Exit && i.ExitCode == 127 {
		// The shell found no nvidia-smi: no driver package on this host,
		// which says nothing of a module or a GPU gone.
		v := verdict(Fail, "nvidia-smi is not installed on this host (exit 127: command not found)", Evidence{Step: i.Step, Fact: orchestrator.FirstLine(i.Output + " " + i.Problem)})
		v.Hint = "install the NVIDIA driver, which brings nvidia-smi (or select the GPU hosts only: is this one meant to have GPUs?)"
		return v
	}
	if !i.Ran {
		fact := orchestrator.FirstLine(i.Output + " " + i.Problem)
		return verdict(Fail, "nvidia-smi failed: "+fact, Evidence{Step: i.Step, Fact: fact})
	}
	s, ok := i.Value.(*parse.SMI)
	if !ok || len(s.GPUs) == 0 {
		return verdict(Fail, "nvidia-smi lists no GPU", Evidence{Step: i.Step, Fact: orchestrator.FirstLine(i.Output)})
	}
	return verdict(Pass, fmt.Sprintf("driver %s, CUDA %s, %d GPUs", s.DriverVersion, s.CUDAVersion, len(s.GPUs)),
		Evidence{Step: i.Step, Fact: "Driver Version: " + s.DriverVersion, Line: 3})
}

func persistence(in []Input, _ map[string]any) Verdict {
	s := in[0].Value.(*parse.SMI)
	var off []string
	var ev []Evidence
	for _, g := range s.GPUs {
		if g.Persistence != "On" {
			off = append(off, fmt.Sprintf("GPU%d", g.Index))
			ev = append(ev, Evidence{Step: in[0].Step, Fact: fmt.Sprintf("GPU%d Persistence-M %s", g.Index, g.Persistence), Line: g.Line})
		}
	}
	if len(off) > 0 {
		return verdict(Warn, "persistence mode off on "+strings.Join(off, ", "), ev...)
	}
	return verdict(Pass, "persistence mode on for every GPU")
}

func eccUncorrected(in []Input, _ map[string]any) Verdict {
	q := in[0].Value.(*parse.Query)
	var ev, unread []Evidence
	off, read := 0, 0
	for i, g := range q.GPUs {
		mode, printed := g.Fields["ECC Mode/Current"]
		if g.ECCCurrent != nil && *g.ECCCurrent == "Disabled" || printed && (mode == "N/A" || mode == "Disabled") {
			off++ // ECC off, or a GPU without ECC: nothing to count
			continue
		}
		counters := uncorrectableCounters(g.Fields)
		var total int
		var bad []string
		for _, c := range counters {
			n, err := strconv.Atoi(c.value)
			if err != nil {
				// "N/A" with ECC on, "Unknown Error", "[GPU requires
				// reset]": this count was not read, and could be the one.
				bad = append(bad, c.name+" "+c.value)
				continue
			}
			total += n
		}
		switch {
		case len(counters) == 0:
			unread = append(unread, Evidence{Step: in[0].Step, Fact: fmt.Sprintf("GPU%d (%s): no volatile uncorrectable ECC count printed", i, g.BusID)})
			continue
		case len(bad) > 0:
			unread = append(unread, Evidence{Step: in[0].Step, Fact: fmt.Sprintf("GPU%d (%s): uncorrectable ECC count %s", i, g.BusID, strings.Join(bad, ", "))})
		}
		if total > 0 {
			ev = append(ev, Evidence{Step: in[0].Step, Fact: fmt.Sprintf("GPU%d (%s): %d uncorrectable ECC errors since the driver loaded (%s)", i, g.BusID, total, countersText(counters))})
		} else if len(bad) == 0 {
			read++
		}
	}
	switch {
	case len(ev) > 0:
		return verdict(Fail, fmt.Sprintf("uncorrectable ECC errors on %d GPU(s)", len(ev)), append(ev, unread...)...)
	case len(unread) > 0:
		return verdict(Unknown, fmt.Sprintf("the uncorrectable ECC count of %d GPU(s) could not be read", len(unread)), unread...)
	case read == 0:
		return verdict(Unknown, "no GPU reports volatile ECC counts (ECC off or N/A)")
	}
	pass := verdict(Pass, "no uncorrectable ECC error", Evidence{Step: in[0].Step, Fact: fmt.Sprintf("%d GPU(s) count 0 uncorrectable ECC errors (DRAM and SRAM, since the driver loaded)", read)})
	if off > 0 {
		pass.Evidence = append(pass.Evidence, Evidence{Step: in[0].Step, Fact: fmt.Sprintf("%d GPU(s) with ECC off", off)})
	}
	return pass
}

type eccCounter struct{ name, value string }

// uncorrectableCounters are a GPU's volatile uncorrectable ECC counts as
// its driver prints them: DRAM and SRAM (A100 and later; SRAM split into
// parity and SEC-DED by newer drivers), or the double-bit total (or its
// device-memory part) of older ones. Every one counts: an SRAM error is
// as uncorrectable as a DRAM one.
func uncorrectableCounters(f map[string]string) []eccCounter {
	const v = "ECC Errors/Volatile/"
	if t, ok := f[v+"Double Bit/Total"]; ok {
		return []eccCounter{{"double bit", t}}
	}
	var out []eccCounter
	if d, ok := f[v+"DRAM Uncorrectable"]; ok {
		out = append(out, eccCounter{"DRAM", d})
	}
	if s, ok := f[v+"SRAM Uncorrectable"]; ok {
		out = append(out, eccCounter{"SRAM", s})
	} else {
		for _, k := range []string{"SRAM Uncorrectable Parity", "SRAM Uncorrectable SEC-DED"} {
			if s, ok := f[v+k]; ok {
				out = append(out, eccCounter{strings.TrimPrefix(k, "SRAM Uncorrectable "), s})
			}
		}
	}
	if len(out) == 0 {
		if d, ok := f[v+"Double Bit/Device Memory"]; ok {
			out = append(out, eccCounter{"double bit, device memory", d})
		}
	}
	if len(out) > 0 && out[0].name != "DRAM" && out[0].name != "double bit, device memory" {
		// nvidia-smi prints the DRAM count beside the SRAM ones: SRAM
		// counts alone are an output cut before it.
		out = append(out, eccCounter{"DRAM", "not printed"})
	}
	return out
}

func countersText(cs []eccCounter) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.name + " " + c.value
	}
	return strings.Join(parts, ", ")
}

func remappedRows(in []Input, _ map[string]any) Verdict {
	q := in[0].Value.(*parse.Query)
	var fail, warn []Evidence
	seen := 0
	var unread []Evidence
	for i, g := range q.GPUs {
		r := g.RemappedRows
		if r == nil {
			continue
		}
		seen++
		if r.Failure == nil || r.Pending == nil {
			unread = append(unread, Evidence{Step: in[0].Step, Fact: fmt.Sprintf("GPU%d (%s): row remapping's pending or failure flag not read", i, g.BusID)})
		}
		if r.Failure != nil && *r.Failure {
			fail = append(fail, Evidence{Step: in[0].Step, Fact: fmt.Sprintf("GPU%d (%s): row remapping failed", i, g.BusID)})
		}
		if r.Pending != nil && *r.Pending {
			warn = append(warn, Evidence{Step: in[0].Step, Fact: fmt.Sprintf("GPU%d (%s): row remap pending, reset needed", i, g.BusID)})
		}
	}
	switch {
	case len(fail) > 0:
		return verdict(Fail, fmt.Sprintf("row remapping failed on %d GPU(s): service needed", len(fail)), append(fail, warn...)...)
	case len(warn) > 0:
		return verdict(Warn, fmt.Sprintf("row remaps pending on %d GPU(s): reset the GPU to apply", len(warn)), warn...)
	case seen == 0:
		return verdict(Skipped, "no GPU reports row remapping (pre-A100 GPUs retire pages instead)")
	case len(unread) > 0:
		return verdict(Unknown, fmt.Sprintf("row remapping not read on %d GPU(s)", len(unread)), unread...)
	case seen < len(q.GPUs):
		// A node of one GPU model where some GPUs print no remap block:
		// those did not answer.
		return verdict(Unknown, fmt.Sprintf("%d of %d GPU(s) report row remapping: the others' state is not known", seen, len(q.GPUs)))
	}
	return verdict(Pass, fmt.Sprintf("no pending or failed row remap on %d GPU(s)", seen))
}

func pcieWidth(in []Input, _ map[string]any) Verdict {
	q := in[0].Value.(*parse.Query)
	var ev, unread []Evidence
	for i, g := range q.GPUs {
		switch {
		case g.WidthCurrent == nil || g.WidthMax == nil:
			unread = append(unread, Evidence{Step: in[0].Step, Fact: fmt.Sprintf("GPU%d (%s): PCIe link width not read", i, g.BusID)})
		case *g.WidthCurrent < *g.WidthMax:
			ev = append(ev, Evidence{Step: in[0].Step, Fact: fmt.Sprintf("GPU%d (%s): PCIe x%d of x%d", i, g.BusID, *g.WidthCurrent, *g.WidthMax)})
		}
	}
	switch {
	case len(ev) > 0:
		return verdict(Warn, fmt.Sprintf("PCIe link downtrained on %d GPU(s)", len(ev)), append(ev, unread...)...)
	case len(unread) > 0:
		return verdict(Unknown, fmt.Sprintf("the PCIe link width of %d GPU(s) could not be read", len(unread)), unread...)
	}
	return verdict(Pass, "every PCIe link at full width", Evidence{Step: in[0].Step, Fact: fmt.Sprintf("%d GPU(s) at their maximum width", len(q.GPUs))})
}

func throttle(in []Input, _ map[string]any) Verdict {
	q := in[0].Value.(*parse.Query)
	var ev, unread []Evidence
	for i, g := range q.GPUs {
		reasons := false
		for k, v := range g.Fields {
			if strings.HasPrefix(k, "Clocks Event Reasons/") || strings.HasPrefix(k, "Clocks Throttle Reasons/") {
				reasons = reasons || v == "Active" || v == "Not Active"
			}
			if v != "Active" {
				continue
			}
			if (strings.HasPrefix(k, "Clocks Event Reasons/") || strings.HasPrefix(k, "Clocks Throttle Reasons/")) &&
				(strings.Contains(k, "HW") || strings.Contains(k, "Thermal") || strings.Contains(k, "Power Brake")) {
				ev = append(ev, Evidence{Step: in[0].Step, Fact: fmt.Sprintf("GPU%d: %s Active", i, k[strings.LastIndex(k, "/")+1:])})
			}
		}
		if !reasons {
			unread = append(unread, Evidence{Step: in[0].Step, Fact: fmt.Sprintf("GPU%d (%s): no clock event reason read", i, g.BusID)})
		}
	}
	sort.Slice(ev, func(a, b int) bool { return ev[a].Fact < ev[b].Fact })
	switch {
	case len(ev) > 0:
		return verdict(Warn, fmt.Sprintf("%d hardware or thermal slowdowns active", len(ev)), append(ev, unread...)...)
	case len(unread) > 0:
		return verdict(Unknown, fmt.Sprintf("the clock event reasons of %d GPU(s) could not be read", len(unread)), unread...)
	}
	return verdict(Pass, "no hardware or thermal slowdown")
}

func xidRecent(in []Input, _ map[string]any) Verdict {
	k := in[0].Value.(*parse.KernelLog)
	var hw, other, remaps []Evidence
	for _, x := range k.XIDs {
		if x.XID == 63 && !x.SXid {
			// A row remap recorded (NVIDIA: IGNORE, IGNORE): the remap's
			// state, pending or failed, is the remapped-rows check's to
			// judge, not an Xid of its own.
			remaps = append(remaps, Evidence{Step: in[0].Step, Fact: fmt.Sprintf("Xid 63 on %s: row remap recorded (the remapped-rows check judges the remap state)", x.PCI), Line: x.Line})
			continue
		}
		e := Evidence{Step: in[0].Step, Fact: xidFact(x), Line: x.Line}
		if x.Hardware {
			hw = append(hw, e)
		} else {
			other = append(other, e)
		}
	}
	xids := len(hw)
	offBus := 0
	for _, p := range k.FallenOffBus {
		// The driver says "fallen off the bus" beside its Xid 79 too: that
		// is one event, already counted.
		if slices.ContainsFunc(k.XIDs, func(x parse.XIDLine) bool { return x.XID == 79 && strings.EqualFold(x.PCI, p) }) {
			continue
		}
		offBus++
		hw = append(hw, Evidence{Step: in[0].Step, Fact: p + " fell off the bus"})
	}
	all := append(append(hw, other...), remaps...)
	switch {
	case xids == 0 && offBus > 0:
		return verdict(Fail, fmt.Sprintf("%d GPU(s) fallen off the bus without an Xid", offBus), all...)
	case offBus > 0:
		return verdict(Fail, fmt.Sprintf("%d hardware Xid event(s), %d GPU(s) fallen off the bus without an Xid", xids, offBus), all...)
	case len(hw) > 0:
		return verdict(Fail, fmt.Sprintf("%d hardware Xid event(s)", len(hw)), all...)
	case len(other) > 0:
		return verdict(Warn, fmt.Sprintf("%d Xid or SXid event(s) that point at no hardware fault", len(other)), append(other, remaps...)...)
	}
	over := fmt.Sprintf("%d kernel log line(s) read", k.Lines)
	if k.First != "" {
		over += ", from " + k.First + " to " + k.Last
	}
	if len(remaps) > 0 {
		return verdict(Pass, fmt.Sprintf("no Xid in the kernel log but %d row remap record(s) (Xid 63)", len(remaps)), append(remaps, Evidence{Step: in[0].Step, Fact: over})...)
	}
	return verdict(Pass, "no Xid in the kernel log", Evidence{Step: in[0].Step, Fact: over})
}

// xidFact says what one Xid or SXid line means, with the fix: "Xid 149
// on 0009:01:00: NVLink5 NETIR_LINK_EVT error on NVLink 1 (fatal) ...
// Fix: ...". An unknown code is named unknown, never guessed.
func xidFact(x parse.XIDLine) string {
	what, where := "Xid", x.PCI
	if x.SXid {
		what, where = "SXid", "NVSwitch "+x.PCI
	}
	meaning := "unknown " + what + " (not in NVIDIA's catalog gpulab carries)"
	if x.SXid && !x.Known && x.Hardware {
		meaning += ", fatal by the driver's word"
	}
	if x.Known || x.NVLink != nil {
		meaning = x.Meaning
	}
	f := fmt.Sprintf("%s %d on %s: %s", what, x.XID, where, meaning)
	if x.Action != "" {
		f += ". Fix: " + x.Action
	}
	if len(x.Detail) > 0 {
		f += fmt.Sprintf(" (%d detail line(s) follow it)", len(x.Detail))
	}
	return f
}

func rdmaUp(in []Input, _ map[string]any) Verdict {
	links := in[0].Value.([]parse.RdmaLink)
	if len(links) == 0 {
		return verdict(Fail, "no RDMA device: NCCL will use sockets (NET/Socket)")
	}
	var up, down []string
	var ev []Evidence
	for _, l := range links {
		name := fmt.Sprintf("%s/%d", l.Device, l.Port)
		if l.Active {
			up = append(up, name)
		} else {
			down = append(down, name)
			ev = append(ev, Evidence{Step: in[0].Step, Fact: fmt.Sprintf("%s %s %s", name, l.State, l.PhysicalState)})
		}
	}
	switch {
	case len(up) == 0:
		return verdict(Fail, fmt.Sprintf("no RDMA port is up (%d down): NCCL will fall back to sockets", len(down)), ev...)
	case len(down) > 0:
		return verdict(Warn, fmt.Sprintf("%d RDMA port(s) up, %d down", len(up), len(down)), ev...)
	}
	return verdict(Pass, fmt.Sprintf("%d RDMA port(s) up", len(up)))
}

// migMode: a MIG mode change that is pending needs the GPU reset (idle).
func migMode(in []Input, _ map[string]any) Verdict {
	q := in[0].Value.(*parse.Query)
	var on []string
	var ev []Evidence
	for i, g := range q.GPUs {
		cur, pend := deref(g.MIGCurrent), deref(g.MIGPending)
		if cur == "Enabled" {
			on = append(on, fmt.Sprintf("GPU%d", i))
		}
		if cur != pend && cur != "" && pend != "" {
			ev = append(ev, Evidence{Step: in[0].Step, Fact: fmt.Sprintf("GPU%d (%s): MIG %s, pending %s", i, g.BusID, cur, pend)})
		}
	}
	if len(ev) > 0 {
		return verdict(Warn, fmt.Sprintf("MIG mode change pending on %d GPU(s): reset them (idle) to apply", len(ev)), ev...)
	}
	if len(on) == 0 {
		return verdict(Pass, "MIG disabled on every GPU")
	}
	return verdict(Pass, "MIG enabled on "+strings.Join(on, ", "))
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ncclTransport: which network NCCL chose, against the RDMA ports the host
// has. NET/Socket with an RDMA port up is the classic "multi-node is slow".
func ncclTransport(in []Input, _ map[string]any) Verdict {
	n := in[0].Value.(*parse.NCCL)
	links := in[1].Value.([]parse.RdmaLink)
	var up []string
	for _, l := range links {
		if l.Active {
			up = append(up, fmt.Sprintf("%s/%d", l.Device, l.Port))
		}
	}
	var warn []Evidence
	for _, w := range n.Warnings {
		warn = append(warn, Evidence{Step: in[0].Step, Fact: "NCCL WARN " + w.Message, Line: w.Line})
	}
	tr := Evidence{Step: in[0].Step, Fact: "NCCL " + n.Version + " chose " + n.Transport}
	switch {
	case n.Transport == "NET/Socket" && len(up) > 0:
		return verdict(Fail, fmt.Sprintf("NCCL chose NET/Socket although %d RDMA port(s) are up (%s)", len(up), strings.Join(up, ", ")),
			append([]Evidence{tr, {Step: in[1].Step, Fact: strings.Join(up, ", ") + " ACTIVE"}}, warn...)...)
	case n.Transport == "NET/Socket":
		return verdict(Fail, "NCCL uses NET/Socket: the host has no RDMA port up", append([]Evidence{tr}, warn...)...)
	case n.Transport == "":
		if n.Nodes != nil && *n.Nodes == 1 {
			return verdict(Skipped, "single-node job: NCCL used no network transport")
		}
		return verdict(Unknown, "the log does not say which network NCCL chose (was it written with NCCL_DEBUG=INFO?)", warn...)
	case !n.GDRDMA:
		return verdict(Warn, n.Transport+" without GPUDirect RDMA: traffic is staged through host memory", append([]Evidence{tr}, warn...)...)
	case len(warn) > 0:
		return verdict(Warn, fmt.Sprintf("%s with GPUDirect RDMA, but the log has %d warning(s)", n.Transport, len(warn)), warn...)
	}
	return verdict(Pass, n.Transport+" with GPUDirect RDMA", tr)
}

// ncclEnv: NCCL_IB_HCA and NCCL_SOCKET_IFNAME, as the log reports them
// set, must name devices this host has and that are up. Both take a
// comma list of prefixes; "=" makes them exact and "^" excludes.
func ncclEnv(in []Input, _ map[string]any) Verdict {
	n := in[0].Value.(*parse.NCCL)
	links := in[1].Value.([]parse.RdmaLink)
	ifaces := in[2].Value.([]parse.Link)
	var bad, good []Evidence
	check := func(name, value string, have []string, up map[string]bool) {
		v, exclude := strings.CutPrefix(value, "^")
		v, exact := strings.CutPrefix(v, "=")
		for _, item := range strings.Split(v, ",") {
			item = strings.TrimSpace(item)
			dev, _, _ := strings.Cut(item, ":") // mlx5_0:1 names a port
			if dev == "" {
				continue
			}
			var matched, active []string
			for _, h := range have {
				if h == dev || (!exact && strings.HasPrefix(h, dev)) {
					matched = append(matched, h)
					if up[h] {
						active = append(active, h)
					}
				}
			}
			switch {
			case exclude:
				good = append(good, Evidence{Step: in[0].Step, Fact: fmt.Sprintf("%s excludes %s", name, item)})
			case len(matched) == 0:
				bad = append(bad, Evidence{Step: in[0].Step, Fact: fmt.Sprintf("%s=%s: no device %q on this host (it has %s)", name, value, item, strings.Join(have, ", "))})
			case len(active) == 0:
				bad = append(bad, Evidence{Step: in[0].Step, Fact: fmt.Sprintf("%s=%s: %s is not up", name, value, strings.Join(matched, ", "))})
			default:
				good = append(good, Evidence{Step: in[0].Step, Fact: fmt.Sprintf("%s=%s: %s up", name, value, strings.Join(active, ", "))})
			}
		}
	}
	var set []string
	if v, ok := n.Env["NCCL_IB_HCA"]; ok {
		set = append(set, "NCCL_IB_HCA")
		var have []string
		up := map[string]bool{}
		for _, l := range links {
			if !slices.Contains(have, l.Device) {
				have = append(have, l.Device)
			}
			up[l.Device] = up[l.Device] || l.Active
		}
		check("NCCL_IB_HCA", v, have, up)
	}
	if v, ok := n.Env["NCCL_SOCKET_IFNAME"]; ok {
		set = append(set, "NCCL_SOCKET_IFNAME")
		var have []string
		up := map[string]bool{}
		for _, l := range ifaces {
			have = append(have, l.Name)
			up[l.Name] = l.State == "UP" || (l.State == "UNKNOWN" && slices.Contains(l.Flags, "UP"))
		}
		check("NCCL_SOCKET_IFNAME", v, have, up)
	}
	switch {
	case len(set) == 0 && n.Transport == "" && len(n.SocketInterfaces) == 0 && len(n.HCAs) == 0 && len(n.Channels) == 0:
		// NCCL says what the environment set at INFO level, with its
		// network choice; a log without the one has not the other either.
		return verdict(Unknown, "the log shows no NCCL initialisation (no network, interface or channel line): whether NCCL_IB_HCA or NCCL_SOCKET_IFNAME was set is not in it; run with NCCL_DEBUG=INFO")
	case len(set) == 0:
		return verdict(Pass, "NCCL_IB_HCA and NCCL_SOCKET_IFNAME are not set: NCCL chooses the devices itself")
	case len(bad) > 0:
		return verdict(Fail, orchestrator.FirstLine(bad[0].Fact), append(bad, good...)...)
	}
	return verdict(Pass, strings.Join(set, " and ")+" name devices that are up", good...)
}
