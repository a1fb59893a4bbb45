package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/labs"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/sim"
	"github.com/gpulab/gpulab/step"
)

// TestSimulatedTextOutputs: on a simulated fleet the text outputs say
// SIMULATED: exec once, on stderr, on its summary line (folded or not);
// runbook run on the line under the runbook's title; lab run under its
// title and on its verdict line. The JSON outputs keep "simulated": true.
func TestSimulatedTextOutputs(t *testing.T) {
	_, files := simFleet(t, sim.Config{Hosts: 2, Seed: 1})
	env := noEnv(t)
	inv := []string{"--inventory", files.Inventory, "-H", "@dgx"}

	for _, extra := range [][]string{nil, {"--no-fold"}, {"--json"}} {
		args := append(append(append([]string{"exec"}, inv...), extra...), "--", "nvidia-smi", "-L")
		r := run(t, env, args...)
		var summary string
		for _, l := range strings.Split(r.stderr, "\n") {
			if strings.HasPrefix(l, "2 hosts: 2 ok in ") {
				summary = l
			}
		}
		if r.code != 0 || strings.Count(r.stderr, "SIMULATED") != 1 || !strings.Contains(summary, "SIMULATED fleet") {
			t.Errorf("gpulab %s: exit %d; want SIMULATED once on stderr, on the summary line (%q)\nstderr:\n%s", strings.Join(args, " "), r.code, summary, r.stderr)
		}
		if extra != nil && extra[0] == "--json" && !strings.Contains(r.stdout, `"simulated": true`) {
			t.Errorf("gpulab %s: the JSON does not say \"simulated\": true:\n%s", strings.Join(args, " "), r.stdout)
		}
	}

	r := run(t, env, append([]string{"runbook", "run", "topology"}, inv...)...)
	lines := strings.Split(r.stdout, "\n")
	if len(lines) < 2 || lines[0] != "topology: GPU, NIC and NUMA topology" || !strings.HasPrefix(lines[1], "SIMULATED fleet") {
		t.Errorf("runbook run topology: want SIMULATED on the line under the title:\n%s\n%s", r.stdout, r.stderr)
	}
	r = run(t, env, append(append([]string{"runbook", "run", "topology"}, inv...), "--json")...)
	if !strings.Contains(r.stdout, `"simulated": true`) {
		t.Errorf("runbook run topology --json does not say \"simulated\": true:\n%s", r.stdout)
	}

	r = run(t, env, append(append([]string{"lab", "run", "topology-sanity"}, inv...), "--results", t.TempDir())...)
	lines = strings.Split(r.stdout, "\n")
	verdict := ""
	for _, l := range lines {
		if strings.HasPrefix(l, "PASSED") || strings.HasPrefix(l, "FAILED") {
			verdict = l
		}
	}
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "topology-sanity: ") || !strings.HasPrefix(lines[1], "SIMULATED fleet") || !strings.Contains(verdict, "SIMULATED fleet") {
		t.Errorf("lab run topology-sanity: want SIMULATED under the title and on the verdict line (%q):\n%s\n%s", verdict, r.stdout, r.stderr)
	}
}

// anySimulated reads HostResult's Simulated field, set when a host
// identifies itself as gpulab's simulator, by name: with an engine that
// has the field, a result with it set makes the run simulated; without
// one, no result does.
func TestAnySimulated(t *testing.T) {
	results := []orchestrator.HostResult{{Host: "a"}, {Host: "b"}}
	if anySimulated(nil) || anySimulated(results) {
		t.Errorf("anySimulated of results that say nothing = true, want false")
	}
	results[1].Simulated = true
	if !anySimulated(results) {
		t.Errorf("anySimulated with b's Simulated set = false, want true")
	}
	if !simulatedRun(&app.Fleet{}, results...) || simulatedRun(&app.Fleet{}, results[:1]...) {
		t.Errorf("simulatedRun does not follow the results' Simulated")
	}
}

// printAcceptance says what was simulated under the title and on the
// verdict line: the fleet (the record's flag, or the run's), or the
// probe's GPUs (--mock on real hosts); a real run's output says nothing.
func TestPrintAcceptanceSaysSimulated(t *testing.T) {
	for _, tc := range []struct {
		name              string
		rec               labs.Record
		simulated         bool
		note, verdictTail string
	}{
		{"fleet", labs.Record{Simulated: true}, false, "SIMULATED fleet (gpulab sim): ", "FAILED on a SIMULATED fleet"},
		{"run", labs.Record{}, true, "SIMULATED fleet (gpulab sim): ", "FAILED on a SIMULATED fleet"},
		{"mock", labs.Record{Hosts: []labs.HostRecord{{Host: "gpu01", Environment: labs.Environment{Simulated: true}}}}, false,
			"SIMULATED GPUs (--mock): ", "FAILED with SIMULATED GPUs (--mock)"},
		{"real", labs.Record{Hosts: []labs.HostRecord{{Host: "gpu01"}}}, false, "", "FAILED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tc.rec
			rec.Lab, rec.Name, rec.Complete = "topology-sanity", "Topology sanity", true
			var b strings.Builder
			printAcceptance(&b, &rec, "/results/topology-sanity/run", tc.simulated)
			lines := strings.Split(b.String(), "\n")
			second := lines[1]
			if tc.note == "" && (second != "" || strings.Contains(b.String(), "SIMULATED")) ||
				tc.note != "" && !strings.HasPrefix(second, tc.note) || !strings.Contains(b.String(), "\n"+tc.verdictTail+"\nrecord: ") {
				t.Errorf("printAcceptance: want %q under the title and the verdict %q:\n%s", tc.note, tc.verdictTail, b.String())
			}
		})
	}
}

// results compare says which runs were on a simulated fleet: in the
// RESULT column as results list does, and "simulated": true in the JSON.
func TestResultsCompareSaysSimulated(t *testing.T) {
	results := t.TempDir()
	var dirs []string
	for i, sim := range []bool{false, true} {
		r := &labs.Record{Schema: labs.RecordSchema, Lab: "topology-sanity", Name: "t", Simulated: sim, Complete: true, Passed: true,
			Started: time.Date(2026, 11, 29, 10, i, 0, 0, time.UTC), Hosts: []labs.HostRecord{{Host: fmt.Sprintf("dgx%02d", i+1), Passed: true,
				Scores: []labs.Score{{ID: "mesh", Impact: "critical", Status: step.Pass}}}}}
		dir := r.Dir(results)
		if err := r.Write(dir, ""); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	r := run(t, noEnv(t), "results", "compare", dirs[0], dirs[1], "--results", results)
	var realRow, simRow string
	for _, l := range strings.Split(r.stdout, "\n") {
		switch {
		case strings.Contains(l, "dgx01"):
			realRow = l
		case strings.Contains(l, "dgx02"):
			simRow = l
		}
	}
	if r.code != 0 || !strings.HasSuffix(simRow, "passed (SIMULATED)") || strings.Contains(realRow, "SIMULATED") {
		t.Errorf("results compare: want the simulated run's result (SIMULATED), the real one's not:\n%s%s", r.stdout, r.stderr)
	}
	r = run(t, noEnv(t), "results", "compare", dirs[0], dirs[1], "--results", results, "--json")
	var rows []struct {
		Host      string `json:"host"`
		Simulated bool   `json:"simulated"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 2 || rows[0].Simulated || !rows[1].Simulated {
		t.Errorf("results compare --json: %+v, %v; want simulated on dgx02's row only\n%s", rows, err, r.stdout)
	}
}

// TestSimulatedWithoutProbe: a lab run on a simulated fleet with no probe
// (--no-probe; or a probe that did not answer, as on a busy machine)
// still records each host's environment as simulated: the SSH handshake
// says so.
func TestSimulatedWithoutProbe(t *testing.T) {
	_, files := simFleet(t, sim.Config{Hosts: 2, Seed: 1})
	env := noEnv(t)
	r := run(t, env, "lab", "run", "topology-sanity", "--inventory", files.Inventory, "-H", "@dgx", "--no-probe", "--json", "--results", t.TempDir())
	var rec labs.Record
	if err := json.Unmarshal([]byte(r.stdout), &rec); err != nil || len(rec.Hosts) != 2 {
		t.Fatalf("lab run --json: %v\n%s\n%s", err, r.stdout, r.stderr)
	}
	for _, h := range rec.Hosts {
		if !h.Environment.Simulated {
			t.Errorf("%s: the environment does not say simulated without the probe (%+v)", h.Host, h.Environment)
		}
	}
}
