//go:build bench

// The fan-out benchmark: gpulab exec against the tools an operator would
// otherwise use, side by side on the same fleet of real OpenSSH servers on
// loopback, host key checking on for every tool, the same key, the same
// neutral remote shell. Run it with `make bench-ssh` (it needs sshd,
// parallel-ssh, clush and ansible: apt-get install openssh-server pssh
// clustershell ansible-core). It prints medians of 5 runs and ratios.
package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpulab/gpulab/internal/sshtest"
	"github.com/gpulab/gpulab/orchestrator"
)

const (
	hosts = 50
	runs  = 5
)

type tool struct {
	name string
	argv []string
	env  []string
	// warm runs before the timed runs (ControlPersist masters, caches).
	warm int
}

func TestFanOutBenchmark(t *testing.T) {
	for _, bin := range []string{"parallel-ssh", "clush", "ansible", "ssh"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is missing: apt-get install pssh clustershell ansible-core openssh-client", bin)
		}
	}
	f := sshtest.Start(t, hosts, sshtest.Options{})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "ssh_config")
	var sc, names, inv strings.Builder
	var addrs []string
	inv.WriteString("[all]\n")
	for i, s := range f.Servers {
		n := fmt.Sprintf("h%02d", i+1)
		fmt.Fprintf(&sc, "Host %s\n  HostName %s\n  Port %d\n", n, s.Addr, s.Port)
		names.WriteString(n + "\n")
		inv.WriteString(n + "\n")
		addrs = append(addrs, s.HostPort())
	}
	fmt.Fprintf(&sc, "Host *\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n  UserKnownHostsFile %s\n  StrictHostKeyChecking yes\n  BatchMode yes\n  LogLevel ERROR\n",
		f.User, f.ClientKey, f.KnownHosts)
	write(t, cfg, sc.String())
	write(t, filepath.Join(dir, "hosts.txt"), names.String())
	inv.WriteString("[all:vars]\nansible_python_interpreter=/usr/bin/python3\n")
	write(t, filepath.Join(dir, "inventory.ini"), inv.String())
	write(t, filepath.Join(dir, "clush", "clush.conf"), "[Main]\nfanout: 50\nconnect_timeout: 15\ncommand_timeout: 0\ncolor: never\nssh_user: \nssh_path: ssh\nssh_options: -F "+cfg+"\n")

	gpulab := build(t, dir, "gpulab", "..")
	bare := build(t, dir, "bareclient", "./bareclient")
	home := filepath.Join(dir, "home")
	os.MkdirAll(home, 0o700)
	base := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "SSH_AUTH_SOCK="}
	ansibleEnv := append(slices.Clone(base), "ANSIBLE_HOST_KEY_CHECKING=True", "ANSIBLE_HOME="+filepath.Join(dir, "ansible"),
		"ANSIBLE_LOCAL_TEMP="+filepath.Join(dir, "ansible-tmp"), "ANSIBLE_FORKS=50", "ANSIBLE_PYTHON_INTERPRETER=/usr/bin/python3")
	cp := "-o ControlMaster=auto -o ControlPersist=300 -o ControlPath=" + filepath.Join(dir, "cp-%C")
	hostList := strings.Fields(strings.ReplaceAll(names.String(), "\n", " "))

	cmd := "uname -a"
	tools := []tool{
		{name: "gpulab exec", argv: []string{gpulab, "exec", "-H", "h[01-50]", "-F", cfg, "--concurrency", "50", "--", cmd}, env: base},
		{name: "bare x/crypto/ssh client", argv: append(append([]string{bare, "-k", f.ClientKey, "-K", f.KnownHosts, "-u", f.User}, addrs...), "--", cmd), env: base},
		{name: "parallel-ssh -p 50", argv: []string{"parallel-ssh", "-h", filepath.Join(dir, "hosts.txt"), "-p", "50", "-x", "-F " + cfg, "-i", cmd}, env: base},
		{name: "clush -f 50", argv: []string{"clush", "-f", "50", "-w", "h[01-50]", cmd}, env: append(slices.Clone(base), "CLUSTERSHELL_CFGDIR="+filepath.Join(dir, "clush"))},
		{name: "bash ssh & loop", argv: []string{"bash", "-c", "for h in " + strings.Join(hostList, " ") + "; do ssh -F " + cfg + " $h " + cmd + " & done; wait"}, env: base},
		{name: "ansible -m raw", argv: []string{"ansible", "all", "-i", filepath.Join(dir, "inventory.ini"), "-m", "raw", "-a", cmd}, env: append(slices.Clone(ansibleEnv), "ANSIBLE_SSH_ARGS=-F "+cfg+" -o ControlMaster=no")},
		{name: "ansible -m raw, warm ControlPersist", argv: []string{"ansible", "all", "-i", filepath.Join(dir, "inventory.ini"), "-m", "raw", "-a", cmd}, env: append(slices.Clone(ansibleEnv), "ANSIBLE_SSH_ARGS=-F "+cfg+" "+cp), warm: 1},
		{name: "ansible -m command, pipelining, warm ControlPersist", argv: []string{"ansible", "all", "-i", filepath.Join(dir, "inventory.ini"), "-m", "command", "-a", cmd}, env: append(slices.Clone(ansibleEnv), "ANSIBLE_SSH_ARGS=-F "+cfg+" "+cp, "ANSIBLE_PIPELINING=True"), warm: 1},
	}
	medians := map[string]time.Duration{}
	fmt.Printf("\n| one command (`%s`) on %d hosts, host key checking on | median of %d | vs gpulab |\n|---|---|---|\n", cmd, hosts, runs)
	for _, tl := range tools {
		medians[tl.name] = measure(t, tl)
	}
	g := medians["gpulab exec"]
	for _, tl := range tools {
		fmt.Printf("| %s | %.2f s | %.2f× |\n", tl.name, medians[tl.name].Seconds(), medians[tl.name].Seconds()/g.Seconds())
	}
	fmt.Printf("\nratios: gpulab / parallel-ssh = %.2f (target ≤ 0.3); gpulab / best ansible (raw, warm ControlPersist) = %.2f (target ≤ 0.3); gpulab / bare client = %.2f (target ≤ 1.3)\n",
		g.Seconds()/medians["parallel-ssh -p 50"].Seconds(), g.Seconds()/medians["ansible -m raw, warm ControlPersist"].Seconds(), g.Seconds()/medians["bare x/crypto/ssh client"].Seconds())

	// Connection reuse: five steps over one connection per host, against
	// one step, and each step over open connections against OpenSSH
	// multiplexing over warm ControlMaster sockets (the floor).
	targets := make([]orchestrator.Target, len(f.Servers))
	for i, s := range f.Servers {
		targets[i] = orchestrator.Target{Name: fmt.Sprintf("h%02d", i+1), HostName: s.Addr, Port: s.Port, User: f.User,
			IdentityFiles: []string{f.ClientKey}, Explicit: true, KnownHosts: []string{f.KnownHosts},
			ConnectTimeout: 15 * time.Second, CommandTimeout: time.Minute, InactivityTimeout: time.Minute}
	}
	engine := &orchestrator.Engine{Dialer: &orchestrator.Dialer{Keys: &orchestrator.Keyring{}}, Concurrency: 50}
	steps := func(n int) []orchestrator.Step {
		s := make([]orchestrator.Step, n)
		for i := range s {
			s[i] = orchestrator.Step{Name: fmt.Sprint(i), Command: cmd}
		}
		return s
	}
	one := medianOf(t, func() {
		mustOK(t, engine.Run(context.Background(), orchestrator.Plan{Targets: targets, Steps: steps(1)}, nil))
	})
	five := medianOf(t, func() {
		mustOK(t, engine.Run(context.Background(), orchestrator.Plan{Targets: targets, Steps: steps(5)}, nil))
	})
	perStep := (five - one) / 4
	for _, h := range hostList { // warm ControlMaster sockets
		run(t, tool{argv: []string{"ssh", "-F", cfg, "-o", "ControlMaster=yes", "-o", "ControlPersist=300", "-o", "ControlPath=" + filepath.Join(dir, "mux-%C"), "-fN", h}, env: base})
	}
	mux := measure(t, tool{name: "mux", argv: []string{"bash", "-c", "for h in " + strings.Join(hostList, " ") + "; do ssh -F " + cfg + " -o ControlPath=" + filepath.Join(dir, "mux-%C") + " $h " + cmd + " & done; wait"}, env: base})
	fmt.Printf("\n| connection reuse (engine in-process, %d hosts) | median of %d |\n|---|---|\n| 1 step | %.3f s |\n| 5 steps | %.3f s (%.2f× one step; target ≤ 1.5) |\n| each step over open connections | %.3f s (%.2f× the multiplexed floor; target ≤ 2) |\n| OpenSSH ControlMaster, warm sockets (floor) | %.3f s |\n",
		hosts, runs, one.Seconds(), five.Seconds(), five.Seconds()/one.Seconds(), perStep.Seconds(), perStep.Seconds()/mux.Seconds(), mux.Seconds())
	exec.Command("bash", "-c", "for s in "+filepath.Join(dir, "mux-")+"* "+filepath.Join(dir, "cp-")+"*; do ssh -o ControlPath=$s -O exit x 2>/dev/null; done").Run()

	// Peak memory at 1,000 hosts: 1,000 names spread over the 50 servers.
	var big strings.Builder
	for i := range 1000 {
		s := f.Servers[i%hosts]
		fmt.Fprintf(&big, "Host n%04d\n  HostName %s\n  Port %d\n", i+1, s.Addr, s.Port)
	}
	fmt.Fprintf(&big, "Host *\n  User %s\n  IdentityFile %s\n  UserKnownHostsFile %s\n", f.User, f.ClientKey, filepath.Join(dir, "known_1000"))
	var known strings.Builder
	kh, _ := os.ReadFile(f.KnownHosts)
	known.Write(kh)
	write(t, filepath.Join(dir, "known_1000"), known.String())
	bigCfg := filepath.Join(dir, "ssh_config_1000")
	write(t, bigCfg, big.String())
	c := exec.Command(gpulab, "exec", "-H", "n[0001-1000]", "-F", bigCfg, "--", cmd)
	c.Env = base
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	start := time.Now()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	peak := peakRSS(c)
	err := c.Wait()
	fmt.Printf("\n1,000 hosts (default concurrency 64): %.2f s, peak RSS %.1f MiB, exit %v, %s\n", time.Since(start).Seconds(), peak(), err, lastLine(out.String()))
}

// answered checks that a tool's output shows all hosts answered.
func answered(name, out string) bool {
	switch {
	case name == "" || name == "mux":
		return true
	case strings.HasPrefix(name, "gpulab"):
		return strings.Contains(out, fmt.Sprintf("%d hosts: %d ok", hosts, hosts))
	case strings.HasPrefix(name, "ansible"):
		return strings.Count(out, "rc=0") >= hosts
	}
	return strings.Count(out, "Linux") >= hosts
}

func lastLine(s string) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return l[len(l)-1]
}

func mustOK(t *testing.T, rs []orchestrator.HostResult) {
	if w := orchestrator.Worst(rs); w != orchestrator.OK {
		for _, r := range rs {
			if r.Class != orchestrator.OK {
				t.Errorf("%s: %s %s %+v", r.Host, r.Class, r.Err, r.Steps)
				break
			}
		}
		t.Fatalf("engine run: %s", orchestrator.Summary(rs))
	}
}

func medianOf(t *testing.T, fn func()) time.Duration {
	fn() // warm
	var ds []time.Duration
	for range runs {
		start := time.Now()
		fn()
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func measure(t *testing.T, tl tool) time.Duration {
	for range 1 + tl.warm {
		run(t, tl)
	}
	var ds []time.Duration
	for range runs {
		ds = append(ds, run(t, tl))
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func run(t *testing.T, tl tool) time.Duration {
	t.Helper()
	c := exec.Command(tl.argv[0], tl.argv[1:]...)
	c.Env = tl.env
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	start := time.Now()
	err := c.Run()
	d := time.Since(start)
	if err != nil {
		t.Fatalf("%s: %v\n%s", tl.name, err, out.String())
	}
	if !answered(tl.name, out.String()) {
		t.Fatalf("%s did not get an answer from every host:\n%s", tl.name, out.String())
	}
	return d
}

func build(t *testing.T, dir, name, pkg string) string {
	out := filepath.Join(dir, name)
	if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", name, err, b)
	}
	return out
}

func write(t *testing.T, path, content string) {
	os.MkdirAll(filepath.Dir(path), 0o700)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
