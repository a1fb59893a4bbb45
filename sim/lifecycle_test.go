package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/gpulab/gpulab/orchestrator"
)

// TestKillMidRunIsLost cuts one host off while every host runs NCCL's
// all_reduce_perf: gpulab reports that host lost and the others finish.
// The cut comes once the victim has printed (an event, not a delay); the
// victim then waits, so that the cut always finds it running.
func TestKillMidRunIsLost(t *testing.T) {
	f, files := startFleet(t, Config{Hosts: 3, Seed: 7})
	victim := f.Hosts()[1].Name
	g := newGpulab(t, files, orchestrator.Overrides{})
	g.engine.StreamOutput = true
	cmd := `all_reduce_perf -b 8 -e 128M -f 2 -g 8; [ "$(hostname)" != ` + victim + ` ] || sleep 600`
	events := make(chan orchestrator.Event)
	done := make(chan []orchestrator.HostResult, 1)
	go func() {
		done <- g.engine.Run(context.Background(), orchestrator.Plan{Targets: g.targets, Steps: []orchestrator.Step{{Name: "nccl", Command: cmd}}}, events)
	}()
	killed := false
	for ev := range events {
		if ev.Kind == orchestrator.StepOutput && ev.Host == victim && !killed {
			if err := f.Kill(victim); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	results := <-done
	for _, r := range results {
		switch {
		case r.Host == victim && r.Class != orchestrator.Lost:
			t.Errorf("%s cut off mid-command: class %s (%s), want lost", r.Host, r.Class, r.Err)
		case r.Host != victim && (r.Class != orchestrator.OK || !strings.Contains(string(r.Steps[0].Stdout), "# Avg bus bandwidth")):
			t.Errorf("%s: class %s (%s), want all_reduce_perf to finish:\n%s", r.Host, r.Class, r.Err, r.Steps[0].Stdout)
		}
	}
	// A host cut off stays down: it refuses new connections.
	_, err := g.engine.Dialer.Dial(context.Background(), g.target(t, victim))
	var de *orchestrator.DialError
	if !errors.As(err, &de) || de.Class != orchestrator.Refused {
		t.Errorf("dial %s after the cut: %v, want refused", victim, err)
	}
}

// TestStoppedCommandsEndOnTheHost stops commands as gpulab does (the
// command timeout, the inactivity timeout, Ctrl-C: a TERM signal request
// and its standard input closed): each comes back with its class, and
// every goroutine the command started, on the host's side and on
// gpulab's, is gone while the connection stays open: the command ended
// on the host, not when the fleet closed. Then the fleet closes and
// nothing is left.
func TestStoppedCommandsEndOnTheHost(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	f, files := startFleet(t, Config{Hosts: 1})
	g := newGpulab(t, files, orchestrator.Overrides{})
	conn, err := g.engine.Dialer.Dial(context.Background(), g.targets[0])
	if err != nil {
		t.Fatal(err)
	}
	if r := conn.Run(context.Background(), "warm", "true", orchestrator.RunOptions{}); r.Class != orchestrator.OK {
		t.Fatalf("true: %v %s", r.Class, r.Err)
	}
	connected := goleak.IgnoreCurrent() // the connection's own goroutines

	for _, tc := range []struct {
		name    string
		command string
		opts    orchestrator.RunOptions
		cancel  bool
		want    orchestrator.Class
	}{
		{"timeout", "sleep 600", orchestrator.RunOptions{Timeout: 100 * time.Millisecond}, false, orchestrator.TimeoutCommand},
		{"timeout on a GPU tool", "dcgmi diag -r 3", orchestrator.RunOptions{Timeout: 100 * time.Millisecond}, false, orchestrator.TimeoutCommand},
		{"inactivity", "echo one; sleep 600", orchestrator.RunOptions{Inactivity: 100 * time.Millisecond}, false, orchestrator.Inactive},
		{"cancel", "all_reduce_perf -b 8 -e 8G -f 2 -g 8", orchestrator.RunOptions{}, true, orchestrator.Cancelled},
		{"timeout in a pipeline", "sleep 600 | grep x | head -n 1", orchestrator.RunOptions{Timeout: 100 * time.Millisecond}, false, orchestrator.TimeoutCommand},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		o := tc.opts
		if tc.cancel {
			o.OnOutput = func(int, []byte) { cancel() } // Ctrl-C once it runs
		}
		r := conn.Run(ctx, tc.name, tc.command, o)
		cancel()
		if r.Class != tc.want {
			t.Errorf("%s: %q ended %s (%s), want %s", tc.name, tc.command, r.Class, r.Err, tc.want)
		}
		noLeaks(t, connected)
	}
	// The connection still works after all that.
	if r := conn.Run(context.Background(), "after", "hostname", orchestrator.RunOptions{}); r.Class != orchestrator.OK || string(r.Stdout) != f.Hosts()[0].Name+"\n" {
		t.Errorf("hostname after the stops: %v %q %s", r.Class, r.Stdout, r.Err)
	}
	conn.Close()
	if err := f.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	noLeaks(t, leaks)
}

// TestCloseEndsEverything closes a fleet while a command runs, a hung
// host holds a connection and a dropped one refuses: Close returns, the
// hosts' trees are gone and no goroutine is left.
func TestCloseEndsEverything(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	f, err := Start(context.Background(), Config{Hosts: 3, Drop: []string{"dgx02"}, Hang: []string{"dgx03"}})
	if err != nil {
		t.Fatal(err)
	}
	dir := f.dir
	c := rawClient(t, f, "dgx01")
	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := s.StdoutPipe()
	if err := s.Start("echo started; sleep 600"); err != nil {
		t.Fatal(err)
	}
	if _, err := out.Read(make([]byte, 1)); err != nil { // it runs
		t.Fatal(err)
	}
	hung, err := net.Dial("tcp", f.hosts[2].addr)
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Close()
	if _, err := hung.Write([]byte("SSH-2.0-test\r\n")); err != nil { // accepted, never answered
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if err := wait(t, "a command when its fleet closed", s); err == nil {
		t.Error("the command ended well although its host closed")
	}
	c.Close()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the hosts' trees are still there after Close: %v", err)
	}
	noLeaks(t, leaks)
}

// TestExitStatusAndSignals checks what a session reports, as sshd does:
// the exit status, and exit-signal TERM for a command stopped by a signal
// request or by gpulab's wrapper seeing its standard input close (what
// gpulab reads as Killed, with the signal's name), and nothing at all for
// a host cut off (what gpulab reads as Lost).
func TestExitStatusAndSignals(t *testing.T) {
	f, files := startFleet(t, Config{Hosts: 1})
	name := f.Hosts()[0].Name
	c := rawClient(t, f, name)

	start := func(command string) (*ssh.Session, func() error) {
		t.Helper()
		s, err := c.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		in, _ := s.StdinPipe()
		out, _ := s.StdoutPipe()
		if err := s.Start(command); err != nil {
			t.Fatal(err)
		}
		// Every command here prints a line first: it runs once read.
		if _, err := out.Read(make([]byte, 1)); err != nil {
			t.Fatalf("%q printed nothing: %v", command, err)
		}
		return s, in.Close
	}
	exitSignal := func(what string, s *ssh.Session) {
		t.Helper()
		err := wait(t, what, s)
		var ee *ssh.ExitError
		if !errors.As(err, &ee) || ee.Signal() != "TERM" {
			t.Errorf("%s: %v, want exit-signal TERM", what, err)
		}
	}

	s, _ := start("echo x; exit 3")
	var ee *ssh.ExitError
	if err := wait(t, "exit 3", s); !errors.As(err, &ee) || ee.ExitStatus() != 3 || ee.Signal() != "" {
		t.Errorf("exit 3: %v, want exit status 3", err)
	}
	s, closeStdin := start(orchestrator.Wrap("echo started; sleep 600"))
	closeStdin()
	exitSignal("the wrapped command's standard input closed", s)
	s, _ = start("echo started; sleep 600")
	if err := s.Signal(ssh.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exitSignal("signal TERM", s)

	// gpulab's own reading of the same: Exit with its code; Lost when the
	// host goes away mid-command.
	g := newGpulab(t, files, orchestrator.Overrides{})
	conn := g.dial(t, name)
	if r := conn.Run(context.Background(), "exit", "exit 3", orchestrator.RunOptions{}); r.Class != orchestrator.Exit || r.ExitCode != 3 {
		t.Errorf("gpulab: exit 3 is %s, code %d, want exit 3", r.Class, r.ExitCode)
	}
	killed := make(chan struct{})
	r := conn.Run(context.Background(), "cut", "echo started; sleep 600", orchestrator.RunOptions{OnOutput: func(int, []byte) {
		select {
		case <-killed:
		default:
			close(killed)
			_ = f.Kill(name)
		}
	}})
	if r.Class != orchestrator.Lost {
		t.Errorf("gpulab: a host cut off mid-command is %s (%s), want lost", r.Class, r.Err)
	}
	s2, err := c.NewSession()
	if err == nil {
		err = s2.Run("true")
	}
	if err == nil {
		t.Error("a host cut off still runs commands")
	}
}

// wait waits for a session to end; a session that does not end is a
// failure, reported after a minute rather than at the test's timeout.
func wait(t *testing.T, what string, s *ssh.Session) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("%s: the session did not end", what)
		return nil
	}
}

// noLeaks fails t if goroutines that opts do not ignore are left: it waits
// for them to end first, for as long as a busy machine may need (a guard,
// not a measure; goleak's own retries give up within half a second).
func noLeaks(t *testing.T, opts ...goleak.Option) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); goleak.Find(opts...) != nil && time.Now().Before(deadline); {
	}
	goleak.VerifyNone(t, opts...)
}

// rawClient is a plain x/crypto/ssh client of one host, with the fleet's
// key and known_hosts: the protocol as any client sees it.
func rawClient(t *testing.T, f *Fleet, name string) *ssh.Client {
	t.Helper()
	files, err := f.WriteInventory(t.TempDir() + "/inventory.toml")
	if err != nil {
		t.Fatal(err)
	}
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
	for _, h := range f.Hosts() {
		if h.Name != name {
			continue
		}
		c, err := ssh.Dial("tcp", net.JoinHostPort(h.Address, strconv.Itoa(h.Port)), &ssh.ClientConfig{
			User: User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: hk, Timeout: 10 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	t.Fatalf("no host %q", name)
	return nil
}

// TestFastCommandsGetTheirReply runs many commands that end at once, in
// sessions opened together: each session answers its exec request before
// the command's exit status and the channel's close, as sshd does (a
// client that saw the channel close first reports the start failed).
func TestFastCommandsGetTheirReply(t *testing.T) {
	// More threads than cores widen the window the reply once lost in.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(8, runtime.GOMAXPROCS(0))))
	f, _ := startFleet(t, Config{Hosts: 1})
	c := rawClient(t, f, f.Hosts()[0].Name)
	errs := make(chan error, 2000)
	for range 2000 {
		go func() {
			s, err := c.NewSession()
			if err == nil {
				err = s.Run("true")
				s.Close()
			}
			errs <- err
		}()
	}
	for range 2000 {
		if err := <-errs; err != nil {
			t.Errorf("true: %v", err)
		}
	}
}

// TestUnreadInputLeavesNothing sends commands that do not read their
// standard input more than a pipe holds, as `ssh host cmd < big` does: the
// sessions end, and nothing they started stays behind.
func TestUnreadInputLeavesNothing(t *testing.T) {
	// No collection, so that no finalizer closes what a session left open.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	f, _ := startFleet(t, Config{Hosts: 1})
	c := rawClient(t, f, f.Hosts()[0].Name)
	if s, err := c.NewSession(); err != nil || s.Run("true") != nil {
		t.Fatalf("true: %v", err)
	}
	connected := goleak.IgnoreCurrent()
	big := strings.Repeat("x", 1<<20)
	for _, cmd := range []string{"true", "echo hi", "sleep 0.1", "head -c 10 >/dev/null"} {
		s, err := c.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		s.Stdin = strings.NewReader(big)
		if err := s.Start(cmd); err != nil {
			t.Fatal(err)
		}
		// EOF: the client's copy of standard input stopped when the
		// session closed, as it would with sshd.
		if err := wait(t, cmd+" < 1 MiB", s); err != nil && !errors.Is(err, io.EOF) {
			t.Errorf("%s < 1 MiB: %v", cmd, err)
		}
	}
	noLeaks(t, connected)
}

// TestConcurrentWritersKeepTheirData has the stages of a pipeline and
// background jobs write to the session's streams at once, as processes do
// on a real host: their writes may interleave, but every byte arrives,
// once, and every error line whole. (An SSH channel's write reuses one
// buffer per stream: overlapping writes sent one writer's data for
// another's.)
func TestConcurrentWritersKeepTheirData(t *testing.T) {
	f, files := startFleet(t, Config{Hosts: 1})
	g := newGpulab(t, files, orchestrator.Overrides{})
	const n, size = 20, 40000 // under the 1 MiB gpulab keeps
	var stages, jobs []string
	for i := range 8 {
		stages = append(stages, fmt.Sprintf("cat /nonexistent-%d", i))
	}
	letters := "abcdefghijklmnopqrst"[:n]
	for i := range n {
		jobs = append(jobs, fmt.Sprintf("cat %c &", letters[i]))
	}
	// File a holds size a's, b size b's, and so on.
	r := g.run(t, f.Hosts()[0].Name, fmt.Sprintf("for c in %s; do printf '%%%ds\\n' | tr ' ' $c > $c; done; ", strings.Join(strings.Split(letters, ""), " "), size)+
		strings.Join(stages, " | ")+"; "+strings.Join(jobs, " ")+" wait")
	for i := range 8 {
		if want := fmt.Sprintf("cat: /nonexistent-%d: No such file or directory\n", i); !strings.Contains(string(r.Stderr), want) {
			t.Errorf("standard error lacks %q:\n%s", want, r.Stderr)
		}
	}
	for _, c := range letters {
		if got := strings.Count(string(r.Stdout), string(c)); got != size {
			t.Errorf("standard output holds %d %c's, want the %d that file %c holds", got, c, size, c)
		}
	}
	if len(r.Stdout) != n*(size+1) {
		t.Errorf("standard output holds %d bytes, want %d", len(r.Stdout), n*(size+1))
	}
}
