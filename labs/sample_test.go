package labs_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpulab/gpulab/internal/probetest"
	"github.com/gpulab/gpulab/internal/sshtest"
	"github.com/gpulab/gpulab/labs"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/probes/remote"
)

const samplingLab = `
id = "sampling"
name = "Samples the GPUs while a step runs"
goal = "The probe samples every GPU while the workload runs."
plane = "data"
maturity = "draft"
estimate_minutes = 1
cost = "none"
principle = "The probe runs beside the step in a session of its own."
stop_loss = "none"

[[step]]
id = "load"
phase = "run"
title = "Hold the GPUs for a while"
command = "sleep 1.5"
sample = "250ms"

[step.metrics]
samples_taken = "size(samples)"
gpus_seen = "size(samples[0].gpus)"
span_s = "samples[size(samples) - 1].t - samples[0].t"
util_p50 = "percentile(samples.map(s, s.gpus[0].util_pct), 50.0)"
mem_used_mib = "math.greatest(samples.map(s, s.gpus.map(g, g.mem_used_mib).sum()))"
power_w = "mean(samples.map(s, s.gpus[0].power_w))"
exit = "exit_code"

[[criterion]]
id = "sampled"
description = "The probe sampled all eight GPUs through the step"
expr = "metrics.samples_taken >= 4 && metrics.gpus_seen == 8 && metrics.span_s >= 0.7"
impact = "critical"

[[criterion]]
id = "idle"
description = "Nothing else used the GPUs"
expr = "metrics.util_p50 < 50.0 && metrics.mem_used_mib < 1024.0"
impact = "major"

[[criterion]]
id = "power"
description = "The GPUs drew power (the sensor answers)"
expr = "metrics.power_w > 0.0"
impact = "minor"
`

// The probe samples a step on real sshd hosts: the simulated DGX A100
// gives eight GPUs of samples and the environment declaration (marked
// SIMULATED); a host without NVML gives no samples, and every criterion
// that needs them is UNKNOWN with the reason, never PASS. The probe is
// removed from the hosts afterwards.
func TestLabSamplesWithTheProbe(t *testing.T) {
	l, err := labs.Parse("sampling.toml", []byte(samplingLab))
	if err != nil {
		t.Fatal(err)
	}
	_, e, ts, dirs := e2eFleet(t, []testHost{{topo: "nvidia-smi-topo-m/hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt"}})
	data, err := os.ReadFile(probetest.Build(t))
	if err != nil {
		t.Fatal(err)
	}
	source := func(string) ([]byte, []byte, error) { return data, nil, nil }
	var sampled atomic.Int32
	rec := labs.Run(context.Background(), e, ts, l, labs.RunOptions{
		Probe: &remote.Prober{Source: source, Args: []string{"--mock", "dgxa100"}, AnyArch: true},
		OnEvent: func(ev labs.Event) {
			if ev.Kind == labs.Sampled && ev.Sample != nil && len(ev.Sample.GPUs) == 8 {
				sampled.Add(1)
			}
		}})
	h := rec.Hosts[0]
	if !h.Passed {
		t.Fatalf("simulated host did not pass: %+v\nerrors %v\nsteps %+v", h.Scores, h.MetricErrors, h.Steps)
	}
	load := h.Steps[0]
	if n := len(load.Samples); n < 4 || load.SampleProblem != "" || int(sampled.Load()) != n {
		t.Errorf("samples: %d in the record (%q), %d live events", n, load.SampleProblem, sampled.Load())
	}
	env := h.Environment
	if !env.Simulated || env.Driver != "535.129.03" || env.CUDA != "12.2" || len(env.GPUs) != 8 ||
		env.GPUs[0] != "0: NVIDIA A100-SXM4-40GB, 40960 MiB, MIG disabled" || !strings.HasPrefix(env.Source, "probe ") {
		t.Errorf("environment from the simulated probe: %+v", env)
	}
	if md := rec.Markdown(); !strings.Contains(md, "**SIMULATED**") || !strings.Contains(md, " probe samples, busiest GPU 0% (median), peak 0.0 GiB in use") {
		t.Errorf("the record does not say it is simulated, or does not count the samples:\n%s", md)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dirs[0]), "cache", "gpulab", "nvmlprobe-*")); len(left) != 0 {
		t.Errorf("the probe was left on the host: %v", left)
	}

	// The same run with the probe for real hosts, on a host without NVML.
	rec = labs.Run(context.Background(), e, ts, l, labs.RunOptions{Probe: &remote.Prober{Source: source, AnyArch: true}})
	h = rec.Hosts[0]
	if h.Passed || len(h.Steps[0].Samples) != 0 || !strings.HasPrefix(h.Steps[0].SampleProblem, "no NVML on the host: libnvidia-ml.so.1") {
		t.Fatalf("host without NVML: passed %v, %d samples, problem %q", h.Passed, len(h.Steps[0].Samples), h.Steps[0].SampleProblem)
	}
	for _, s := range h.Scores {
		if s.Status != "UNKNOWN" || !strings.Contains(s.Summary, "no probe samples: no NVML on the host") {
			t.Errorf("%s without NVML: %s %q, want UNKNOWN naming the missing NVML", s.ID, s.Status, s.Summary)
		}
	}
	if h.Metrics["exit"] != int64(0) {
		t.Errorf("a metric that needs no samples is still measured: %v", h.Metrics["exit"])
	}
	if !strings.HasPrefix(h.Environment.Probe, "no NVML on the host") || h.Environment.Simulated {
		t.Errorf("environment without NVML: %+v", h.Environment)
	}

	// And without a probe at all.
	rec = labs.Run(context.Background(), e, ts, l, labs.RunOptions{})
	if p := rec.Hosts[0].Steps[0].SampleProblem; p != "this run has no probe" {
		t.Errorf("without a probe: %q", p)
	}
}

const kubeLab = `
id = "kube"
name = "Reads the cluster"
goal = "The record declares the cluster the lab ran against."
plane = "control"
maturity = "draft"
estimate_minutes = 1
cost = "none"
principle = "kubectl on the first host."
stop_loss = "none"

[[step]]
id = "nodes"
phase = "observe"
hosts = "first"
needs = ["kubectl"]
command = "kubectl describe nodes"
parser = "kubectl-describe-node"

[step.metrics]
gpus = "int(out.gpu_resources['nvidia.com/gpu'].allocatable)"

[[criterion]]
id = "gpu"
description = "The node offers a GPU"
expr = "metrics.gpus >= 1"
impact = "critical"
`

// A lab that runs kubectl declares the cluster in its record: kubectl on
// the first host (a stand-in printing real kubectl outputs) gives the
// versions and the GPU nodes, once per run.
func TestLabDeclaresKubernetes(t *testing.T) {
	l, err := labs.Parse("kube.toml", []byte(kubeLab))
	if err != nil {
		t.Fatal(err)
	}
	_, e, ts, dirs := e2eFleet(t, []testHost{{topo: "nvidia-smi-topo-m/hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt"}, {topo: "nvidia-smi-topo-m/a10-4gpu-pcie-SYS-2nic.txt"}})
	version, _ := filepath.Abs(fx + "kubectl-version/client-v1.32.4-no-server-refused.txt")
	node, _ := filepath.Abs(fx + "kubectl-describe-node/eks-g4dn-xlarge-t4-full-nvidia-gpu-allocated.txt")
	kubectl := "#!/bin/sh\ncase \"$*\" in\nversion) cat " + version + "; exit 1 ;;\n\"describe nodes\") cat " + node + " ;;\n*) exit 2 ;;\nesac\n"
	if err := os.WriteFile(filepath.Join(filepath.Dir(dirs[0]), "bin", "kubectl"), []byte(kubectl), 0o755); err != nil {
		t.Fatal(err)
	}
	// Component versions: the first line each prints, blank lines skipped.
	ctk := "#!/bin/sh\necho 'NVIDIA Container Toolkit CLI version 1.14.6'\necho 'commit: 5605d19'\n"
	dcgmi := "#!/bin/sh\necho\necho 'dcgmi  version: 3.3.5'\necho\n"
	for i, d := range dirs {
		bin := filepath.Join(filepath.Dir(d), "bin")
		if err := os.WriteFile(filepath.Join(bin, "nvidia-ctk"), []byte(ctk), 0o755); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := os.WriteFile(filepath.Join(bin, "dcgmi"), []byte(dcgmi), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	rec := labs.Run(context.Background(), e, ts, l, labs.RunOptions{})
	k := rec.Kubernetes
	if k == nil || k.Host != "gpu01" || k.Versions["Client Version"] != "v1.32.4-dispatcher" || len(k.Nodes) != 1 || k.Nodes[0].Kubelet != "v1.34.2-eks-ecaa3a6" {
		t.Fatalf("kubernetes declaration: %+v", k)
	}
	md := rec.Markdown()
	for _, want := range []string{
		"Kubernetes (kubectl on gpu01): Client v1.32.4-dispatcher; 1 of 1 nodes offer GPU resources.",
		"kubectl said: The connection to the server localhost:8080 was refused",
		"| ip-10-0-1-230.ec2.internal | v1.34.2-eks-ecaa3a6 | containerd://2.1.4 | Amazon Linux 2023.9.20251117 | nvidia.com/gpu 1/1 |",
		"Components:\n- gpu01: dcgmi: dcgmi  version: 3.3.5; nvidia-ctk: NVIDIA Container Toolkit CLI version 1.14.6\n- gpu02: nvidia-ctk: NVIDIA Container Toolkit CLI version 1.14.6\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("record.md lacks %q:\n%s", want, md)
		}
	}
	if !rec.Passed {
		t.Errorf("the kubectl step's metric on both hosts: %+v %+v", rec.Hosts[0].Scores, rec.Hosts[1].Scores)
	}
}

// A guided run asks once per step for the whole run, whatever the number
// of hosts: here it runs setup, skips the run step (its hosts record the
// skip) and runs observe. A guided stop ends the main phases on every
// host and cleanup still runs.
func TestGuidedRun(t *testing.T) {
	_, e, ts, dirs := e2eFleet(t, []testHost{
		{topo: "nvidia-smi-topo-m/hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt"},
		{topo: "nvidia-smi-topo-m/hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt"},
	})
	l := e2eLab(t)
	params, _ := l.Bind(nil)
	var mu sync.Mutex
	var asked []string
	answers := map[string]labs.GuideAnswer{"prepare": labs.GuideRun, "work": labs.GuideSkip, "topo": labs.GuideRun}
	rec := labs.Run(context.Background(), e, ts, l, labs.RunOptions{Params: params, Guide: func(_ context.Context, g labs.GuideStep) labs.GuideAnswer {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, fmt.Sprintf("%d/%d %s %s %v %v", g.N, g.Of, g.Phase, g.Step.ID, g.Measures, g.Criteria))
		return answers[g.Step.ID]
	}})
	want := []string{"1/3 setup prepare [] []", "2/3 run work [] []", "3/3 observe topo [gpus non_nvlink_pairs] [mesh]"}
	if strings.Join(asked, "; ") != strings.Join(want, "; ") {
		t.Errorf("asked:\n%s\nwant:\n%s", strings.Join(asked, "\n"), strings.Join(want, "\n"))
	}
	for _, h := range rec.Hosts {
		var outcomes []string
		for _, s := range h.Steps {
			outcomes = append(outcomes, s.ID+": "+s.Outcome())
		}
		if got := strings.Join(outcomes, "; "); !strings.Contains(got, "work: skipped: skipped by the operator (guided run)") || !h.Passed || !h.CleanupRan {
			t.Errorf("%s: %s (passed %v, cleanup %v)", h.Host, got, h.Passed, h.CleanupRan)
		}
	}
	if !rec.Guided || !strings.Contains(rec.Markdown(), "- Mode: guided") || !strings.Contains(rec.Markdown(), "## Principle\n\nCleanup runs on a context of its own") {
		t.Errorf("the record does not say it was guided, or lacks the principle:\n%s", rec.Markdown())
	}

	// Skipping the step that measures a criterion's metrics makes it
	// SKIPPED (chosen, not missing), and the lab does not pass.
	rec = labs.Run(context.Background(), e, ts, l, labs.RunOptions{Params: params, Guide: func(_ context.Context, g labs.GuideStep) labs.GuideAnswer {
		if g.Step.ID == "topo" {
			return labs.GuideSkip
		}
		return labs.GuideRun
	}})
	for _, h := range rec.Hosts {
		if s := score(h, "mesh"); s.Status != "SKIPPED" || h.Passed || !strings.HasPrefix(s.Summary, "skipped: metrics.gpus, metrics.non_nvlink_pairs were not measured: step topo was skipped: skipped by the operator") ||
			strings.Contains(h.MetricErrors["gpus"], "\x00") || strings.Join(h.SkippedMetrics, ",") != "gpus,non_nvlink_pairs" {
			t.Errorf("%s with topo skipped: %s %q, passed %v, reason %q", h.Host, s.Status, s.Summary, h.Passed, h.MetricErrors["gpus"])
		}
	}

	// Stop before the run step.
	for _, d := range dirs {
		os.RemoveAll(d)
	}
	rec = labs.Run(context.Background(), e, ts, l, labs.RunOptions{Params: params, Guide: func(_ context.Context, g labs.GuideStep) labs.GuideAnswer {
		if g.Step.ID == "work" {
			return labs.GuideStop
		}
		return labs.GuideRun
	}})
	for i, h := range rec.Hosts {
		if h.Stopped != "stopped by the operator before step work" || h.Passed || marker(t, dirs[i], "cleanup") != "cleaned" || rec.Interrupted {
			t.Errorf("%s after a guided stop: stopped %q, passed %v, cleanup marker %q, interrupted %v", h.Host, h.Stopped, h.Passed, marker(t, dirs[i], "cleanup"), rec.Interrupted)
		}
	}
}

// --solve runs the lab's solve commands, and the record says the run was
// a demonstration.
func TestSolveRun(t *testing.T) {
	_, e, ts, dirs := e2eFleet(t, []testHost{{topo: "nvidia-smi-topo-m/a10-4gpu-pcie-SYS-2nic.txt"}})
	// The solve command reads a topology file beside the host's lab dir:
	// the NVLink mesh, where nvidia-smi prints a PCIe-only machine.
	mesh, err := os.ReadFile(fx + "nvidia-smi-topo-m/hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dirs[0], "..", "..", "topo.txt"), mesh, 0o644); err != nil {
		t.Fatal(err)
	}
	l := e2eLab(t)
	params, _ := l.Bind(nil)
	if rec := labs.Run(context.Background(), e, ts, l, labs.RunOptions{Params: params}); rec.Passed || rec.Solved {
		t.Fatalf("without --solve the PCIe host passed (%v) or the record says solved (%v)", rec.Passed, rec.Solved)
	}
	rec := labs.Run(context.Background(), e, ts, l, labs.RunOptions{Params: params, Solve: true})
	if !rec.Passed || !rec.Solved || !strings.Contains(rec.Markdown(), "**--solve**") || !strings.HasPrefix(rec.Hosts[0].Steps[3].Command, "cat ") {
		t.Errorf("--solve: passed %v, solved %v, topo ran %q", rec.Passed, rec.Solved, rec.Hosts[0].Steps[3].Command)
	}
}

// On a host without GPUs (no driver, no nvidia-smi, no kubectl, no docker)
// no criterion of any built-in lab may pass: each ends UNKNOWN or FAIL,
// with its reason, and no lab passes.
func TestBuiltinLabsOnAHostWithoutGPUs(t *testing.T) {
	ls, err := labs.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	// Whatever this machine has, the labs must not reach a GPU or a
	// cluster: the GPU and cluster tools are stand-ins that are not there,
	// first on PATH, and there is no kubeconfig.
	stubs := t.TempDir()
	for _, tool := range []string{"nvidia-smi", "kubectl", "docker", "dcgmi", "all_reduce_perf", "vllm", "python3", "curl", "numactl", "gpu_burn", "nvidia-ctk", "helm"} {
		if err := os.WriteFile(filepath.Join(stubs, tool), []byte("#!/bin/sh\necho \"$0: not installed on this host\" >&2\nexit 127\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	home := t.TempDir()
	f := sshtest.Start(t, 1, sshtest.Options{Env: map[string]string{"PATH": stubs + ":/usr/bin:/bin", "HOME": home, "KUBECONFIG": filepath.Join(home, "none")}})
	s := f.Servers[0]
	ts := []orchestrator.Target{{Name: "cpu01", HostName: s.Addr, Port: s.Port, User: f.User, IdentityFiles: []string{f.ClientKey}, Explicit: true,
		KnownHosts: []string{f.KnownHosts}, ConnectTimeout: 5 * time.Second, CommandTimeout: 30 * time.Second}}
	e := &orchestrator.Engine{Dialer: &orchestrator.Dialer{Keys: &orchestrator.Keyring{}}, Concurrency: 4}
	for _, l := range ls {
		var set []string
		for _, p := range l.Params {
			if p.Default == "" {
				v := map[string]string{"url": "http://127.0.0.1:9", "int": "1", "number": "1"}[p.Type]
				if p.Pattern != "" {
					v = "MIG-0"
				}
				set = append(set, p.Name+"="+cmp.Or(v, "x"))
			}
		}
		params, err := l.Bind(set)
		if err != nil {
			t.Fatal(err)
		}
		rec := labs.Run(context.Background(), e, ts, l, labs.RunOptions{Params: params})
		h := rec.Hosts[0]
		if h.Passed {
			t.Errorf("%s passed on a host without GPUs", l.ID)
		}
		for _, sc := range h.Scores {
			if sc.Status == "PASS" || sc.Status == "WARN" {
				t.Errorf("%s: %s is %s on a host without GPUs: %s", l.ID, sc.ID, sc.Status, sc.Summary)
			}
		}
	}
}
