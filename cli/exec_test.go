package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/internal/probetest"
	"github.com/gpulab/gpulab/internal/sshtest"
	"github.com/gpulab/gpulab/internal/testreq"
	"github.com/gpulab/gpulab/orchestrator"
)

// sshConfigFor names the fleet's servers gpu01..gpuNN in an ssh_config, so
// that exec runs with no inventory, as on an existing fleet.
func sshConfigFor(t testing.TB, f *sshtest.Fleet, knownHosts string) string {
	t.Helper()
	var b strings.Builder
	for i, s := range f.Servers {
		fmt.Fprintf(&b, "Host gpu%02d\n  HostName %s\n  Port %d\n  User %s\n  IdentityFile %s\n  UserKnownHostsFile %s\n\n",
			i+1, s.Addr, s.Port, f.User, f.ClientKey, knownHosts)
	}
	p := filepath.Join(t.TempDir(), "ssh_config")
	writeFile(t, p, b.String())
	return p
}

func TestExecAgainstRealSSHD(t *testing.T) {
	f := sshtest.Start(t, 5, sshtest.Options{})
	cfg := sshConfigFor(t, f, f.KnownHosts)
	env := noEnv(t)
	odd := f.Servers[3].Port
	cmd := fmt.Sprintf(`case "$SSH_CONNECTION" in *" %d") echo driver 535.104.05; exit 4;; *) echo driver 550.54.15;; esac`, odd)

	r := run(t, env, "exec", "-H", "gpu[01-05]", "-F", cfg, "--", cmd)
	r.expect(t, 1, "---------------- gpu[01-03,05] (4 hosts): ok\ndriver 550.54.15\n", "5 hosts: 4 ok, 1 exit (gpu04) in ")
	r.expect(t, 1, "---------------- gpu04 (1 host): exit (status 4)\ndiffers from gpu[01-03,05]:\n", "")
	r.expect(t, 1, "+driver 535.104.05", "")
	if strings.Contains(r.stderr, "SIMULATED") {
		t.Errorf("exec on real hosts says SIMULATED:\n%s", r.stderr)
	}

	r = run(t, env, "exec", "-H", "gpu[01-02]", "-F", cfg, "--no-fold", "--", "echo", "hi")
	r.expect(t, 0, "gpu01: hi\ngpu02: hi\n", "2 hosts: 2 ok")

	r = run(t, env, "exec", "-H", "gpu01", "-F", cfg, "--", "printf", "[%s]", "a b", "$(touch /tmp/gpulab-cli-pwned)", "it's")
	r.expect(t, 0, "[a b][$(touch /tmp/gpulab-cli-pwned)][it's]", "1 host: 1 ok")
	if _, err := os.Stat("/tmp/gpulab-cli-pwned"); err == nil {
		os.Remove("/tmp/gpulab-cli-pwned")
		t.Error("an argument was run by the remote shell")
	}

	r = run(t, env, "exec", "-H", "gpu[01-05]", "-F", cfg, "--json", "--", cmd)
	var out struct {
		Worst  string         `json:"worst"`
		Counts map[string]int `json:"counts"`
		Hosts  []struct {
			Host   string `json:"host"`
			Class  string `json:"class"`
			Stdout string `json:"stdout"`
			Steps  []struct {
				ExitCode int `json:"exit_code"`
			} `json:"steps"`
		} `json:"hosts"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 1 {
		t.Fatalf("exec --json: exit %d, %v\n%s", r.code, err, r.stdout)
	}
	if out.Worst != "exit" || out.Counts["ok"] != 4 || out.Hosts[3].Host != "gpu04" || out.Hosts[3].Steps[0].ExitCode != 4 || out.Hosts[0].Stdout != "driver 550.54.15\n" {
		t.Errorf("exec --json = %+v", out)
	}

	// Unknown host keys: refused with the fingerprint, then accepted on request.
	kh := filepath.Join(t.TempDir(), "known_hosts")
	cfg2 := sshConfigFor(t, f, kh)
	r = run(t, env, "exec", "-H", "gpu[01-02]", "-F", cfg2, "--", "true")
	r.expect(t, 1, "hostkey-unknown", "2 hosts: 2 hostkey-unknown (gpu[01-02])")
	r.expect(t, 1, "--accept-new-host-keys", "")
	run(t, env, "exec", "-H", "gpu[01-02]", "-F", cfg2, "--accept-new-host-keys", "--", "true").expect(t, 0, "", "2 hosts: 2 ok")
	run(t, env, "exec", "-H", "gpu[01-02]", "-F", cfg2, "--", "true").expect(t, 0, "", "2 hosts: 2 ok")

	// Where settings come from.
	r = run(t, env, "inventory", "show", "gpu02", "-F", cfg)
	r.expect(t, 0, fmt.Sprintf("Port                 %d", f.Servers[1].Port), "")
	r.expect(t, 0, cfg+":10", "")
	r.expect(t, 0, "ConnectTimeout       10s", "")

	run(t, env, "exec", "-F", cfg, "--", "true").expect(t, 2, "", "-H is required")
	run(t, env, "exec", "-H", "gpu01", "-F", cfg).expect(t, 2, "", "no command given")
	run(t, env, "exec", "-H", "gpu01", "-F", "/nonexistent/config", "--", "true").expect(t, 2, "", "ssh_config")
}

func TestPushAgainstRealSSHD(t *testing.T) {
	f := sshtest.Start(t, 3, sshtest.Options{})
	cfg := sshConfigFor(t, f, f.KnownHosts)
	env := noEnv(t)
	src := filepath.Join(t.TempDir(), "probe.bin")
	writeFile(t, src, strings.Repeat("gpulab", 10000))
	dest := filepath.Join(t.TempDir(), "placed.bin")
	run(t, env, "push", src, "-H", "gpu[01-03]", "-F", cfg, "--dest", dest, "--mode", "0750").expect(t, 0, dest, "3 hosts: 3 ok")
	if st, err := os.Stat(dest); err != nil || st.Size() != 60000 || st.Mode().Perm() != 0o750 {
		t.Fatalf("pushed file: %v %v", st, err)
	}
	r := run(t, env, "push", src, "-H", "gpu[01-03]", "-F", cfg, "--dest", dest, "--mode", "0750")
	r.expect(t, 0, "gpu[01-03]  unchanged (same sha256, nothing sent)", "3 hosts: 3 ok")
	r = run(t, env, "push", src, "-H", "gpu01", "-F", cfg, "--dest", dest, "--mode", "0750", "--json")
	var out struct {
		Sent  int64 `json:"sent"`
		Hosts []struct {
			Skipped bool `json:"skipped"`
		} `json:"hosts"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.Sent != 0 || !out.Hosts[0].Skipped {
		t.Errorf("push --json the third time: %+v %v", out, err)
	}
	run(t, env, "push", "/nonexistent", "-H", "gpu01", "-F", cfg).expect(t, 2, "", "no such file")
	run(t, env, "push", src, "-H", "gpu01", "-F", cfg, "--mode", "9").expect(t, 2, "", "want an octal mode")

	// A local name the hosts would refuse (a control or bidi character),
	// and such a --dest: a usage error up front, not a refusal per host.
	dir := t.TempDir()
	for _, name := range []string{"a\nb", "x\x1b[31m", "notes\u202etxt.sh", "a\u2066b", "\ufeffx"} {
		bad := filepath.Join(dir, name)
		writeFile(t, bad, "x")
		r := run(t, env, "push", bad, "-H", "gpu[01-03]", "-F", cfg)
		r.expect(t, 2, "", "push: bad file name ")
		r.expect(t, 2, "", "the file keeps its local name on the hosts: rename it")
		if strings.Contains(r.stdout, "gpu") {
			t.Errorf("push %q reached hosts: %s", name, r.stdout)
		}
	}
	run(t, env, "push", src, "-H", "gpu01", "-F", cfg, "--dest", dest+"\u202e").expect(t, 2, "", "push: --dest: destination ")
	run(t, env, "push", src, "-H", "gpu01", "-F", cfg, "--dest", "x\ny").expect(t, 2, "", "holds a control character")
}

// TestProbeAgainstRealSSHD pushes the real probe binary to a real sshd
// fleet. The hosts have no NVIDIA driver (a clean report) and LD_BIND_NOW
// set in their environment (gpulab must run the probe without it).
func TestProbeAgainstRealSSHD(t *testing.T) {
	cache := t.TempDir() // each host gets its own cache directory under it
	f := sshtest.Start(t, 3, sshtest.Options{Env: map[string]string{"LD_BIND_NOW": "1"},
		EnvFor: func(i int) map[string]string {
			return map[string]string{"XDG_CACHE_HOME": filepath.Join(cache, fmt.Sprint(i))}
		}})
	cfg := sshConfigFor(t, f, f.KnownHosts)
	env := noEnv(t)
	probe := probetest.Build(t)
	r := run(t, env, "probe", "-H", "gpu[01-03]", "-F", cfg, "--probe-binary", probe)
	r.expect(t, 1, "gpu[01-03]: no NVML: libnvidia-ml.so.1: cannot open shared object file", "")
	if entries, _ := os.ReadDir(filepath.Join(cache, "0", "gpulab")); len(entries) != 0 {
		t.Errorf("the probe was left on the hosts without --keep: %v", entries)
	}

	r = run(t, env, "probe", "-H", "gpu[01-03]", "-F", cfg, "--probe-binary", probe, "--mock", "dgxa100", "--keep")
	r.expect(t, 0, "gpu[01-03]: 8× NVIDIA A100-SXM4-40GB, NV12 full mesh, driver 535.129.03, SIMULATED", "")
	r.expect(t, 0, "00000000:BD:00.0", "")
	r = run(t, env, "probe", "-H", "gpu01", "-F", cfg, "--probe-binary", probe, "--mock", "dgxa100", "--keep", "--json")
	var out struct {
		Hosts []struct {
			Host     string `json:"host"`
			Class    string `json:"class"`
			Pushed   int64  `json:"pushed_bytes"`
			Snapshot struct {
				Simulated bool `json:"simulated"`
				GPUs      []struct {
					Name string `json:"name"`
				} `json:"gpus"`
			} `json:"snapshot"`
		} `json:"hosts"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 0 {
		t.Fatalf("probe --json: exit %d, %v\n%s", r.code, err, r.stdout)
	}
	if len(out.Hosts) != 1 {
		t.Fatalf("probe --json -H gpu01: %d hosts, want 1\n%s", len(out.Hosts), r.stdout)
	}
	if h := out.Hosts[0]; h.Pushed != 0 || !h.Snapshot.Simulated || len(h.Snapshot.GPUs) != 8 {
		t.Errorf("second run with --keep pushed %d bytes (want 0), snapshot %+v", h.Pushed, h.Snapshot)
	}
	run(t, env, "probe", "--local", "-H", "gpu01").expect(t, 2, "", "--local and -H exclude each other")
	run(t, env, "probe", "--local", "--mock", "dgxh999").expect(t, 2, "", "the only simulated machine is dgxa100")
}

// Hosts sharing one home directory (NFS) must not remove each other's
// probe: without --keep each run gets its own copy.
func TestProbeSharedHome(t *testing.T) {
	shared := t.TempDir()
	f := sshtest.Start(t, 4, sshtest.Options{Env: map[string]string{"XDG_CACHE_HOME": shared}})
	cfg := sshConfigFor(t, f, f.KnownHosts)
	probe := probetest.Build(t, "nosim")
	for range 3 {
		run(t, noEnv(t), "probe", "-H", "gpu[01-04]", "-F", cfg, "--probe-binary", probe).expect(t, 1, "gpu[01-04]: no NVML", "")
	}
	if entries, _ := os.ReadDir(filepath.Join(shared, "gpulab")); len(entries) != 0 {
		t.Errorf("copies left in the shared cache: %v", entries)
	}
}

// gpulab lab run end to end: stand-in nvidia-smi on each host prints a real
// topology (NVLink mesh on gpu01, PCIe-only on gpu02); the run prints the
// folded acceptance, writes the record, and exits 1 for the failing host.
func TestLabRunAgainstRealSSHD(t *testing.T) {
	root := t.TempDir()
	topos := []string{"hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt", "a10-4gpu-pcie-SYS-2nic.txt"}
	for i, topo := range topos {
		bin := filepath.Join(root, fmt.Sprint(i))
		os.MkdirAll(bin, 0o755)
		p, _ := filepath.Abs("../testdata/fixtures/nvidia-smi-topo-m/" + topo)
		l, _ := filepath.Abs("../testdata/fixtures/nvidia-smi-L/dgx-a100-80gb-mig-all-balanced-head10.txt")
		writeFile(t, filepath.Join(bin, "nvidia-smi"), fmt.Sprintf("#!/bin/sh\ncase \"$*\" in\n\"topo -m\") cat %s ;;\n\"-L\") cat %s ;;\nesac\n", p, l))
		os.Chmod(filepath.Join(bin, "nvidia-smi"), 0o755)
	}
	f := sshtest.Start(t, 2, sshtest.Options{EnvFor: func(i int) map[string]string {
		return map[string]string{"PATH": filepath.Join(root, fmt.Sprint(i)) + ":/usr/bin:/bin", "LABDIR": filepath.Join(root, fmt.Sprint(i), "lab"), "WORK": "true"}
	}})
	cfg := sshConfigFor(t, f, f.KnownHosts)
	env := noEnv(t)
	results := filepath.Join(t.TempDir(), "results")
	r := run(t, env, "lab", "run", "e2e", "--labs", "../labs/testdata/e2e.toml", "-H", "gpu[01-02]", "-F", cfg, "--results", results)
	r.expect(t, 1, "  PASS    mesh (critical) gpu01: metrics.gpus = 8, metrics.non_nvlink_pairs = 0 against", "gpu01  observe      topo           ok")
	r.expect(t, 1, "  FAIL    mesh (critical) gpu02: metrics.gpus = 4, metrics.non_nvlink_pairs = 6 against", "")
	r.expect(t, 1, "\nFAILED: mesh (critical) FAIL on gpu02\nrecord: "+results+"/e2e/", "")
	mds, _ := filepath.Glob(filepath.Join(results, "e2e", "*", "record.md"))
	if len(mds) != 1 {
		t.Fatalf("records: %v", mds)
	}
	// Another run needs what this one read: the ssh_config, the lab file.
	labFile, _ := filepath.Abs("../labs/testdata/e2e.toml")
	if md, _ := os.ReadFile(mds[0]); !strings.Contains(string(md), "- Reproduce: `gpulab lab run e2e -H 'gpu[01-02]' -F "+cfg+" --labs "+labFile+"`\n") {
		t.Errorf("record.md's Reproduce line lacks -F and --labs:\n%s", md)
	}
	for _, name := range []string{"record.json", "junit.xml"} {
		if _, err := os.Stat(filepath.Join(filepath.Dir(mds[0]), name)); err != nil {
			t.Error(err)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(results, "results.csv")); strings.Count(string(data), "\n") != 3 {
		t.Errorf("results.csv:\n%s", data)
	}

	r = run(t, env, "lab", "run", "e2e", "--labs", "../labs/testdata/e2e.toml", "-H", "gpu01", "-F", cfg, "--results", results, "--json")
	var rec struct {
		Complete bool `json:"complete"`
		Passed   bool `json:"passed"`
		Hosts    []struct {
			Scores []struct {
				Status string         `json:"status"`
				Values map[string]any `json:"values"`
			} `json:"scores"`
		} `json:"hosts"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rec); err != nil || r.code != 0 || !rec.Complete || !rec.Passed || rec.Hosts[0].Scores[0].Values["gpus"] != float64(8) {
		t.Errorf("lab run --json: exit %d, %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	// Guided: run setup, skip the run step, answer nonsense then run observe.
	r = runInput(t, env, "\ns\nx\n\n", "lab", "run", "e2e", "--labs", "../labs/testdata/e2e.toml", "-H", "gpu01", "-F", cfg, "--results", t.TempDir(), "--step")
	r.expect(t, 0, "Why: Cleanup runs on a context of its own", "── step 1/3 · setup · prepare: prepare\n   $ mkdir -p")
	r.expect(t, 0, "", "── step 3/3 · observe · topo: topo\n   $ nvidia-smi topo -m\n   measures gpus, non_nvlink_pairs for mesh")
	r.expect(t, 0, "", "gpu01  run          work           skipped: skipped by the operator (guided run)")
	r.expect(t, 0, "", `"x": answer with enter, s or q`)
	// Two hosts: each question comes after both hosts' lines of the step
	// before, and no progress line starts after a prompt on its line.
	r = runInput(t, env, "\n\n\n", "lab", "run", "e2e", "--labs", "../labs/testdata/e2e.toml", "-H", "gpu[01-02]", "-F", cfg, "--results", t.TempDir(), "--step")
	checkGuidedOrder(t, r.stderr, []string{
		"gpu01  prerequisite nvidia-smi-lists-gpus ok", "gpu02  prerequisite nvidia-smi-lists-gpus ok", "── step 1/3",
		"gpu01  setup        prepare        ok", "gpu02  setup        prepare        ok", "── step 2/3",
		"gpu01  run          work           ok", "gpu02  run          work           ok", "── step 3/3",
	})
	// The end of input stops the run before the next step; cleanup runs.
	r = runInput(t, env, "\n", "lab", "run", "e2e", "--labs", "../labs/testdata/e2e.toml", "-H", "gpu01", "-F", cfg, "--results", t.TempDir(), "--step")
	r.expect(t, 1, "metrics.gpus, metrics.non_nvlink_pairs were not measured: step topo did not run: the answers ended (end of input) before step work", "(end of input: the answers ended; stopping, cleanup runs)")
	r.expect(t, 1, "", "gpu01  cleanup      clean          ok")
	if r.expect(t, 1, "\nFAILED: stopped on gpu01: the answers ended (end of input) before step work\n", ""); strings.Contains(r.stdout, "operator") {
		t.Errorf("the end of input is said to be the operator's choice:\n%s", r.stdout)
	}
	// No input at all: no step ran. The run is not run, not failed, in
	// the verdict and in results list; cleanup runs all the same.
	notRun := t.TempDir()
	r = runInput(t, env, "", "lab", "run", "e2e", "--labs", "../labs/testdata/e2e.toml", "-H", "gpu01", "-F", cfg, "--results", notRun, "--step")
	r.expect(t, 1, "\nNOT RUN: no step ran, nothing was measured (gpu01: the answers ended (end of input) before step prepare; the record is marked incomplete)\n", "gpu01  cleanup      clean          ok")
	run(t, env, "results", "list", "--results", notRun).expect(t, 0, "e2e  gpu01  not run  e2e/", "")
	run(t, env, "results", "list", "--results", notRun, "--status", "incomplete").expect(t, 0, "e2e  gpu01  not run  e2e/", "")

	// The simulated probe declares the environment, and the record says so.
	r = run(t, env, "lab", "run", "e2e", "--labs", "../labs/testdata/e2e.toml", "-H", "gpu01", "-F", cfg, "--results", t.TempDir(), "--json",
		"--mock", "dgxa100", "--probe-binary", probetest.Build(t))
	var sim struct {
		Hosts []struct {
			Environment struct {
				Simulated bool     `json:"simulated"`
				GPUs      []string `json:"gpus"`
			} `json:"environment"`
		} `json:"hosts"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &sim); err != nil || !sim.Hosts[0].Environment.Simulated || len(sim.Hosts[0].Environment.GPUs) != 8 {
		t.Errorf("lab run --mock dgxa100: exit %d, %v, %+v\n%s", r.code, err, sim, r.stderr)
	}
	run(t, env, "lab", "run", "e2e", "--labs", "../labs/testdata/e2e.toml", "-H", "gpu01", "-F", cfg, "--no-probe", "--mock", "dgxa100").expect(t, 2, "", "--no-probe excludes --mock")
	run(t, env, "lab", "run", "e2e", "--labs", "../labs/testdata/e2e.toml", "-H", "gpu01", "-F", cfg, "--mock", "dgxh999").expect(t, 2, "", "the only simulated machine is dgxa100")
	run(t, env, "lab", "run", "nope", "-H", "gpu01", "-F", cfg).expect(t, 2, "", `no lab "nope"`)
	run(t, env, "lab", "run", "e2e", "--labs", "../labs/testdata/e2e.toml", "-H", "gpu01", "-F", cfg, "--set", "marke=x").expect(t, 2, "", `--set marke: lab e2e has no parameter "marke" (it has marker)`)

	// The records of those runs, read back.
	r = run(t, env, "results", "list", "--results", results)
	r.expect(t, 0, "LAB  HOSTS       RESULT  RUN", "")
	r.expect(t, 0, "e2e  gpu01       passed  e2e/", "")
	r.expect(t, 0, "e2e  gpu[01-02]  failed  e2e/", "")
	// Queries: by host, status, age and count.
	r = run(t, env, "results", "list", "--results", results, "-H", "gpu02")
	if r.expect(t, 0, "e2e  gpu[01-02]  failed", ""); strings.Contains(r.stdout, "gpu01       passed") {
		t.Errorf("-H gpu02 lists a run without gpu02:\n%s", r.stdout)
	}
	r = run(t, env, "results", "list", "--results", results, "--status", "passed", "--since", "1h")
	if r.expect(t, 0, "e2e  gpu01  passed", ""); strings.Contains(r.stdout, "failed") {
		t.Errorf("--status passed lists a failed run:\n%s", r.stdout)
	}
	if r = run(t, env, "results", "list", "--results", results, "--last", "1", "--json"); strings.Count(r.stdout, `"dir":`) != 1 {
		t.Errorf("--last 1 --json: %s", r.stdout)
	}
	// Records exist, none matches: not "no lab records".
	run(t, env, "results", "list", "--results", results, "--since", "2100-01-01").expect(t, 0, "no lab record in "+results+" matches the query (", "")
	run(t, env, "results", "list", "--results", results).expect(t, 0, "\nA RUN with [ ] needs quotes in a shell (gpulab results show 'e2e/", "")
	run(t, env, "results", "list", "--results", results, "--since", "yesterday").expect(t, 2, "", `--since "yesterday": want a duration back from now (90m, 36h, 7d) or a date`)
	run(t, env, "results", "list", "--results", results, "--status", "green").expect(t, 2, "", `--status "green": want one of passed, failed, undecided, incomplete`)
	runs, _ := filepath.Glob(filepath.Join(results, "e2e", "*"))
	sort.Strings(runs)
	first := "e2e/" + filepath.Base(runs[0])
	run(t, env, "results", "show", first, "--results", results).expect(t, 0, "# Lab record: End-to-end lab for the runner's tests", "")
	for _, r := range runs { // by run name alone, brackets and all
		run(t, env, "results", "show", filepath.Base(r), "--results", results).expect(t, 0, "- Conclusion: **", "")
	}
	run(t, env, "results", "compare", runs[0], runs[1], "--results", results).expect(t, 0, "(baseline)", "")
	// A run by its start, no brackets: found when no other run shares it,
	// else an error naming the runs that do.
	alone := t.TempDir()
	two := filepath.Join(alone, "e2e", filepath.Base(runs[0])+"-copy")
	if err := os.CopyFS(filepath.Join(alone, "e2e", filepath.Base(runs[0])), os.DirFS(runs[0])); err != nil {
		t.Fatal(err)
	}
	start := filepath.Base(runs[0])[:len("20060102-150405")]
	run(t, env, "results", "show", "e2e/"+start, "--results", alone).expect(t, 0, "- Conclusion: **", "")
	run(t, env, "results", "show", start, "--results", alone).expect(t, 0, "- Conclusion: **", "")
	if err := os.CopyFS(two, os.DirFS(runs[0])); err != nil {
		t.Fatal(err)
	}
	run(t, env, "results", "show", start, "--results", alone).expect(t, 2, "", fmt.Sprintf("%q names 2 runs: e2e/", start))
	run(t, env, "results", "show", "nope", "--results", results).expect(t, 2, "", `no record "nope"`)
	run(t, env, "results", "list", "--results", t.TempDir()).expect(t, 0, "no lab records in ", "")
}

// The issue's own attack: a heredoc's end and a command in a parameter of
// a built-in lab. gpulab refuses it before connecting, naming the
// parameter, exit 2; nothing runs on the host.
func TestLabRunRefusesHostileParameter(t *testing.T) {
	f := sshtest.Start(t, 1, sshtest.Options{})
	cfg := sshConfigFor(t, f, f.KnownHosts)
	marker := filepath.Join(t.TempDir(), "pwned")
	env := noEnv(t)
	r := run(t, env, "lab", "run", "pending-explained", "-H", "gpu01", "-F", cfg, "--results", t.TempDir(),
		"--set", "image=busybox\nEOF\ntouch "+marker+" #")
	r.expect(t, 2, "", "parameter image: holds a control character")
	r = run(t, env, "lab", "run", "hami-sharing", "-H", "gpu01", "-F", cfg, "--results", t.TempDir(),
		"--set", `image=busybox","securityContext":{"privileged":true},"x":"`)
	r.expect(t, 2, "", "is not a container image reference")
	if _, err := os.Stat(marker); err == nil {
		t.Error("a parameter value ran a command on the host")
	}
	run(t, env, "lab", "show", "pending-explained").expect(t, 0, "image            a small image for the job's pods (image; default busybox:1.36)", "")
}

// A runbook on a host without the NVIDIA tools decides nothing: every
// verdict is UNKNOWN, its hint says how to get the evidence (not the
// advice for a failure), and the exit status is 3, not 0, unless
// --allow-unknown.
func TestRunbookUnknownIsNotSuccess(t *testing.T) {
	// The hosts' PATH holds only what gpulab's wrapper needs: no GPU tool,
	// even on a machine that has them.
	bin := t.TempDir()
	for _, tool := range []string{"sh", "sleep", "kill"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	f := sshtest.Start(t, 2, sshtest.Options{Env: map[string]string{"PATH": bin}})
	cfg := sshConfigFor(t, f, f.KnownHosts)
	env := noEnv(t)
	r := run(t, env, "runbook", "run", "topology", "-H", "gpu[01-02]", "-F", cfg)
	r.expect(t, 3, "UNKNOWN", "")
	r.expect(t, 3, "nvidia-smi is not on the host's PATH", "")
	if strings.Contains(r.stdout, "has a link down") {
		t.Errorf("an UNKNOWN verdict carries the advice for a failure:\n%s", r.stdout)
	}
	run(t, env, "runbook", "run", "topology", "-H", "gpu[01-02]", "-F", cfg, "--allow-unknown").expect(t, 0, "UNKNOWN", "")
	// A host that cannot be reached: UNKNOWN too, with a hint to match.
	cfgBad := filepath.Join(t.TempDir(), "ssh_config")
	writeFile(t, cfgBad, fmt.Sprintf("Host gone\n  HostName 127.0.0.1\n  Port %d\n  User %s\n  IdentityFile %s\n  UserKnownHostsFile %s\n", sshtest.FreePort(t), f.User, f.ClientKey, f.KnownHosts))
	// Not reached is a failure of the run, as for exec: exit 1, whatever
	// --allow-unknown says.
	run(t, env, "runbook", "run", "topology", "-H", "gone", "-F", cfgBad).expect(t, 1, "could not be reached", "1 refused (gone)")
	run(t, env, "runbook", "run", "topology", "-H", "gone", "-F", cfgBad, "--allow-unknown").expect(t, 1, "could not be reached", "")
}

// A full results filesystem loses no verdict: they are printed, and the
// failure to save the record is an error of its own (exit 4, not usage)
// naming what was not saved.
func TestLabRunFullResultsDisk(t *testing.T) {
	full := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", full).CombinedOutput(); err != nil {
		testreq.Missing(t, "mount tmpfs (needs root): "+strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", full).Run() })
	// Fill it: the record directory can still be made, nothing written.
	filler, _ := os.Create(filepath.Join(full, "filler"))
	for {
		if _, err := filler.Write(make([]byte, 4096)); err != nil {
			break
		}
	}
	filler.Close()
	f := sshtest.Start(t, 2, sshtest.Options{})
	cfg := sshConfigFor(t, f, f.KnownHosts)
	r := run(t, noEnv(t), "lab", "run", "e2e", "--labs", "../labs/testdata/e2e.toml", "-H", "gpu[01-02]", "-F", cfg, "--results", full, "--no-probe")
	r.expect(t, 4, "NOT RUN: no step ran", "the lab ran, but its record was not saved")
	r.expect(t, 4, "prerequisite", "no space left on device")
}

// Only the results.csv row failing (a link planted there is refused) is
// said as that: the record is saved, and where; its rows were not added.
func TestLabRunSavedButNotItsCSVRow(t *testing.T) {
	results := t.TempDir()
	target := filepath.Join(t.TempDir(), "profile")
	writeFile(t, target, "# the operator's\n")
	if err := os.Symlink(target, filepath.Join(results, "results.csv")); err != nil {
		t.Fatal(err)
	}
	f := sshtest.Start(t, 1, sshtest.Options{})
	cfg := sshConfigFor(t, f, f.KnownHosts)
	r := run(t, noEnv(t), "lab", "run", "e2e", "--labs", "../labs/testdata/e2e.toml", "-H", "gpu01", "-F", cfg, "--results", results, "--no-probe")
	r.expect(t, 4, "", "the lab ran, but its record is saved in "+filepath.Join(results, "e2e")+"/")
	r.expect(t, 4, "", "but its rows in "+filepath.Join(results, "results.csv")+" were not added: open "+filepath.Join(results, "results.csv")+": a symbolic link")
	if strings.Contains(r.stderr, "was not saved") {
		t.Errorf("a saved record is said not saved:\n%s", r.stderr)
	}
	if data, _ := os.ReadFile(target); string(data) != "# the operator's\n" {
		t.Errorf("the link's target was written:\n%s", data)
	}
}

// The workbench lists a host whose settings cannot be resolved, with its
// error, in its place, instead of dropping it from its counts; a run ends
// it at once with that error.
func TestWorkbenchKeepsUnresolvedHosts(t *testing.T) {
	f := sshtest.Start(t, 1, sshtest.Options{})
	cfg := sshConfigFor(t, f, f.KnownHosts)
	data, _ := os.ReadFile(cfg)
	writeFile(t, cfg, string(data)+"Host broken\n  ProxyJump gpu01\n  ProxyCommand nc %h %p\n")
	env := noEnv(t)
	o := &options{env: Env{Getenv: func(k string) string { return env[k] }}}
	r, err := o.newRunner(&sshFlags{hosts: "gpu01,broken", sshConfig: cfg})
	if err != nil {
		t.Fatal(err)
	}
	fr := &app.Workbench{Fleet: r}
	hosts := fr.Hosts()
	// The selection's order (-H sorts names it does not find in an
	// inventory): broken, then gpu01.
	if len(hosts) != 2 || hosts[0].Name != "broken" || !strings.Contains(hosts[0].Err, "both ProxyJump") || hosts[1].Name != "gpu01" {
		t.Fatalf("hosts: %+v", hosts)
	}
	events := make(chan orchestrator.Event, 16)
	var seen []string
	done := make(chan struct{})
	go func() {
		for ev := range events {
			if ev.Kind == orchestrator.HostDone {
				seen = append(seen, fmt.Sprintf("%d:%s:%s", ev.Index, ev.Host, ev.Done.Class))
			}
		}
		close(done)
	}()
	results := fr.Run(context.Background(), "echo ok", events)
	<-done
	if len(results) != 2 || results[0].Class != orchestrator.Error || results[1].Class != orchestrator.OK {
		t.Errorf("results: %+v", results)
	}
	slices.Sort(seen) // events come as hosts finish
	if strings.Join(seen, " ") != "0:broken:error 1:gpu01:ok" {
		t.Errorf("events: %v", seen)
	}
}

// inventory check meets what loading for real would: the repository's
// example inventory is fine on a machine without ~/.ssh/config (and so is
// `inventory show` on it), and a host that its ssh_config makes
// unreachable is a problem named at the host's line.
func TestInventoryCheckResolvesHosts(t *testing.T) {
	env := noEnv(t) // HOME without .ssh/config
	run(t, env, "inventory", "check", "../inventory.toml").expect(t, 0, ": ok (", "")
	run(t, env, "inventory", "show", "gpu001", "--inventory", "../inventory.toml").expect(t, 0, "HostName", "")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "ssh_config")
	writeFile(t, cfg, "Host gpu02\n  ProxyJump bastion\n  ProxyCommand nc %h %p\n")
	inv := filepath.Join(dir, "inv.toml")
	writeFile(t, inv, fmt.Sprintf("[defaults]\nssh_config = %q\n\n[[host]]\nname = \"gpu01\"\n\n[[host]]\nname = \"gpu02\"\n", cfg))
	run(t, env, "inventory", "check", inv).expect(t, 2, "", "inv.toml:7:1: host gpu02: ssh_config sets both ProxyJump")
}

// A lab that hands a parameter to the shell, or to an interpreter, as code
// is refused when it is read: nothing of it can run, whatever the value.
func TestLabWithParameterAsCodeRefused(t *testing.T) {
	dir := t.TempDir()
	for i, cmd := range []string{`eval {{x}}`, `sh -c {{x}}`, `bash -c \"{{x}}\"`, `python3 -c {{x}}`, `awk {{x}} /dev/null`, `echo {{x}} | sh`, `{{x}}`} {
		lab := fmt.Sprintf("id = \"c-%02d\"\nname = \"n\"\ngoal = \"g\"\nplane = \"data\"\nmaturity = \"draft\"\nestimate_minutes = 1\n\n[[param]]\nname = \"x\"\ntype = \"name\"\n\n[[step]]\nid = \"s\"\nphase = \"run\"\ncommand = \"%s\"\n\n[[criterion]]\nid = \"c\"\ndescription = \"d\"\nexpr = \"true\"\nimpact = \"minor\"\n", i, cmd)
		f := filepath.Join(dir, fmt.Sprintf("c%02d.toml", i))
		writeFile(t, f, lab)
		r := run(t, noEnv(t), "lab", "check", f)
		r.expect(t, 2, "", "a value there would be run as a command or as code")
		r.expect(t, 2, "", fmt.Sprintf("c%02d.toml:15:1", i))
	}
}

// checkGuidedOrder checks that each of a guided run's questions comes
// after the lines before it in want (in any order among them), and that
// every prompt ends its line.
func checkGuidedOrder(t *testing.T, stderr string, want []string) {
	t.Helper()
	pos := func(s string) int {
		i := strings.Index(stderr, s)
		if i < 0 {
			t.Errorf("no %q in:\n%s", s, stderr)
		}
		return i
	}
	last := 0
	for _, w := range want {
		p := pos(w)
		if strings.HasPrefix(w, "── step") && p < last {
			t.Errorf("%q comes before a line of the step before it:\n%s", w, stderr)
		}
		last = max(last, p)
	}
	for _, l := range strings.Split(stderr, "\n") {
		const prompt = "(cleanup runs) > "
		if i := strings.Index(l, prompt); i >= 0 && strings.TrimSpace(l[i+len(prompt):]) != "" {
			t.Errorf("a line follows a prompt on its line: %q", l)
		}
	}
}
