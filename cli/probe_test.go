package cli

import (
	"encoding/json"
	"fmt"
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
	// gpu04 is flagged (a link down, ECC errors): exit 1, and the last
	// line says which host.
	r.expect(t, 1, "gpu[01-03,05-06]: 8× NVIDIA A100-SXM4-40GB, NV12 full mesh, driver 535.129.03, SIMULATED\n", "")
	r.expect(t, 1, "\n---------------- gpu[01-03,05-06] (5 hosts)\ndriver 535.129.03, CUDA ", "")
	r.expect(t, 1, "\ntopology: every pair NV12\nnow: utilisation 0%", "")
	r.expect(t, 1, "\n---------------- gpu04 (1 host): differs from gpu[01-03,05-06]\n", "")
	if !strings.HasSuffix(r.stdout, "\n\n6 hosts: 5 ok, 1 flagged (gpu04)\n") {
		t.Errorf("the output does not end with the hosts counted:\n%s", r.stdout)
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

	// --json says the same: gpu04 alone in group 1, the others in 0.
	// --json says the same: gpu04 alone in group 1, the others in 0; it
	// alone has flags, and the exit status is 1 as for the text.
	r = run(t, env, append(args, "--json")...)
	var res []app.ProbeResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res) != 6 || r.code != 1 {
		t.Fatalf("--json: exit %d, %v\n%s", r.code, err, r.stdout)
	}
	for _, p := range res {
		want, set, flags := 0, "gpu[01-03,05-06]", "[]"
		if p.Host == "gpu04" {
			want, set, flags = 1, "gpu04", "[NVLink GPU0–GPU1 down (PXB) GPU3: 2 uncorrected ECC errors since the driver loaded]"
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
	if !strings.HasPrefix(r.stdout, "gpu01: ") || !strings.HasSuffix(r.stdout, "\n\n6 hosts: 5 ok, 1 flagged (gpu04)\n") {
		t.Errorf("--no-fold should start with gpu01's table and end with the count:\n%s", r.stdout)
	}

	// No faults: nothing flagged, exit 0 either way.
	writeFile(t, faults, `{}`)
	run(t, env, args...).expect(t, 0, "\n6 hosts: 6 ok\n", "")
	run(t, env, append(args, "--no-fold")...).expect(t, 0, "\n6 hosts: 6 ok\n", "")
	writeFile(t, faults, `{"gpu09": {}}`)
	run(t, env, args...).expect(t, 2, "", `host "gpu09" is not among the hosts -H selects`)
	run(t, env, "probe", "-H", "gpu01", "-F", cfg, "--mock-faults", faults).expect(t, 2, "", "--mock-faults needs --mock dgxa100")
}
