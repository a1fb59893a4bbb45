package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpulab/gpulab/internal/sshtest"
	"github.com/gpulab/gpulab/internal/testreq"
)

// holdLab holds its hosts until cleanup, as a lab that starts a pod with
// sleep 3600 does: its run step never ends by itself, and its cleanup
// writes a marker once the test lets it (a "go" file on the host).
const holdLab = `id = "zz-hold"
name = "Holds its hosts until cleanup"
goal = "Cleanup runs however the run ends"
plane = "data"
maturity = "draft"
estimate_minutes = 1

[[step]]
id = "prepare"
phase = "setup"
command = "echo prepared > \"$LABDIR/setup\""

[[step]]
id = "hold"
phase = "run"
command = "echo holding > \"$LABDIR/holding\"; sleep 300"
timeout = "10m"

[step.metrics]
held = "exit_code"

[[step]]
id = "release"
phase = "cleanup"
command = "echo releasing > \"$LABDIR/releasing\"; while [ ! -e \"$LABDIR/go\" ]; do sleep 0.1; done; echo released > \"$LABDIR/released\""

[[step]]
id = "tidy"
phase = "cleanup"
command = "echo tidied > \"$LABDIR/tidied\""

[[criterion]]
id = "held"
description = "the hosts were held"
expr = "metrics.held == 0"
impact = "minor"
`

type holdFleet struct {
	dir, inv, labs, results string
	labdirs                 []string
	names                   string
}

// startHoldFleet starts n real sshd hosts, each with a directory of its own
// for the lab's markers, an inventory naming them and the hold lab.
func startHoldFleet(t *testing.T, n int) holdFleet {
	t.Helper()
	h := holdFleet{dir: t.TempDir()}
	for i := range n {
		d := filepath.Join(h.dir, fmt.Sprintf("host%02d", i+1))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		h.labdirs = append(h.labdirs, d)
	}
	f := sshtest.Start(t, n, sshtest.Options{EnvFor: func(i int) map[string]string {
		return map[string]string{"LABDIR": h.labdirs[i], "XDG_CACHE_HOME": filepath.Join(h.labdirs[i], "cache")}
	}})
	var inv strings.Builder
	fmt.Fprintf(&inv, "[defaults]\nuser = %q\nidentity_file = %q\nknown_hosts = %q\n", f.User, f.ClientKey, f.KnownHosts)
	for i, s := range f.Servers {
		fmt.Fprintf(&inv, "[[host]]\nname = \"gpu%02d\"\naddress = %q\nport = %d\n", i+1, s.Addr, s.Port)
	}
	h.inv = filepath.Join(h.dir, "inventory.toml")
	h.labs = filepath.Join(h.dir, "labs")
	h.results = filepath.Join(h.dir, "results")
	h.names = fmt.Sprintf("gpu[01-%02d]", n)
	if err := os.WriteFile(h.inv, []byte(inv.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(h.labs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.labs, "hold.toml"), []byte(holdLab), 0o644); err != nil {
		t.Fatal(err)
	}
	return h
}

// waitMarkers polls, up to a generous deadline, until every host has the
// marker file, and fails at once if run (when not nil) exits first.
func (h holdFleet) waitMarkers(t *testing.T, run *labProc, marker string) {
	t.Helper()
	var exited <-chan struct{} // nil, never ready, without a run to watch
	if run != nil {
		exited = run.done
	}
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		missing := 0
		for _, d := range h.labdirs {
			if _, err := os.Stat(filepath.Join(d, marker)); err != nil {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		select {
		case <-exited:
			t.Fatalf("gpulab exited %d while %d of %d hosts still lacked %s\nstdout: %s\nstderr: %s", run.ProcessState.ExitCode(), missing, len(h.labdirs), marker, run.out, run.errOut)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d hosts still lack %s after 90s", missing, len(h.labdirs), marker)
		}
	}
}

// letCleanupFinish lets every host's cleanup go past its wait.
func (h holdFleet) letCleanupFinish(t *testing.T) {
	t.Helper()
	for _, d := range h.labdirs {
		if err := os.WriteFile(filepath.Join(d, "go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func (h holdFleet) countMarkers(marker string) int {
	n := 0
	for _, d := range h.labdirs {
		if _, err := os.Stat(filepath.Join(d, marker)); err == nil {
			n++
		}
	}
	return n
}

// record reads the one record the run wrote.
func (h holdFleet) record(t *testing.T) map[string]any {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(h.results, "zz-hold", "*", "record.json"))
	if len(files) != 1 {
		t.Fatalf("%d records in %s, want 1", len(files), h.results)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// labProc is a running `gpulab lab run`; done is closed once it exited.
type labProc struct {
	*exec.Cmd
	out, errOut *strings.Builder
	done        chan struct{}
}

// startLabRun starts `gpulab lab run zz-hold` on the fleet.
func (h holdFleet) startLabRun(t *testing.T) *labProc {
	t.Helper()
	cmd := exec.Command(gpulabBinary(t), "lab", "run", "zz-hold", "-H", h.names, "--inventory", h.inv, "--labs", h.labs, "--results", h.results, "--no-probe")
	cmd.Env = []string{"HOME=" + h.dir, "PATH=" + os.Getenv("PATH")}
	p := &labProc{Cmd: cmd, out: new(strings.Builder), errOut: new(strings.Builder), done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-p.done })
	return p
}

// waitExit waits for the run, up to a generous deadline, and returns its
// exit code.
func (p *labProc) waitExit(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
		return p.ProcessState.ExitCode()
	case <-time.After(90 * time.Second):
		_ = p.Process.Kill()
		t.Fatalf("gpulab did not exit within 90s\nstderr: %s", p.errOut)
	}
	return -1
}

func steps(rec map[string]any, host int) []string {
	var ids []string
	hosts, _ := rec["hosts"].([]any)
	if host >= len(hosts) {
		return nil
	}
	for _, s := range hosts[host].(map[string]any)["steps"].([]any) {
		ids = append(ids, s.(map[string]any)["id"].(string))
	}
	return ids
}

// SIGHUP (the operator's SSH link to the terminal dropped) mid-run stops
// the lab as Ctrl-C does: cleanup runs on every host, the record keeps the
// steps that ran, and gpulab exits 130.
func TestLabRunSIGHUPCleansUp(t *testing.T) {
	h := startHoldFleet(t, 10)
	h.letCleanupFinish(t)
	run := h.startLabRun(t)
	h.waitMarkers(t, run, "holding") // every host is in the run step
	if err := run.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if code := run.waitExit(t); code != 130 {
		t.Errorf("exit %d after SIGHUP, want 130\nstdout: %s\nstderr: %s", code, run.out, run.errOut)
	}
	if n := h.countMarkers("released"); n != 10 {
		t.Errorf("cleanup ran on %d of 10 hosts after SIGHUP", n)
	}
	rec := h.record(t)
	if rec["interrupted"] != true || rec["complete"] == true {
		t.Errorf("the record says interrupted %v, complete %v", rec["interrupted"], rec["complete"])
	}
	for i := range 10 {
		if got := strings.Join(steps(rec, i), ","); got != "prepare,hold,release,tidy" {
			t.Errorf("host %d's steps in the record: %s", i+1, got)
		}
	}
}

// A second Ctrl-C abandons cleanup: gpulab exits promptly and says, and
// writes into the record, exactly what was left on each host; the record
// already held the steps that ran.
func TestLabRunSecondInterruptAbandonsCleanup(t *testing.T) {
	h := startHoldFleet(t, 3)
	run := h.startLabRun(t)
	h.waitMarkers(t, run, "holding")
	// The record on disk is kept up to date: the setup step is there
	// while the run step still runs.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		files, _ := filepath.Glob(filepath.Join(h.results, "zz-hold", "*", "record.json"))
		if len(files) == 1 {
			if data, _ := os.ReadFile(files[0]); strings.Count(string(data), `"id": "prepare"`) == 3 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("record.json did not show the finished setup step of every host within 60s")
		}
	}
	_ = run.Process.Signal(os.Interrupt)
	h.waitMarkers(t, run, "releasing") // cleanup is under way
	_ = run.Process.Signal(os.Interrupt)
	if code := run.waitExit(t); code != 130 {
		t.Errorf("exit %d after a second Ctrl-C, want 130\nstderr: %s", code, run.errOut)
	}
	if n := h.countMarkers("released"); n != 0 {
		t.Errorf("cleanup finished on %d hosts although it was abandoned", n)
	}
	for i := 1; i <= 3; i++ {
		if want := fmt.Sprintf("cleanup abandoned on gpu%02d; left to undo by hand:", i); !strings.Contains(run.out.String(), want) {
			t.Errorf("the output does not say what was left on gpu%02d:\n%s", i, run.out)
		}
	}
	if !strings.Contains(run.out.String(), `echo tidied > "$LABDIR/tidied"`) {
		t.Errorf("the output does not name the cleanup command not run:\n%s", run.out)
	}
	rec := h.record(t)
	for _, hr := range rec["hosts"].([]any) {
		left, _ := hr.(map[string]any)["cleanup_left"].([]any)
		if len(left) != 2 {
			t.Errorf("%v: cleanup_left %v, want the release (cut short) and tidy commands", hr.(map[string]any)["host"], left)
		}
	}
}

// Quitting the workbench during a lab run asks first; q again stops the
// run, shows that cleanup is running, and quits once it has run on every
// host.
func TestWorkbenchQuitMidRunCleansUp(t *testing.T) {
	tmux := testreq.Tool(t, "tmux", "the workbench is driven in tmux (apt-get install tmux)")
	h := startHoldFleet(t, 4)
	s := newTmux(t, tmux, 120, 30, "HOME="+h.dir+" SSH_AUTH_SOCK= GPULAB_RESULTS="+h.results+" "+gpulabBinary(t)+" --inventory "+h.inv+" --labs "+h.labs)
	s.waitFor("CONTROL PLANE")
	s.keys("5")
	s.waitFor("▶ topology-sanity") // hosts and no cluster: a lab that needs none
	s.keys("End")
	s.waitFor("▶ zz-hold")
	s.keys("Enter")
	h.waitMarkers(t, nil, "holding")
	s.keys("q")
	s.waitFor("a run is going: q or ctrl+c again quits (cleanup runs), any other key stays")
	s.keys("q")
	s.waitFor("Cleaning up on 4 hosts before gpulab quits")
	h.waitMarkers(t, nil, "releasing")
	h.letCleanupFinish(t)
	s.waitFor("EXIT=0")
	if n := h.countMarkers("released"); n != 4 {
		t.Errorf("cleanup ran on %d of 4 hosts after quitting mid-run", n)
	}
	if rec := h.record(t); rec["interrupted"] != true {
		t.Errorf("the record says interrupted %v", rec["interrupted"])
	}
}
