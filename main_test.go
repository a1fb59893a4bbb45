package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpulab/gpulab/internal/sshtest"
	"github.com/gpulab/gpulab/internal/testreq"
)

// TestWorkbenchInTmux is the smoke test: the real binary in a real terminal
// (tmux), driven by key presses, read back from the screen. It opens on the
// Map, moves to the Matrix, filters by isolation level, opens help and quits,
// and the terminal is given back.
func TestWorkbenchInTmux(t *testing.T) {
	tmux := testreq.Tool(t, "tmux", "the TUI smoke test drives the workbench in it (apt-get install tmux)")
	bin := filepath.Join(t.TempDir(), "gpulab")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name  string
		w, h  int
		extra string
	}{
		{"80x24", 80, 24, ""},
		{"160x48-no-color", 160, 48, "NO_COLOR=1 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTmux(t, tmux, tc.w, tc.h, tc.extra+"HOME="+t.TempDir()+" "+bin)
			s.waitFor("CONTROL PLANE")
			s.waitFor("[kube-scheduler]")
			s.waitFor("[Map]")
			s.keys("Right", "Right")
			s.waitFor("[Volcano]")
			s.keys("Tab")
			s.waitFor("[Matrix]")
			s.waitFor("25 of 25 projects")
			s.keys("Right", "Right", "Right", "f", "f", "f")
			s.waitFor("Isolation: Strong")
			s.waitFor("5 of 25 projects")
			if tc.extra != "" {
				if esc := s.run("capture-pane", "-e", "-p", "-t", "smoke"); strings.Contains(esc, "\x1b[38") || strings.Contains(esc, "\x1b[48") {
					t.Errorf("NO_COLOR is set but the screen has colour escapes:\n%q", esc)
				}
			}
			s.keys("?")
			s.waitFor("Keys: Matrix")
			s.keys("Escape")
			s.waitGone("Keys: Matrix")
			s.keys("q")
			s.waitFor("EXIT=0")
			if screen := s.capture(); strings.Contains(screen, "[Matrix]") {
				t.Errorf("the workbench's screen is still there after quitting (alternate screen not restored):\n%s", screen)
			}
		})
	}
}

type tmuxSession struct {
	t      *testing.T
	tmux   string
	socket string
}

func newTmux(t *testing.T, tmux string, w, h int, command string) *tmuxSession {
	s := &tmuxSession{t: t, tmux: tmux, socket: fmt.Sprintf("gpulab-smoke-%d-%d", os.Getpid(), time.Now().UnixNano())}
	shell := command + "; echo EXIT=$?; sleep 60"
	s.run("new-session", "-d", "-s", "smoke", "-x", fmt.Sprint(w), "-y", fmt.Sprint(h), "sh", "-c", shell)
	t.Cleanup(func() { _ = exec.Command(tmux, "-L", s.socket, "kill-server").Run() })
	return s
}

func (s *tmuxSession) run(args ...string) string {
	s.t.Helper()
	out, err := exec.Command(s.tmux, append([]string{"-L", s.socket}, args...)...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (s *tmuxSession) capture() string { return s.run("capture-pane", "-p", "-t", "smoke") }

// captureWhole is the screen as capture has it, and whether the workbench
// had finished drawing it. tmux reads what the workbench writes in
// pieces, so a capture can catch a frame half drawn: new lines at the top,
// the last frame's below. The workbench's renderer ends every frame with
// the cursor at the start of the last line, so a screen whose cursor is
// there is whole but for, at most, that line (the status bar). The pane
// and its cursor are read in one tmux command, so nothing is drawn
// between the two.
func (s *tmuxSession) captureWhole() (string, bool) {
	s.t.Helper()
	out := s.run("capture-pane", "-p", "-t", "smoke", ";", "display-message", "-p", "-t", "smoke", "#{cursor_x} #{cursor_y} #{pane_height}")
	out = strings.TrimSuffix(out, "\n")
	i := strings.LastIndex(out, "\n")
	var x, y, h int
	if _, err := fmt.Sscanf(out[i+1:], "%d %d %d", &x, &y, &h); err != nil {
		s.t.Fatalf("tmux's cursor: %q: %v", out[i+1:], err)
	}
	return out[:i+1], x == 0 && y == h-1
}

func (s *tmuxSession) keys(keys ...string) {
	s.t.Helper()
	for _, k := range keys {
		s.run("send-keys", "-t", "smoke", k)
	}
}

func (s *tmuxSession) waitFor(text string)  { s.t.Helper(); s.wait(text, true) }
func (s *tmuxSession) waitGone(text string) { s.t.Helper(); s.wait(text, false) }

func (s *tmuxSession) wait(text string, present bool) {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var screen string
	for time.Now().Before(deadline) {
		screen = s.capture()
		if strings.Contains(screen, text) == present {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("waited 10s for %q to be present=%v; screen:\n%s", text, present, screen)
}

// TestFleetInTmux runs a command from the workbench's Fleet tab on a real
// fleet of OpenSSH servers and reads the result off the screen.
func TestFleetInTmux(t *testing.T) {
	tmux := testreq.Tool(t, "tmux", "the Fleet smoke test drives the workbench in it (apt-get install tmux)")
	caches := t.TempDir()
	f := sshtest.Start(t, 4, sshtest.Options{EnvFor: func(i int) map[string]string {
		return map[string]string{"XDG_CACHE_HOME": filepath.Join(caches, fmt.Sprint(i))}
	}})
	var inv strings.Builder
	fmt.Fprintf(&inv, "[defaults]\nuser = %q\nidentity_file = %q\nknown_hosts = %q\n", f.User, f.ClientKey, f.KnownHosts)
	for i, s := range f.Servers {
		fmt.Fprintf(&inv, "[[host]]\nname = \"gpu%02d\"\naddress = %q\nport = %d\n", i+1, s.Addr, s.Port)
	}
	dir := t.TempDir()
	invPath := filepath.Join(dir, "inventory.toml")
	if err := os.WriteFile(invPath, []byte(inv.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "gpulab")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// A lab of our own, for a guided run: one step every host can run.
	labDir := filepath.Join(dir, "labs")
	os.MkdirAll(labDir, 0o755)
	guided := `id = "kernel-known"
name = "The kernel answers"
goal = "Every host names its kernel."
plane = "data"
maturity = "draft"
estimate_minutes = 1

[[step]]
id = "kernel"
phase = "observe"
title = "Ask the kernel its name"
command = "uname -s"
[step.metrics]
linux = "stdout.trim() == 'Linux'"

[[criterion]]
id = "linux"
description = "The host runs Linux"
expr = "metrics.linux"
impact = "critical"
`
	if err := os.WriteFile(filepath.Join(labDir, "kernel.toml"), []byte(guided), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newTmux(t, tmux, 120, 30, "HOME="+dir+" SSH_AUTH_SOCK= "+bin+" --inventory "+invPath+" --labs "+labDir)
	s.waitFor("CONTROL PLANE")
	s.keys("3")
	s.waitFor("4 hosts: gpu[01-04]. Press : to run a command")
	s.keys(":")
	s.run("send-keys", "-t", "smoke", "-l", "echo hello from; uname -s")
	s.keys("Enter")
	s.waitFor("4/4  4 ok")
	s.waitFor("gpu[01-04] (4 hosts): ok")
	// The NVML probe from the Fleet tab: these hosts have no driver, so each
	// answers with the clean report. It needs the embedded probes (make
	// probes, which CI runs first).
	if _, err := os.Stat("probes/bundle/bin/nvmlprobe-linux-amd64.gz"); err == nil {
		s.keys("p")
		s.waitFor("$ gpulab probe done")
		s.waitFor("no NVML: libnvidia-ml.so.1: cannot open shared object file")
		s.keys("Enter")
		s.waitFor("No NVML on this host")
		s.keys("Escape")
		// Wait for the Escape to land: an Escape and a q that arrive together
		// read as alt+q.
		s.waitGone("No NVML on this host")
	} else if os.Getenv("CI") != "" {
		t.Error("no embedded probe: CI runs make probes before make test")
	} else {
		t.Log("no embedded probe (run make probes): the Fleet tab's probe is not exercised")
	}
	// The Runbooks tab runs the topology runbook on the same fleet: no
	// nvidia-smi there, so every verdict is UNKNOWN, with the reason.
	s.keys("4")
	s.waitFor("▶ topology") // hosts and no cluster: opened on a runbook that needs none
	s.keys("Enter")
	s.waitFor("done 4/4")
	s.waitFor("UNKNOWN gpu[01-04]: no evidence: step topo exited 127")
	s.keys("Escape")
	s.waitFor("▶ topology")
	// The Labs tab runs topology-sanity: no nvidia-smi, so the prerequisite
	// fails on every host, cleanup runs, the criteria end UNKNOWN, and the
	// record is written: the run is NOT RUN (no step ran), not FAILED.
	s.keys("5")
	s.waitFor("▶ topology-sanity")
	s.keys("Enter")
	s.waitFor("NOT RUN: no step ran (every host: prerequisite not met")
	s.waitFor("? UNKNOWN nvlink-mesh (critical) gpu[01-04]: no evidence")
	s.waitFor("record: ")
	if recs, _ := filepath.Glob(filepath.Join(dir, ".local", "share", "gpulab", "results", "topology-sanity", "*", "record.md")); len(recs) != 1 {
		t.Errorf("the Labs tab wrote %d records", len(recs))
	}
	s.keys("Escape")
	s.waitFor("▶ topology-sanity")
	// Step by step: the run waits at the step until enter runs it.
	s.keys("Home")
	s.waitFor("▶ exclusive-baseline")
	for range 3 { // the labs are sorted by id: kernel-known is the fourth
		s.keys("Down")
	}
	s.waitFor("▶ kernel-known")
	s.keys("t")
	s.waitFor("Next: step 1/1 · observe · kernel Ask the kernel its name")
	s.waitFor("measures linux for linux")
	s.keys("Enter")
	s.waitFor("PASSED · step by step")
	s.waitFor("✓ PASS    linux (critical) gpu[01-04]")
	s.keys("Escape")
	s.waitFor("▶ kernel-known")
	// The Results tab lists the record just written and opens it.
	s.keys("6")
	s.waitFor("topology-sanity      gpu[01-04]       not run") // no step ran
	s.waitFor("kernel-known         gpu[01-04]       passed")
	s.keys("Down")
	s.keys("Enter")
	s.waitFor("Lab: topology-sanity") // the record, rendered
	s.waitFor("Conclusion: NOT RUN (no step ran: every host: prerequisite not met")
	s.keys("Escape")
	s.waitFor("▶ ")
	s.keys("q")
	s.waitFor("EXIT=0")
}

// TestExecCtrlC interrupts a fan-out: the remote commands are stopped,
// partial output is printed and gpulab exits 130.
func TestExecCtrlC(t *testing.T) {
	f := sshtest.Start(t, 6, sshtest.Options{})
	dir := t.TempDir()
	var cfg strings.Builder
	for i, s := range f.Servers {
		fmt.Fprintf(&cfg, "Host g%d\n  HostName %s\n  Port %d\n  User %s\n  IdentityFile %s\n  UserKnownHostsFile %s\n", i+1, s.Addr, s.Port, f.User, f.ClientKey, f.KnownHosts)
	}
	cfgPath := filepath.Join(dir, "ssh_config")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "gpulab")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	marker := fmt.Sprintf("%d.%d", 30+os.Getpid()%40, time.Now().Nanosecond()%997)
	cmd := exec.Command(bin, "exec", "-H", "g[1-6]", "-F", cfgPath, "--", "echo started; sleep "+marker)
	cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Ctrl-C once every host runs the command (six remote sleeps seen).
	pgrep := testreq.Tool(t, "pgrep", "the test watches the remote commands start and stop (apt-get install procps)")
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		out, _ := exec.Command(pgrep, "-f", "^sleep "+marker).Output()
		if len(strings.Fields(string(out))) == 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the six remote commands did not start within 60s (pgrep: %q)", out)
		}
	}
	_ = cmd.Process.Signal(os.Interrupt)
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var err error
	select {
	case err = <-waited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("gpulab did not exit within 30s of Ctrl-C\nstderr: %s", errOut.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("after Ctrl-C: exit %d (%v); want 130\nstderr: %s", code, err, errOut.String())
	}
	if !strings.Contains(out.String(), "started") || !strings.Contains(out.String(), "cancelled") || !strings.Contains(errOut.String(), "6 cancelled (g[1-6])") {
		t.Errorf("partial results not printed:\nstdout: %s\nstderr: %s", out.String(), errOut.String())
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		pids, err := exec.Command(pgrep, "-f", "^sleep "+marker).Output()
		if err != nil {
			break // none left
		}
		if time.Now().After(deadline) {
			t.Errorf("remote commands still run 30s after Ctrl-C: %s", pids)
			break
		}
	}
}
