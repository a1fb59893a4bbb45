package sim

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/orchestrator"
)

// fleetTargets resolves a written inventory as gpulab does.
func fleetTargets(t *testing.T, files Files) []orchestrator.Target {
	t.Helper()
	targets, _, err := files.Targets()
	if err != nil {
		t.Fatal(err)
	}
	return targets
}

// A command that ends at once must not close its session before the
// exec request's reply went out (the client then sees "start command:
// EOF", a lost host): seen once in 1,000 on a busy machine.
func TestInstantCommandsAreNeverLost(t *testing.T) {
	_, files := startFleet(t, Config{Hosts: 20})
	targets := fleetTargets(t, files)
	e := &orchestrator.Engine{Dialer: &orchestrator.Dialer{Keys: &orchestrator.Keyring{}}, Concurrency: len(targets)}
	e.Pool = &orchestrator.Pool{Dialer: e.Dialer}
	defer e.Pool.Close()
	for i := 0; i < 50; i++ {
		for _, r := range e.Run(context.Background(), orchestrator.Plan{Targets: targets, Steps: []orchestrator.Step{{Name: "true", Command: "true"}, {Name: "exit", Command: "exit 3"}}}, nil) {
			if r.Class != orchestrator.OK && r.Class != orchestrator.Exit {
				t.Fatalf("run %d, %s: %s %s", i, r.Host, r.Class, r.Err)
			}
		}
	}
}

// A host's tree is made on first use, and a host whose tree cannot be made
// (its directory is taken: a full or broken disk stands in) still answers
// its GPU tools; its writes fail as on a host whose disk failed.
func TestTreeMadeOnFirstUse(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dgx02"), nil, 0o600); err != nil { // dgx02's tree cannot be made
		t.Fatal(err)
	}
	f, files := startFleet(t, Config{Hosts: 2, Dir: dir})
	targets := fleetTargets(t, files)
	e := &orchestrator.Engine{Dialer: &orchestrator.Dialer{Keys: &orchestrator.Keyring{}}, Concurrency: 2}
	run := func(cmd string) []orchestrator.HostResult {
		return e.Run(context.Background(), orchestrator.Plan{Targets: targets, Steps: []orchestrator.Step{{Name: "s", Command: cmd}}}, nil)
	}
	for _, r := range run("nvidia-smi -L | grep -c '^GPU '") {
		if r.Class != orchestrator.OK || strings.TrimSpace(string(r.Steps[0].Stdout)) != "8" {
			t.Errorf("%s: %s %s %q", r.Host, r.Class, r.Err, r.Steps[0].Stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "dgx01")); !os.IsNotExist(err) {
		t.Errorf("nvidia-smi made dgx01's tree (%v): a command that touches no file must not", err)
	}
	rs := run("echo hi > note && cat note")
	if rs[0].Class != orchestrator.OK || string(rs[0].Steps[0].Stdout) != "hi\n" {
		t.Errorf("dgx01: %s %q %q", rs[0].Class, rs[0].Steps[0].Stdout, rs[0].Steps[0].Stderr)
	}
	if rs[1].Class != orchestrator.Exit || !strings.Contains(string(rs[1].Steps[0].Stderr), "note") {
		t.Errorf("dgx02 (no tree): %s, stderr %q: want the write refused", rs[1].Class, rs[1].Steps[0].Stderr)
	}
	_ = f
}

// gpulab's wrapper is recognised whatever the command holds, so that the
// command runs directly (no nested shell) and stops when stdin closes.
func TestUnwrapEveryCommand(t *testing.T) {
	for _, c := range []string{"x", "true", "nvidia-smi -L | grep -c '^GPU '", `echo "$HOME" 'a'\''b' \\ ; exit 3`, "printf '%s\\n' \"it's\"", "a\nb", ""} {
		got, ok := unwrap(orchestrator.Wrap(c))
		if !ok || got != c {
			t.Errorf("unwrap(Wrap(%q)) = %q, %v", c, got, ok)
		}
	}
	for _, line := range []string{"true", orchestrator.Wrap("x") + " y", orchestrator.Wrap("x") + "; touch m"} {
		if got, ok := unwrap(line); ok {
			t.Errorf("unwrap(%q) = %q: not a wrapped command", line, got)
		}
	}
}

// The simulation runs in the operator's process and on its disk: a host's
// files and a tool's input are bounded, and past the bound the host says
// what a full disk or a tool out of memory says.
func TestHostDiskAndMemoryAreBounded(t *testing.T) {
	oldDisk, oldInput := hostDisk, maxInput
	hostDisk, maxInput = 256<<10, 32<<10
	t.Cleanup(func() { hostDisk, maxInput = oldDisk, oldInput })
	f, files := startFleet(t, Config{Hosts: 1})
	targets := fleetTargets(t, files)
	e := &orchestrator.Engine{Dialer: &orchestrator.Dialer{Keys: &orchestrator.Keyring{}}, Concurrency: 1}
	run := func(cmd string) orchestrator.Result {
		r := e.Run(context.Background(), orchestrator.Plan{Targets: targets, Steps: []orchestrator.Step{{Name: "s", Command: cmd}}}, nil)[0]
		if len(r.Steps) == 0 {
			t.Fatalf("%s: %s %s", cmd, r.Class, r.Err)
		}
		return r.Steps[0]
	}
	r := run("seq 1 60000 > big; echo rc=$?; seq 1 60000 | wc -l")
	if !strings.Contains(string(r.Stdout), "rc=1\n60000\n") || !strings.Contains(string(r.Stderr), "seq: write error: No space left on device") {
		t.Errorf("writing past the disk: stdout %q stderr %q; want the write refused, and wc to stream", r.Stdout, r.Stderr)
	}
	var size int64
	_ = filepath.Walk(filepath.Join(f.dir, "dgx01"), func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			size += fi.Size()
		}
		return nil
	})
	if size > hostDisk {
		t.Errorf("the host's tree holds %d bytes, over its %d-byte disk", size, hostDisk)
	}
	// Removing the file frees the space.
	if r := run("rm big && seq 1 1000 > small && wc -l < small"); strings.TrimSpace(string(r.Stdout)) != "1000" {
		t.Errorf("after rm: %q %q", r.Stdout, r.Stderr)
	}
	if r := run("seq 1 20000 | sort -n | tail -1"); !strings.Contains(string(r.Stderr), "memory exhausted") {
		t.Errorf("sort of more than the input bound: stdout %q stderr %q", r.Stdout, r.Stderr)
	}
}

// gpulab's push runs `umask 077` before writing through a session: the
// builtin the interpreter lacks is answered, not an error on stderr.
func TestUmaskIsAnswered(t *testing.T) {
	_, files := startFleet(t, Config{Hosts: 1})
	targets := fleetTargets(t, files)
	e := &orchestrator.Engine{Dialer: &orchestrator.Dialer{Keys: &orchestrator.Keyring{}}, Concurrency: 1}
	r := e.Run(context.Background(), orchestrator.Plan{Targets: targets, Steps: []orchestrator.Step{{Name: "u", Command: "umask 077 && umask; umask 9x"}}}, nil)[0]
	if len(r.Steps) != 1 || string(r.Steps[0].Stdout) != "0022\n" || !strings.Contains(string(r.Steps[0].Stderr), "umask: 9x: invalid octal number") {
		t.Errorf("umask: %+v", r)
	}
}

// A bug in the simulation (here a tool that panics) ends its session with
// an error; the host and the fleet keep serving.
func TestPanicEndsOnlyItsSession(t *testing.T) {
	tools["gpulab-test-panic"] = func(*toolCall, []string) int { panic("boom") }
	t.Cleanup(func() { delete(tools, "gpulab-test-panic") })
	_, files := startFleet(t, Config{Hosts: 2})
	for _, cmd := range []string{"gpulab-test-panic", "echo x | gpulab-test-panic | cat", "gpulab-test-panic & wait"} {
		_, stderr, _ := openssh(t, files, "", "ssh", "-o", "BatchMode=yes", "dgx01", cmd)
		if !strings.Contains(stderr, "internal error in gpulab-test-panic: boom") {
			t.Errorf("%s: stderr %q", cmd, stderr)
		}
	}
	for _, h := range []string{"dgx01", "dgx02"} {
		if out, _, err := openssh(t, files, "", "ssh", "-o", "BatchMode=yes", h, "hostname"); err != nil || out != h+"\n" {
			t.Errorf("%s after the panic: %q %v", h, out, err)
		}
	}
}

// --inventory-out never replaces what is not a regular file (a device, a
// directory, a link), writes nothing when it refuses, and refuses a path
// that would split the ssh_config's lines.
func TestWriteInventoryRefusesNonRegularFiles(t *testing.T) {
	f, err := Start(context.Background(), Config{Hosts: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "elsewhere"), filepath.Join(dir, "inv.toml.key")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/dev/null", filepath.Join(dir, "adir"), filepath.Join(dir, "link"), filepath.Join(dir, "inv.toml"), filepath.Join(dir, "a\nb")} {
		before, _ := os.ReadDir(dir)
		if _, err := f.WriteInventory(p); err == nil {
			t.Errorf("WriteInventory(%q) wrote", p)
		}
		if after, _ := os.ReadDir(dir); len(after) != len(before) {
			t.Errorf("WriteInventory(%q) left files behind: %d entries, were %d", p, len(after), len(before))
		}
	}
	if fi, err := os.Stat("/dev/null"); err != nil || fi.Mode()&os.ModeDevice == 0 {
		t.Fatalf("/dev/null is no longer a device: %v %v", fi, err)
	}
	if _, err := Start(context.Background(), Config{Hosts: 2, Drop: []string{"dgx01"}, Hang: []string{"dgx01"}}); err == nil || !strings.Contains(err.Error(), "given --drop and --hang") {
		t.Errorf("--drop and --hang of one host: %v", err)
	}
}

// The interpreter's own builtins, reached through builtin or command,
// answer from the host, never from the operator's PATH or links.
func TestBuiltinsLookAtTheHostOnly(t *testing.T) {
	_, files := startFleet(t, Config{Hosts: 1})
	targets := fleetTargets(t, files)
	e := &orchestrator.Engine{Dialer: &orchestrator.Dialer{Keys: &orchestrator.Keyring{}}, Concurrency: 1}
	cmd := `for c in "builtin type -P sshd" "command type -P sshd" "builtin command -v sshd" "builtin type sshd" "type -P sshd"; do $c; echo "$c: $?"; done; builtin type -P nvidia-smi; mkdir -p /var/run && cd /var/run && builtin pwd -P`
	r := e.Run(context.Background(), orchestrator.Plan{Targets: targets, Steps: []orchestrator.Step{{Name: "b", Command: cmd}}}, nil)[0]
	want := "builtin type -P sshd: 1\ncommand type -P sshd: 1\nbuiltin command -v sshd: 1\nbuiltin type sshd: 1\ntype -P sshd: 1\n/usr/bin/nvidia-smi\n/var/run\n"
	if len(r.Steps) != 1 || string(r.Steps[0].Stdout) != want {
		t.Errorf("builtins: %s %s\nstdout %q\nstderr %q\nwant %q", r.Class, r.Err, r.Steps[0].Stdout, r.Steps[0].Stderr, want)
	}
}

// When the process's heap passes the simulation's bound, every running
// simulated command is stopped with a message; the fleet keeps serving.
func TestMemoryWatchdogStopsCommands(t *testing.T) {
	old := maxHeap
	maxHeap = 1 // every sample is over: the next running command is stopped
	t.Cleanup(func() { maxHeap = old })
	_, files := startFleet(t, Config{Hosts: 1})
	targets := fleetTargets(t, files)
	e := &orchestrator.Engine{Dialer: &orchestrator.Dialer{Keys: &orchestrator.Keyring{}}, Concurrency: 1}
	r := e.Run(context.Background(), orchestrator.Plan{Targets: targets, Steps: []orchestrator.Step{{Name: "w", Command: "sleep 600"}}}, nil)[0]
	if len(r.Steps) != 1 || !strings.Contains(string(r.Steps[0].Stderr), "the simulation's memory reached") {
		t.Errorf("sleep 600 under a tiny memory bound: %s %s %+v", r.Class, r.Err, r.Steps)
	}
}

// Empty files cost a block each, and the hosts of a fleet share a disk of
// their own: many hosts cannot together fill the operator's.
func TestEntriesAndTheFleetDiskAreBounded(t *testing.T) {
	oldDisk := hostDisk
	hostDisk = 64 << 10 // 16 entries of a block
	t.Cleanup(func() { hostDisk = oldDisk })
	f, files := startFleet(t, Config{Hosts: 2})
	targets := fleetTargets(t, files)
	e := &orchestrator.Engine{Dialer: &orchestrator.Dialer{Keys: &orchestrator.Keyring{}}, Concurrency: 2}
	r := e.Run(context.Background(), orchestrator.Plan{Targets: targets[:1], Steps: []orchestrator.Step{{Name: "n", Command: `i=0; while [ $i -lt 100 ]; do : > f$i || break; i=$((i+1)); done; echo made=$i`}}}, nil)[0]
	if len(r.Steps) != 1 || !strings.Contains(string(r.Steps[0].Stdout), "made=") || strings.Contains(string(r.Steps[0].Stdout), "made=100") {
		t.Errorf("100 empty files on a 64 KiB disk: %q %q", r.Steps[0].Stdout, r.Steps[0].Stderr)
	}
	// The fleet's disk: with room for one host's bytes only, the second
	// host's write is refused though its own disk is empty.
	f.disk.limit = hostDisk
	r = e.Run(context.Background(), orchestrator.Plan{Targets: targets[1:], Steps: []orchestrator.Step{{Name: "w", Command: "seq 1 5000 > big"}}}, nil)[0]
	if len(r.Steps) != 1 || !strings.Contains(string(r.Steps[0].Stderr), "No space left on device") {
		t.Errorf("dgx02 past the fleet's disk: %q %q", r.Steps[0].Stdout, r.Steps[0].Stderr)
	}
}

// A simulated host is a GPU node as the cluster it belongs to says: its
// container runtime knows the nvidia runtime and its CDI spec lists the
// GPUs (the pod-cannot-see-gpu runbook reads both).
func TestHostHasTheContainerToolkitsFiles(t *testing.T) {
	_, files := startFleet(t, Config{Hosts: 1})
	out, stderr, err := openssh(t, files, "", "ssh", "-o", "BatchMode=yes", "dgx01", `grep -c 'default_runtime_name = "nvidia"' /etc/containerd/config.toml; ls /etc/cdi; grep -c '^- containerEdits' /etc/cdi/nvidia.yaml`)
	if err != nil || out != "1\nnvidia.yaml\n9\n" {
		t.Errorf("the toolkit's files: %q %v %s", out, err, stderr)
	}
}
