package labs_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpulab/gpulab/internal/heapwatch"
	"github.com/gpulab/gpulab/internal/sshtest"
	"github.com/gpulab/gpulab/labs"
	"github.com/gpulab/gpulab/orchestrator"
)

const fx = "../testdata/fixtures/"

// testHost is what a stand-in host prints and does.
type testHost struct {
	topo string // fixture printed by nvidia-smi topo -m
	noL  bool   // nvidia-smi -L fails (the prerequisite)
	work string // the run step's command
}

// e2eFleet starts one sshd per host with stand-in nvidia-smi scripts first
// on PATH and LABDIR pointing at the host's own marker directory.
func e2eFleet(t *testing.T, hosts []testHost) (*sshtest.Fleet, *orchestrator.Engine, []orchestrator.Target, []string) {
	t.Helper()
	root := t.TempDir()
	var labdirs []string
	for i, h := range hosts {
		bin := filepath.Join(root, fmt.Sprint(i), "bin")
		os.MkdirAll(bin, 0o755)
		labdirs = append(labdirs, filepath.Join(root, fmt.Sprint(i), "lab"))
		topo, _ := filepath.Abs(fx + h.topo)
		list, _ := filepath.Abs(fx + "nvidia-smi-L/dgx-a100-80gb-mig-all-balanced-head10.txt")
		l := "cat " + list
		if h.noL {
			l = "echo 'NVIDIA-SMI has failed because it couldn'\\''t communicate with the NVIDIA driver.'; exit 9"
		}
		script := fmt.Sprintf("#!/bin/sh\ncase \"$*\" in\n\"topo -m\") cat %s ;;\n\"-L\") %s ;;\n*) exit 2 ;;\nesac\n", topo, l)
		if err := os.WriteFile(filepath.Join(bin, "nvidia-smi"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		// A quiet kernel log, for the stability counts (golden record).
		if err := os.WriteFile(filepath.Join(bin, "dmesg"), []byte("#!/bin/sh\necho '[    0.000000] Linux version 6.1.0-28-amd64'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		// A fixed kernel for the environment declaration (golden record).
		if err := os.WriteFile(filepath.Join(bin, "uname"), []byte("#!/bin/sh\necho Linux 6.1.0-28-amd64\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f := sshtest.Start(t, len(hosts), sshtest.Options{EnvFor: func(i int) map[string]string {
		work := hosts[i].work
		if work == "" {
			work = "true"
		}
		return map[string]string{"PATH": filepath.Join(root, fmt.Sprint(i), "bin") + ":/usr/bin:/bin", "LABDIR": labdirs[i], "WORK": work,
			"XDG_CACHE_HOME": filepath.Join(root, fmt.Sprint(i), "cache")}
	}})
	var ts []orchestrator.Target
	for i, s := range f.Servers {
		ts = append(ts, orchestrator.Target{Name: fmt.Sprintf("gpu%02d", i+1), HostName: s.Addr, Port: s.Port, User: f.User,
			IdentityFiles: []string{f.ClientKey}, Explicit: true, KnownHosts: []string{f.KnownHosts},
			ConnectTimeout: 5 * time.Second, CommandTimeout: 60 * time.Second})
	}
	return f, &orchestrator.Engine{Dialer: &orchestrator.Dialer{Keys: &orchestrator.Keyring{}}, Concurrency: 8}, ts, labdirs
}

func e2eLab(t *testing.T) *labs.Lab {
	t.Helper()
	data, err := os.ReadFile("testdata/e2e.toml")
	if err != nil {
		t.Fatal(err)
	}
	l, err := labs.Parse("testdata/e2e.toml", data)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func marker(t *testing.T, dir, name string) string {
	t.Helper()
	data, _ := os.ReadFile(filepath.Join(dir, name))
	return strings.TrimSpace(string(data))
}

func score(h labs.HostRecord, id string) labs.Score {
	for _, s := range h.Scores {
		if s.ID == id {
			return s
		}
	}
	return labs.Score{}
}

// A passing host, a failing host (PCIe-only), a host whose prerequisite
// fails: every host's cleanup runs, and scores come from real outputs.
func TestLabRunPassFailPrerequisite(t *testing.T) {
	_, e, ts, dirs := e2eFleet(t, []testHost{
		{topo: "nvidia-smi-topo-m/hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt"},
		{topo: "nvidia-smi-topo-m/a10-4gpu-pcie-SYS-2nic.txt"},
		{topo: "nvidia-smi-topo-m/hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt", noL: true},
	})
	var mu sync.Mutex
	var live []string
	clock := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	l := e2eLab(t)
	params, err := l.Bind(nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := labs.Run(context.Background(), e, ts, l, labs.RunOptions{Params: params, Now: func() time.Time { return clock }, OnEvent: func(ev labs.Event) {
		mu.Lock()
		defer mu.Unlock()
		if ev.Kind == labs.ScoresChanged {
			live = append(live, ev.Host+" "+ev.Scores[0].ID+"="+string(ev.Scores[0].Status))
		}
	}})
	if !rec.Complete || rec.Passed {
		t.Errorf("complete %v passed %v", rec.Complete, rec.Passed)
	}
	h := rec.Hosts
	if s := score(h[0], "mesh"); s.Status != "PASS" || s.Values["gpus"] != int64(8) || s.Evidence["gpus"] != "step topo" {
		t.Errorf("gpu01: %+v", s)
	}
	if s := score(h[1], "mesh"); s.Status != "FAIL" || !strings.Contains(s.Summary, "metrics.non_nvlink_pairs = 6") {
		t.Errorf("gpu02: %+v", s)
	}
	if s := score(h[2], "mesh"); s.Status != "UNKNOWN" || !strings.Contains(s.Summary, "prerequisite not met: nvidia-smi lists GPUs (exited 9: NVIDIA-SMI has failed") {
		t.Errorf("gpu03: %+v", s)
	}
	if h[2].Prerequisites[1].Status != "confirm" {
		t.Errorf("a prerequisite no command checks is left to the operator: %+v", h[2].Prerequisites)
	}
	for i, d := range dirs[:2] {
		if marker(t, d, "setup") != "prepared" || marker(t, d, "cleanup") != "cleaned" || !h[i].CleanupRan {
			t.Errorf("gpu%02d: setup %q cleanup %q ran %v", i+1, marker(t, d, "setup"), marker(t, d, "cleanup"), h[i].CleanupRan)
		}
	}
	if marker(t, dirs[2], "setup") != "" || marker(t, dirs[2], "cleanup") != "cleaned" || !h[2].CleanupRan {
		t.Errorf("gpu03 stopped at the prerequisite, then cleaned up: setup %q, cleanup ran %v (%+v)", marker(t, dirs[2], "setup"), h[2].CleanupRan, h[2].CleanupProblems)
	}
	if len(live) < 2 {
		t.Errorf("scores were not reported live: %v", live)
	}
	// The evidence is kept: the observe step's output is in the record.
	if st := h[0].Steps; len(st) != 5 || st[3].ID != "topo" || !strings.Contains(st[3].Stdout, "NV12") {
		t.Errorf("gpu01 steps: %+v", st)
	}
	if env := h[0].Environment; env.Kernel != "Linux 6.1.0-28-amd64" || len(env.GPUs) != 0 {
		t.Errorf("gpu01 environment (the stand-in nvidia-smi answers no query): %+v", env)
	}
	results := t.TempDir()
	dir := rec.Dir(results)
	if want := filepath.Join(results, "e2e", "20261129-100000-gpu[01-03]"); dir != want {
		t.Errorf("record dir %s, want %s", dir, want)
	}
	if err := rec.Write(dir, filepath.Join(results, "results.csv")); err != nil {
		t.Fatal(err)
	}
	if err := rec.Write(dir, filepath.Join(results, "results.csv")); err != nil { // a second run appends
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "record.md"))
	golden(t, "testdata/e2e-record.md.golden", string(md))
	junit, _ := os.ReadFile(filepath.Join(dir, "junit.xml"))
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
	}
	if err := xml.Unmarshal(junit, &suites); err != nil || suites.Tests != 3 || suites.Failures != 1 || suites.Errors != 1 {
		t.Errorf("junit.xml: %+v %v\n%s", suites, err, junit)
	}
	rows, err := csv.NewReader(strings.NewReader(readFile(t, filepath.Join(results, "results.csv")))).ReadAll()
	if err != nil || len(rows) != 7 || rows[0][0] != "started" || rows[1][2] != "gpu01" || rows[1][11] != "true" || rows[2][11] != "false" || rows[4][2] != "gpu01" {
		t.Errorf("results.csv: %v %v", rows, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	var back labs.Record
	data, _ := os.ReadFile(filepath.Join(dir, "record.json"))
	if err := json.Unmarshal(data, &back); err != nil || back.Schema != labs.RecordSchema || len(back.Hosts) != 3 || back.Hosts[1].Scores[0].Status != "FAIL" {
		t.Errorf("record round trip: %v", err)
	}
}

// Ctrl-C in the middle of the run step: cleanup still runs on every host,
// the record is marked interrupted, and nothing passes.
func TestLabRunCancelled(t *testing.T) {
	_, e, ts, dirs := e2eFleet(t, []testHost{
		{topo: "nvidia-smi-topo-m/hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt", work: "sleep 30"},
		{topo: "nvidia-smi-topo-m/hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt", work: "sleep 30"},
	})
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	working := map[string]bool{}
	rec := labs.Run(ctx, e, ts, e2eLab(t), labs.RunOptions{Params: map[string]string{"marker": "cleaned"}, OnEvent: func(ev labs.Event) {
		mu.Lock()
		defer mu.Unlock()
		if ev.Kind == labs.StepStarted && ev.Step.ID == "work" {
			if working[ev.Host] = true; len(working) == len(ts) {
				cancel() // every host is in the run step
			}
		}
	}})
	if rec.Complete || !rec.Interrupted || rec.Passed {
		t.Errorf("complete %v interrupted %v passed %v", rec.Complete, rec.Interrupted, rec.Passed)
	}
	for i, h := range rec.Hosts {
		if marker(t, dirs[i], "cleanup") != "cleaned" || !h.CleanupRan {
			t.Errorf("%s: cleanup did not run after the cancel (%v)", h.Host, h.CleanupProblems)
		}
		if s := score(h, "mesh"); s.Status != "UNKNOWN" {
			t.Errorf("%s: %+v", h.Host, s)
		}
	}
}

// A host lost mid-run keeps its partial record and does not stop the
// others; its loss is in the record.
func TestLabRunHostLost(t *testing.T) {
	f, e, ts, dirs := e2eFleet(t, []testHost{
		{topo: "nvidia-smi-topo-m/hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt"},
		{topo: "nvidia-smi-topo-m/hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt", work: "sleep 30"},
	})
	var once sync.Once
	rec := labs.Run(context.Background(), e, ts, e2eLab(t), labs.RunOptions{Params: map[string]string{"marker": "cleaned"}, OnEvent: func(ev labs.Event) {
		if ev.Kind == labs.StepStarted && ev.Step.ID == "work" && ev.Index == 1 {
			once.Do(func() { go f.Servers[1].Kill() }) // the host dies in its run step
		}
	}})
	if s := score(rec.Hosts[0], "mesh"); s.Status != "PASS" || marker(t, dirs[0], "cleanup") != "cleaned" {
		t.Errorf("gpu01 was not affected: %+v", s)
	}
	h := rec.Hosts[1]
	if s := score(h, "mesh"); s.Status != "UNKNOWN" || !strings.Contains(h.Stopped, "step work lost") {
		t.Errorf("gpu02: stopped %q, %+v", h.Stopped, s)
	}
	if marker(t, dirs[1], "setup") != "prepared" || len(h.Steps) < 2 {
		t.Errorf("gpu02's partial record: %+v", h.Steps)
	}
	if len(h.CleanupProblems) == 0 {
		t.Errorf("gpu02's cleanup could not run on a lost connection, and the record must say so")
	}
	if h.Class != orchestrator.Lost || h.Err == "" {
		t.Errorf("gpu02 killed mid-run: class %s, error %q; want lost, the worst that happened to it", h.Class, h.Err)
	}
	if c := rec.Hosts[0].Class; c != orchestrator.OK {
		t.Errorf("gpu01: class %s", c)
	}
	if rec.Passed {
		t.Error("a run with a lost host passed")
	}
}

var update = flag.Bool("update", false, "rewrite the golden files")

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./labs -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test ./labs -update rewrites it)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// Eight runs started in the same second into one results directory each
// get a record directory of their own, and results.csv points each row at
// its own record.
func TestParallelRunsKeepTheirRecords(t *testing.T) {
	_, e, ts, _ := e2eFleet(t, []testHost{{topo: "nvidia-smi-topo-m/hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt"}})
	results := t.TempDir()
	clock := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	outs := make([]labs.Outcome, 8)
	var wg sync.WaitGroup
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = labs.Execute(context.Background(), labs.RunSpec{Engine: e, Targets: ts, Lab: e2eLab(t), Results: results,
				Options: labs.RunOptions{Params: map[string]string{"marker": fmt.Sprint(i)}, Now: func() time.Time { return clock }}})
		}()
	}
	wg.Wait()
	dirs := map[string]bool{}
	for i, o := range outs {
		if o.WriteErr != nil || o.Dir == "" || dirs[o.Dir] {
			t.Errorf("run %d: dir %q (taken before: %v), write error %v", i, o.Dir, dirs[o.Dir], o.WriteErr)
		}
		dirs[o.Dir] = true
	}
	data, err := os.ReadFile(filepath.Join(results, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	all, err := csv.NewReader(strings.NewReader(string(data))).ReadAll()
	if err != nil || len(all) == 0 {
		t.Fatalf("results.csv: %v\n%s", err, data)
	}
	col := slices.Index(all[0], "record") // by name: columns are added at the end
	rows := all[1:]
	seen := map[string]bool{}
	for _, r := range rows {
		d := r[col]
		if seen[d] || !dirs[d] {
			t.Errorf("results.csv row points at %s (twice: %v)", d, seen[d])
		}
		seen[d] = true
	}
	if len(rows) != 8 {
		t.Errorf("results.csv has %d rows, want 8", len(rows))
	}
}

// A step whose output goes past the limit is marked cut in the record, a
// metric that reads its output is UNKNOWN ("output was cut"), not decided
// on the part kept, and a metric that reads only the exit status is still
// measured; the run's memory stays bounded per host.
func TestLabStepOutputCut(t *testing.T) {
	l, err := labs.Parse("cut.toml", []byte(`id = "cut"
name = "A step that prints more than gpulab keeps"
goal = "cut outputs are marked"
plane = "data"
maturity = "draft"
estimate_minutes = 1

[[step]]
id = "flood"
phase = "run"
command = "head -c 40000000 /dev/zero | tr '\\0' x; echo; echo END"
[step.metrics]
ended = "stdout.endsWith('END\\n')"
status = "exit_code"

[[criterion]]
id = "ended"
description = "the output ends with END"
expr = "metrics.ended"
impact = "critical"

[[criterion]]
id = "exited"
description = "the command exited 0"
expr = "metrics.status == 0"
impact = "minor"
`))
	if err != nil {
		t.Fatal(err)
	}
	f := sshtest.Start(t, 4, sshtest.Options{})
	var ts []orchestrator.Target
	for i, s := range f.Servers {
		ts = append(ts, orchestrator.Target{Name: fmt.Sprintf("gpu%02d", i+1), HostName: s.Addr, Port: s.Port, User: f.User,
			IdentityFiles: []string{f.ClientKey}, Explicit: true, KnownHosts: []string{f.KnownHosts}, ConnectTimeout: 5 * time.Second, CommandTimeout: 2 * time.Minute})
	}
	stopWatch := heapwatch.Start()
	out := labs.Execute(context.Background(), labs.RunSpec{Engine: &orchestrator.Engine{Dialer: &orchestrator.Dialer{Keys: &orchestrator.Keyring{}}, Concurrency: 4},
		Targets: ts, Lab: l, Results: t.TempDir()})
	peak := stopWatch()
	if out.WriteErr != nil {
		t.Fatal(out.WriteErr)
	}
	for _, h := range out.Record.Hosts {
		if len(h.Steps) != 1 || !strings.Contains(h.Steps[0].OutputCut, "stdout cut at 16.0 MiB of 38.1 MiB") {
			t.Errorf("%s: the step's record does not say its output was cut: %+v", h.Host, h.Steps[0].OutputCut)
		}
		if s := score(h, "ended"); s.Status != "UNKNOWN" || !strings.Contains(s.Summary, "output was cut") {
			t.Errorf("%s: a criterion on a cut output is %s (%s), want UNKNOWN", h.Host, s.Status, s.Summary)
		}
		if s := score(h, "exited"); s.Status != "PASS" {
			t.Errorf("%s: the exit status is measured whatever the output: %s %s", h.Host, s.Status, s.Summary)
		}
	}
	md, _ := os.ReadFile(filepath.Join(out.Dir, "record.md"))
	if !strings.Contains(string(md), "cut at 16.0 MiB") {
		t.Errorf("record.md does not say the output was cut")
	}
	if p := peak; p > 4*96<<20 {
		t.Errorf("heap in use peaked at %d MiB for 4 hosts printing 38 MiB each: more than 96 MiB per host (16 MiB kept per stream, the record written a host at a time)", p>>20)
	}
	t.Logf("peak heap in use: %d MiB for 4 hosts", peak>>20)
}

// A record made on a simulated fleet says so, in JSON and Markdown, and
// never claims the lab's maturity: it is a demonstration.
func TestSimulatedRecordStaysDraft(t *testing.T) {
	l := e2eLab(t)
	l.Maturity = "validated"
	e := &orchestrator.Engine{Dialer: &orchestrator.Dialer{Keys: &orchestrator.Keyring{}}, Concurrency: 1}
	for _, simulated := range []bool{false, true} {
		rec := labs.Run(context.Background(), e, nil, l, labs.RunOptions{Simulated: simulated, Params: map[string]string{"marker": "cleaned"}})
		js, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		md := rec.Markdown()
		switch {
		case simulated && (rec.Maturity != "draft" || !strings.Contains(string(js), `"simulated":true`) || !strings.Contains(md, "SIMULATED fleet")):
			t.Errorf("simulated run: maturity %q, JSON %s…, Markdown says SIMULATED: %v", rec.Maturity, js[:min(len(js), 120)], strings.Contains(md, "SIMULATED fleet"))
		case !simulated && (rec.Maturity != "validated" || strings.Contains(string(js), `"simulated"`) || strings.Contains(md, "SIMULATED fleet")):
			t.Errorf("real run: maturity %q, simulated in JSON: %v", rec.Maturity, strings.Contains(string(js), `"simulated"`))
		}
	}
}

// Runs in which no step ran (every host's prerequisite failed, or the
// guided run stopped before its first step, by the operator or because
// the answers ended) are not run, not failed: the record is incomplete
// with the reason, its Stability is not measured, and record.md says so.
func TestLabRunNotRun(t *testing.T) {
	const topo = "nvidia-smi-topo-m/hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt"
	_, e, ts, _ := e2eFleet(t, []testHost{{topo: topo, noL: true}, {topo: topo, noL: true}})
	guide := func(a labs.GuideAnswer) func(context.Context, labs.GuideStep) labs.GuideAnswer {
		return func(context.Context, labs.GuideStep) labs.GuideAnswer { return a }
	}
	_, eOK, tsOK, _ := e2eFleet(t, []testHost{{topo: topo}})
	for _, tc := range []struct {
		name    string
		e       *orchestrator.Engine
		ts      []orchestrator.Target
		guide   func(context.Context, labs.GuideStep) labs.GuideAnswer
		notRun  string
		stopped string
	}{
		{"prerequisite", e, ts, nil, "every host: prerequisite not met: nvidia-smi lists GPUs (exited 9: ", "prerequisite not met: nvidia-smi lists GPUs"},
		{"operator", eOK, tsOK, guide(labs.GuideStop), "gpu01: stopped by the operator before step prepare", "stopped by the operator before step prepare"},
		{"end of input", eOK, tsOK, guide(labs.GuideEndOfInput), "gpu01: the answers ended (end of input) before step prepare", "the answers ended (end of input) before step prepare"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := labs.Run(context.Background(), tc.e, tc.ts, e2eLab(t), labs.RunOptions{Params: map[string]string{"marker": "cleaned"}, Yes: true, Guide: tc.guide})
			if rec.Complete || rec.Passed || rec.Interrupted || !strings.HasPrefix(rec.NotRun, tc.notRun) || rec.Status() != "incomplete" {
				t.Errorf("complete %v passed %v interrupted %v status %s not run %q, want incomplete, not run %q", rec.Complete, rec.Passed, rec.Interrupted, rec.Status(), rec.NotRun, tc.notRun)
			}
			for _, h := range rec.Hosts {
				if _, ok := h.Metrics["oom"]; ok || !strings.HasPrefix(h.MetricErrors["oom"], "not measured: no step ran on this host") || !strings.HasPrefix(h.Stopped, tc.stopped) {
					t.Errorf("%s: oom %v (%q), stopped %q: want not measured, stopped %q", h.Host, h.Metrics["oom"], h.MetricErrors["oom"], h.Stopped, tc.stopped)
				}
			}
			md := rec.Markdown()
			for _, want := range []string{"INCOMPLETE (no step ran)", "- Conclusion: **NOT RUN** (no step ran: " + tc.notRun, "| not measured | stopped: " + tc.stopped} {
				if !strings.Contains(md, want) {
					t.Errorf("record.md lacks %q:\n%s", want, md)
				}
			}
			if strings.Contains(md, "FAILED") || strings.Contains(md, "oom 0") {
				t.Errorf("record.md says FAILED or counts what was not measured:\n%s", md)
			}
		})
	}
}
