package labs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpulab/gpulab/internal/sshtest"
	"github.com/gpulab/gpulab/labs"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/step/parse"
)

// standInFleet starts one sshd per host with the given scripts (name to
// body) first on PATH: the host's tools as the test wants them to answer.
func standInFleet(t *testing.T, hosts []map[string]string) (*orchestrator.Engine, []orchestrator.Target) {
	t.Helper()
	root := t.TempDir()
	for i, tools := range hosts {
		bin := filepath.Join(root, fmt.Sprint(i), "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, body := range tools {
			if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	f := sshtest.Start(t, len(hosts), sshtest.Options{EnvFor: func(i int) map[string]string {
		return map[string]string{"PATH": filepath.Join(root, fmt.Sprint(i), "bin") + ":/usr/bin:/bin", "XDG_CACHE_HOME": filepath.Join(root, fmt.Sprint(i), "cache")}
	}})
	var ts []orchestrator.Target
	for i, s := range f.Servers {
		ts = append(ts, orchestrator.Target{Name: fmt.Sprintf("gpu%02d", i+1), HostName: s.Addr, Port: s.Port, User: f.User,
			IdentityFiles: []string{f.ClientKey}, Explicit: true, KnownHosts: []string{f.KnownHosts},
			ConnectTimeout: 5 * time.Second, CommandTimeout: 60 * time.Second})
	}
	return &orchestrator.Engine{Dialer: &orchestrator.Dialer{Keys: &orchestrator.Keyring{}}, Concurrency: 8}, ts
}

// TestHealthGateUnreadOutputIsUnknown runs the built-in health gate on a
// node whose tools fail the way sick nodes' do: nvidia-smi -q exits 9,
// dcgmi diag exits 226 with an error instead of its table, the kernel log
// is empty. None of that is evidence of health: every criterion that reads
// it is UNKNOWN, the gate does not pass, and the record keeps each parser's
// complaint. (It used to PASS them: the parsers' zero values read as "0
// uncorrectable errors", "0 failed tests", "no Xid".)
func TestHealthGateUnreadOutputIsUnknown(t *testing.T) {
	list, err := filepath.Abs(fx + "nvidia-smi-L/dgx-a100-80gb-mig-all-balanced-head10.txt")
	if err != nil {
		t.Fatal(err)
	}
	e, ts := standInFleet(t, []map[string]string{{
		"nvidia-smi": `case "$*" in
"-L") cat ` + list + ` ;;
"-q") echo "Unable to determine the device handle for GPU0000:07:00.0: Unknown Error"; exit 9 ;;
*) exit 2 ;;
esac`,
		"dcgmi": `case "$1" in
discovery) echo "1 GPU found." ;;
diag) echo "Error: Unable to complete diagnostic for group 2147483647. Return: (-1) Host engine connection invalid/disconnected."; exit 226 ;;
esac`,
		"dmesg":      "exit 0",
		"journalctl": "exit 0",
	}})
	ls, err := labs.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := labs.Find(ls, "health-gate")
	params, err := l.Bind(nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := labs.Run(context.Background(), e, ts, l, labs.RunOptions{Params: params, Yes: true})
	h := rec.Hosts[0]
	for _, id := range []string{"driver", "ecc", "remap", "no-hardware-xid", "dcgm-diag", "dcgm-quiet"} {
		if s := score(h, id); s.Status != "UNKNOWN" || !strings.Contains(s.Summary, "could not read") {
			t.Errorf("%s: %s %q, want UNKNOWN saying the output could not be read", id, s.Status, s.Summary)
		}
	}
	if rec.Passed || h.Passed || rec.Verdict() == "PASSED" {
		t.Errorf("the gate passed a node none of whose health was read: passed %v, verdict %s", rec.Passed, rec.Verdict())
	}
	// Nothing failed and nothing was shown healthy: the verdict says the
	// gate could not tell, not that the node is sick.
	if v := rec.Verdict(); !strings.HasPrefix(v, "UNDECIDED: nothing judged failed, but ") || !strings.Contains(v, "dcgm-diag") {
		t.Errorf("verdict %q, want UNDECIDED naming the criteria not decided", v)
	}
	parsed := map[string]string{}
	for _, s := range h.Steps {
		parsed[s.ID] = s.ParseError
	}
	for _, id := range []string{"query", "dcgm"} {
		if parsed[id] == "" {
			t.Errorf("step %s: the record lost the parser's complaint (steps: %+v)", id, h.Steps)
		}
	}
	if md := rec.Markdown(); strings.Contains(md, "| PASS |") {
		t.Errorf("record.md has a PASS:\n%s", md)
	}
}

const firstOnlyLab = `
id = "first-only"
name = "A run-wide fact"
goal = "A step run once, on the first host reached."
plane = "control"
maturity = "draft"
estimate_minutes = 1
cost = "none"
principle = "Once per run."
stop_loss = "none"

[[step]]
id = "count"
phase = "observe"
hosts = "first"
command = "echo 8"

[step.metrics]
n = "int(stdout.trim())"

[[criterion]]
id = "count"
description = "Eight of them"
expr = "metrics.n >= 8"
impact = "critical"
`

// A host that was never reached takes no run-wide value from the host
// that ran the once-only step: its criterion is UNKNOWN, not a PASS it
// never earned (the folded score read "PASS count gpu[01-02]" with gpu02
// refusing connections).
func TestUnreachedHostTakesNoRunWideValue(t *testing.T) {
	l, err := labs.Parse("first-only.toml", []byte(firstOnlyLab))
	if err != nil {
		t.Fatal(err)
	}
	e, ts := standInFleet(t, []map[string]string{{}})
	down := ts[0]
	down.Name, down.Port = "gpu02", sshtest.FreePort(t) // held, refused
	rec := labs.Run(context.Background(), e, append(ts, down), l, labs.RunOptions{})
	if s := score(rec.Hosts[0], "count"); s.Status != "PASS" {
		t.Errorf("gpu01 ran the step: %s %q, want PASS", s.Status, s.Summary)
	}
	if s := score(rec.Hosts[1], "count"); s.Status != "UNKNOWN" || !strings.Contains(s.Summary, "did not run") {
		t.Errorf("gpu02 was not reached: %s %q, want UNKNOWN saying the step did not run", s.Status, s.Summary)
	}
	for _, g := range labs.FoldScores(rec.Hosts) {
		if g.Status == "PASS" && strings.Contains(g.Hosts, "02") {
			t.Errorf("the folded score passes the unreached host: %s %s", g.Status, g.Hosts)
		}
	}
	if rec.Passed || rec.Hosts[1].Passed {
		t.Errorf("passed %v (gpu02 %v) with a host never reached", rec.Passed, rec.Hosts[1].Passed)
	}
}

// A lab reads the step library's verdicts as a runbook does, from a
// command's whole ending: a good topology printed by a command that then
// exited 1 is no evidence of a mesh in a lab either (the runbook said
// UNKNOWN "step topo exited 1" while the lab's nvlink metric read PASS and
// topology-sanity PASSED).
func TestLabChecksAreNoEvidenceOfAFailedCommand(t *testing.T) {
	data, err := os.ReadFile(fx + "nvidia-smi-topo-m/hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt")
	if err != nil {
		t.Fatal(err)
	}
	topo, err := parse.ParseTopo(string(data))
	if err != nil {
		t.Fatal(err)
	}
	ls, err := labs.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := labs.Find(ls, "topology-sanity")
	vals, errs := l.MeasureStep("topo", labs.StepOutput{Out: topo, Stdout: string(data), ExitCode: 0})
	if vals["nvlink"] != "PASS" {
		t.Fatalf("exit 0: nvlink %v (%v), want PASS", vals["nvlink"], errs["nvlink"])
	}
	vals, errs = l.MeasureStep("topo", labs.StepOutput{Out: topo, Stdout: string(data), ExitCode: 1})
	if v, ok := vals["nvlink"]; ok || errs["nvlink"] == nil || !strings.Contains(errs["nvlink"].Error(), "exited 1") {
		t.Errorf("exit 1: nvlink %v (%v), want not measured, saying the step exited 1", v, errs["nvlink"])
	}
}

// A step whose command exited non-zero measures nothing from what it
// printed, unless the metric reads exit_code: "echo ALL PASSED; exit 1"
// and a dcgmi table of zeros followed by exit 1 are no passes.
func TestFailedCommandOutputIsNoMetric(t *testing.T) {
	dir := t.TempDir()
	lab := `id = "failed-output"
name = "metrics of a failed command"
goal = "a failed command's output is no evidence"
plane = "data"
maturity = "draft"
estimate_minutes = 1

[[step]]
id = "say"
phase = "observe"
title = "say"
command = "echo ALL PASSED; exit 1"

[step.metrics]
said = "stdout.contains('PASSED')"
refused = "exit_code != 0 && stdout.contains('PASSED')"

[[criterion]]
id = "said"
description = "it said so"
expr = "metrics.said"
impact = "critical"

[[criterion]]
id = "refused"
description = "it was refused"
expr = "metrics.refused"
impact = "critical"
`
	if err := os.WriteFile(filepath.Join(dir, "l.toml"), []byte(lab), 0o644); err != nil {
		t.Fatal(err)
	}
	ls, err := labs.Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	l, _ := labs.Find(ls, "failed-output")
	vals, errs := l.MeasureStep("say", labs.StepOutput{Stdout: "ALL PASSED\n", ExitCode: 1})
	if v, ok := vals["said"]; ok || errs["said"] == nil || !strings.Contains(errs["said"].Error(), "exited 1") {
		t.Errorf("exit 1: said = %v (%v), want not measured, saying the command exited 1", v, errs["said"])
	}
	if vals["refused"] != true {
		t.Errorf("exit 1: refused = %v (%v), want true: the metric reads exit_code", vals["refused"], errs["refused"])
	}
	vals, errs = l.MeasureStep("say", labs.StepOutput{Stdout: "ALL PASSED\n", ExitCode: 0})
	if vals["said"] != true || vals["refused"] != false {
		t.Errorf("exit 0: said %v refused %v (%v), want true and false", vals["said"], vals["refused"], errs)
	}
}

// TestHealthGateMeasuresOnlyWhatWasDiagnosed: ECC disabled on every GPU
// has no counter to read; dcgmi tables where every test was skipped, or
// that a dcgmi exiting non-zero printed with no failure, diagnosed
// nothing; a failure dcgmi reports counts whatever its exit status.
func TestHealthGateMeasuresOnlyWhatWasDiagnosed(t *testing.T) {
	ls, err := labs.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := labs.Find(ls, "health-gate")
	q, err := os.ReadFile(fx + "nvidia-smi-q/a100-sxm4-40gb-8gpu-drv535-full-a.txt")
	if err != nil {
		t.Fatal(err)
	}
	off := strings.NewReplacer("Current                           : Enabled", "Current                           : Disabled").Replace(string(q))
	if off == string(q) {
		t.Fatal("the fixture has no ECC mode line to turn off: the test would prove nothing")
	}
	pq, err := parse.ParseQuery(off)
	if err != nil {
		t.Fatal(err)
	}
	vals, errs := l.MeasureStep("query", labs.StepOutput{Out: pq, Stdout: off})
	if v, ok := vals["uncorrectable_ecc"]; ok || errs["uncorrectable_ecc"] == nil || !strings.Contains(errs["uncorrectable_ecc"].Error(), "ECC is disabled on every GPU") {
		t.Errorf("ECC disabled everywhere: uncorrectable_ecc %v (%v), want not measured", v, errs["uncorrectable_ecc"])
	}
	diag := func(name string) *parse.DCGMDiag {
		data, err := os.ReadFile(fx + "workloads/dcgmi-diag/" + name)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := parse.ParseDCGMDiag(string(data))
		return d
	}
	pass := diag("dcgm4.4.2-r2-i0-1xA10G-pass.txt")
	if vals, errs := l.MeasureStep("dcgm", labs.StepOutput{Out: pass, ExitCode: 1}); vals["dcgm_failed"] != nil || errs["dcgm_failed"] == nil {
		t.Errorf("a passing table from a dcgmi that exited 1: dcgm_failed %v (%v), want not measured", vals["dcgm_failed"], errs["dcgm_failed"])
	}
	if vals, errs := l.MeasureStep("dcgm", labs.StepOutput{Out: pass}); fmt.Sprint(vals["dcgm_failed"]) != "0" {
		t.Errorf("a passing table: dcgm_failed %v (%v), want 0", vals["dcgm_failed"], errs["dcgm_failed"])
	}
	fail := diag("dcgm4.4.1-r2-8xB200-slurm-pcie-fail-warning.txt")
	if vals, errs := l.MeasureStep("dcgm", labs.StepOutput{Out: fail, ExitCode: 226}); vals["dcgm_failed"] == nil || fmt.Sprint(vals["dcgm_failed"]) == "0" {
		t.Errorf("a failing table from a dcgmi that exited 226: dcgm_failed %v (%v), want the failures counted", vals["dcgm_failed"], errs["dcgm_failed"])
	}
	skipped := *pass
	skipped.Passed, skipped.Failed, skipped.Warned, skipped.Skipped = 0, 0, 0, len(pass.Tests)
	if vals, errs := l.MeasureStep("dcgm", labs.StepOutput{Out: &skipped}); vals["dcgm_failed"] != nil || errs["dcgm_failed"] == nil || !strings.Contains(errs["dcgm_failed"].Error(), "skipped") {
		t.Errorf("every test skipped: dcgm_failed %v (%v), want not measured", vals["dcgm_failed"], errs["dcgm_failed"])
	}
}

// A lab with no cleanup step does not say its cleanup ran.
func TestRecordSaysWhenThereWasNoCleanup(t *testing.T) {
	r := &labs.Record{Schema: labs.RecordSchema, Lab: "l", Name: "l", Complete: true, Started: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC),
		Hosts: []labs.HostRecord{
			{Host: "gpu01", CleanupRan: true, Steps: []labs.StepRecord{{Phase: "observe", ID: "topo"}}},
			{Host: "gpu02", CleanupRan: true, Steps: []labs.StepRecord{{Phase: "observe", ID: "topo"}, {Phase: "cleanup", ID: "rm"}}},
		}}
	md := r.Markdown()
	if !strings.Contains(md, "Cleanup had nothing to do: the lab has no cleanup step.") || strings.Count(md, "Cleanup ran.") != 1 {
		t.Errorf("record.md:\n%s", md)
	}
}
