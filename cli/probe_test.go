package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/internal/probetest"
	"github.com/gpulab/gpulab/internal/sshtest"
)

// gpulab probe on six real sshd hosts, each probing a simulated DGX A100:
// the five healthy ones print one GPU table under their node set, the
// sixth (--mock-faults: an NVLink down between GPUs 0 and 1 (PXB, 10 of 12 links up on each), uncorrected
// ECC errors on GPU 3) is a diff against them naming what differs.
func TestProbeFoldsIdenticalHardware(t *testing.T) {
	caches := t.TempDir()
	f := sshtest.Start(t, 6, sshtest.Options{EnvFor: func(i int) map[string]string {
		return map[string]string{"XDG_CACHE_HOME": filepath.Join(caches, fmt.Sprint(i))}
	}})
	cfg := sshConfigFor(t, f, f.KnownHosts)
	faults := filepath.Join(t.TempDir(), "faults.json")
	writeFile(t, faults, `{"gpu04": {"nvlink_down": [[0, 1]], "ecc": {"3": {"volatile_uncorrected": 2}}}}`)
	env := noEnv(t)
	args := []string{"probe", "-H", "gpu[01-06]", "-F", cfg, "--probe-binary", probetest.Build(t), "--mock", "dgxa100", "--mock-faults", faults}
	r := run(t, env, args...)
	t.Logf("gpulab %s\n%s", strings.Join(args, " "), r.stdout)
	// gpu04 is flagged (a link down, ECC errors): exit 1, and the line
	// that counts the hosts, on stderr as exec's, says which host.
	r.expect(t, 1, "gpu[01-03,05-06]: 8× NVIDIA A100-SXM4-40GB, NV12 full mesh, driver 535.129.03, SIMULATED\n", "")
	r.expect(t, 1, "\n---------------- gpu[01-03,05-06] (5 hosts)\ndriver 535.129.03, CUDA ", "")
	r.expect(t, 1, "\ntopology: every pair NV12\nnow: utilisation 0%", "")
	r.expect(t, 1, "\n---------------- gpu04 (1 host): differs from gpu[01-03,05-06]\n", "")
	if r.stderr != "6 hosts: 5 ok, 1 flagged (gpu04)\n" || strings.Contains(r.stdout, "6 hosts:") {
		t.Errorf("the hosts are not counted on stderr alone:\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
	}
	if n := strings.Count(r.stdout, "\nGPU  NAME"); n != 1 {
		t.Errorf("%d GPU tables, want 1 (the five healthy hosts' once, gpu04's as a diff)", n)
	}
	diff := r.stdout[strings.Index(r.stdout, "differs from"):]
	for _, want := range []string{
		"\n- topology: every pair NV12\n",
		"\n- 0    NVIDIA A100-SXM4-40GB  00000000:07:00.0  40960 MiB  on   off  3     12/12 up  -\n",
		"\n+ 0    NVIDIA A100-SXM4-40GB  00000000:07:00.0  40960 MiB  on   off  3     10/12 up  -\n",
		"\n+   PXB: GPUs 0-1\n",
		"2 uncorrected ECC errors since the driver loaded\n",
	} {
		if !strings.Contains(diff, want) {
			t.Errorf("gpu04's diff lacks %q:\n%s", want, diff)
		}
	}
	// Only GPUs 0, 1 (links) and 3 (ECC) differ: the other rows are not
	// in the diff as changed lines.
	for _, gpu := range []string{"\n- 2 ", "\n+ 2 ", "\n- 4 ", "\n+ 7 "} {
		if strings.Contains(diff, gpu) {
			t.Errorf("gpu04's diff changes a healthy GPU's row (%q):\n%s", gpu, diff)
		}
	}

	// --json says the same: gpu04 alone in group 1, the others in 0; it
	// alone has flags and the outcome "flagged" (its class is "ok": it
	// was reached), the document's summary and counts are the text's, and
	// the exit status is 1 as for the text.
	r = run(t, env, append(args, "--json")...)
	var doc struct {
		Hosts   []app.ProbeResult `json:"hosts"`
		Summary string            `json:"summary"`
		Counts  map[string]int    `json:"counts"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Hosts) != 6 || r.code != 1 {
		t.Fatalf("--json: exit %d, %v\n%s", r.code, err, r.stdout)
	}
	if doc.Summary != "6 hosts: 5 ok, 1 flagged (gpu04)" || r.stderr != doc.Summary+"\n" || fmt.Sprint(doc.Counts) != "map[failed:0 flagged:1 ok:5]" {
		t.Errorf("--json: summary %q, counts %v, stderr %q; want the text's count, 5 ok and 1 flagged", doc.Summary, doc.Counts, r.stderr)
	}
	for i, p := range doc.Hosts {
		if want := fmt.Sprintf("gpu%02d", i+1); p.Host != want {
			t.Errorf("--json host %d is %s, want %s (selection order)", i, p.Host, want)
		}
		want, set, flags, outcome := 0, "gpu[01-03,05-06]", "[]", "ok"
		if p.Host == "gpu04" {
			want, set, flags, outcome = 1, "gpu04", "[NVLink GPU0–GPU1 down (PXB) GPU3: 2 uncorrected ECC errors since the driver loaded]", "flagged"
		}
		if p.Outcome != outcome || p.Class != "ok" {
			t.Errorf("--json %s: outcome %q, class %q; want %q, \"ok\"", p.Host, p.Outcome, p.Class, outcome)
		}
		if p.HardwareGroup == nil || *p.HardwareGroup != want || p.HardwareHosts != set {
			t.Errorf("--json %s: hardware group %v %q, want %d %q", p.Host, p.HardwareGroup, p.HardwareHosts, want, set)
		}
		if got := fmt.Sprint(p.Flags); got != flags {
			t.Errorf("--json %s: flags %s, want %s", p.Host, got, flags)
		}
	}

	// --no-fold: every host's table (with its NVLinks), nothing folded,
	// the links down under gpu04's table, and the count.
	r = run(t, env, append(args, "--no-fold")...)
	t.Logf("--no-fold:\n%s", r.stdout)
	if n := strings.Count(r.stdout, "\nGPU  NAME "); r.code != 1 || n != 6 {
		t.Errorf("--no-fold: exit %d, %d GPU tables, want 1 and 6:\n%s", r.code, n, r.stdout)
	}
	for _, not := range []string{"gpu[01-03,05-06]", "----------------", "differs from"} {
		if strings.Contains(r.stdout, not) {
			t.Errorf("--no-fold folds (%q):\n%s", not, r.stdout)
		}
	}
	for _, want := range []string{
		"\ngpu04 (flagged): 8× NVIDIA A100-SXM4-40GB, links NV10×12 NV12×15 PXB×1, driver 535.129.03, SIMULATED\n",
		"  NUMA  NVLINK    FINDINGS\n0 ",
		"  3     10/12 up  -\n",
		"\n  NVLink GPU0–GPU1 down (PXB)\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("--no-fold lacks %q", want)
		}
	}
	if !strings.HasPrefix(r.stdout, "gpu01: ") || r.stderr != "6 hosts: 5 ok, 1 flagged (gpu04)\n" {
		t.Errorf("--no-fold should start with gpu01's table and count the hosts on stderr:\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
	}

	// No faults: nothing flagged, exit 0 either way.
	writeFile(t, faults, `{}`)
	run(t, env, args...).expect(t, 0, "", "6 hosts: 6 ok\n")
	run(t, env, append(args, "--no-fold")...).expect(t, 0, "", "6 hosts: 6 ok\n")
	writeFile(t, faults, `{"gpu09": {}}`)
	run(t, env, args...).expect(t, 2, "", `host "gpu09" is not among the hosts -H selects`)
	run(t, env, "probe", "-H", "gpu01", "-F", cfg, "--mock-faults", faults).expect(t, 2, "", "--mock-faults needs --mock dgxa100")
}

// probeJSON reads probe --json's document and returns its hosts.
func probeJSON(stdout string) ([]app.ProbeResult, error) {
	var doc struct {
		Hosts []app.ProbeResult `json:"hosts"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		return nil, err
	}
	return doc.Hosts, nil
}

// A report is evidence only from a probe that ended as it should. Each
// pushed probe below is a script that prints a real probe run's report
// (for the host it is told, --host) and then ends otherwise: its
// connection lost (it kills the sshd serving its session), its watchdog's
// exit, a kill, or a report naming another host. None is counted ok, none
// keeps its snapshot in --json, and the exit status is 1. A report whose
// NVML answers with no GPU is flagged.
func TestProbeEvidenceOnlyFromACleanEnd(t *testing.T) {
	probe := probetest.Build(t)
	snapshot, err := exec.Command(probe, "--mock", "dgxa100", "--host", "@HOST@").Output()
	if err != nil || !bytes.Contains(snapshot, []byte(`"gpus"`)) {
		t.Fatalf("the real probe: %v\n%s", err, snapshot)
	}
	var noGPU map[string]any
	if err := json.Unmarshal(snapshot, &noGPU); err != nil {
		t.Fatal(err)
	}
	noGPU["gpus"], noGPU["topology"] = []any{}, []any{}
	noGPUJSON, _ := json.Marshal(noGPU)
	const killSSHD = `p=$PPID
while [ "$p" -gt 1 ]; do
	case $(cat /proc/$p/comm) in sshd*) kill -9 "$p"; exit 0 ;; esac
	p=$(cut -d' ' -f4 /proc/$p/stat)
done
echo "no sshd above the probe" >&2
exit 3
`
	// $2 is the host's name: the probe is run as PROBE --host NAME.
	report := func(snap []byte, host string) string {
		return "cat <<'SNAPSHOT' | sed \"s/@HOST@/" + host + "/\"\n" + string(snap) + "\nSNAPSHOT\n"
	}
	f := sshtest.Start(t, 2, sshtest.Options{})
	cfg := sshConfigFor(t, f, f.KnownHosts)
	env := noEnv(t)
	for _, tc := range []struct {
		name, script   string
		class, outcome string
		total          string
		keepsSnapshot  bool
	}{
		{"lost", report(snapshot, "$2") + killSSHD, "lost", "failed", "2 hosts: 0 ok, 2 failed: 2 lost (gpu[01-02])", false},
		{"watchdog", report(snapshot, "$2") + "exit 5\n", "exit", "failed", "2 hosts: 0 ok, 2 failed: 2 exit (gpu[01-02])", false},
		{"killed", report(snapshot, "$2") + "kill -9 $$\n", "exit", "failed", "2 hosts: 0 ok, 2 failed: 2 exit (gpu[01-02])", false},
		{"another host", report(snapshot, "dgx99"), "error", "failed", "2 hosts: 0 ok, 2 failed: 2 error (gpu[01-02])", false},
		{"no GPU", report(noGPUJSON, "$2"), "ok", "flagged", "2 hosts: 0 ok, 2 flagged (gpu[01-02])", true},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "-"), func(t *testing.T) {
			script := filepath.Join(t.TempDir(), "probe.sh")
			writeFile(t, script, "#!/bin/sh\n"+tc.script)
			if err := os.Chmod(script, 0o755); err != nil {
				t.Fatal(err)
			}
			args := []string{"probe", "-H", "gpu[01-02]", "-F", cfg, "--probe-binary", script}
			run(t, env, args...).expect(t, 1, "", tc.total+"\n")
			r := run(t, env, append(args, "--json")...)
			hosts, err := probeJSON(r.stdout)
			if err != nil || r.code != 1 || len(hosts) != 2 {
				t.Fatalf("--json: exit %d, %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
			}
			for _, h := range hosts {
				if h.Class != tc.class || h.Outcome != tc.outcome || (h.Snapshot != nil) != tc.keepsSnapshot {
					t.Errorf("%s: class %q, outcome %q, snapshot kept %v (%s); want %s, %s, %v", h.Host, h.Class, h.Outcome, h.Snapshot != nil, h.Error, tc.class, tc.outcome, tc.keepsSnapshot)
				}
			}
		})
	}
}

// A host the probe cannot serve (a machine type no probe exists for) is
// that host's failure, not this machine's: every selected host is still
// listed with its own error, and the run exits 1, not 2.
func TestProbeUnsupportedHostIsTheHosts(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(bin, "uname"), "#!/bin/sh\necho riscv64\n")
	if err := os.Chmod(filepath.Join(bin, "uname"), 0o755); err != nil {
		t.Fatal(err)
	}
	f := sshtest.Start(t, 1, sshtest.Options{Env: map[string]string{"PATH": bin + ":/usr/bin:/bin"}})
	cfg := sshConfigFor(t, f, f.KnownHosts)
	// gpu02 refuses connections: a port nothing listens on, held.
	base, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, cfg, string(base)+fmt.Sprintf("Host gpu02\n  HostName 127.0.0.1\n  Port %d\n  User %s\n  IdentityFile %s\n  UserKnownHostsFile %s\n", sshtest.FreePort(t), f.User, f.ClientKey, f.KnownHosts))
	r := run(t, noEnv(t), "probe", "-H", "gpu[01-02]", "-F", cfg, "--json")
	hosts, err := probeJSON(r.stdout)
	if err != nil || r.code != 1 || len(hosts) != 2 {
		t.Fatalf("exit %d, %v, want 1 and both hosts\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	if h := hosts[0]; h.Host != "gpu01" || h.Outcome != "failed" || !strings.Contains(h.Error, `no probe for machine type "riscv64"`) {
		t.Errorf("gpu01: %+v", h)
	}
	if h := hosts[1]; h.Host != "gpu02" || h.Class != "refused" || strings.Contains(h.Error, "riscv64") {
		t.Errorf("gpu02 has another host's error or none of its own: %+v", h)
	}
	if !strings.Contains(r.stderr, "2 hosts: 0 ok, 2 failed: 1 error (gpu01), 1 refused (gpu02)") {
		t.Errorf("stderr: %s", r.stderr)
	}
}
