package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpulab/gpulab/internal/testreq"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/probes/report"
	"github.com/gpulab/gpulab/sim"
)

// simFleet starts a simulated fleet in this process and writes its
// inventory, as gpulab sim serve does.
func simFleet(t *testing.T, cfg sim.Config) (*sim.Fleet, sim.Files) {
	t.Helper()
	f, err := sim.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("close the fleet: %v", err)
		}
	})
	files, err := f.WriteInventory(filepath.Join(t.TempDir(), "inventory.toml"))
	if err != nil {
		t.Fatal(err)
	}
	return f, files
}

// sickAndHealthy splits a fleet's hosts: the sick one, the others.
func sickAndHealthy(t *testing.T, f *sim.Fleet) (string, []string) {
	t.Helper()
	sick := ""
	var healthy []string
	for _, h := range f.Hosts() {
		if h.Sick {
			sick = h.Name
		} else {
			healthy = append(healthy, h.Name)
		}
	}
	if sick == "" {
		t.Fatal("the fleet has no sick host")
	}
	return sick, healthy
}

// TestSimFindsTheSickHost runs gpulab's commands against simulated fleets
// of two seeds (two different sick hosts) over real SSH: exec, probe, the
// topology and health runbooks and the topology-sanity and health-gate
// labs each single out the sick host, and only it.
func TestSimFindsTheSickHost(t *testing.T) {
	for _, seed := range []int64{1, 5} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			f, files := simFleet(t, sim.Config{Hosts: 4, Seed: seed})
			sick, healthy := sickAndHealthy(t, f)
			t.Logf("sick host: %s", sick)
			env := noEnv(t)
			inv := []string{"--inventory", files.Inventory, "-H", "@dgx"}
			hfold := inventory.FoldNames(healthy)

			// exec: the sick host's topology differs (a pair at SYS).
			r := run(t, env, append(append([]string{"exec"}, inv...), "--", "nvidia-smi", "topo", "-m")...)
			r.expect(t, 0, "---------------- "+hfold+" (3 hosts): ok\n", "4 hosts: 4 ok")
			r.expect(t, 0, "---------------- "+sick+" (1 host): ok\ndiffers from "+hfold+":\n", "")
			if !regexp.MustCompile(`(?m)^\+GPU\d.*\bSYS\b`).MatchString(r.stdout) {
				t.Errorf("exec: the sick host's diff shows no SYS pair:\n%s", r.stdout)
			}

			// probe: the simulator probe, pushed and run; the sick host's
			// summary differs (links down) and it has ECC errors: it alone
			// is flagged, and the probe exits 1.
			r = run(t, env, append(append([]string{"probe"}, inv...), "--json")...)
			probes, err := probeJSON(r.stdout)
			if err != nil || r.code != 1 || len(probes) != 4 {
				t.Fatalf("probe --json: exit %d, %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
			}
			summaries := map[string]string{}
			for _, p := range probes {
				if p.Snapshot == nil || !p.Snapshot.Simulated {
					t.Fatalf("probe %s: %s %s: no simulated snapshot", p.Host, p.Class, p.Error)
				}
				summaries[p.Host] = report.Hardware(p.Snapshot)
				ecc := false
				for _, g := range p.Snapshot.GPUs {
					ecc = ecc || g.ECC.Volatile != nil && g.ECC.Volatile.Uncorrected > 0
				}
				if ecc != (p.Host == sick) {
					t.Errorf("probe %s: uncorrected ECC errors %v, want %v", p.Host, ecc, p.Host == sick)
				}
				if flagged := len(p.Flags) > 0; flagged != (p.Host == sick) {
					t.Errorf("probe %s: flags %q, want some only on %s (and exit 1 for them)", p.Host, p.Flags, sick)
				}
			}
			for _, h := range healthy {
				if s := summaries[h]; s != summaries[healthy[0]] || !strings.Contains(s, "NV12 full mesh") {
					t.Errorf("probe %s: %q, want the healthy hosts' full mesh", h, s)
				}
			}
			if s := summaries[sick]; s == summaries[healthy[0]] || !strings.Contains(s, "SYS×") {
				t.Errorf("probe %s (sick): %q, want links down (SYS)", sick, s)
			}

			// runbook topology: nvlink-mesh FAILs and names the sick host.
			r = run(t, env, append([]string{"runbook", "run", "topology"}, inv...)...)
			r.expect(t, 1, "  FAIL    "+sick+": ", "")
			r.expect(t, 1, "  PASS    "+hfold+": 8 GPUs, NV12 full mesh\n", "")
			wantVerdicts(t, "runbook topology", runbookVerdicts(t, env, "topology", inv), sick, []string{"nvlink-mesh"}, nil)

			// runbook health: ecc and xid FAIL on the sick host (and its
			// pending remap WARNs).
			wantVerdicts(t, "runbook health", runbookVerdicts(t, env, "health", inv), sick, []string{"ecc", "xid"}, []string{"remapped-rows"})

			// The labs: the criteria the faults break FAIL on the sick host,
			// the rest PASS; the record is written.
			wantVerdicts(t, "lab topology-sanity", labScores(t, env, "topology-sanity", inv), sick, []string{"nvlink-mesh"}, nil)
			wantVerdicts(t, "lab health-gate", labScores(t, env, "health-gate", inv), sick, []string{"ecc", "remap", "no-hardware-xid", "dcgm-diag"}, []string{"quiet-log"})
		})
	}
}

// TestSimRunsNoPushedProgram pushes a copy of the real touch with gpulab
// push to a simulated fleet and runs it with gpulab exec, told to make a
// marker on the real file system: every host refuses it (exit 126, and
// says why), and the marker never appears.
func TestSimRunsNoPushedProgram(t *testing.T) {
	_, files := simFleet(t, sim.Config{Hosts: 2})
	touch := testreq.Tool(t, "touch", "the test pushes a copy of the real touch")
	local := filepath.Join(t.TempDir(), "touch")
	data, err := os.ReadFile(touch)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, local, string(data))
	marker := filepath.Join(t.TempDir(), "marker")
	env := noEnv(t)
	inv := []string{"--inventory", files.Inventory, "-H", "@dgx"}
	run(t, env, append(append([]string{"push", local}, inv...), "--mode", "0755")...).expect(t, 0, "/home/gpulab/.cache/gpulab/touch", "2 hosts: 2 ok")
	r := run(t, env, append(append([]string{"exec"}, inv...), "--", ".cache/gpulab/touch", marker)...)
	r.expect(t, 1, "---------------- dgx[01-02] (2 hosts): exit (status 126)\n", "2 hosts: 2 exit (dgx[01-02])")
	r.expect(t, 1, "cannot execute: a simulated host runs no program but gpulab's simulator probe", "")
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the pushed touch ran on this machine: %s exists", marker)
	}
}

// wantVerdicts checks host → check → status: on the sick host the checks
// in fail FAIL, those in other are neither PASS nor FAIL (a WARN), and
// every other check, on every host, PASSes.
func wantVerdicts(t *testing.T, what string, got map[string]map[string]string, sick string, fail, other []string) {
	t.Helper()
	if len(got) != 4 {
		t.Errorf("%s: verdicts for %d hosts, want 4: %v", what, len(got), got)
	}
	for host, checks := range got {
		for _, f := range fail {
			if _, ok := checks[f]; !ok {
				t.Errorf("%s: %s has no verdict for %s", what, host, f)
			}
		}
		for check, status := range checks {
			want := "PASS"
			switch {
			case check == "nvlink-fabric":
				// The simulated A100s have no NVLink fabric state.
				want = "SKIPPED"
			case host == sick && slices.Contains(fail, check):
				want = "FAIL"
			case host == sick && slices.Contains(other, check):
				if status == "PASS" || status == "FAIL" {
					t.Errorf("%s: %s %s is %s, want a warning", what, host, check, status)
				}
				continue
			}
			if status != want {
				t.Errorf("%s: %s %s is %s, want %s", what, host, check, status, want)
			}
		}
	}
}

// runbookVerdicts runs a runbook with --json: host → check → status.
func runbookVerdicts(t *testing.T, env map[string]string, id string, inv []string) map[string]map[string]string {
	t.Helper()
	r := run(t, env, append(append([]string{"runbook", "run", id}, inv...), "--json")...)
	var out struct {
		Hosts []struct {
			Host     string `json:"host"`
			Verdicts []struct {
				Check  string `json:"check"`
				Status string `json:"status"`
			} `json:"verdicts"`
		} `json:"hosts"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != ExitFailed {
		t.Fatalf("runbook run %s --json: exit %d (want %d), %v\n%s\n%s", id, r.code, ExitFailed, err, r.stdout, r.stderr)
	}
	got := map[string]map[string]string{}
	for _, h := range out.Hosts {
		got[h.Host] = map[string]string{}
		for _, v := range h.Verdicts {
			got[h.Host][v.Check] = v.Status
		}
	}
	return got
}

// labScores runs a lab with --json and its record under a directory of
// the test: host → criterion → status. The record must be written.
func labScores(t *testing.T, env map[string]string, id string, inv []string) map[string]map[string]string {
	t.Helper()
	results := t.TempDir()
	r := run(t, env, append(append([]string{"lab", "run", id}, inv...), "--json", "--results", results)...)
	var rec struct {
		Complete bool `json:"complete"`
		Passed   bool `json:"passed"`
		Hosts    []struct {
			Host   string `json:"host"`
			Class  string `json:"class"`
			Scores []struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"scores"`
			Environment struct {
				Simulated bool `json:"simulated"`
			} `json:"environment"`
		} `json:"hosts"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rec); err != nil || r.code != ExitFailed || !rec.Complete || rec.Passed {
		t.Fatalf("lab run %s --json: exit %d (want %d), complete %v, passed %v, %v\n%s\n%s", id, r.code, ExitFailed, rec.Complete, rec.Passed, err, r.stdout, r.stderr)
	}
	got := map[string]map[string]string{}
	for _, h := range rec.Hosts {
		if h.Class != "ok" || !h.Environment.Simulated {
			t.Errorf("lab %s: %s: class %s, simulated %v; want ok on a simulated host", id, h.Host, h.Class, h.Environment.Simulated)
		}
		got[h.Host] = map[string]string{}
		for _, s := range h.Scores {
			got[h.Host][s.ID] = s.Status
		}
	}
	records, _ := filepath.Glob(filepath.Join(results, id, "*", "record.json"))
	if len(records) != 1 {
		t.Fatalf("lab %s: records written: %v, want one under %s", id, records, results)
	}
	data, err := os.ReadFile(records[0])
	if err != nil || !strings.Contains(string(data), `"simulated": true`) {
		t.Errorf("lab %s: the record %s does not say simulated (%v)", id, records[0], err)
	}
	return got
}

// TestHelperSimServe is not a test: it is gpulab, run as a process of its
// own by the tests of sim serve (its arguments follow "--"), so that they
// can stop it with a signal as a user's Ctrl-C does.
func TestHelperSimServe(t *testing.T) {
	if os.Getenv("GPULAB_TEST_SIM_SERVE") != "1" {
		return
	}
	args := os.Args[slices.Index(os.Args, "--")+1:]
	os.Exit(Main(args, Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}))
}

// simServe is gpulab sim serve ARGS running as a process, with its own
// $TMPDIR (where the hosts' trees go) and $HOME.
type simServe struct {
	cmd    *exec.Cmd
	stdout *bufio.Reader
	stderr strings.Builder // read once the process has ended
	tmp    string
}

func startSimServe(t *testing.T, args ...string) *simServe {
	t.Helper()
	s := &simServe{tmp: t.TempDir()}
	s.cmd = exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperSimServe$", "--", "sim", "serve"}, args...)...)
	s.cmd.Env = append(os.Environ(), "GPULAB_TEST_SIM_SERVE=1", "TMPDIR="+s.tmp, "HOME="+t.TempDir())
	s.cmd.Stderr = &s.stderr
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.stdout = bufio.NewReader(out)
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			_ = s.cmd.Process.Kill()
			_ = s.cmd.Wait()
		}
	})
	return s
}

// within runs fn, failing t (and killing the process) if it takes more
// than a minute: a guard against a hang, not a measure.
func (s *simServe) within(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		_ = s.cmd.Process.Kill()
		<-done
		t.Fatalf("sim serve: %s: nothing after a minute", what)
	}
}

// line reads the next line it prints.
func (s *simServe) line(t *testing.T) string {
	t.Helper()
	var line string
	var err error
	s.within(t, "its first line", func() { line, err = s.stdout.ReadString('\n') })
	if err != nil {
		_ = s.cmd.Wait()
		t.Fatalf("sim serve printed %q, then %v\nstderr: %s", line, err, s.stderr.String())
	}
	return line
}

// wait waits for the process to end and returns its exit code and what
// it printed that was not read yet.
func (s *simServe) wait(t *testing.T) (int, string) {
	t.Helper()
	var rest []byte
	s.within(t, "the end", func() {
		rest, _ = io.ReadAll(s.stdout)
		_ = s.cmd.Wait()
	})
	return s.cmd.ProcessState.ExitCode(), string(rest)
}

// trees lists what the process left in its $TMPDIR.
func (s *simServe) trees(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(s.tmp)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestSimServeCtrlC starts gpulab sim serve as a user does: it prints one
// line, ready and the inventory's path, once every host answers (gpulab
// exec reaches all of them at once); Ctrl-C stops it with exit 0, the
// hosts' trees are gone and the hosts refuse connections. --json prints
// the ready object instead, and SIGTERM stops it too.
func TestSimServeCtrlC(t *testing.T) {
	out := filepath.Join(t.TempDir(), "inventory.toml")
	s := startSimServe(t, "--inventory-out", out, "--hosts", "3", "--seed", "5")
	line := s.line(t)
	want := "ready: 3 SIMULATED DGX A100 hosts (dgx01 to dgx03) on 127.0.0.1; inventory " + out + "\n"
	if line != want {
		t.Errorf("sim serve printed %q, want %q", line, want)
	}
	if trees := s.trees(t); len(trees) != 1 || !strings.HasPrefix(trees[0], "gpulab-sim-") {
		t.Errorf("while it serves, $TMPDIR holds %v, want the fleet's directory", trees)
	}
	env := noEnv(t)
	run(t, env, "exec", "--inventory", out, "-H", "@dgx", "--no-fold", "--", "hostname").expect(t, 0, "dgx01: dgx01\ndgx02: dgx02\ndgx03: dgx03\n", "3 hosts: 3 ok")
	for _, file := range []string{out, out + ".key", out + ".known_hosts", out + ".ssh_config"} {
		if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, want a private file", file, err)
		}
	}

	if err := s.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	code, rest := s.wait(t)
	if code != 0 || rest != "" {
		t.Errorf("after Ctrl-C: exit %d and %q more on stdout; want exit 0 and the one line\nstderr: %s", code, rest, s.stderr.String())
	}
	if trees := s.trees(t); len(trees) != 0 {
		t.Errorf("after Ctrl-C, $TMPDIR still holds %v: the hosts' trees were not removed", trees)
	}
	run(t, env, "exec", "--inventory", out, "-H", "@dgx", "--", "true").expect(t, 1, "", "3 hosts: 3 refused (dgx[01-03])")

	// --json: the ready object, then SIGTERM. FILE as the argument is
	// --inventory-out FILE.
	s = startSimServe(t, out, "--hosts", "2", "--json")
	var ready struct {
		Ready     bool      `json:"ready"`
		Simulated bool      `json:"simulated"`
		Files     sim.Files `json:"files"`
		Hosts     []sim.Host
	}
	if line := s.line(t); json.Unmarshal([]byte(line), &ready) != nil || !ready.Ready || !ready.Simulated || ready.Files.Inventory != out || len(ready.Hosts) != 2 {
		t.Errorf("sim serve --json printed %q", line)
	}
	sick := 0
	for _, h := range ready.Hosts {
		if h.Sick {
			sick++
		}
		if h.Address != "127.0.0.1" || h.Port == 0 || !strings.HasPrefix(h.HostKey, "ssh-ed25519 ") {
			t.Errorf("sim serve --json: host %+v", h)
		}
	}
	if sick != 1 {
		t.Errorf("sim serve --json: %d sick hosts, want 1", sick)
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code, rest := s.wait(t); code != 0 || rest != "" || len(s.trees(t)) != 0 {
		t.Errorf("after SIGTERM: exit %d, %q more on stdout, $TMPDIR %v", code, rest, s.trees(t))
	}
}

// TestSimServeFaults asks sim serve for a dropped host, a hung host and
// latency, and reaches the fleet with gpulab exec: the dropped host is
// refused, the hung one times out on connecting (--connect-timeout 2s,
// room for a busy machine's handshakes), the others answer, no sooner
// than the latency allows.
func TestSimServeFaults(t *testing.T) {
	const latency = 20 * time.Millisecond
	out := filepath.Join(t.TempDir(), "inventory.toml")
	s := startSimServe(t, out, "--inventory-out", out, "--hosts", "4", "--drop", "dgx02", "--hang", "dgx03", "--stall", "dgx04", "--latency", latency.String()) // the same FILE twice
	s.line(t)
	r := run(t, noEnv(t), "exec", "--inventory", out, "-H", "@dgx", "--connect-timeout", "2s", "--timeout", "5s", "--json", "--", "hostname")
	var res struct {
		Hosts []struct {
			Host      string `json:"host"`
			Class     string `json:"class"`
			Error     string `json:"error"`
			ConnectNS int64  `json:"connect_ns"`
			Stdout    string `json:"stdout"`
			Steps     []struct {
				DurationNS int64 `json:"duration_ns"`
			} `json:"steps"`
		} `json:"hosts"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != ExitFailed || len(res.Hosts) != 4 {
		t.Fatalf("exec --json: exit %d, %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	for _, h := range res.Hosts {
		switch h.Host {
		case "dgx02":
			if h.Class != "refused" || !strings.Contains(h.Error, "connection refused") {
				t.Errorf("dropped %s: %s (%s), want refused", h.Host, h.Class, h.Error)
			}
		case "dgx03":
			if h.Class != "timeout-connect" {
				t.Errorf("hung %s: %s (%s), want timeout-connect", h.Host, h.Class, h.Error)
			}
		case "dgx04":
			if h.Class != "timeout-command" || h.Stdout != "" {
				t.Errorf("stalled %s: %s %q (%s), want timeout-command, silent", h.Host, h.Class, h.Stdout, h.Error)
			}
		default:
			if h.Class != "ok" || h.Stdout != h.Host+"\n" || len(h.Steps) != 1 {
				t.Errorf("%s: %s %q (%s), want ok", h.Host, h.Class, h.Stdout, h.Error)
				continue
			}
			// Opening the session and starting the command are two round
			// trips: each answer leaves the host no sooner than the latency.
			if d := time.Duration(h.Steps[0].DurationNS); d < 2*latency {
				t.Errorf("%s: hostname took %v with %v latency per packet, want at least %v", h.Host, d, latency, 2*latency)
			}
			if d := time.Duration(h.ConnectNS); d < latency {
				t.Errorf("%s: connecting took %v, want at least the latency %v", h.Host, d, latency)
			}
		}
	}
	r.expect(t, ExitFailed, "", "4 hosts: 1 ok, 1 timeout-command (dgx04), 1 timeout-connect (dgx03), 1 refused (dgx02)")
	if err := s.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code, _ := s.wait(t); code != 0 {
		t.Errorf("after Ctrl-C: exit %d\n%s", code, s.stderr.String())
	}
}

// TestSimServeUsage gives sim serve bad flags: each is a usage error (exit
// 2) that says what is wrong, and nothing is served or left behind.
func TestSimServeUsage(t *testing.T) {
	out := filepath.Join(t.TempDir(), "inventory.toml")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--hosts", "0", "--inventory-out", out}, "--hosts 0: between 1 and"},
		{[]string{"--hosts", "-3", "--inventory-out", out}, "--hosts -3: between 1 and"},
		{[]string{"--hosts", "10001", "--inventory-out", out}, "--hosts 10001: between 1 and 10000"},
		{[]string{"--drop", "nosuch", "--inventory-out", out}, `no host "nosuch" in this fleet (hosts are dgx01 to dgx04)`},
		{[]string{"--hang", "dgx05", "--inventory-out", out}, `no host "dgx05" in this fleet`},
		{[]string{"--hosts", "2"}, "--inventory-out FILE (or FILE as the argument) is required"},
		{[]string{"--latency", "-1s", "--inventory-out", out}, "--latency -1s: between 0 and 1m"},
		{[]string{"--latency", "2m", "--inventory-out", out}, "--latency 2m0s: between 0 and 1m"},
		{[]string{"--latency", "soon", "--inventory-out", out}, `invalid argument "soon" for "--latency"`},
		{[]string{"other.toml", "--inventory-out", out}, "sim serve: FILE other.toml and --inventory-out " + out + " name different files: give one of them"},
		{[]string{out, "extra"}, "sim serve: one FILE, the inventory to write, got 2 arguments (" + out + " extra)"},
	} {
		s := startSimServe(t, tc.args...)
		code, stdout := s.wait(t)
		if stderr := s.stderr.String(); code != ExitUsage || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("sim serve %s: exit %d, stdout %q, stderr %q; want exit %d and %q", strings.Join(tc.args, " "), code, stdout, stderr, ExitUsage, tc.want)
		}
		if trees := s.trees(t); len(trees) != 0 {
			t.Errorf("sim serve %s left %v", strings.Join(tc.args, " "), trees)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a refused sim serve wrote %s", out)
	}
}

// A simulated host is known by its handshake, whatever route reached it:
// through the fleet's OpenSSH config alone (-F, no inventory saying
// simulated), the probe pushed is the simulator build, and a lab record
// made there says SIMULATED and stays draft, even for a lab that claims
// more.
func TestSimReachedThroughSSHConfigStillSaysSo(t *testing.T) {
	f, files := simFleet(t, sim.Config{Hosts: 2})
	labsDir := t.TempDir()
	data, err := os.ReadFile("../labs/builtin/topology-sanity.toml")
	if err != nil {
		t.Fatal(err)
	}
	prod := strings.Replace(strings.Replace(string(data), `maturity = "draft"`, `maturity = "production-notes"`, 1), `id = "topology-sanity"`, `id = "topo-prod"`, 1)
	if err := os.WriteFile(filepath.Join(labsDir, "topo-prod.toml"), []byte(prod), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": t.TempDir(), "GPULAB_INVENTORY": ""}
	results := t.TempDir()
	r := run(t, env, "lab", "run", "topo-prod", "--labs", labsDir, "-F", files.SSHConfig, "-H", "dgx01,dgx02", "--results", results, "--json")
	var rec struct {
		Maturity  string `json:"maturity"`
		Simulated bool   `json:"simulated"`
		Hosts     []struct {
			Environment struct {
				Simulated bool   `json:"simulated"`
				Probe     string `json:"probe"`
			} `json:"environment"`
		} `json:"hosts"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rec); err != nil {
		t.Fatalf("lab run: exit %d, %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	if !rec.Simulated || rec.Maturity != "draft" || len(rec.Hosts) != 2 || !rec.Hosts[0].Environment.Simulated {
		t.Errorf("a lab run reached through -F: simulated %v, maturity %q, hosts %+v", rec.Simulated, rec.Maturity, rec.Hosts)
	}
	r = run(t, env, "exec", "-F", files.SSHConfig, "-H", "dgx01", "--json", "--", "true")
	if !strings.Contains(r.stdout, `"simulated": true`) {
		t.Errorf("exec --json through -F does not say simulated:\n%s", r.stdout)
	}
	_ = f
}
