package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/gpulab/gpulab/sim"
)

// workbenchPeak bounds the workbench's own resident memory (VmHWM) while
// its simulated fleet is bombed: the fleet's memory is its child's, and
// whatever the bombs do, none of it is the workbench's. The workbench on
// four hosts holds about 60 MiB; the bound leaves room for the race-free
// build on another machine, and is far below any bomb's gigabytes.
const workbenchPeak = 256 << 20

// TestDemoSurvivesEveryBomb opens the real workbench (gpulab demo, in
// tmux) and sends its simulated fleet, over SSH with the fleet's own key,
// every bomb the hostile review used: a fork bomb, a pipe bomb, a
// recursion, x=$(seq ...), a fork bomb inside eval, a shell fed
// /dev/zero, 2,000 env requests of 200 kB, 300 idle connections, and,
// under a lowered address-space limit, one expansion of 1.6 GB (what a
// variable doubled in a loop comes to), which ends the fleet's process. The workbench stays up and under workbenchPeak, says "the
// simulated fleet stopped" and why, R starts the fleet again on the same
// ports with the same keys (the inventory written at the start still
// reaches it), and q quits with exit status 0 and the fleet's directory
// gone.
func TestDemoSurvivesEveryBomb(t *testing.T) {
	bin := buildGpulab(t)
	s, tmp := demoTmux(t, bin, 160, 40, sim.MemoryEnv+"=1024 ", "demo")
	screenWait(t, s, nil, "gpulab  SIMULATED ", "[Map]")
	var dirs []string
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if dirs = fleetDirs(t, tmp); len(dirs) == 1 {
			if _, err := os.Stat(filepath.Join(dirs[0], "inventory.toml")); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 2 minutes for the demo's inventory in %s: %v", tmp, dirs)
		}
	}
	files := sim.FilesFor(filepath.Join(dirs[0], "inventory.toml"))
	workbench := workbenchPID(t, s)
	dial, tryDial := fleetDialer(t, files)

	run := func(host, line string) (string, string, int) {
		t.Helper()
		c := dial(host)
		defer c.Close()
		return sessionRun(t, c, line, nil)
	}
	for _, b := range []struct{ name, line, stderr string }{
		{"fork bomb", `f() { f & f & wait; }; f`, "Resource temporarily unavailable"},
		{"pipe bomb", `b() { b | b & }; b; wait`, ""},
		{"recursion", `f() { f; }; f`, "maximum function nesting level exceeded"},
		{"substitution", `x=$(seq 1 1000000000000); echo ${#x}`, "write error"},
		{"fork bomb in eval", `eval 'f() { f & f & wait; }; f'`, "inside eval is not simulated"},
	} {
		_, stderr, _ := run("dgx01", b.line)
		if !strings.Contains(stderr, b.stderr) {
			t.Errorf("%s: stderr %.300q, want it to say %q", b.name, stderr, b.stderr)
		}
		if stdout, _, _ := run("dgx02", "echo alive"); stdout != "alive\n" {
			t.Fatalf("after the %s on dgx01, dgx02 answers %q; screen:\n%s", b.name, stdout, s.capture())
		}
	}

	// A shell fed zeros, and env requests, from a raw session.
	c := dial("dgx01")
	if _, stderr, code := sessionRun(t, c, "", io.LimitReader(zeroReader{}, 1<<30)); code != 126 || !strings.Contains(stderr, "over") {
		t.Errorf("a shell fed a GiB of zeros: exit %d, %q", code, stderr)
	}
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("v", 200<<10)
	accepted := 0
	for i := range 2000 {
		if sess.Setenv(fmt.Sprintf("LC_%d", i), big) == nil {
			accepted++
		}
	}
	if accepted > 0 {
		t.Errorf("%d env requests of 200 kB were accepted, past a bound of 64 KiB", accepted)
	}
	sess.Close()
	c.Close()

	// Idle connections that never log in.
	addr := hostAddr(t, files, "dgx03")
	var idle []net.Conn
	for range 300 {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			break // the test's own descriptors: enough were made
		}
		idle = append(idle, conn)
	}
	// Past MaxStartups they are closed at once (as sshd drops them); when
	// they are gone, the host answers: its descriptors were not used up.
	// The fleet sees each close when it reads it, so a login right after
	// can still be dropped as one too many, as sshd would: wait for one.
	for _, conn := range idle {
		conn.Close()
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		c, err := tryDial("dgx03")
		if err == nil {
			stdout, _, _ := sessionRun(t, c, "echo alive", nil)
			c.Close()
			if stdout != "alive\n" {
				t.Errorf("dgx03 after %d idle connections: %q", len(idle), stdout)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dgx03 refused every login for a minute after its %d idle connections closed: %v", len(idle), err)
		}
	}

	// A file of 96 MB read into a variable (under the watchdog's 256 MiB),
	// and a word of sixteen of it: one expansion, which no watchdog can
	// stop midway, past the GiB the fleet may map. The hard limit ends
	// the fleet's process, and the workbench goes on.
	_, _, _ = run("dgx01", `seq 1 12000000 > f; x=$(<f); y=$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x$x; echo ${#y}`)
	screen := screenWait(t, s, nil, "the simulated fleet stopped: ", "R starts it again")
	if !strings.Contains(screen, "the simulated fleet stopped: it ran out of memory") {
		t.Errorf("the status bar does not say the fleet ran out of memory: %s", lastLine(screen))
	}
	t.Logf("the status bar after 1.6 GB in one expansion: %s", lastLine(screen))
	if !alive(workbench) {
		t.Fatalf("the workbench (pid %d) is gone", workbench)
	}
	s.keys("R")
	for deadline := time.Now().Add(2 * time.Minute); strings.Contains(s.capture(), "the simulated fleet stopped"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 2 minutes for the fleet to start again:\n%s", s.capture())
		}
	}
	if stdout, _, _ := run("dgx01", "hostname"); stdout != "dgx01\n" {
		t.Errorf("after R, with the inventory written at the start: %q", stdout)
	}
	peak := vmHWM(t, workbench)
	t.Logf("the workbench's peak resident memory through every bomb: %d MiB", peak>>20)
	if peak > workbenchPeak {
		t.Errorf("the workbench's peak resident memory was %d MiB, over %d MiB: the fleet's bombs reached it", peak>>20, workbenchPeak>>20)
	}
	s.keys("q")
	screenWait(t, s, nil, "EXIT=0")
	if dirs := fleetDirs(t, tmp); len(dirs) != 0 {
		t.Errorf("the fleet's directory is still there after quitting: %v", dirs)
	}
}

// workbenchPID is the pid of the gpulab the tmux pane's shell started.
func workbenchPID(t *testing.T, s *tmuxSession) int {
	t.Helper()
	shell, err := strconv.Atoi(strings.TrimSpace(s.run("display-message", "-p", "-t", "smoke", "#{pane_pid}")))
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if kids := childrenOf(shell); len(kids) == 1 {
			return kids[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for the pane's shell (pid %d) to have one child, gpulab: %v", shell, childrenOf(shell))
		}
	}
}

func childrenOf(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, w := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(w); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

// vmHWM is a process's peak resident memory, from /proc/PID/status.
func vmHWM(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// fleetDialer dials a host of the fleet files describe, as OpenSSH would
// with the fleet's ssh_config: its key, its known_hosts.
func fleetDialer(t *testing.T, files sim.Files) (dial func(host string) *ssh.Client, try func(host string) (*ssh.Client, error)) {
	t.Helper()
	pem, err := os.ReadFile(files.Key)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		t.Fatal(err)
	}
	hk, err := knownhosts.New(files.KnownHosts)
	if err != nil {
		t.Fatal(err)
	}
	try = func(host string) (*ssh.Client, error) { return fleetLogin(t, files, signer, hk, host) }
	return func(host string) *ssh.Client {
		t.Helper()
		c, err := try(host)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}, try
}

// fleetLogin logs in to one host of the fleet, or says why it could not.
func fleetLogin(t *testing.T, files sim.Files, signer ssh.Signer, hk ssh.HostKeyCallback, host string) (*ssh.Client, error) {
	t.Helper()
	addr := hostAddr(t, files, host)
	conn, err := net.DialTimeout("tcp", addr, time.Minute)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", host, err)
	}
	_ = conn.SetDeadline(time.Now().Add(2 * time.Minute)) // the handshake's
	sc, chans, reqs, err := ssh.NewClientConn(conn, addr, &ssh.ClientConfig{User: sim.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: hk})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("ssh %s: %w", host, err)
	}
	_ = conn.SetDeadline(time.Time{})
	return ssh.NewClient(sc, chans, reqs), nil
}

// hostAddr is host's 127.0.0.1:PORT in the fleet's ssh_config.
func hostAddr(t *testing.T, files sim.Files, host string) string {
	t.Helper()
	b, err := os.ReadFile(files.SSHConfig)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == "Host "+host && i+2 < len(lines) {
			if port, ok := strings.CutPrefix(strings.TrimSpace(lines[i+2]), "Port "); ok {
				return net.JoinHostPort("127.0.0.1", port)
			}
		}
	}
	t.Fatalf("no Host %s with its Port in %s", host, files.SSHConfig)
	return ""
}

// sessionRun runs line in one session (a shell reading stdin when line
// is ""), with two minutes to end.
func sessionRun(t *testing.T, c *ssh.Client, line string, stdin io.Reader) (string, string, int) {
	t.Helper()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatalf("new session: %v", err)
	}
	defer sess.Close()
	var o, e bytes.Buffer
	sess.Stdout, sess.Stderr, sess.Stdin = &o, &e, stdin
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		if line == "" {
			if err := sess.Shell(); err != nil {
				done <- err
				return
			}
			done <- sess.Wait()
			return
		}
		done <- sess.Run(line)
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		t.Fatalf("%q: no end in 2 minutes", line)
	}
	var ee *ssh.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitStatus()
	} else if err != nil {
		code = -1
	}
	return o.String(), e.String(), code
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func lastLine(screen string) string {
	lines := strings.Split(strings.TrimRight(screen, "\n "), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
