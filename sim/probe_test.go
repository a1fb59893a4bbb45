package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gpulab/gpulab/internal/testreq"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/probes/bundle"
	"github.com/gpulab/gpulab/probes/report"
)

const refused = "cannot execute: a simulated host runs no program but gpulab's simulator probe"

// simulatorProbe is the simulator build this gpulab embeds.
func simulatorProbe(t *testing.T) []byte {
	t.Helper()
	data, _, err := bundle.Probe(runtime.GOARCH, true)
	if err != nil {
		testreq.Missing(t, "the simulator probe is not embedded: "+err.Error()+" (make build)")
	}
	return data
}

// TestOnlyTheSimulatorProbeRuns pushes executables to a simulated host and
// runs them. The one that runs as a real process is the simulator probe,
// byte for byte: it reports the host's own faults. Anything else is
// refused with exit 126, among them a copy of the real touch told to make
// a marker on the real file system (if it ran, the marker would be
// there), and the probe with one byte more. A script (#!) runs in the
// simulated shell, by design: what it does stays in the host's tree.
func TestOnlyTheSimulatorProbeRuns(t *testing.T) {
	probe := simulatorProbe(t)
	f, files := startFleet(t, Config{Hosts: 2, Seed: 3})
	sick := sickHost(t, f)
	touch, err := os.ReadFile(testreq.Tool(t, "touch", "the test pushes a copy of the real touch and asks it to make a marker"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	marker := filepath.Join(dir, "marker-"+randomHex(t))
	gpuHost := map[string]string{} // each GPU UUID's host
	g := newGpulab(t, files, orchestrator.Overrides{})
	ctx := context.Background()

	for _, h := range f.Hosts() {
		conn := g.dial(t, h.Name)
		push := func(name string, data []byte, mode fs.FileMode) string {
			t.Helper()
			r := conn.Push(ctx, orchestrator.PushSpec{Name: name, Data: data, Mode: mode})
			if r.Class != orchestrator.OK {
				t.Fatalf("push %s to %s: %s %s", name, h.Name, r.Class, r.Err)
			}
			return r.Path
		}
		run := func(line string) orchestrator.Result {
			t.Helper()
			return conn.Run(ctx, "run", line, orchestrator.RunOptions{})
		}

		// Not the probe: refused, whatever its mode or name.
		for _, p := range []string{
			push("touch", touch, 0o755),
			push("nvmlprobe-1", append(append([]byte(nil), probe...), 0), 0o700),
		} {
			r := run(orchestrator.QuoteArgs([]string{p, marker}))
			if r.Class != orchestrator.Exit || r.ExitCode != 126 || !strings.Contains(string(r.Stderr), refused) {
				t.Errorf("%s: %s ran: %s, exit %d, %q; want exit 126 and %q", h.Name, p, r.Class, r.ExitCode, r.Stderr, refused)
			}
		}
		// Made executable after the push, run by a relative name, by sh, by exec.
		push("touch2", touch, 0o644)
		if r := run(`cd .cache/gpulab && chmod +x touch2 && ./touch2 ` + orchestrator.Quote(marker)); r.ExitCode != 126 || !strings.Contains(string(r.Stderr), refused) {
			t.Errorf("%s: chmod +x; ./touch2: exit %d, %q; want 126", h.Name, r.ExitCode, r.Stderr)
		}
		if r := run(`cd .cache/gpulab && exec ./touch2 ` + orchestrator.Quote(marker)); r.ExitCode != 126 {
			t.Errorf("%s: exec ./touch2: exit %d, %q; want 126", h.Name, r.ExitCode, r.Stderr)
		}
		if r := run(`cd .cache/gpulab && sh ./touch2`); r.ExitCode == 0 {
			t.Errorf("%s: sh ./touch2 (a binary read as a script) exited 0: %q", h.Name, r.Stdout)
		}

		// A script runs in the simulated shell, and what it makes stays in
		// the host's tree.
		script := push("script.sh", []byte("#!/bin/sh\nmkdir -p "+orchestrator.Quote(dir)+" && touch "+orchestrator.Quote(marker)+" && echo made\n"), 0o755)
		if r := run(orchestrator.Quote(script)); r.Class != orchestrator.OK || string(r.Stdout) != "made\n" {
			t.Errorf("%s: the script: %s %q %q", h.Name, r.Class, r.Stdout, r.Stderr)
		}
		if _, err := os.Stat(filepath.Join(f.hosts[indexOf(f, h.Name)].fs.dir, marker)); err != nil {
			t.Errorf("%s: the script's marker is not in the host's tree: %v", h.Name, err)
		}

		// The simulator probe runs, and sees the host's faults.
		p := push("nvmlprobe", probe, 0o700)
		if r := run(orchestrator.QuoteArgs([]string{p, "--mock", "dgxa100"})); r.ExitCode != 64 {
			t.Errorf("%s: the probe with --mock of its own: exit %d, %q; want 64 (the simulation says what it sees)", h.Name, r.ExitCode, r.Stderr)
		}
		r := run(orchestrator.Quote(p))
		if r.Class != orchestrator.OK {
			t.Fatalf("%s: the simulator probe: %s, exit %d, %s", h.Name, r.Class, r.ExitCode, r.Stderr)
		}
		var s report.Snapshot
		if err := json.Unmarshal(r.Stdout, &s); err != nil {
			t.Fatalf("%s: the probe printed no snapshot: %v\n%s", h.Name, err, r.Stdout)
		}
		if !s.Simulated || len(s.GPUs) != 8 {
			t.Errorf("%s: snapshot simulated=%v with %d GPUs, want a simulated DGX A100", h.Name, s.Simulated, len(s.GPUs))
		}
		want := 0
		if h.Name == sick {
			want = 3
		}
		if got := faultsSeen(&s); len(got) != want {
			t.Errorf("%s (sick: %v): the probe saw %v (%s), want %d of the sick host's faults", h.Name, h.Name == sick, got, report.Hardware(&s), want)
		}
		// The probe and nvidia-smi name the host's own GPUs alike, and
		// no GPU is on two hosts.
		smi := run("nvidia-smi --query-gpu=uuid,serial --format=csv,noheader")
		var probed []string
		for _, g := range s.GPUs {
			probed = append(probed, g.UUID+", "+g.Serial)
			if other, ok := gpuHost[g.UUID]; ok {
				t.Errorf("GPU %s is on %s and on %s", g.UUID, other, h.Name)
			}
			gpuHost[g.UUID] = h.Name
		}
		if got := strings.Join(probed, "\n") + "\n"; string(smi.Stdout) != got {
			t.Errorf("%s: nvidia-smi's GPUs\n%s\nare not the probe's\n%s", h.Name, smi.Stdout, got)
		}
	}
	// The same through OpenSSH: scp up, chmod and run with ssh.
	testreq.Tool(t, "scp", "the test pushes with OpenSSH's scp too (apt-get install openssh-client)")
	local := filepath.Join(t.TempDir(), "touch")
	if err := os.WriteFile(local, touch, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := openssh(t, files, "", "scp", "-q", "-o", "BatchMode=yes", local, sick+":t"); err != nil {
		t.Fatalf("scp: %v\n%s", err, stderr)
	}
	_, stderr, err := openssh(t, files, "", "ssh", "-o", "BatchMode=yes", sick, "chmod +x t && ./t "+orchestrator.Quote(marker))
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 126 || !strings.Contains(stderr, refused) {
		t.Errorf("ssh %s ./t: %v, %q; want exit 126 and %q", sick, err, stderr, refused)
	}

	if _, err := os.Lstat(marker); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the marker %s is on the real file system: a pushed program ran for real", marker)
	}
}

// faultsSeen lists the sick host's faults a snapshot shows: a GPU pair
// whose NVLink is down (a PCIe path in the topology), uncorrected ECC
// errors, a pending row remap. (Its Xids are in the kernel log, which a
// plain snapshot does not read.)
func faultsSeen(s *report.Snapshot) []string {
	seen := map[string]bool{}
	for _, l := range s.Topology {
		seen["nvlink down"] = seen["nvlink down"] || !strings.HasPrefix(l.Level, "NV")
	}
	for _, g := range s.GPUs {
		seen["ecc"] = seen["ecc"] || g.ECC.Volatile != nil && g.ECC.Volatile.Uncorrected > 0
		seen["remap pending"] = seen["remap pending"] || g.RemappedRows != nil && g.RemappedRows.Pending
	}
	var out []string
	for _, f := range []string{"nvlink down", "ecc", "remap pending"} {
		if seen[f] {
			out = append(out, f)
		}
	}
	return out
}

func indexOf(f *Fleet, name string) int {
	for i, h := range f.hosts {
		if h.name == name {
			return i
		}
	}
	return -1
}

// The check must cover what runs: a file checked once and then rewritten
// in place through SFTP (same inode, same size, its time set back) is
// checked again, and what runs is a sealed copy of the checked bytes.
func TestRewrittenProbeIsCheckedAgain(t *testing.T) {
	probe := simulatorProbe(t)
	echo, err := os.ReadFile("/bin/echo")
	if err != nil {
		testreq.Missing(t, "no /bin/echo to stand for a foreign binary: "+err.Error())
	}
	if len(echo) > len(probe) {
		t.Fatalf("/bin/echo is larger than the probe")
	}
	dir := t.TempDir()
	p, q := filepath.Join(dir, "p"), filepath.Join(dir, "q")
	if err := os.WriteFile(p, probe, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(q, append(echo, make([]byte, len(probe)-len(echo))...), 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Unix(1000000000, 0)
	for _, f := range []string{p, q} {
		if err := os.Chtimes(f, old, old); err != nil {
			t.Fatal(err)
		}
	}
	_, files := startFleet(t, Config{Hosts: 1})
	put := func(local string) {
		if out, stderr, err := openssh(t, files, "put -p "+local+" /tmp/p\n", "sftp", "-b", "-", "-o", "BatchMode=yes", "dgx01"); err != nil {
			t.Fatalf("sftp put: %v %s %s", err, out, stderr)
		}
	}
	put(p)
	if out, stderr, err := openssh(t, files, "", "ssh", "-o", "BatchMode=yes", "dgx01", "/tmp/p --version"); err != nil || strings.TrimSpace(out) == "" {
		t.Fatalf("the real simulator probe did not run: %v %q %q", err, out, stderr)
	}
	put(q)
	out, stderr, err := openssh(t, files, "", "ssh", "-o", "BatchMode=yes", "dgx01", "stat -c %s /tmp/p; /tmp/p FOREIGN-BINARY-RAN")
	var ee *exec.ExitError
	if strings.Contains(out, "FOREIGN-BINARY-RAN") || !errors.As(err, &ee) || ee.ExitCode() != 126 || !strings.Contains(stderr, "sha256") {
		t.Errorf("a binary rewritten in place ran or was not refused: exit %v, stdout %q, stderr %q", err, out, stderr)
	}
}

// TestProbeCheckHoldsNoCopy: checking a host's probe streams the file
// through sha256 and runs the fleet's one sealed copy, so that starting
// the probe on many hosts at once holds no copy per host (300 hosts each
// held a 5 MB read, and the heap passed the watchdog's limit). What runs
// is still what was checked: every host gets the same sealed file.
func TestProbeCheckHoldsNoCopy(t *testing.T) {
	probe := simulatorProbe(t)
	f, _ := startFleet(t, Config{Hosts: 2, Seed: 1})
	path := filepath.Join(t.TempDir(), "nvmlprobe")
	if err := os.WriteFile(path, probe, 0o755); err != nil {
		t.Fatal(err)
	}
	check := func(h *host) os.FileInfo {
		t.Helper()
		file, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		tc := &toolCall{ctx: context.Background(), h: h}
		mem, err := tc.sealedProbe(file, int64(len(probe)))
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(mem)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o500 {
			t.Errorf("the fleet's copy of the probe is mode %v, want r-x for its owner only", fi.Mode())
		}
		return fi
	}
	first := check(f.hosts[0]) // makes the fleet's sealed copy
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 8
	for i := range n {
		if fi := check(f.hosts[i%2]); !os.SameFile(fi, first) {
			t.Fatalf("check %d returned another file than the fleet's sealed copy", i)
		}
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(len(probe)) {
		t.Errorf("%d checks allocated %d bytes, more than one probe (%d bytes): a copy is read per check", n, alloc, len(probe))
	}
}

// TestNoclobberAndPushWithoutSFTP: set -C works on a simulated host as in
// sh (> refuses an existing file, >> appends, set +C lifts it), so that
// gpulab's push through a session, its fallback when SFTP fails, lands
// (it failed with "set: invalid option: -C").
func TestNoclobberAndPushWithoutSFTP(t *testing.T) {
	f, files := startFleet(t, Config{Hosts: 1, Seed: 1})
	g := newGpulab(t, files, orchestrator.Overrides{})
	name := f.Hosts()[0].Name
	r := g.run(t, name, `set -C; echo a > f; echo b > f; echo "rc=$?"; echo c >> f; cat f; set +C; echo d > f; cat f; set -eC -o pipefail; echo x > f`)
	out, errOut := string(r.Stdout), string(r.Stderr)
	if out != "rc=1\na\nc\nd\n" || !strings.Contains(errOut, "cannot overwrite existing file") {
		t.Errorf("set -C: stdout %q, stderr %q", out, errOut)
	}
	data := []byte("#!/bin/sh\necho pushed\n")
	res := g.dial(t, name).Push(context.Background(), orchestrator.PushSpec{Name: "hello.sh", Data: data, Mode: 0o755, NoSFTP: true})
	if res.Class != orchestrator.OK || res.Method != "session" {
		t.Fatalf("push through a session: %s %s (method %q)", res.Class, res.Err, res.Method)
	}
	if r := g.run(t, name, res.Path); strings.TrimSpace(string(r.Stdout)) != "pushed" {
		t.Errorf("the pushed file: %q %q", r.Stdout, r.Stderr)
	}
}

// TestProbeScratchIsTheFleetsAndGoesWithIt: where the user set no
// TMPDIR, the probe processes' scratch is a private directory in memory
// (when /dev/shm is a tmpfs with room), the probe runs with it, and it is
// removed with the fleet; where TMPDIR is set, it is the fleet's own
// directory in TMPDIR.
func TestProbeScratchIsTheFleetsAndGoesWithIt(t *testing.T) {
	probe := simulatorProbe(t)
	t.Setenv("TMPDIR", "")
	f, files := startFleet(t, Config{Hosts: 1})
	switch base := memScratchBase(); {
	case base == "" && f.scratch != f.tmp:
		t.Fatalf("no memory filesystem, yet the scratch is %s, not the fleet's %s", f.scratch, f.tmp)
	case base != "" && filepath.Dir(f.scratch) != base:
		t.Fatalf("the scratch is %s, want a directory in %s", f.scratch, base)
	}
	if fi, err := os.Lstat(f.scratch); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the scratch %s: %v %v, want a directory 0700", f.scratch, fi, err)
	}
	g := newGpulab(t, files, orchestrator.Overrides{})
	conn := g.dial(t, f.Hosts()[0].Name)
	p := conn.Push(t.Context(), orchestrator.PushSpec{Name: "nvmlprobe", Data: probe, Mode: 0o700})
	if p.Class != orchestrator.OK {
		t.Fatalf("push: %s %s", p.Class, p.Err)
	}
	if r := conn.Run(t.Context(), "probe", orchestrator.Quote(p.Path), orchestrator.RunOptions{}); r.Class != orchestrator.OK || !bytes.Contains(r.Stdout, []byte(`"gpus"`)) {
		t.Fatalf("the probe: %s, exit %d, %s", r.Class, r.ExitCode, r.Stderr)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(f.scratch); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after Close the scratch %s is still there: %v", f.scratch, err)
	}

	t.Setenv("TMPDIR", t.TempDir())
	f, _ = startFleet(t, Config{Hosts: 1})
	if f.scratch != f.tmp {
		t.Errorf("with TMPDIR set the scratch is %s, want the fleet's %s", f.scratch, f.tmp)
	}
}
