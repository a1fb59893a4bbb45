package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpulab/gpulab/probes/report"
)

// stubNVML is a libnvidia-ml.so.1 that exports a handful of entry points
// and nothing else, as an old or cut-down driver would.
const stubNVML = `
#include <stdio.h>
#include <unistd.h>
typedef int nvmlReturn_t;
typedef void *nvmlDevice_t;
nvmlReturn_t nvmlInit_v2(void) { if (getenv("STUB_HANG")) sleep(60); return 0; }
nvmlReturn_t nvmlInit(void) { return nvmlInit_v2(); }
nvmlReturn_t nvmlShutdown(void) { return 0; }
const char *nvmlErrorString(nvmlReturn_t r) { return "stub error"; }
nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned int n) { snprintf(v, n, "999.1"); return 0; }
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *c) { *c = 1; return 0; }
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d) { *d = (void *)0x10; return 0; }
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int n) { snprintf(name, n, "Stub GPU"); return 0; }
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *t) { return 3; /* NOT_SUPPORTED */ }
`

func build(t *testing.T) (probe, stubDir string) {
	t.Helper()
	dir := t.TempDir()
	probe = filepath.Join(dir, "nvmlprobe")
	cmd := exec.Command("go", "build", "-o", probe, ".")
	cmd.Env = append(os.Environ(), "CGO_CFLAGS=-Wno-deprecated-declarations")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	stubDir = filepath.Join(dir, "lib")
	os.MkdirAll(stubDir, 0o755)
	src := filepath.Join(dir, "stub.c")
	os.WriteFile(src, []byte(stubNVML), 0o644)
	if out, err := exec.Command("gcc", "-shared", "-fPIC", "-o", filepath.Join(stubDir, "libnvidia-ml.so.1"), src).CombinedOutput(); err != nil {
		t.Fatalf("gcc stub: %v\n%s", err, out)
	}
	return probe, stubDir
}

func runProbe(t *testing.T, probe string, env []string, args ...string) (report.Snapshot, int, string) {
	t.Helper()
	cmd := exec.Command(probe, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, _ := cmd.Output()
	var s report.Snapshot
	if len(out) > 0 {
		if err := json.Unmarshal(out, &s); err != nil {
			t.Fatalf("probe output is not a snapshot: %v\n%s", err, out)
		}
	}
	return s, cmd.ProcessState.ExitCode(), stderr.String()
}

func TestProbeBinary(t *testing.T) {
	probe, stub := build(t)

	// No driver at all: a clean report with dlopen's own words, exit 3.
	s, code, _ := runProbe(t, probe, []string{"LD_LIBRARY_PATH=" + t.TempDir()})
	if code != report.ExitNoNVML || s.NVML.Available || !strings.Contains(s.NVML.Error, "libnvidia-ml.so.1: cannot open shared object file") || s.Schema != 1 {
		t.Errorf("without NVML: exit %d, %+v", code, s.NVML)
	}

	// A library exporting only a few entry points: the rest are skipped,
	// not called (calling one would kill the process), and recorded.
	s, code, stderr := runProbe(t, probe, []string{"LD_LIBRARY_PATH=" + stub}, "--host", "stubhost")
	if code != report.ExitOK || len(s.GPUs) != 1 || s.GPUs[0].Name != "Stub GPU" || s.DriverVersion != "999.1" || s.Host != "stubhost" {
		t.Fatalf("with the stub: exit %d (%s), %+v", code, stderr, s)
	}
	missing, notSupported := 0, false
	for _, e := range s.Errors {
		if e.Code == "MISSING_SYMBOL" {
			missing++
		}
		if e.Field == "gpu[0].temperature_c" && e.Code == "NOT_SUPPORTED" && e.Message == "stub error" {
			notSupported = true
		}
	}
	if missing < 20 || !notSupported {
		t.Errorf("stub run: %d MISSING_SYMBOL errors, temperature NOT_SUPPORTED recorded: %v\n%+v", missing, notSupported, s.Errors)
	}

	// NVML that never answers: the watchdog ends the probe with its own code.
	_, code, stderr = runProbe(t, probe, []string{"LD_LIBRARY_PATH=" + stub, "STUB_HANG=1"}, "--timeout", "500ms")
	if code != report.ExitWatchdog || !strings.Contains(stderr, "did not answer") {
		t.Errorf("hung NVML: exit %d, stderr %q", code, stderr)
	}

	// The simulated DGX A100.
	s, code, _ = runProbe(t, probe, nil, "--mock", "dgxa100")
	if code != 0 || !s.Simulated || len(s.GPUs) != 8 || len(s.Topology) != 28 {
		t.Errorf("--mock dgxa100: exit %d, simulated %v, %d GPUs, %d links", code, s.Simulated, len(s.GPUs), len(s.Topology))
	}
	// Watching: one snapshot per line on a fixed schedule, NVML opened once.
	cmd := exec.Command(probe, "--mock", "dgxa100", "--watch", "150ms", "--count", "3", "--timeout", "100ms")
	out, err := cmd.Output()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err != nil || len(lines) != 3 {
		t.Fatalf("--watch 150ms --count 3 (a watchdog shorter than the interval must not fire while it sleeps): %v, %d lines", err, len(lines))
	}
	var prev time.Time
	for i, l := range lines {
		var w report.Snapshot
		if err := json.Unmarshal([]byte(l), &w); err != nil || len(w.GPUs) != 8 || !w.Simulated {
			t.Fatalf("watch line %d: %v, %d GPUs", i+1, err, len(w.GPUs))
		}
		if i > 0 && !w.CollectedAt.After(prev) {
			t.Errorf("watch line %d collected at %v, not after the one before (%v)", i+1, w.CollectedAt, prev)
		}
		prev = w.CollectedAt
	}
	for _, bad := range [][]string{{"--watch", "10ms"}, {"--count", "2"}, {"--watch", "1s", "--xid-wait", "1s"}} {
		if _, code, _ = runProbe(t, probe, nil, append([]string{"--mock", "dgxa100"}, bad...)...); code != report.ExitUsage {
			t.Errorf("%v: exit %d, want %d", bad, code, report.ExitUsage)
		}
	}

	if _, code, _ = runProbe(t, probe, nil, "--mock", "dgxh999"); code != report.ExitUsage {
		t.Errorf("unknown mock: exit %d, want %d", code, report.ExitUsage)
	}
}

// The simulated machine with faults: the probe reports them as it would
// on real hardware (links down, ECC, a pending remap, Xids as NVML events,
// MIG instances); no faults is the healthy machine.
func TestMockFaults(t *testing.T) {
	probe, _ := build(t)
	const faults = `{"nvlink_down":[[1,6]],"ecc":{"3":{"volatile_uncorrected":2,"aggregate_uncorrected":2}},"remap_pending":[3],` +
		`"xids":[{"gpu":3,"code":48,"message":"An uncorrectable double bit error","seconds_after_boot":90},` +
		`{"gpu":5,"code":79,"message":"GPU has fallen off the bus.","seconds_after_boot":40}],"mig":{"2":["3g.20gb","3g.20gb"]}}`
	s, code, stderr := runProbe(t, probe, nil, "--mock", "dgxa100", "--mock-faults", faults, "--xid-wait", "200ms")
	if code != 0 || !s.Simulated || len(s.GPUs) != 8 {
		t.Fatalf("with faults: exit %d (%s), %d GPUs", code, stderr, len(s.GPUs))
	}
	var down []string
	for _, g := range s.GPUs {
		for _, l := range g.NVLinks {
			if !l.Active {
				down = append(down, fmt.Sprintf("GPU%d/%d", g.Index, l.Link))
			}
		}
	}
	if want := "GPU1/1 GPU1/7 GPU6/1 GPU6/7"; strings.Join(down, " ") != want {
		t.Errorf("links down %v, want %s", down, want)
	}
	for _, l := range s.Topology {
		if (l.A == 1 && l.B == 6) != strings.HasPrefix(l.Level, "SYS") {
			t.Errorf("GPU%d-GPU%d at %s", l.A, l.B, l.Level)
		}
	}
	g3 := s.GPUs[3]
	if g3.ECC.Volatile == nil || g3.ECC.Volatile.Uncorrected != 2 || g3.RemappedRows == nil || !g3.RemappedRows.Pending {
		t.Errorf("GPU3: ECC %+v, remapped rows %+v", g3.ECC.Volatile, g3.RemappedRows)
	}
	var xids []string
	for _, x := range s.XIDs {
		xids = append(xids, fmt.Sprintf("%d@%s", x.Code, x.PCIBusID))
	}
	if want := "79@00000000:90:00.0 48@00000000:4E:00.0"; strings.Join(xids, " ") != want {
		t.Errorf("xids %v, want %s", xids, want)
	}
	if m := s.GPUs[2].MIG; m.Current != "enabled" || len(m.GPUInstances) != 2 || m.GPUInstances[0].Profile != "3g.20gb" {
		t.Errorf("GPU2 MIG %+v", m)
	}

	// No faults, or none given: the same healthy machine.
	healthy, _, _ := runProbe(t, probe, nil, "--mock", "dgxa100")
	empty, code, _ := runProbe(t, probe, nil, "--mock", "dgxa100", "--mock-faults", "{}")
	healthy.CollectedAt, empty.CollectedAt, healthy.DurationMS, empty.DurationMS = time.Time{}, time.Time{}, 0, 0
	a, _ := json.Marshal(healthy)
	b, _ := json.Marshal(empty)
	if code != 0 || string(a) != string(b) {
		t.Errorf("--mock-faults {} (exit %d) differs from no faults:\n%s\n%s", code, a, b)
	}

	for _, bad := range []struct {
		args []string
		says string
	}{
		{[]string{"--mock", "dgxa100", "--mock-faults", `{"nvlink_down":[[1,6]]`}, "not the JSON of the faults of a simulated machine"},
		{[]string{"--mock", "dgxa100", "--mock-faults", `{"nvlink_dwon":[[1,6]]}`}, `unknown field "nvlink_dwon"`},
		{[]string{"--mock", "dgxa100", "--mock-faults", `{"mig":{"0":["9g.90gb"]}}`}, `no MIG profile "9g.90gb"`},
		{[]string{"--mock-faults", `{}`}, "needs --mock dgxa100"},
	} {
		s, code, stderr := runProbe(t, probe, nil, bad.args...)
		if code != report.ExitUsage || !strings.Contains(stderr, bad.says) || len(s.GPUs) != 0 {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", bad.args, code, stderr, report.ExitUsage, bad.says)
		}
	}

	// The probe pushed to hosts (-tags nosim) parses the flag and has no
	// simulator to give it to.
	nosim := filepath.Join(t.TempDir(), "nvmlprobe-nosim")
	if out, err := exec.Command("go", "build", "-tags", "nosim", "-o", nosim, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags nosim: %v\n%s", err, out)
	}
	if out, err := exec.Command(nosim, "--mock-faults", "{}", "--version").Output(); err != nil || strings.TrimSpace(string(out)) != "dev" {
		t.Errorf("nosim --mock-faults {} --version: %v, %q", err, out)
	}
	if _, code, stderr := runProbe(t, nosim, nil, "--mock", "dgxa100", "--mock-faults", "{}"); code != report.ExitUsage || !strings.Contains(stderr, "without the simulator") {
		t.Errorf("nosim --mock dgxa100 --mock-faults {}: exit %d, %q", code, stderr)
	}
}

// Simulated processes: the probe lists them with the pod their cgroup
// names, read from a /proc of its own in the temporary directory, which
// is gone when it exits.
func TestMockProcesses(t *testing.T) {
	probe, _ := build(t)
	tmp := t.TempDir()
	const faults = `{"utilization":{"0":55},"processes":[` +
		`{"gpu":0,"pid":1001,"name":"python","used_mib":2048,"cgroup":"0::/kubepods/besteffort/pod3f0c6e0a-5b1d-4d1e-9c2b-7a6f5e4d3c2b/abc"},` +
		`{"gpu":3,"pid":4242,"name":"train","used_mib":1000,"cgroup":"0::/system.slice/train.service"}]}`
	s, code, stderr := runProbe(t, probe, []string{"TMPDIR=" + tmp}, "--mock", "dgxa100", "--mock-faults", faults)
	if code != 0 || len(s.Processes) != 2 {
		t.Fatalf("exit %d (%s), processes %+v", code, stderr, s.Processes)
	}
	if p := s.Processes[0]; p.PID != 1001 || p.Name != "python" || p.PodUID != "3f0c6e0a-5b1d-4d1e-9c2b-7a6f5e4d3c2b" || p.UsedMiB != 2048 {
		t.Errorf("pod process %+v", p)
	}
	if p := s.Processes[1]; p.GPU != 3 || p.Name != "train" || p.PodUID != "" {
		t.Errorf("system.slice process %+v", p)
	}
	if u := s.GPUs[0].Utilization; u == nil || u.GPUPercent != 55 {
		t.Errorf("GPU0 utilization %+v, want 55%%", u)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the probe left %v in its temporary directory", left)
	}
	_, code, stderr = runProbe(t, probe, []string{"TMPDIR=" + tmp}, "--mock", "dgxa100", "--mock-faults", `{"processes":[{"gpu":0,"pid":0,"name":"x"}]}`)
	if code != report.ExitUsage || !strings.Contains(stderr, "PID > 0") {
		t.Errorf("a process without a PID: exit %d, %q", code, stderr)
	}
}
