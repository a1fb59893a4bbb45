package labs

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpulab/gpulab/landscape"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/probes/remote"
	"github.com/gpulab/gpulab/probes/report"
	"github.com/gpulab/gpulab/step"
	"github.com/gpulab/gpulab/step/parse"
)

const fx = "../testdata/fixtures/"

func TestBuiltinLabsLoad(t *testing.T) {
	ls, err := Load(nil)
	if err != nil {
		t.Fatalf("built-in labs do not load: %v", err)
	}
	if len(ls) < 2 {
		t.Fatalf("%d built-in labs", len(ls))
	}
	for _, l := range ls {
		if l.Maturity != "draft" {
			t.Errorf("%s: maturity %s before it ran on real hardware", l.ID, l.Maturity)
		}
	}
}

func lab(t *testing.T, id string) *Lab {
	t.Helper()
	ls, err := Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	l, ok := Find(ls, id)
	if !ok {
		t.Fatalf("no lab %s", id)
	}
	return l
}

// measure parses a fixture with the step's parser and computes its metrics.
func measure(t *testing.T, l *Lab, step, fixture string, into map[string]any, unmeasurable ...string) {
	t.Helper()
	data, err := os.ReadFile(fx + fixture)
	if err != nil {
		t.Fatal(err)
	}
	var kind string
	for _, s := range l.Steps {
		if s.ID == step {
			kind = s.Parser
		}
	}
	k, _ := parse.Lookup(kind)
	v, _ := k.Parse(string(data))
	vals, errs := l.Measure(step, v, string(data), 0)
	for m, err := range errs {
		if !slices.Contains(unmeasurable, m) {
			t.Errorf("%s metric %s: %v", fixture, m, err)
		}
	}
	for _, m := range unmeasurable {
		if errs[m] == nil {
			t.Errorf("%s: metric %s was measured (%v), but the output cannot give it", fixture, m, vals[m])
		}
	}
	for m, v := range vals {
		into[m] = v
	}
}

func statuses(scores []Score) string {
	var parts []string
	for _, s := range scores {
		parts = append(parts, s.ID+"="+string(s.Status))
	}
	return strings.Join(parts, " ")
}

func TestTopologySanityOnRealOutputs(t *testing.T) {
	l := lab(t, "topology-sanity")
	for _, tc := range []struct {
		topo, want string
		metrics    map[string]any
	}{
		{"nvidia-smi-topo-m/hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt",
			"nvlink-mesh=PASS near-nic=WARN numa-known=PASS",
			map[string]any{"gpus": int64(8), "nics": int64(1), "nvlink": "PASS"}},
		// The V100's hybrid cube-mesh is the regular partial mesh it is
		// built with: every link up, as the topology runbook says.
		{"nvidia-smi-topo-m/v100-sxm2-8gpu-hybrid-cube-mesh-nv1-nv2-mlx5-drv440.txt",
			"nvlink-mesh=PASS", map[string]any{"gpus": int64(8), "nvlink": "PASS"}},
		{"nvidia-smi-topo-m/a10-4gpu-pcie-SYS-2nic.txt",
			"nvlink-mesh=FAIL near-nic=WARN", map[string]any{"gpus": int64(4), "nvlink": "SKIPPED", "near_nic": "WARN"}},
		{"nvidia-smi-topo-m/aws-1gpu-efa-tabs-nolegend.txt",
			"nvlink-mesh=FAIL", map[string]any{"gpus": int64(1), "nvlink": "SKIPPED"}},
	} {
		m := map[string]any{}
		measure(t, l, "topo", tc.topo, m)
		measure(t, l, "numa", "numactl-hardware/asus-esc8000a-e12-2node-epyc9374f.txt", m)
		for k, want := range tc.metrics {
			if m[k] != want {
				t.Errorf("%s: %s = %v (%T), want %v", tc.topo, k, m[k], m[k], want)
			}
		}
		got := statuses(l.Score(m, nil, nil, 1, true))
		for _, w := range strings.Fields(tc.want) {
			if !strings.Contains(got, w) {
				t.Errorf("%s: scores %s, want %s", tc.topo, got, w)
			}
		}
	}
}

// One judgement: on every real topology in the fixtures, the lab's NVLink
// and NIC criteria say what the topology runbook's checks say (a PASS is a
// PASS in both; a runbook WARN is the lab's minor criterion failing, WARN).
func TestTopologyLabAgreesWithRunbook(t *testing.T) {
	l := lab(t, "topology-sanity")
	files, _ := filepath.Glob("../testdata/fixtures/nvidia-smi-topo-m/*.txt")
	if len(files) < 5 {
		t.Fatalf("%d topology fixtures", len(files))
	}
	k, _ := parse.Lookup("nvidia-smi-topo")
	for _, f := range files {
		data, _ := os.ReadFile(f)
		v, err := k.Parse(string(data))
		if err != nil {
			continue // a damaged fixture: nothing to judge
		}
		rb := step.JudgeOutput("nvidia-smi-topo", step.Read("topo", "nvidia-smi-topo", step.CommandResult{}, v, nil))
		m := map[string]any{}
		measure(t, l, "topo", strings.TrimPrefix(f, "../testdata/fixtures/"), m)
		m["numa_nodes"] = int64(1)
		scores := map[string]step.Status{}
		for _, s := range l.Score(m, nil, nil, 1, true) {
			scores[s.ID] = s.Status
		}
		if mesh := rb["nvlink-mesh"].Status; (mesh == step.Pass) != (scores["nvlink-mesh"] == step.Pass) {
			t.Errorf("%s: the runbook's nvlink-mesh is %s (%s), the lab's %s", filepath.Base(f), mesh, rb["nvlink-mesh"].Summary, scores["nvlink-mesh"])
		}
		if nic := rb["nic-nearest"].Status; nic != step.Skipped && nic != scores["near-nic"] {
			t.Errorf("%s: the runbook's nic-nearest is %s (%s), the lab's near-nic %s", filepath.Base(f), nic, rb["nic-nearest"].Summary, scores["near-nic"])
		}
	}
}

func TestHealthGateOnRealOutputs(t *testing.T) {
	l := lab(t, "health-gate")
	m := map[string]any{}
	measure(t, l, "query", "nvidia-smi-q/a100-sxm4-80gb-drv510-ecc-remap-excerpt.txt", m)
	measure(t, l, "xid", "dmesg-xid/xid63-row-remapper-a100.txt", m)
	measure(t, l, "dcgm", "workloads/dcgmi-diag/dcgm4.4.1-r2-8xB200-slurm-pcie-fail-warning.txt", m)
	scores := l.Score(m, nil, nil, 1, true)
	got := statuses(scores)
	for _, w := range []string{"driver=PASS", "remap=FAIL", "no-hardware-xid=FAIL", "dcgm-diag=FAIL", "quiet-log=WARN"} {
		if !strings.Contains(got, w) {
			t.Errorf("scores %s, want %s", got, w)
		}
	}
	for _, s := range scores {
		if s.ID == "remap" && (s.Summary != "metrics.remap_failed = 0, metrics.remap_pending = 1 against metrics.remap_pending == 0 && metrics.remap_failed == 0" || s.Evidence["remap_pending"] != "step query") {
			t.Errorf("remap score carries its values, expression and evidence: %+v", s)
		}
	}
	if Passed(scores) {
		t.Error("a node with a pending remap passed the health gate")
	}

	m = map[string]any{}
	measure(t, l, "query", "nvidia-smi-q/a100-sxm4-40gb-8gpu-drv535-full-a.txt", m)
	measure(t, l, "xid", "dmesg-xid/gpud-xid13-sm-exceptions-then-xid43-iso-decode.txt", m)
	measure(t, l, "dcgm", "workloads/dcgmi-diag/dcgm4.4.2-r2-i0-1xA10G-pass.txt", m)
	measureProbe(t, l, "probe-simulated-dgxa100-healthy.json", nil, m)
	quiet, _ := stabilityMetrics(stabilityCounts(kernelLog(100, 200, nil, 8)), stabilityCounts(kernelLog(100, 230, nil, 8)))
	for k, v := range quiet {
		m[k] = v
	}
	scores = l.Score(m, nil, nil, 1, true)
	if got := statuses(scores); got != "driver=PASS ecc=PASS remap=PASS no-hardware-xid=PASS gpu-says-ok=PASS fabric=PASS rdma=PASS no-stuck-process=PASS links-and-clocks=PASS dcgm-diag=PASS dcgm-quiet=PASS stable=PASS quiet-log=WARN" || !Passed(scores) {
		t.Errorf("a healthy node with application Xids: %s (passed %v)", got, Passed(scores))
	}

	// The probe's findings fail their criteria: an NVLink fabric not
	// complete, a recovery action asked for; a check the probe could not
	// make leaves its criterion UNKNOWN, never PASS.
	measureProbe(t, l, "probe-simulated-dgxa100-healthy.json", func(s *report.Snapshot) {
		s.GPUs[3].Fabric = &report.GPUFabric{State: "in_progress"}
		s.GPUs[5].RecoveryAction = "drain_and_reset"
		s.GPUs[2].PCIe.WidthCurrent = nil
		s.Errors = append(s.Errors, report.FieldError{Field: "gpu[2].pcie.width_current", GPU: ptr(2), Code: "NOT_SUPPORTED"})
	}, m)
	got = statuses(l.Score(m, nil, nil, 1, true))
	for _, w := range []string{"gpu-says-ok=FAIL", "fabric=FAIL", "rdma=PASS", "links-and-clocks=UNKNOWN"} {
		if !strings.Contains(got, w) {
			t.Errorf("faults through the probe: %s, want %s", got, w)
		}
	}

	// A lost GPU makes every check of all GPUs unmade: the criterion
	// that holds gpu-lost still FAILs (never UNDECIDED beside a FAIL),
	// and one with nothing failed among what was made is UNKNOWN.
	m2 := map[string]any{}
	measureProbe(t, l, "probe-simulated-dgxa100-healthy.json", func(s *report.Snapshot) {
		s.GPUs = append(s.GPUs[:3], s.GPUs[4:]...)
		s.Errors = append(s.Errors, report.FieldError{Field: "gpu[3]", GPU: ptr(3), Code: "GPU_IS_LOST", Message: "GPU is lost"})
	}, m2)
	got = statuses(l.Score(m2, nil, nil, 1, true))
	for _, w := range []string{"gpu-says-ok=FAIL", "fabric=UNKNOWN", "links-and-clocks=UNKNOWN"} {
		if !strings.Contains(got, w) {
			t.Errorf("a lost GPU: %s, want %s", got, w)
		}
	}
}

// measureProbe measures the probe step of l on a snapshot from
// labs/testdata (what gpulab's simulated probe printed: make probes, then
// dist/nvmlsim-linux-amd64 --mock dgxa100 --host gpu01 --window 1s
// --expect gpus=8,ib_ports=4,ib_rate_gbps=200), changed by change (nil:
// as it is), into into.
func measureProbe(t *testing.T, l *Lab, file string, change func(*report.Snapshot), into map[string]any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := remote.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if change != nil {
		change(snap)
	}
	vals, errs := l.Measure("probe", snap, string(data), 0)
	for m, err := range errs {
		into[m] = nil
		delete(into, m)
		t.Logf("probe metric %s not measured: %v", m, err)
	}
	for m, v := range vals {
		into[m] = v
	}
}

func ptr[T any](v T) *T { return &v }

// Missing evidence is PENDING while the run goes on and UNKNOWN at the
// end, never PASS; a waiver turns a failure into a warning that says why.
func TestScoringMissingEvidenceAndWaivers(t *testing.T) {
	l := lab(t, "health-gate")
	m := map[string]any{"gpus": int64(8), "uncorrectable_ecc": int64(2), "remap_pending": int64(0), "remap_failed": int64(0)}
	live := l.Score(m, nil, nil, 1, false)
	if got := statuses(live); got != "driver=PASS ecc=FAIL remap=PASS no-hardware-xid=PENDING gpu-says-ok=PENDING fabric=PENDING rdma=PENDING no-stuck-process=PENDING links-and-clocks=PENDING dcgm-diag=PENDING dcgm-quiet=PENDING stable=PENDING quiet-log=PENDING" {
		t.Errorf("live: %s", got)
	}
	end := l.Score(m, map[string]string{"hardware_xids": "step xid exited 1: sudo: a password is required"}, nil, 1, true)
	for _, s := range end {
		if s.ID == "no-hardware-xid" && (s.Status != step.Unknown || !strings.Contains(s.Summary, "metrics.hardware_xids was not measured: step xid exited 1: sudo")) {
			t.Errorf("missing evidence at the end: %+v", s)
		}
	}
	if Passed(end) {
		t.Error("passed with an UNKNOWN critical criterion")
	}
	l.Criteria[1].Waiver = "known bad DIMM row, RMA open"
	defer func() { l.Criteria[1].Waiver = "" }()
	for _, s := range l.Score(m, nil, nil, 1, false) {
		if s.ID == "ecc" && (s.Status != step.Warn || !strings.HasSuffix(s.Summary, "(waived: known bad DIMM row, RMA open)")) {
			t.Errorf("waived: %+v", s)
		}
	}
}

func TestLabFileErrors(t *testing.T) {
	src := `id = "x"
name = "x"
goal = "x"
plane = "data"
maturity = "beta"
estimate_minutes = 5

[[step]]
id = "s"
phase = "observe"
command = "nvidia-smi -L"
parser = "nvidia-smi-L"
[step.metrics]
gpus = "size(out.gpus"
count = "size(out.gpus)"

[[criterion]]
id = "a"
description = "a"
expr = "metrics.gpu > 0"
impact = "critical"

[[criterion]]
id = "b"
description = "b"
expr = "metrics.count + 1"
impact = "blocker"

[[step]]
id = "t"
phase = "teardown"
command = "true"
parser = "nvidia-smi-x"

[[criterion]]
id = "c"
description = "c"
expr = "hosts > 0"
impact = "critical"
`
	_, err := Parse("lab.toml", []byte(src))
	if err == nil {
		t.Fatal("a broken lab loaded")
	}
	for _, want := range []string{
		`lab.toml:5:1: maturity "beta": want one of draft, validated, reproducible, production-notes`,
		`lab.toml:14:1: metric gpus: CEL:`,
		`lab.toml:20:1: criterion "a" reads metrics.gpu, which no step measures (measured: count, gpu_lost, oom, xid)`,
		`lab.toml:26:1: criterion "b": CEL: "metrics.count + 1" gives`,
		`lab.toml:27:1: criterion "b" impact "blocker"`,
		`lab.toml:31:1: step "t" phase "teardown"`,
		`lab.toml:33:1: no parser "nvidia-smi-x"`,
		`lab.toml:38:1: criterion "c" reads no metric: it would pass without evidence`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}
}

// A counterexample passes only when the system rejected what it must: here
// an allocation beyond the memory limit has to fail with an OOM.
func TestCounterexample(t *testing.T) {
	l, err := Parse("c.toml", []byte(`id = "c"
name = "c"
goal = "over-allocation is refused"
plane = "data"
maturity = "draft"
estimate_minutes = 5

[[step]]
id = "overalloc"
phase = "check"
command = "python3 alloc.py --gib 30"
[step.metrics]
overalloc_refused = "exit_code != 0 && stdout.contains('CUDA out of memory')"

[[criterion]]
id = "ran"
description = "the check ran"
expr = "has(metrics.overalloc_refused)"
impact = "minor"

[[counterexample]]
id = "penetration"
description = "allocating beyond the 20 GiB limit must fail"
expr = "metrics.overalloc_refused"
impact = "critical"
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		stdout string
		exit   int
		want   Status
	}{
		{"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 30.00 GiB", 1, step.Pass},
		{"allocated 30.00 GiB", 0, step.Fail},
	} {
		m, errs := l.Measure("overalloc", nil, tc.stdout, tc.exit)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		s := l.Score(m, nil, nil, 1, true)
		if s[1].ID != "penetration" || !s[1].Counter || s[1].Status != tc.want {
			t.Errorf("%q exit %d: %+v, want %s", tc.stdout, tc.exit, s[1], tc.want)
		}
	}
}

// Parameters: declared before use in commands and criteria; a criterion
// whose parameter has no value is UNKNOWN and says how to give it.
func TestLabParams(t *testing.T) {
	src := `id = "p"
name = "p"
goal = "p"
plane = "workload"
maturity = "draft"
estimate_minutes = 5

[[param]]
name = "ttft_p99_slo_ms"
help = "the P99 time-to-first-token objective"

[[step]]
id = "bench"
phase = "run"
command = "vllm bench serve --model {{model}}"
parser = "vllm-bench-serve"
[step.metrics]
ttft_p99_ms = "out.ttft_ms.percentiles.p99"

[[criterion]]
id = "slo"
description = "P99 TTFT within the objective"
expr = "metrics.ttft_p99_ms <= double(params.ttft_p99_slo_ms)"
impact = "critical"

[[criterion]]
id = "other"
description = "x"
expr = "params.nope == ''"
impact = "minor"
`
	_, err := Parse("p.toml", []byte(src))
	for _, want := range []string{`p.toml:15:1: step "bench" uses {{model}}, which is not a [[param]] of this lab`, `p.toml:29:1: criterion "other" reads params.nope, which is not a [[param]] of this lab`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q: %v", want, err)
		}
	}
	src = strings.Replace(src, "{{model}}", "Qwen/Qwen2-7B", 1)
	src = src[:strings.Index(src, "[[criterion]]\nid = \"other\"")]
	l, err := Parse("p.toml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	measure(t, l, "bench", "workloads/vllm-bench-serve/benchmark_serving-qwen2-7b-2xA100-40GB-random1024-10prompts.txt", m)
	for _, tc := range []struct {
		slo  string
		want Status
		sum  string
	}{
		{"4000", step.Pass, "metrics.ttft_p99_ms = 3346.14 against"},
		{"3000", step.Fail, "metrics.ttft_p99_ms = 3346.14 against"},
		{"", step.Unknown, "no value for params.ttft_p99_slo_ms (--set ttft_p99_slo_ms=...)"},
	} {
		params, err := l.Bind([]string{"ttft_p99_slo_ms=" + tc.slo})
		if err != nil {
			t.Fatal(err)
		}
		s := l.Score(m, nil, params, 1, true)[0]
		if s.Status != tc.want || !strings.Contains(s.Summary, tc.sum) {
			t.Errorf("slo %q: %+v", tc.slo, s)
		}
	}
	if _, err := l.Bind([]string{"slo=1"}); err == nil || !strings.Contains(err.Error(), `lab p has no parameter "slo" (it has ttft_p99_slo_ms)`) {
		t.Errorf("unknown parameter: %v", err)
	}
}

// The built-in workload labs, scored on real tool outputs: the NCCL lab's
// bare and container sweeps, the baseline's vLLM result, MIG's derived
// interference coefficient.
func TestWorkloadLabsOnRealOutputs(t *testing.T) {
	l := lab(t, "nccl-allreduce")
	m := map[string]any{}
	measure(t, l, "bare", "workloads/nccl-tests/all_reduce_1node-8xA100-SXM4-80GB-nccltests2.19.4.txt", m)
	measure(t, l, "container", "workloads/nccl-tests/all_reduce_1node-8xA100-40GB-old-nogroup-validation0-superbench.txt", m, "wrong_container")
	params, _ := l.Bind(nil)
	got := statuses(l.Score(m, nil, params, 1, true))
	// 2.19.4 peaks at 181.32 GB/s; the other sweep at 235.26 but did not
	// validate (N/A), so "correct" lacks evidence and is UNKNOWN.
	if got != "correct=UNKNOWN container-parity=PASS rated=FAIL" {
		t.Errorf("nccl-allreduce: %s (%v)", got, m)
	}
	// A run cut off before its summary measured no bandwidth: its
	// criteria are UNKNOWN, not judged on the part of the table printed.
	m = map[string]any{}
	measure(t, l, "bare", "workloads/nccl-tests/all_reduce_128node-1024xH100-cut-after-16G-test-nccl-failure.txt", m, "busbw_bare", "peak_busbw_bare", "wrong_bare")
	measure(t, l, "container", "workloads/nccl-tests/all_reduce_1node-8xA100-40GB-old-nogroup-validation0-superbench.txt", m, "wrong_container")
	if got := statuses(l.Score(m, nil, params, 1, true)); !strings.Contains(got, "rated=UNKNOWN") {
		t.Errorf("nccl-allreduce on a cut-off run: %s (%v)", got, m)
	}

	l = lab(t, "exclusive-baseline")
	m = map[string]any{"compute_processes": int64(1)}
	// Without probe samples the probe's metrics are unmeasured, never 0.
	measure(t, l, "bench", "workloads/vllm-bench-serve/benchmark_serving-qwen2-7b-2xA100-40GB-random1024-10prompts.txt", m,
		"probe_util_p50", "probe_mem_peak_mib", "slowed_samples")
	params, _ = l.Bind([]string{"model=Qwen/Qwen2-7B"})
	if got := statuses(l.Score(m, nil, params, 1, true)); got != "alone=PASS no-failures=PASS ttft-slo=FAIL not-slowed=UNKNOWN busy-probe=UNKNOWN gpu-busy=UNKNOWN" || m["output_tps"] != 218.04 {
		t.Errorf("exclusive-baseline: %s (%v)", got, m)
	}
	// With samples: GPU 1 busy, GPU 0 idle; one sample slowed by heat.
	u := func(v uint32) *uint32 { return &v }
	mib := func(v uint64) *uint64 { return &v }
	var samples []Sample
	for k, util := range []uint32{90, 95, 20, 97} {
		s := Sample{T: float64(2 * k), GPUs: []SampleGPU{{Index: 0, UtilPct: u(0), MemUsedMiB: mib(0)}, {Index: 1, UtilPct: u(util), MemUsedMiB: mib(70000 + uint64(k))}}}
		if k == 2 {
			s.GPUs[1].Throttle = []string{"sw_power_cap", "hw_thermal_slowdown"}
		}
		samples = append(samples, s)
	}
	if got := summarizeSamples(samples); got != "4 probe samples, busiest GPU 90% (median), peak 68.4 GiB in use" {
		t.Errorf("summary in the record: %q", got)
	}
	vals, errs := l.MeasureStep("bench", StepOutput{Out: map[string]any{}, Samples: samples})
	if vals["probe_util_p50"] != 90.0 || vals["probe_mem_peak_mib"] != 70003.0 || vals["slowed_samples"] != int64(1) {
		t.Errorf("probe metrics from samples: %v (%v)", vals, errs)
	}

	l = lab(t, "mig-isolation")
	m = map[string]any{"ttft_p99_alone_ms": 3346.14, "ttft_p99_shared_ms": 3500.0, "instances_3g": int64(2)}
	why := map[string]string{}
	l.Derive(m, why, nil)
	if c, _ := m["interference_coefficient"].(float64); c < 1.045 || c > 1.046 {
		t.Errorf("interference coefficient = %v (%v)", m["interference_coefficient"], why)
	}
	m["ttft_p99_alone_ms"], m["ttft_p99_shared_ms"] = 0.0, 10.0
	delete(m, "interference_coefficient")
	l.Derive(m, why, nil)
	if _, ok := m["interference_coefficient"]; ok || !strings.Contains(why["interference_coefficient"], "is not a number") {
		t.Errorf("a division by zero is not a coefficient: %v %v", m, why)
	}
}

// Every built-in lab is one the catalog's project cards point at, and
// every lab the catalog names exists.
func TestBuiltinLabsMatchTheCatalog(t *testing.T) {
	c, err := landscape.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	ls, _ := Load(nil)
	for _, l := range ls {
		if _, ok := c.Lab(l.ID); !ok {
			t.Errorf("lab %s is not in the catalog's lab index", l.ID)
		}
	}
	for _, cl := range c.Labs {
		if _, ok := Find(ls, cl.ID); !ok {
			t.Errorf("the catalog names lab %s, which is not built in", cl.ID)
		}
	}
	if len(ls) < 8 {
		t.Errorf("%d built-in labs, want at least 8", len(ls))
	}
}

func TestKubernetesLabsOnRealOutputs(t *testing.T) {
	l := lab(t, "pending-explained")
	m := map[string]any{}
	measure(t, l, "events", "kubectl-get-events/gpu-pod-insufficient-then-scheduled-field-selector.txt", m)
	if m["failed_scheduling"] != int64(3) || m["unexplained_failed_scheduling"] != int64(0) || m["node_reasons"] != int64(2) || m["admitted"] != false {
		t.Errorf("pending-explained metrics: %v", m)
	}
	// Not admitted, and gpulab's reading of the cluster missing: whether
	// the queue decided is not known.
	params, _ := l.Bind(nil)
	if got := statuses(l.Score(m, nil, params, 1, true)); got != "decided=UNKNOWN explained=PASS quota-honoured=PASS" {
		t.Errorf("pending-explained without gpulab's reading: %s", got)
	}
	// Not admitted, and no workload held: quota-honoured holds whatever
	// Kueue's usage says, and says so.
	m["job_held"] = false
	scores := l.Score(m, nil, params, 1, true)
	if got := statuses(scores); got != "decided=FAIL explained=PASS quota-honoured=PASS" || !strings.Contains(scores[2].Summary, "(decided without metrics.quota_fulfilment)") {
		t.Errorf("pending-explained on a cluster without Kueue events: %s %q", got, scores[2].Summary)
	}
	// Admitted: team A holds 32 GPUs of its quota of 16 (borrowing).
	m["admitted"] = true
	vals, errs := l.Measure("quota", nil, "16 16", 0)
	m["gpus_in_use"] = vals["gpus_in_use"]
	l.Derive(m, map[string]string{}, params)
	if got := statuses(l.Score(m, nil, params, 1, true)); m["quota_fulfilment"] != 2.0 || got != "decided=PASS explained=PASS quota-honoured=PASS" {
		t.Errorf("admitted with borrowing: fulfilment %v (%v), %s", m["quota_fulfilment"], errs, got)
	}
	// Admitted while the queue holds 8: the quota was not honoured.
	vals, _ = l.Measure("quota", nil, "8\n", 0)
	m["gpus_in_use"] = vals["gpus_in_use"]
	delete(m, "quota_fulfilment")
	l.Derive(m, map[string]string{}, params)
	if got := statuses(l.Score(m, nil, params, 1, true)); m["quota_fulfilment"] != 0.5 || got != "decided=PASS explained=PASS quota-honoured=FAIL" {
		t.Errorf("admitted under quota: fulfilment %v, %s", m["quota_fulfilment"], got)
	}
	l = lab(t, "pod-cannot-see-gpu")
	m = map[string]any{}
	measure(t, l, "with", "nvidia-smi-L/dgx-a100-80gb-srun-1g10gb-single-mig.txt", m)
	measure(t, l, "events", "kubectl-get-events/gpu-pod-insufficient-then-scheduled-field-selector.txt", m)
	// The step's exit status is kubectl logs': 0 when it read what the
	// pod printed, whatever nvidia-smi in it did.
	vals, _ = l.Measure("without", nil, "Failed to initialize NVML: Unknown Error\n", 0)
	m["gpus_seen_without_request"] = vals["gpus_seen_without_request"]
	if got := statuses(l.Score(m, nil, nil, 1, true)); got != "sees-with-request=PASS scheduled=PASS no-request-no-gpu=PASS" {
		t.Errorf("pod-cannot-see-gpu: %s (%v)", got, m)
	}
	// A namespace that does not exist: kubectl fails, prints nothing, and
	// no GPU line is no evidence that the pod saw none.
	vals, errs = l.Measure("without", nil, "", 1)
	if v, ok := vals["gpus_seen_without_request"]; ok {
		t.Errorf("pod-cannot-see-gpu: kubectl exited 1 with no output, gpus_seen_without_request = %v, want not measured", v)
	}
	m["gpus_seen_without_request"] = nil
	delete(m, "gpus_seen_without_request")
	if got := statuses(l.Score(m, map[string]string{"gpus_seen_without_request": errs["gpus_seen_without_request"].Error()}, nil, 1, true)); got != "sees-with-request=PASS scheduled=PASS no-request-no-gpu=UNKNOWN" {
		t.Errorf("pod-cannot-see-gpu after kubectl exited 1: %s, want no-request-no-gpu UNKNOWN", got)
	}
}

// Records written to a results directory are listed newest first and
// compared against the first: throughput ratio and P99 interference
// coefficient (shared ÷ exclusive).
func TestResultsListAndCompare(t *testing.T) {
	dir := t.TempDir()
	mk := func(lab, mode string, at time.Time, tps, p99 float64) *Record {
		r := &Record{Schema: RecordSchema, Lab: lab, Started: at, Finished: at.Add(time.Minute), Complete: true, Passed: true,
			Result: ResultRow{Workload: "vLLM", Mode: mode, Throughput: "output_tps", Unit: "output tok/s", P99: "ttft_p99_ms"},
			Hosts:  []HostRecord{{Host: "gpu07", Passed: true, Metrics: map[string]any{"output_tps": tps, "ttft_p99_ms": p99}}}}
		if err := r.Write(r.Dir(dir), filepath.Join(dir, "results.csv")); err != nil {
			t.Fatal(err)
		}
		return r
	}
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	mk("exclusive-baseline", "exclusive", t0, 2000, 400)
	mk("mig-isolation", "MIG", t0.Add(time.Hour), 900, 480)
	os.MkdirAll(filepath.Join(dir, "broken", "run"), 0o755)
	os.WriteFile(filepath.Join(dir, "broken", "run", "record.json"), []byte("{"), 0o644)
	refs, err := ListRecords(dir)
	if err == nil || !strings.Contains(err.Error(), "broken/run/record.json") || len(refs) != 2 || refs[0].Record.Lab != "mig-isolation" {
		t.Fatalf("list: %v, %d records", err, len(refs))
	}
	// Runs started in the same second each get a directory of their own,
	// created exclusively: the name is never handed out twice.
	again := &Record{Lab: "mig-isolation", Started: t0.Add(time.Hour), Hosts: []HostRecord{{Host: "gpu07"}}}
	seen := map[string]bool{}
	for i := 2; i <= 4; i++ {
		d, err := again.CreateDir(dir)
		if err != nil || seen[d] || !strings.HasSuffix(d, fmt.Sprintf("mig-isolation/20261129-110000-gpu07-%d", i)) {
			t.Errorf("run %d in the same second: %s %v", i, d, err)
		}
		seen[d] = true
	}
	rows := Compare([]RecordRef{refs[1], refs[0]})
	if len(rows) != 2 || !rows[0].Baseline || *rows[0].P99Coefficient != 1 || *rows[1].P99Coefficient != 1.2 || *rows[1].ThroughputRatio != 0.45 {
		t.Errorf("compare: %+v", rows)
	}
}

// A baseline run on two hosts: both its rows are the baseline, and each
// host of the other run is compared with the same host of the baseline
// (a host the baseline lacks, with the baseline's first).
func TestCompareMultiHostBaseline(t *testing.T) {
	rec := func(lab string, p99 map[string]float64, hosts ...string) RecordRef {
		r := &Record{Lab: lab, Complete: true, Result: ResultRow{P99: "p99"}}
		for _, h := range hosts {
			r.Hosts = append(r.Hosts, HostRecord{Host: h, Metrics: map[string]any{"p99": p99[h]}})
		}
		return RecordRef{Dir: lab, Record: r}
	}
	base := rec("exclusive-baseline", map[string]float64{"gpu01": 100, "gpu02": 200}, "gpu01", "gpu02")
	run := rec("mig-isolation", map[string]float64{"gpu01": 150, "gpu02": 300, "gpu03": 400}, "gpu01", "gpu02", "gpu03")
	var got []string
	for _, r := range Compare([]RecordRef{base, run}) {
		got = append(got, fmt.Sprintf("%s %s %v %v", r.Lab, r.Host, r.Baseline, *r.P99Coefficient))
	}
	want := []string{"exclusive-baseline gpu01 true 1", "exclusive-baseline gpu02 true 1",
		"mig-isolation gpu01 false 1.5", "mig-isolation gpu02 false 1.5", "mig-isolation gpu03 false 4"}
	if !slices.Equal(got, want) {
		t.Errorf("compare:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The environment declaration's reader, on the shape nvidia-smi's CSV
// query prints (index, name, driver, memory, MIG mode).
func TestParseEnvironment(t *testing.T) {
	env := parseEnvironment("Linux 6.1.0-28-amd64\ngpu 0, NVIDIA A100-SXM4-80GB, 550.54.15, 81920 MiB, Disabled\ngpu 1, NVIDIA A100-SXM4-80GB, 550.54.15, 81920 MiB, Enabled\ncuda 12.4\n")
	if env.Kernel != "Linux 6.1.0-28-amd64" || env.Driver != "550.54.15" || env.CUDA != "12.4" || len(env.GPUs) != 2 || env.GPUs[1] != "1: NVIDIA A100-SXM4-80GB, 81920 MiB, MIG Enabled" {
		t.Errorf("%+v", env)
	}
	if env := parseEnvironment("Linux 6.1.0\n"); env.Driver != "" || len(env.GPUs) != 0 {
		t.Errorf("no driver: %+v", env)
	}
}

// Percentiles from samples use the nearest-rank method, in Go and in CEL
// (percentile(list, p), mean(list)); here on the SM utilisation samples of
// a real nvidia-smi dmon capture.
func TestPercentiles(t *testing.T) {
	for _, tc := range []struct {
		s    []float64
		p    float64
		want float64
	}{{[]float64{15, 20, 35, 40, 50}, 30, 20}, {[]float64{15, 20, 35, 40, 50}, 40, 20}, {[]float64{15, 20, 35, 40, 50}, 100, 50}, {[]float64{3, 1, 2}, 0, 1}, {[]float64{7}, 99, 7}} {
		if got, err := Percentile(tc.s, tc.p); err != nil || got != tc.want {
			t.Errorf("P%v of %v = %v, %v; want %v", tc.p, tc.s, got, err, tc.want)
		}
	}
	if _, err := Percentile(nil, 50); err == nil {
		t.Error("a percentile of nothing")
	}
	l, err := Parse("s.toml", []byte(`id = "s"
name = "s"
goal = "s"
plane = "data"
maturity = "draft"
estimate_minutes = 1
[[step]]
id = "dmon"
phase = "observe"
command = "nvidia-smi dmon -c 10"
parser = "nvidia-smi-dmon"
[step.metrics]
sm_p50 = "percentile(out.samples.map(r, double(r.sm)), 50.0)"
sm_mean = "mean(out.samples.map(r, double(r.sm)))"
samples = "size(out.samples)"
[[criterion]]
id = "c"
description = "c"
expr = "metrics.sm_p50 >= 0.0"
impact = "minor"
`))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(fx + "workloads/nvidia-smi-dmon/dmon-default-1xA10-aws-trailing-spaces.txt")
	k, _ := parse.Lookup("nvidia-smi-dmon")
	v, _ := k.Parse(string(data))
	vals, errs := l.Measure("dmon", v, string(data), 0)
	// SM % samples 30, 85, 98, 100: nearest-rank P50 is 85, the mean 78.25.
	if len(errs) > 0 || vals["samples"] != int64(4) || vals["sm_p50"] != 85.0 || vals["sm_mean"] != 78.25 {
		t.Errorf("dmon metrics: %v %v", vals, errs)
	}
}

func TestPromQLStepErrors(t *testing.T) {
	_, err := Parse("q.toml", []byte(`id = "q"
name = "q"
goal = "q"
plane = "workload"
maturity = "draft"
estimate_minutes = 1

[[step]]
id = "a"
phase = "observe"
promql = "up"
command = "true"

[[step]]
id = "b"
phase = "observe"
promql = "up"
parser = "nvidia-smi"

[[step]]
id = "c"
phase = "observe"
command = "true"
range = "5m"

[[step]]
id = "d"
phase = "observe"
promql = "up"
prometheus = "http://127.0.0.1:9090"
sample = "2s"

[[step]]
id = "e"
phase = "run"
command = "true"
sample = "10ms"

[[criterion]]
id = "x"
description = "x"
expr = "true"
impact = "minor"
`))
	for _, want := range []string{`q.toml:11:1: step "a" has both a command and a promql query`, `q.toml:14:1: step "b": prometheus = "": a lab file does not choose where gpulab queries Prometheus`, `q.toml:24:1: step "c": range and resolution belong to promql steps`,
		`q.toml:31:1: step "d": a promql step runs nothing on the hosts to sample`, `q.toml:37:1: step "e" sample 10ms: the probe samples every 100ms at most`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q: %v", want, err)
		}
	}
}

// TestLabNumberRanges: every number in a lab file is checked against its
// range, the largest TOML integer among them.
func TestLabNumberRanges(t *testing.T) {
	lab := func(estimate, step string) string {
		return `id = "n"
name = "n"
goal = "n"
plane = "data"
maturity = "draft"
estimate_minutes = ` + estimate + `

[[step]]
id = "s"
phase = "observe"
` + step + `

[[step]]
id = "m"
phase = "observe"
command = "true"

[step.metrics]
code = "exit_code"

[[criterion]]
id = "c"
description = "c"
expr = "metrics.code == 0"
impact = "minor"

[[param]]
name = "prom_url"
type = "url"
`
	}
	const promql = "promql = \"up\"\nprometheus = \"{{prom_url}}\"\n"
	tests := []struct {
		name, src, want string
	}{
		{"largest estimate", lab("9223372036854775807", `command = "true"`), `n.toml:6:1: lab "n": estimate_minutes 9223372036854775807: want 1 to 1440 minutes (a day)`},
		{"zero estimate", lab("0", `command = "true"`), `n.toml:6:1: lab "n": estimate_minutes 0: want 1 to 1440`},
		{"negative estimate", lab("-5", `command = "true"`), `n.toml:6:1: lab "n": estimate_minutes -5: want 1 to 1440`},
		{"longest timeout", lab("5", "command = \"true\"\ntimeout = \"2562047h47m16.854775807s\""), `n.toml:12:1: step "s" timeout 2562047h47m16.854775807s: want 1s to 24h`},
		{"short timeout", lab("5", "command = \"true\"\ntimeout = \"1ns\""), `n.toml:12:1: step "s" timeout 1ns: want 1s to 24h`},
		{"negative timeout", lab("5", "command = \"true\"\ntimeout = \"-5s\""), `n.toml:12:12: duration "-5s" must be positive`},
		{"rare sample", lab("5", "command = \"true\"\nsample = \"2h\""), `n.toml:12:1: step "s" sample 2h: want 100ms to 1h`},
		{"long range", lab("5", promql+`range = "8760h"`), `n.toml:13:1: step "s" range 8760h: want 1s to 168h`},
		{"resolution alone", lab("5", promql+`resolution = "15s"`), `n.toml:13:1: step "s": resolution belongs to a range query: give a range too`},
		{"fine resolution", lab("5", promql+"range = \"5m\"\nresolution = \"100ms\""), `n.toml:14:1: step "s" resolution 100ms: want 1s to 5m`},
		{"coarse resolution", lab("5", promql+"range = \"5m\"\nresolution = \"10m\""), `n.toml:14:1: step "s" resolution 10m: want 1s to 5m`},
		{"too many points", lab("5", promql+"range = \"168h\"\nresolution = \"1s\""), `n.toml:14:1: step "s": range 168h every 1s is 604800 points; Prometheus answers at most 11000 a series`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("n.toml", []byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	if _, err := Parse("n.toml", []byte(lab("1440", promql+"range = \"168h\"\nresolution = \"1m\"\ntimeout = \"24h\""))); err != nil {
		t.Errorf("Parse of a lab at the edges of every range = %v, want it loaded", err)
	}
}

// kernelLog is what stabilityCommand prints of a kernel log whose ring
// buffer runs from first to last (seconds since boot), with an Xid line at
// each of xids (the driver's format, as in testdata/fixtures/dmesg-xid),
// and gpus GPUs listed by the driver.
func kernelLog(first, last float64, xids []float64, gpus int) string {
	var b strings.Builder
	b.WriteString("@xid\n")
	for _, at := range xids {
		fmt.Fprintf(&b, "[%12.6f] NVRM: Xid (PCI:0000:07:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n", at)
	}
	fmt.Fprintf(&b, "@oom\n@first\n[%12.6f] Linux version 5.15.0-88-generic\n@last\n[%12.6f] eth0: link up\n", first, last)
	if gpus > 0 {
		fmt.Fprintf(&b, "@gpus %d\n", gpus)
	}
	b.WriteString("@boot 5f1c0a3e-9b1d-4c7e-8a5f-2d6b9e0c1a47\n@end\n")
	return b.String()
}

// New Xids are the kernel log's Xid lines newer than its last line at the
// run's start, whatever the ring buffer dropped of older ones; where the
// log cannot tell, the metric is left out, with why.
func TestStabilityMetrics(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after string
		want          map[string]any
		why           string // a reason for xid, when it is left out
	}{
		{"two new Xids", kernelLog(10, 200, []float64{150}, 8), kernelLog(10, 260, []float64{150, 250, 251}, 7),
			map[string]any{"xid": int64(2), "oom": int64(0), "gpu_lost": int64(1)}, ""},
		// The ring was full: two new Xid lines pushed two old ones out, so
		// the count of lines is the same before and after. Counting lines
		// said 0; their timestamps say 2.
		{"a full ring that wrapped a little", kernelLog(10, 200, []float64{20, 30, 150}, 8), kernelLog(40, 260, []float64{150, 250, 251}, 8),
			map[string]any{"xid": int64(2), "oom": int64(0), "gpu_lost": int64(0)}, ""},
		{"a ring that wrapped past the start", kernelLog(10, 200, nil, 8), kernelLog(230, 260, nil, 8),
			map[string]any{"gpu_lost": int64(0)}, "ring buffer wrapped"},
		{"a reboot", kernelLog(10, 200, nil, 8), kernelLog(0, 30, nil, 8),
			map[string]any{"gpu_lost": int64(0)}, "restarted during the run"},
		{"no timestamps", "@xid\nNVRM: Xid (PCI:0000:07:00): 79\n@oom\n@first\nLinux version\n@last\nx\n@gpus 8\n@end\n", "@xid\n@oom\n@first\nLinux\n@last\ny\n@gpus 8\n@end\n",
			map[string]any{"gpu_lost": int64(0)}, "without timestamps"},
		{"dmesg restricted, no driver at the start", "@end\n", "@end\n", map[string]any{}, "dmesg was refused"},
		// Cleared during the run (dmesg -C) and quiet since: the log is
		// read and holds no line, which is not a log without timestamps.
		{"an empty log before and after", "@xid\n@oom\n@first\n@last\n@gpus 8\n@end\n", "@xid\n@oom\n@first\n@last\n@gpus 8\n@end\n",
			map[string]any{"gpu_lost": int64(0)}, "read empty before and after"},
		{"a log cleared during the run", kernelLog(10, 200, []float64{150}, 8), "@xid\n@oom\n@first\n@last\n@gpus 8\n@end\n",
			map[string]any{"gpu_lost": int64(0)}, "cleared during the run"},
		// The read after the run never came back (the connection was
		// lost): no GPU was lost for want of a count.
		{"the after-read was lost", kernelLog(10, 200, nil, 8), "", map[string]any{}, "could not be read to the end"},
		// A reboot whose new log has passed the old one's last timestamp.
		{"a reboot the timestamps hide", kernelLog(10, 100, nil, 8), strings.Replace(kernelLog(0, 400, []float64{50, 300}, 8), "5f1c0a3e", "77777777", 1),
			map[string]any{}, "rebooted during the run"},
		// A log cleared before the run (dmesg -C): every line now is new.
		{"a cleared log", "@xid\n@oom\n@first\n@last\n@gpus 8\n@end\n", kernelLog(300, 400, []float64{350}, 8),
			map[string]any{"xid": int64(1), "oom": int64(0), "gpu_lost": int64(0)}, ""},
	} {
		got, why := stabilityMetrics(stabilityCounts(tc.before), stabilityCounts(tc.after))
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: metrics %v, want %v", tc.name, got, tc.want)
		}
		if tc.why != "" && !strings.Contains(why["xid"], tc.why) {
			t.Errorf("%s: why %q, want it to say %q", tc.name, why["xid"], tc.why)
		}
	}
}

// The Kubernetes declaration from real kubectl outputs: a client whose
// server refused the connection, and the one full describe of a GPU node
// in the fixtures, twice (describe nodes prints one such block per node).
func TestKubernetesDeclaration(t *testing.T) {
	read := func(name string) string {
		data, err := os.ReadFile(fx + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	out := read("kubectl-version/client-v1.32.4-no-server-refused.txt") + kubeMarker + "\n" +
		read("kubectl-describe-node/eks-g4dn-xlarge-t4-full-nvidia-gpu-allocated.txt") +
		read("kubectl-describe-node/eks-g4dn-xlarge-t4-full-nvidia-gpu-allocated.txt")
	k := parseKubernetes(out)
	if k.Versions["Client Version"] != "v1.32.4-dispatcher" || k.Versions["Kustomize Version"] != "v5.5.0" || k.Versions["Server Version"] != "" {
		t.Errorf("versions: %v", k.Versions)
	}
	if !strings.Contains(k.Error, "The connection to the server localhost:8080 was refused") {
		t.Errorf("the refused connection is not the error: %q", k.Error)
	}
	if len(k.Nodes) != 2 || k.AllNodes != 2 {
		t.Fatalf("nodes: %d GPU of %d: %+v", len(k.Nodes), k.AllNodes, k.Nodes)
	}
	eks := k.Nodes[0]
	if eks.Kubelet != "v1.34.2-eks-ecaa3a6" || eks.Runtime != "containerd://2.1.4" || eks.OS != "Amazon Linux 2023.9.20251117" || !slices.Contains(eks.GPUs, "nvidia.com/gpu 1/1") {
		t.Errorf("EKS node: %+v", eks)
	}
	if empty := parseKubernetes(""); empty.AllNodes != 0 || len(empty.Nodes) != 0 || empty.Error != "" {
		t.Errorf("no output: %+v", empty)
	}
}

// A node's block of many lines is cut out in linear work (it was joined
// with += per line). The bytes allocated for 4n lines against n: linear
// work gives 4 times, quadratic 16.
func TestKubernetesLongNodeLinear(t *testing.T) {
	allocated := func(n int) uint64 {
		out := kubeMarker + "\nName: gpu-1\n" + strings.Repeat("  y\n", n)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		k := parseKubernetes(out)
		runtime.ReadMemStats(&after)
		if k.AllNodes != 1 {
			t.Fatalf("%d lines: %+v", n, k)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	allocated(100)
	small, big := allocated(4000), allocated(16000)
	t.Logf("4000 lines allocate %d bytes, 16000 lines %d", small, big)
	if big > 8*small {
		t.Errorf("4000 lines allocate %d bytes, 16000 lines %d (%.1f times): quadratic", small, big, float64(big)/float64(small))
	}
}

func TestFragmentation(t *testing.T) {
	for _, tc := range []struct {
		free    []float64
		request float64
		want    float64
	}{
		{[]float64{7}, 3, 1.0 / 7},          // an empty A100: 2× 3g fit, one slice is stranded
		{[]float64{1}, 3, 1},                // beside two 3g instances: the last slice is useless to a 3g
		{[]float64{1}, 1, 0},                // ... but not to a 1g
		{[]float64{3, 5, 8}, 4, 4.0 / 16},   // free GPUs per node against 4-GPU pods
		{[]float64{0, 0}, 8, 0},             // nothing free, nothing stranded
		{[]float64{2.5, 2.5}, 2, 1.0 / 5.0}, // free memory in GiB against 2 GiB requests
	} {
		got, err := Fragmentation(tc.free, tc.request)
		if err != nil || math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Fragmentation(%v, %v) = %v, %v; want %v", tc.free, tc.request, got, err, tc.want)
		}
	}
	if _, err := Fragmentation([]float64{1}, 0); err == nil {
		t.Error("a zero request gave a rate")
	}
	if _, err := Fragmentation([]float64{-1}, 1); err == nil {
		t.Error("negative free capacity gave a rate")
	}
}

// MIG's fragmentation from real nvidia-smi mig -lgip outputs, and HAMi's
// penetration from what the allocation loop prints.
func TestSharingMetrics(t *testing.T) {
	l := lab(t, "mig-isolation")
	for fixture, want := range map[string]float64{
		"nvidia-smi-mig-lgip/a100-40gb-drv450-all-free.txt": 1.0 / 7, // 7 free slices: 2× 3g, 1 stranded
		"nvidia-smi-mig-lgip/a30-24gb-all-used-0free.txt":   0,       // nothing free
	} {
		m := map[string]any{}
		measure(t, l, "free", fixture, m)
		why := map[string]string{}
		l.Derive(m, why, nil)
		if f, _ := m["fragmentation"].(float64); math.Abs(f-want) > 1e-12 {
			t.Errorf("%s: fragmentation %v (free %v, %v), want %v", fixture, m["fragmentation"], m["free_slices"], why, want)
		}
	}

	l = lab(t, "hami-sharing")
	oom := "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB"
	for _, tc := range []struct {
		got         int
		penetration float64
		verdict     string
	}{{9, 0, "PASS"}, {12, 2, "FAIL"}} {
		var out strings.Builder
		for i := 1; i <= tc.got; i++ {
			fmt.Fprintf(&out, "allocated %d\n", i)
		}
		m := map[string]any{"within_ok": true}
		vals, errs := l.MeasureStep("beyond", StepOutput{Stdout: out.String(), Stderr: oom, ExitCode: 1})
		maps.Copy(m, vals)
		l.Derive(m, map[string]string{}, nil)
		scores := l.Score(m, nil, nil, 1, true)
		if m["penetration_gib"] != tc.penetration || scores[1].Status != Status(tc.verdict) {
			t.Errorf("%d GiB then OOM: penetration %v (%v), no-penetration %s", tc.got, m["penetration_gib"], errs, scores[1].Status)
		}
	}
	// kubectl exec failed (the pod is gone): no line printed is no
	// evidence that the limit held.
	vals, errs := l.MeasureStep("beyond", StepOutput{Stderr: `Error from server (NotFound): pods "gpulab-hami" not found`, ExitCode: 1})
	if _, ok := vals["allocated_gib"]; ok || errs["allocated_gib"] == nil || !strings.Contains(errs["allocated_gib"].Error(), "not for want of memory") {
		t.Errorf("kubectl exec failed: allocated_gib %v (%v), want not measured, saying the failure was not for want of memory", vals["allocated_gib"], errs["allocated_gib"])
	}
}

// A criterion is decided as soon as the metrics at hand decide it, live
// too: false && ? fails, true || ? passes; otherwise it waits.
func TestCriterionDecidedEarly(t *testing.T) {
	l, err := Parse("d.toml", []byte(`id = "d"
name = "d"
goal = "d"
plane = "data"
maturity = "draft"
estimate_minutes = 1

[[step]]
id = "s"
phase = "check"
command = "true"
[step.metrics]
a = "exit_code == 0"
b = "exit_code == 0"

[[criterion]]
id = "both"
description = "both"
expr = "metrics.a && metrics.b"
impact = "critical"

[[criterion]]
id = "either"
description = "either"
expr = "metrics.a || metrics.b"
impact = "critical"

[[criterion]]
id = "crowd"
description = "passes on the host count, whatever a measures"
expr = "hosts >= 1 || metrics.a"
impact = "critical"
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		a    bool
		want string
	}{{false, "both=FAIL either=PENDING crowd=PASS"}, {true, "both=PENDING either=PASS crowd=PASS"}} {
		if got := statuses(l.Score(map[string]any{"a": tc.a}, nil, nil, 1, false)); got != tc.want {
			t.Errorf("a = %v, b not yet measured: %s, want %s", tc.a, got, tc.want)
		}
	}
	// Nothing measured: the host count alone is no evidence for crowd.
	if got := statuses(l.Score(map[string]any{}, nil, nil, 1, true)); got != "both=UNKNOWN either=UNKNOWN crowd=UNKNOWN" {
		t.Errorf("nothing measured: %s", got)
	}
}

// The baseline's probe metrics over a 30-minute benchmark sampled every
// 2 s: 900 samples of 8 GPUs.
func BenchmarkSampleMetrics(b *testing.B) {
	ls, err := Load(nil)
	if err != nil {
		b.Fatal(err)
	}
	l, _ := Find(ls, "exclusive-baseline")
	u := func(v uint32) *uint32 { return &v }
	mib := func(v uint64) *uint64 { return &v }
	samples := make([]Sample, 900)
	for k := range samples {
		s := Sample{T: float64(2 * k)}
		for g := range 8 {
			s.GPUs = append(s.GPUs, SampleGPU{Index: g, UtilPct: u(uint32(50 + (k*7+g)%50)), MemUsedMiB: mib(70000), Throttle: []string{"sw_power_cap"}})
		}
		samples[k] = s
	}
	so := StepOutput{Out: map[string]any{}, Samples: samples}
	b.ResetTimer()
	for b.Loop() {
		vals, errs := l.MeasureStep("bench", so)
		if _, ok := vals["probe_util_p50"]; !ok {
			b.Fatal(errs)
		}
	}
}

// The record is written a host at a time; the bytes are MarshalIndent's.
func TestRecordEncodeIsMarshalIndent(t *testing.T) {
	for _, r := range []*Record{
		{Schema: RecordSchema, Lab: "x", Hosts: nil},
		{Schema: RecordSchema, Lab: "x", Hosts: []HostRecord{{Host: "a", Steps: []StepRecord{{ID: "s", Stdout: "out\n\"q\"<>&"}}}, {Host: "b"}}},
	} {
		var b strings.Builder
		if err := r.encode(&b); err != nil {
			t.Fatal(err)
		}
		want, _ := json.MarshalIndent(r, "", "  ")
		if r.Hosts == nil {
			want = []byte(strings.Replace(string(want), `"hosts": null`, `"hosts": []`, 1))
		}
		if b.String() != string(want)+"\n" {
			t.Errorf("encode:\n%s\nMarshalIndent:\n%s", b.String(), want)
		}
	}
}

// TestLabNameIsOneLine: a lab's name with a tab, a newline written as
// \n, an escape or a bidi override is refused at its line, naming the
// character and where it is (a tab in a name broke the Labs tab's rows).
func TestLabNameIsOneLine(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{`Chart lab: 日本語 name\twith tab`, `n.toml:2:1: lab "n": name has the control character U+0009 (character 20)`},
		{`two\nlines`, `U+000A (character 4)`},
		{`\u001b[2Jclear`, `U+001B (character 1)`},
		{`evil\u202Eeman`, `U+202E (character 5)`},
	} {
		src := "id = \"n\"\nname = \"" + tc.name + "\"\ngoal = \"g\"\nplane = \"data\"\nmaturity = \"draft\"\nestimate_minutes = 5\n\n[[step]]\nid = \"s\"\nphase = \"observe\"\ncommand = \"true\"\n\n[[criterion]]\nid = \"c\"\ndescription = \"c\"\nexpr = \"true\"\nimpact = \"minor\"\n"
		if _, err := Parse("n.toml", []byte(src)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("name %s: Parse = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// TestCompareNotRun: a run in which no step ran reads as not run in a
// comparison too (results compare said "incomplete" where results list
// said "not run").
func TestCompareNotRun(t *testing.T) {
	refs := []RecordRef{
		{Dir: "a", Record: &Record{Lab: "l", Complete: true, Hosts: []HostRecord{{Host: "gpu01", Passed: true}}}},
		{Dir: "b", Record: &Record{Lab: "l", NotRun: "every host: prerequisite not met", Hosts: []HostRecord{{Host: "gpu01"}}}},
	}
	rows := Compare(refs)
	if len(rows) != 2 || rows[0].NotRun || !rows[1].NotRun {
		t.Errorf("Compare: %+v, want the second row not run", rows)
	}
}

// A criterion that could not be decided is never a pass, whatever its
// weight, and a lab passes only on evidence: at least one criterion that
// passed.
func TestPassedNeedsEvidence(t *testing.T) {
	sc := func(impact string, st step.Status) Score {
		return Score{ID: impact + "-" + string(st), Impact: impact, Status: st}
	}
	for _, tc := range []struct {
		name   string
		scores []Score
		want   bool
	}{
		{"only criterion minor and UNKNOWN", []Score{sc("minor", step.Unknown)}, false},
		{"major PASS, minor UNKNOWN", []Score{sc("major", step.Pass), sc("minor", step.Unknown)}, false},
		{"every criterion UNKNOWN", []Score{sc("critical", step.Unknown), sc("major", step.Unknown)}, false},
		{"minor PENDING", []Score{sc("major", step.Pass), sc("minor", Pending)}, false},
		{"only SKIPPED", []Score{sc("minor", step.Skipped)}, false},
		{"only a WARN", []Score{sc("minor", step.Warn)}, false},
		{"no criterion", nil, false},
		{"major PASS, minor WARN", []Score{sc("major", step.Pass), sc("minor", step.Warn)}, true},
		{"minor PASS alone", []Score{sc("minor", step.Pass)}, true},
		{"critical FAIL", []Score{sc("critical", step.Fail), sc("major", step.Pass)}, false},
	} {
		if got := Passed(tc.scores); got != tc.want {
			t.Errorf("%s: Passed = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The verdict tells "gpulab could not tell" (UNDECIDED) from "something
// is wrong" (FAILED): undecided only when every host ran to the end and
// nothing that counts failed or was skipped.
func TestVerdictTellsUndecidedFromFailed(t *testing.T) {
	sc := func(id, impact string, st step.Status) Score { return Score{ID: id, Impact: impact, Status: st} }
	host := func(name string, scores ...Score) HostRecord {
		return HostRecord{Host: name, Class: orchestrator.OK, Scores: scores, Passed: Passed(scores),
			Steps: []StepRecord{{ID: "s", Phase: "observe", Class: orchestrator.OK}}}
	}
	stopped := host("b", sc("mesh", "critical", step.Unknown))
	stopped.Stopped = "the operator stopped the run"
	lost := host("b", sc("mesh", "critical", step.Unknown))
	lost.Class, lost.Err = orchestrator.Lost, "connection lost"
	for _, tc := range []struct {
		name  string
		hosts []HostRecord
		want  string
	}{
		{"only criterion UNKNOWN", []HostRecord{host("a", sc("mesh", "minor", step.Unknown))}, "UNDECIDED: nothing judged failed, but 1 criterion could not be decided (mesh)"},
		{"UNKNOWN on one host, PASS on the other", []HostRecord{host("a", sc("mesh", "critical", step.Pass), sc("ecc", "major", step.Pass)), host("b", sc("mesh", "critical", step.Pass), sc("ecc", "major", step.Unknown))}, "UNDECIDED: nothing judged failed, but 1 criterion could not be decided (ecc)"},
		{"a minor FAIL does not decide", []HostRecord{host("a", sc("warm", "minor", step.Fail), sc("mesh", "critical", step.Unknown), sc("ecc", "major", Pending))}, "could not be decided (mesh, ecc)"},
		{"a critical FAIL is a failure", []HostRecord{host("a", sc("mesh", "critical", step.Fail), sc("ecc", "major", step.Unknown))}, "FAILED: mesh (critical) FAIL on a"},
		{"a major SKIPPED verified nothing", []HostRecord{host("a", sc("mesh", "major", step.Skipped), sc("ecc", "major", step.Unknown))}, "FAILED: mesh (major) SKIPPED on a"},
		{"only a WARN", []HostRecord{host("a", sc("warm", "minor", step.Warn))}, "FAILED: no criterion passed on evidence on a (a WARN is no pass)"},
		{"a host lost, a FAIL on another", []HostRecord{host("a", sc("mesh", "critical", step.Fail)), lost}, "; on the hosts reached, mesh (critical) FAIL on a"},
		{"a host stopped early says why", []HostRecord{host("a", sc("mesh", "critical", step.Pass)), stopped}, "FAILED: stopped on b: the operator stopped the run"},
		{"a host lost", []HostRecord{host("a", sc("mesh", "critical", step.Pass)), lost}, "INCOMPLETE"},
		{"passed", []HostRecord{host("a", sc("mesh", "critical", step.Pass))}, "PASSED"},
	} {
		r := &Record{Hosts: tc.hosts}
		r.finish(time.Now(), false)
		if got := r.Verdict(); !strings.HasPrefix(got, tc.want) && !strings.Contains(got, tc.want) || tc.want == "FAILED" && got != "FAILED" {
			t.Errorf("%s: verdict %q, want %q", tc.name, got, tc.want)
		}
		if undecided := strings.HasPrefix(tc.want, "UNDECIDED") || strings.Contains(tc.want, "could not be decided"); undecided != (r.Status() == "undecided") || undecided != (len(r.UndecidedCriteria) > 0) {
			t.Errorf("%s: status %q, verdict %q, record's undecided %v", tc.name, r.Status(), r.Verdict(), r.UndecidedCriteria)
		}
	}
}

// The list reads a record as it needs it: everything but the steps'
// outputs, streamed, so a record of 64 MiB of output costs the list a few
// MiB, not the record's size twice over; the summary is the record
// without its steps, and the record's Markdown is still drawn whole.
func TestListRecordsReadsSummaries(t *testing.T) {
	dir := t.TempDir()
	out := strings.Repeat("x", 1<<20-1) + "\n"
	r := &Record{Schema: RecordSchema, Lab: "big", Name: "big", Started: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), Complete: true, Passed: true, Simulated: true,
		Result: ResultRow{Workload: "vLLM", Throughput: "tps", Unit: "tok/s"}}
	for h := range 2 {
		hr := HostRecord{Host: fmt.Sprintf("gpu%02d", h+1), Passed: true, Metrics: map[string]any{"tps": 1234.5}, Scores: []Score{{ID: "c", Status: "PASS", Summary: "ok"}}}
		for i := range 32 {
			hr.Steps = append(hr.Steps, StepRecord{ID: fmt.Sprintf("s%d", i), Phase: "run", Command: "cat big", Stdout: out})
		}
		r.Hosts = append(r.Hosts, hr)
	}
	d := r.Dir(dir)
	if err := r.Write(d, ""); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(d, "record.md")) // the Markdown is drawn from the record
	st, _ := os.Stat(filepath.Join(d, "record.json"))
	var refs []RecordRef
	var err error
	// Collect often, so the peak is what the list holds, not how far the
	// collector lags on a busy machine.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	peak := heapPeak(func() { refs, err = ListRecords(dir) })
	t.Logf("record.json of %d MiB: the list's heap peaked %d MiB above where it was", st.Size()>>20, peak>>20)
	if err != nil || len(refs) != 1 {
		t.Fatalf("list: %v %v", refs, err)
	}
	got := refs[0].Record
	if got.Lab != "big" || !got.Simulated || len(got.Hosts) != 2 || got.Hosts[1].Host != "gpu02" || got.Hosts[0].Metrics["tps"] != 1234.5 || got.Hosts[0].Scores[0].Status != "PASS" {
		t.Errorf("the summary lost what the list needs: %+v", got)
	}
	if got.Hosts[0].Steps != nil {
		t.Errorf("the summary holds the steps")
	}
	// Each 1 MiB output is read token by token and dropped: the list
	// never holds the record (a whole read allocates it twice, 128 MiB).
	if peak > 32<<20 {
		t.Errorf("the list's heap grew %d MiB for a %d MiB record, over the 32 MiB bound", peak>>20, st.Size()>>20)
	}
	md, err := ReadMarkdown(d, got)
	if err != nil || !strings.Contains(md, "s31") {
		t.Errorf("the Markdown of a summary without record.md lacks the steps: %v", err)
	}
}

// heapPeak samples the heap while f runs and returns its peak above what
// it held before.
func heapPeak(f func()) uint64 {
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak.Store(max(peak.Load(), ms.HeapAlloc))
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	f()
	close(done)
	<-stopped
	return peak.Load() - min(peak.Load(), base.HeapAlloc)
}

// The summary reads what ReadRecord reads: a file with more than the
// record's object is refused by both, a null host taken by both, keys
// matched whatever their case.
func TestReadSummaryAgreesWithReadRecord(t *testing.T) {
	base := fmt.Sprintf(`{"schema":%d,"lab":"x","started":"2026-11-29T10:00:00Z",`, RecordSchema)
	for name, c := range map[string]struct {
		json string
		ok   bool
	}{
		"trailing":    {base + `"hosts":[]} {}`, false},
		"null host":   {base + `"hosts":[null]}`, true},
		"capitalised": {base + `"Hosts":[{"host":"gpu01","Steps":[{"id":"s","stdout":"big"}]}]}`, true},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "record.json"), []byte(c.json), 0o600); err != nil {
			t.Fatal(err)
		}
		_, rerr := ReadRecord(dir)
		s, serr := ReadSummary(dir)
		if (rerr == nil) != c.ok || (serr == nil) != c.ok {
			t.Errorf("%s: ReadRecord %v, ReadSummary %v; want both ok=%v", name, rerr, serr, c.ok)
		}
		if name == "capitalised" && serr == nil && (len(s.Hosts) != 1 || s.Hosts[0].Host != "gpu01" || s.Hosts[0].Steps != nil) {
			t.Errorf("capitalised keys: %+v", s.Hosts)
		}
	}
}

// A GPU whose uncorrectable ECC counter reads "Unknown Error", or that
// prints no row-remap block, is a GPU whose state is not known: the health
// gate's metrics over it are not measured (so its criteria are UNKNOWN),
// and the runbook's rules over the same value say UNKNOWN too. They used
// to count such a GPU as 0 and pass the node.
func TestHealthGateUnreadCountersAreNotZero(t *testing.T) {
	l := lab(t, "health-gate")
	data, err := os.ReadFile(fx + "nvidia-smi-q/a100-sxm4-40gb-8gpu-drv535-full-a.txt")
	if err != nil {
		t.Fatal(err)
	}
	read := func() *parse.Query {
		q, err := parse.ParseQuery(string(data))
		if err != nil || len(q.GPUs) != 8 {
			t.Fatalf("fixture: %d GPUs, %v", len(q.GPUs), err)
		}
		return q
	}
	whole, errs := l.MeasureStep("query", StepOutput{Out: read()})
	if len(errs) != 0 || whole["uncorrectable_ecc"] != int64(0) || whole["remap_pending"] != int64(0) || whole["remap_failed"] != int64(0) {
		t.Fatalf("the whole recording: %v %v, want every count 0", whole, errs)
	}
	ecc := read()
	ecc.GPUs[3].Fields["ECC Errors/Volatile/DRAM Uncorrectable"] = "Unknown Error"
	vals, errs := l.MeasureStep("query", StepOutput{Out: ecc})
	if _, ok := vals["uncorrectable_ecc"]; ok || !strings.Contains(fmt.Sprint(errs["uncorrectable_ecc"]), `"Unknown Error"`) {
		t.Errorf("ECC counter Unknown Error on GPU3: uncorrectable_ecc %v (%v), want not measured, naming it", vals["uncorrectable_ecc"], errs["uncorrectable_ecc"])
	}
	if v := step.Judge(step.Check{ID: "ecc", Rule: "ecc-uncorrected", Uses: []string{"query"}}, []step.Input{{Step: "query", Ran: true, Value: ecc}}); v.Status != step.Unknown {
		t.Errorf("the runbook's ecc-uncorrected on the same GPUs: %s %q, want UNKNOWN", v.Status, v.Summary)
	}
	remap := read()
	remap.GPUs[5].RemappedRows = nil
	vals, errs = l.MeasureStep("query", StepOutput{Out: remap})
	for _, m := range []string{"remap_pending", "remap_failed"} {
		if _, ok := vals[m]; ok || errs[m] == nil {
			t.Errorf("GPU5 without its remap block: %s %v (%v), want not measured", m, vals[m], errs[m])
		}
	}
	if v := step.Judge(step.Check{ID: "remap", Rule: "remapped-rows", Uses: []string{"query"}}, []step.Input{{Step: "query", Ran: true, Value: remap}}); v.Status != step.Unknown {
		t.Errorf("the runbook's remapped-rows on the same GPUs: %s %q, want UNKNOWN", v.Status, v.Summary)
	}
	scores := l.Score(vals, map[string]string{"remap_pending": fmt.Sprint(errs["remap_pending"]), "remap_failed": fmt.Sprint(errs["remap_failed"])}, nil, 1, true)
	for _, s := range scores {
		if s.ID == "remap" && s.Status != step.Unknown {
			t.Errorf("remap criterion: %s %q, want UNKNOWN", s.Status, s.Summary)
		}
	}
}

// A runbook check the output leaves undecided is no value for a lab's
// metric: a metric reading checks['pcie-width'] on an nvidia-smi -q
// excerpt without the link widths is not measured (its criterion
// UNKNOWN), not "UNKNOWN" compared with "PASS" (a FAIL).
func TestUndecidedCheckIsNoMetric(t *testing.T) {
	l, err := Parse("pcie.toml", []byte(`id = "pcie"
name = "PCIe links at full width"
goal = "Every GPU's PCIe link runs at its full width"
plane = "data"
maturity = "draft"
estimate_minutes = 1
principle = "A downtrained link halves host-to-device bandwidth."

[[step]]
id = "query"
phase = "observe"
command = "nvidia-smi -q"
parser = "nvidia-smi-q"

[step.metrics]
pcie = "checks['pcie-width'].status"

[[criterion]]
id = "pcie"
description = "Every link at full width"
expr = "metrics.pcie == 'PASS'"
impact = "critical"
`))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(fx + "nvidia-smi-q/a100-sxm4-80gb-drv510-ecc-remap-excerpt.txt")
	if err != nil {
		t.Fatal(err)
	}
	q, err := parse.ParseQuery(string(data))
	if err != nil {
		t.Fatal(err)
	}
	if v := step.JudgeOutput("nvidia-smi-q", step.Read("query", "nvidia-smi-q", step.CommandResult{}, q, nil))["pcie-width"]; v.Status != step.Unknown {
		t.Fatalf("fixture: pcie-width is %s %q, want UNKNOWN (the excerpt has no link widths)", v.Status, v.Summary)
	}
	vals, errs := l.MeasureStep("query", StepOutput{Out: q})
	if _, ok := vals["pcie"]; ok || !strings.Contains(fmt.Sprint(errs["pcie"]), "the check pcie-width is UNKNOWN") {
		t.Errorf("pcie %v (%v), want not measured: the check pcie-width is UNKNOWN", vals["pcie"], errs["pcie"])
	}
	why := map[string]string{"pcie": fmt.Sprint(errs["pcie"])}
	if s := l.Score(vals, why, nil, 1, true); s[0].Status != step.Unknown {
		t.Errorf("criterion: %s %q, want UNKNOWN", s[0].Status, s[0].Summary)
	}
}

// Where kernel.dmesg_restrict refuses dmesg to the login user,
// stabilityCommand asks sudo without a password, and reads the log
// through it. The dmesg and sudo here are stand-ins on PATH (the machine
// running the tests may have neither a restricted log nor sudo); the shell
// is the host's own sh, so the command's quoting and word splitting are
// what a host runs.
func TestStabilityCommandAsksSudoWhereDmesgIsRefused(t *testing.T) {
	bin := t.TempDir()
	script := func(name, body string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script("dmesg", `[ -n "$AS_ROOT" ] || { echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2; exit 1; }
printf '[   10.000000] Linux version 6.8.0\n[  250.500000] NVRM: Xid (PCI:0000:07:00): 79, pid=1, GPU has fallen off the bus.\n[  260.000000] eth0: link up\n'
`)
	script("sudo", `[ "$1" = -n ] || { echo "sudo: a password is required" >&2; exit 1; }
shift; AS_ROOT=1 exec "$@"
`)
	for _, tc := range []struct {
		name     string
		sudo     bool
		readable bool
	}{{"passwordless sudo", true, true}, {"no sudo", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.sudo {
				os.Remove(filepath.Join(bin, "sudo"))
			}
			cmd := exec.Command("/bin/sh", "-c", stabilityCommand)
			cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("sh -c stabilityCommand: %v\n%s", err, out)
			}
			k := stabilityCounts(string(out))
			if k.readable != tc.readable || !k.complete {
				t.Fatalf("readable %v complete %v, want readable %v, complete\n%s", k.readable, k.complete, tc.readable, out)
			}
			if tc.readable && (!slices.Equal(k.lines["xid"], []float64{250.5}) || k.first != 10 || k.last != 260) {
				t.Errorf("read through sudo: Xid lines %v, first %v, last %v\n%s", k.lines["xid"], k.first, k.last, out)
			}
		})
	}
}

// A record that did not pass is never green in CI: a host with only WARNs
// (no criterion passed) fails, an interrupted run errs, whatever its
// criteria's cases say.
func TestJUnitIsNeverGreenForARunThatDidNotPass(t *testing.T) {
	type suites struct {
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
	}
	host := func(st step.Status) HostRecord {
		scores := []Score{{ID: "c", Impact: "minor", Status: st, Summary: "s"}}
		return HostRecord{Host: "dgx01", Class: orchestrator.OK, Scores: scores, Passed: Passed(scores),
			Steps: []StepRecord{{ID: "s", Phase: "observe", Class: orchestrator.OK}}}
	}
	for _, tc := range []struct {
		name        string
		host        HostRecord
		interrupted bool
		fail, errs  int
	}{
		{"only a WARN", host(step.Warn), false, 1, 0},
		{"interrupted after a PASS", host(step.Pass), true, 0, 1},
		{"passed", host(step.Pass), false, 0, 0},
	} {
		r := &Record{Lab: "l", Hosts: []HostRecord{tc.host}}
		r.finish(time.Now(), tc.interrupted)
		x, err := r.JUnit()
		if err != nil {
			t.Fatal(err)
		}
		var s suites
		if err := xml.Unmarshal(x, &s); err != nil || s.Failures != tc.fail || s.Errors != tc.errs {
			t.Errorf("%s (verdict %s): failures %d errors %d, want %d %d\n%s", tc.name, r.Verdict(), s.Failures, s.Errors, tc.fail, tc.errs, x)
		}
	}
}

// A record read back is judged on its scores: one whose stored passed flag
// says true while its criteria are UNKNOWN (hand-edited, or written by a
// gpulab that passed on less) is not listed, drawn or exported as passed.
func TestStoredPassedFlagIsNotTrustedOverScores(t *testing.T) {
	scores := []Score{{ID: "c", Impact: "minor", Status: step.Unknown, Summary: "no evidence"}}
	r := &Record{Lab: "l", Complete: true, Passed: true, Hosts: []HostRecord{{Host: "dgx01", Class: orchestrator.OK, Scores: scores, Passed: true,
		Steps: []StepRecord{{ID: "s", Phase: "observe", Class: orchestrator.OK}}}}}
	if got := r.Status(); got != "undecided" {
		t.Errorf("Status = %q, want undecided", got)
	}
	if v := r.Verdict(); !strings.HasPrefix(v, "UNDECIDED") {
		t.Errorf("Verdict = %q", v)
	}
	if md := r.Markdown(); strings.Contains(md, "**PASSED**") {
		t.Errorf("record.md says PASSED:\n%s", md)
	}
	if rows := Compare([]RecordRef{{Record: r}}); rows[0].Passed || rows[0].Outcome() != "undecided" {
		t.Errorf("compare row: %+v", rows[0])
	}
}

// record.md's Conclusion is the verdict the run printed (Record.Verdict),
// for every way a run ends: it once computed its own, and said FAILED for
// an interrupted run and for one with a host not reached, and UNDECIDED
// for a run killed mid-step, whose end it wrote as year 1.
func TestRecordConclusionIsTheVerdict(t *testing.T) {
	started := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	pending := HostRecord{Host: "a", Class: orchestrator.OK, Scores: []Score{{ID: "mesh", Impact: "critical", Status: Pending}},
		Steps: []StepRecord{{ID: "s", Phase: "observe", Class: orchestrator.OK}}}
	refused := HostRecord{Host: "b", Class: orchestrator.Refused, Err: "connection refused", Scores: []Score{{ID: "mesh", Impact: "critical", Status: step.Unknown}}}
	passed := HostRecord{Host: "a", Class: orchestrator.OK, Passed: true, Scores: []Score{{ID: "mesh", Impact: "critical", Status: step.Pass}},
		Steps: []StepRecord{{ID: "s", Phase: "observe", Class: orchestrator.OK}}}
	for _, tc := range []struct {
		name string
		rec  *Record
		want string
	}{
		{"killed mid-run", &Record{Lab: "x", Name: "x", Started: started, Hosts: []HostRecord{pending}}, "- Conclusion: **INCOMPLETE**: the run did not reach its end"},
		{"a host not reached", func() *Record {
			r := &Record{Lab: "x", Name: "x", Started: started, Hosts: []HostRecord{passed, refused}}
			r.finish(started.Add(time.Minute), false)
			return r
		}(), "- Conclusion: **INCOMPLETE**: not every host ran to the end"},
		{"interrupted", func() *Record {
			r := &Record{Lab: "x", Name: "x", Started: started, Hosts: []HostRecord{pending}}
			r.finish(started.Add(time.Minute), true)
			return r
		}(), "- Conclusion: **INTERRUPTED** (cleanup ran"},
	} {
		md := tc.rec.Markdown()
		if !strings.Contains(md, tc.want) || strings.Contains(md, "**FAILED**") || strings.Contains(md, "UNDECIDED") || strings.Contains(md, "0001-01-01") {
			t.Errorf("%s: record.md, want %q (verdict %q):\n%s", tc.name, tc.want, tc.rec.Verdict(), md)
		}
	}
}
