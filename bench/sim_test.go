//go:build bench

package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/sim"
)

// simHosts is the size of the simulated fleet of issue 12's targets.
const simHosts = 1000

// TestSimFleetBenchmark measures, side by side in one run, against one
// `gpulab sim serve --hosts 1000` process (its own process, so that its
// memory is its own):
//   - the gpulab binary: `gpulab exec -H '*' -- nvidia-smi -L` (first
//     command: 1,000 handshakes), wall time and peak RSS;
//   - parallel-ssh (pssh) on the same hosts through the fleet's OpenSSH
//     config, when installed, as the tool an operator would otherwise use;
//   - the engine with a connection Pool, as the workbench runs it: the
//     first command and the second (over the pool), and this process's
//     peak RSS;
//   - the simulator's own peak RSS.
//
// Targets (issue 12): first command <= 3 s on 2 cores, second <= 0.5 s,
// gpulab <= 300 MB RSS. Fleet View() at 1,000 hosts is
// BenchmarkFleetView1000Hosts in tui (make bench).
func TestSimFleetBenchmark(t *testing.T) {
	dir := t.TempDir()
	gpulab := build(t, dir, "gpulab", "..")
	inv := filepath.Join(dir, "inventory.toml")
	srv := exec.Command(gpulab, "sim", "serve", "--hosts", strconv.Itoa(simHosts), "--inventory-out", inv)
	stdout, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	srv.Stderr = os.Stderr
	start := time.Now()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = srv.Process.Signal(syscall.SIGTERM)
		_ = srv.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.Contains(line, "ready") {
		t.Fatalf("sim serve: %q %v", line, err)
	}
	ready := time.Since(start)

	timeBin, _ := exec.LookPath("time")
	var rows []string
	row := func(format string, a ...any) { rows = append(rows, fmt.Sprintf(format, a...)) }
	row("%d simulated DGX A100 hosts up (sim serve --hosts %d): %.2f s", simHosts, simHosts, ready.Seconds())

	// The CLI, a fresh process: every host is a handshake.
	for i := range 2 {
		d, rss, out := timed(t, timeBin, gpulab, "exec", "--inventory", inv, "-H", "*", "--", "nvidia-smi", "-L")
		if !strings.Contains(out, fmt.Sprintf("%d hosts: %d ok", simHosts, simHosts)) {
			t.Fatalf("gpulab exec: %s", lastLine(out))
		}
		row("gpulab exec nvidia-smi -L, run %d (new process, %d handshakes): %.2f s, peak RSS %.0f MiB", i+1, simHosts, d.Seconds(), rss)
	}
	if pssh, err := exec.LookPath("parallel-ssh"); err == nil {
		hostsFile := filepath.Join(dir, "hosts")
		var names strings.Builder
		for i := range simHosts {
			fmt.Fprintf(&names, "dgx%04d\n", i+1)
		}
		write(t, hostsFile, names.String())
		d, rss, out := timed(t, timeBin, pssh, "-h", hostsFile, "-p", "64", "-t", "60", "-x", "-F "+inv+".ssh_config -o BatchMode=yes", "nvidia-smi", "-L")
		ok := strings.Count(out, "[SUCCESS]")
		row("parallel-ssh -p 64 nvidia-smi -L (same hosts, OpenSSH): %.2f s, peak RSS %.0f MiB, %d/%d ok", d.Seconds(), rss, ok, simHosts)
	} else {
		row("parallel-ssh: not installed (apt-get install pssh) — no side-by-side row")
	}

	// The engine with a pool, as the workbench holds it.
	targets, loaded, err := sim.FilesFor(inv).Targets()
	if err != nil {
		t.Fatal(err)
	}
	e := &orchestrator.Engine{Dialer: &orchestrator.Dialer{Keys: &orchestrator.Keyring{}}, Concurrency: loaded.Defaults.Concurrency}
	e.Pool = &orchestrator.Pool{Dialer: e.Dialer}
	defer e.Pool.Close()
	plan := orchestrator.Plan{Targets: targets, Steps: []orchestrator.Step{{Name: "exec", Command: "nvidia-smi -L"}}}
	for i, what := range []string{"first command (handshakes)", "second command (over the pool)", "third command (over the pool)"} {
		s := time.Now()
		rs := e.Run(context.Background(), plan, nil)
		d := time.Since(s)
		mustOK(t, rs)
		reused := 0
		for _, r := range rs {
			if r.Reused {
				reused++
			}
		}
		if i > 0 && reused != simHosts {
			t.Errorf("%s: %d of %d connections reused", what, reused, simHosts)
		}
		row("engine + pool, %s: %.2f s (%d reused)", what, d.Seconds(), reused)
	}
	row("peak RSS: this test process (engine + pool, %d open connections) %.0f MiB; sim serve %.0f MiB", simHosts, vmHWM(t, os.Getpid()), vmHWM(t, srv.Process.Pid))
	row("machine: %d CPUs, %s", runtime.NumCPU(), runtime.Version())
	fmt.Println("\n" + strings.Join(rows, "\n"))
}

// timed runs a command under GNU time (when present) and returns its wall
// time, peak RSS in MiB (0 without GNU time) and combined output.
func timed(t *testing.T, timeBin string, argv ...string) (time.Duration, float64, string) {
	t.Helper()
	rssFile := filepath.Join(t.TempDir(), "rss")
	if timeBin != "" {
		argv = append([]string{timeBin, "-o", rssFile, "-f", "%M"}, argv...)
	}
	c := exec.Command(argv[0], argv[1:]...)
	start := time.Now()
	out, err := c.CombinedOutput()
	d := time.Since(start)
	if err != nil {
		t.Logf("%s: %v", argv[0], err)
	}
	var rss float64
	if b, err := os.ReadFile(rssFile); err == nil {
		kb, _ := strconv.ParseFloat(strings.TrimSpace(lastLine(string(b))), 64)
		rss = kb / 1024
	}
	return d, rss, string(out)
}

// vmHWM is a process's peak resident set, MiB.
func vmHWM(t *testing.T, pid int) float64 {
	kb := readHWM(pid)
	if kb < 0 {
		t.Fatalf("read the VmHWM of process %d", pid)
	}
	return float64(kb) / 1024
}

// readHWM is process pid's peak resident set (VmHWM) in KiB, -1 when it
// cannot be read (the process is gone).
func readHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb
		}
	}
	return 0
}
