//go:build bench

package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpulab/gpulab/internal/sshtest"
)

// TestProbeBenchmark: the probe's own run time on the simulated 8-GPU
// machine, its snapshot size, push time first vs second, and a fleet probe
// of 50 hosts against ansible's fact gathering (-m setup) on the same fleet.
func TestProbeBenchmark(t *testing.T) {
	dir := t.TempDir()
	gpulab := build(t, dir, "gpulab", "..")
	sim := filepath.Join(dir, "nvmlsim")
	c := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", sim, "../probes/nvmlprobe")
	c.Env = append(os.Environ(), "CGO_CFLAGS=-Wno-deprecated-declarations")
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("build probe: %v\n%s", err, out)
	}
	probe := filepath.Join(dir, "nvmlprobe")
	c = exec.Command("go", "build", "-tags", "nosim", "-trimpath", "-ldflags=-s -w", "-o", probe, "../probes/nvmlprobe")
	c.Env = append(os.Environ(), "CGO_CFLAGS=-Wno-deprecated-declarations")
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("build probe: %v\n%s", err, out)
	}
	// Whole-process run time against the simulated DGX A100.
	var ds []time.Duration
	var size int
	for range 31 {
		start := time.Now()
		out, err := exec.Command(sim, "--mock", "dgxa100").Output()
		ds = append(ds, time.Since(start))
		if err != nil {
			t.Fatal(err)
		}
		size = len(out)
	}
	slices.Sort(ds)
	fmt.Printf("\nprobe process on the simulated 8-GPU DGX A100: median %.1f ms, p90 %.1f ms (target < 20 ms); snapshot %d bytes\n",
		ms(ds[15]), ms(ds[27]), size)

	f := sshtest.Start(t, hosts, sshtest.Options{EnvFor: func(i int) map[string]string {
		return map[string]string{"XDG_CACHE_HOME": filepath.Join(dir, "cache", fmt.Sprint(i))}
	}})
	cfg := filepath.Join(dir, "ssh_config")
	var sc, inv strings.Builder
	inv.WriteString("[all]\n")
	for i, s := range f.Servers {
		fmt.Fprintf(&sc, "Host h%02d\n  HostName %s\n  Port %d\n", i+1, s.Addr, s.Port)
		fmt.Fprintf(&inv, "h%02d\n", i+1)
	}
	fmt.Fprintf(&sc, "Host *\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n  UserKnownHostsFile %s\n  StrictHostKeyChecking yes\n  BatchMode yes\n", f.User, f.ClientKey, f.KnownHosts)
	write(t, cfg, sc.String())
	inv.WriteString("[all:vars]\nansible_python_interpreter=/usr/bin/python3\n")
	write(t, filepath.Join(dir, "inventory.ini"), inv.String())
	home := filepath.Join(dir, "home")
	os.MkdirAll(home, 0o700)
	base := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "SSH_AUTH_SOCK="}

	timeIt := func(name string, argv []string, env []string, before func()) time.Duration {
		var ds []time.Duration
		for range runs {
			if before != nil {
				before()
			}
			c := exec.Command(argv[0], argv[1:]...)
			c.Env = env
			start := time.Now()
			out, err := c.CombinedOutput()
			ds = append(ds, time.Since(start))
			if err != nil && !strings.Contains(name, "gpulab") { // gpulab exits 1: these hosts have no NVML
				t.Fatalf("%s: %v\n%s", name, err, out)
			}
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	one := []string{gpulab, "probe", "-H", "h01", "-F", cfg, "--probe-binary", probe, "--json"}
	first := timeIt("gpulab first push", append(slices.Clone(one), "--keep"), base, func() { os.RemoveAll(filepath.Join(dir, "cache", "0")) })
	second := timeIt("gpulab cached", append(slices.Clone(one), "--keep"), base, nil)
	fmt.Printf("probe on 1 host: %.0f ms with the push, %.0f ms with the probe cached by sha256 (no bytes sent)\n", ms(first), ms(second))

	fleet := timeIt("gpulab probe 50", []string{gpulab, "probe", "-H", "h[01-50]", "-F", cfg, "--probe-binary", probe, "--concurrency", "50", "--keep"}, base, nil)
	ansibleEnv := append(slices.Clone(base), "ANSIBLE_HOST_KEY_CHECKING=True", "ANSIBLE_HOME="+filepath.Join(dir, "ansible"), "ANSIBLE_FORKS=50",
		"ANSIBLE_SSH_ARGS=-F "+cfg+" -o ControlMaster=auto -o ControlPersist=300 -o ControlPath="+filepath.Join(dir, "cp-%C"), "ANSIBLE_PIPELINING=True")
	setup := timeIt("ansible -m setup", []string{"ansible", "all", "-i", filepath.Join(dir, "inventory.ini"), "-m", "setup"}, ansibleEnv, nil)
	fmt.Printf("50 hosts: gpulab probe (cached) %.2f s, ansible -m setup (pipelining, warm ControlPersist) %.2f s: ratio %.2f\n",
		fleet.Seconds(), setup.Seconds(), fleet.Seconds()/setup.Seconds())
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// TestRunbookBenchmark runs the topology runbook on 50 hosts whose
// nvidia-smi and numactl print a real HGX A100 topology (stand-ins: these
// hosts have no GPU), through the whole gpulab process.
func TestRunbookBenchmark(t *testing.T) {
	dir := t.TempDir()
	gpulab := build(t, dir, "gpulab", "..")
	bin := filepath.Join(dir, "standin")
	os.MkdirAll(bin, 0o755)
	topo, _ := filepath.Abs("../testdata/fixtures/nvidia-smi-topo-m/hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt")
	numa, _ := filepath.Abs("../testdata/fixtures/numactl-hardware/asus-esc8000a-e12-2node-epyc9374f.txt")
	os.WriteFile(filepath.Join(bin, "nvidia-smi"), []byte("#!/bin/sh\ncat "+topo+"\n"), 0o755)
	os.WriteFile(filepath.Join(bin, "numactl"), []byte("#!/bin/sh\ncat "+numa+"\n"), 0o755)
	f := sshtest.Start(t, hosts, sshtest.Options{Env: map[string]string{"PATH": bin + ":/usr/bin:/bin"}})
	cfg := filepath.Join(dir, "ssh_config")
	var sc strings.Builder
	for i, s := range f.Servers {
		fmt.Fprintf(&sc, "Host h%02d\n  HostName %s\n  Port %d\n", i+1, s.Addr, s.Port)
	}
	fmt.Fprintf(&sc, "Host *\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n  UserKnownHostsFile %s\n  StrictHostKeyChecking yes\n  BatchMode yes\n  LogLevel ERROR\n", f.User, f.ClientKey, f.KnownHosts)
	write(t, cfg, sc.String())
	base := []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "SSH_AUTH_SOCK="}
	var names strings.Builder
	for i := range f.Servers {
		fmt.Fprintf(&names, "h%02d\n", i+1)
	}
	write(t, filepath.Join(dir, "hosts.txt"), names.String())
	var ds []time.Duration
	var out []byte
	for range runs + 1 {
		c := exec.Command(gpulab, "runbook", "run", "topology", "-H", "h[01-50]", "-F", cfg, "--concurrency", "50")
		c.Env = base
		start := time.Now()
		out, _ = c.CombinedOutput()
		ds = append(ds, time.Since(start))
	}
	ds = ds[1:]
	slices.Sort(ds)
	if !strings.Contains(string(out), "PASS    h[01-50]: 8 GPUs, NV12 full mesh") {
		t.Fatalf("unexpected output:\n%s", out)
	}
	g := ds[len(ds)/2]
	fmt.Printf("\ntopology runbook (2 steps, 3 checks) on 50 hosts: median %.2f s over %d runs\n", g.Seconds(), runs)

	// What a user would otherwise run: the same two commands through
	// parallel-ssh, which only collects the text (no parsing, no verdict).
	if _, err := exec.LookPath("parallel-ssh"); err != nil {
		t.Fatalf("parallel-ssh is missing (apt-get install pssh): the runbook has nothing to be compared with")
	}
	var pout []byte
	p := medianOf(t, func() {
		c := exec.Command("parallel-ssh", "-h", filepath.Join(dir, "hosts.txt"), "-p", "50", "-x", "-F "+cfg, "-i", "nvidia-smi topo -m; numactl --hardware")
		c.Env = base
		pout, _ = c.CombinedOutput()
	})
	if n := strings.Count(string(pout), "[SUCCESS]"); n != hosts {
		t.Fatalf("parallel-ssh: %d of %d hosts succeeded:\n%s", n, hosts, pout)
	}
	fmt.Printf("parallel-ssh -p 50 collecting the same two outputs (raw text, nothing judged): median %.2f s; gpulab runbook / parallel-ssh = %.2f\n", p.Seconds(), g.Seconds()/p.Seconds())
}
