package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"
)

// DefaultMaxOutput is how much of each stream a result keeps; the rest is
// counted, not stored, so that a command printing gigabytes cannot exhaust
// memory on a fan-out of hundreds of hosts.
const DefaultMaxOutput = 1 << 20

// RunOptions bound one command.
type RunOptions struct {
	Timeout    time.Duration // the whole command; 0 for none
	Inactivity time.Duration // no output at all for this long; 0 for none
	MaxOutput  int           // bytes kept per stream; 0 for DefaultMaxOutput
	// OnOutput, if set, sees every chunk as it arrives (stream 1 stdout,
	// 2 stderr). It must not keep p.
	OnOutput func(stream int, p []byte)
	// Raw sends the command line as it is, without the process-group
	// wrapper: the command may then read Stdin, and a cancel only signals
	// the remote shell (when sshd allows signals at all).
	Raw   bool
	Stdin io.Reader
}

// capture keeps the first limit bytes written and counts the rest. The
// session's copy goroutines write it while Run may already be collecting
// (a stop that gave up waiting): a mutex keeps them apart, and writes
// after the collection are dropped.
type capture struct {
	mu       sync.Mutex
	closed   bool
	buf      []byte
	limit    int
	total    int64
	stream   int
	activity *atomic.Int64
	onOutput func(int, []byte)
}

func (c *capture) Write(p []byte) (int, error) {
	c.activity.Store(time.Now().UnixNano())
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return len(p), nil
	}
	c.total += int64(len(p))
	if room := c.limit - len(c.buf); room > 0 {
		k := min(room, len(p))
		if len(c.buf)+k > cap(c.buf) {
			// Double, up to the limit: append grows large slices by a
			// quarter, which copies a megabyte of output five times over.
			grown := make([]byte, len(c.buf), min(c.limit, max(2*cap(c.buf), len(c.buf)+k, 4096)))
			copy(grown, c.buf)
			c.buf = grown
		}
		c.buf = append(c.buf, p[:k]...)
	}
	if c.onOutput != nil {
		c.onOutput(c.stream, p)
	}
	return len(p), nil
}

// close ends the capture and returns what it kept and the total written.
func (c *capture) close() ([]byte, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return c.buf, c.total
}

// Run runs command in a new session on the connection. The command line is
// given to the remote user's shell as it is: quote what goes into it
// (Quote, QuoteArgs). On cancel, command timeout or inactivity, the remote
// command is sent SIGTERM and the session is closed; what it printed so far
// is kept.
func (c *Conn) Run(ctx context.Context, step, command string, o RunOptions) Result {
	start := time.Now()
	r := Result{Step: step, Command: command, ExitCode: -1}
	if ctx.Err() != nil {
		r.Class, r.Err = Cancelled, ctx.Err().Error()
		return r
	}
	limit := o.MaxOutput
	if limit <= 0 {
		limit = DefaultMaxOutput
	}
	var activity atomic.Int64
	activity.Store(time.Now().UnixNano())
	stdout := &capture{limit: limit, stream: 1, activity: &activity, onOutput: o.OnOutput}
	stderr := &capture{limit: limit, stream: 2, activity: &activity, onOutput: o.OnOutput}
	var class Class
	var err error
	if c.kube != nil {
		class, err = c.kube.run(ctx, &r, command, c.Target.Capped(o), stdout, stderr, &activity)
	} else {
		class, err = c.runSSH(ctx, &r, command, o, stdout, stderr, &activity)
	}
	r.Stdout, r.StdoutBytes = stdout.close()
	r.Stderr, r.StderrBytes = stderr.close()
	r.Truncated = r.StdoutBytes > int64(len(r.Stdout)) || r.StderrBytes > int64(len(r.Stderr))
	r.Class, r.Duration = class, time.Since(start)
	if err != nil {
		r.Err = err.Error()
	}
	return r
}

// runSSH is Run over SSH, in a new session on the connection.
func (c *Conn) runSSH(ctx context.Context, r *Result, command string, o RunOptions, stdout, stderr *capture, activity *atomic.Int64) (Class, error) {
	sess, err := c.client.NewSession()
	if err != nil {
		return Lost, fmt.Errorf("open session: %w", err)
	}
	sess.Stdout, sess.Stderr = stdout, stderr
	stdinPipe, err := attachStdin(sess, o)
	if err != nil {
		sess.Close()
		return Lost, fmt.Errorf("open session stdin: %w", err)
	}
	if stdinPipe != nil {
		defer stdinPipe.Close()
	}
	line := command
	if !o.Raw {
		line = Wrap(command)
	}
	if err := sess.Start(line); err != nil {
		sess.Close()
		return Lost, fmt.Errorf("start command: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- sess.Wait() }()

	ended, waitErr, stopped, stopErr := watch(ctx, done, c.Target.Capped(o), activity)
	if ended {
		return exitClass(r, waitErr)
	}
	stopRemote(sess, stdinPipe, done)
	return stopped, stopErr
}

// Capped holds a command's own limits to the operator's: --timeout and
// --inactivity-timeout, given on the command line, bound every command
// with a limit that runs on the host, a runbook's or a lab's step (which
// carry their own, often longer) and the environment's reads included, so
// that one hung host cannot hold a run for the steps' minutes. A command
// with no limit of its own (a probe's sampling session, which lasts as
// long as its step) keeps none. Limits from the inventory or the defaults
// do not cap: they are exec's, and a 30-minute dcgmi diag step is longer.
func (t Target) Capped(o RunOptions) RunOptions {
	if t.Sources["CommandTimeout"] == SourceFlag && t.CommandTimeout > 0 && o.Timeout > t.CommandTimeout {
		o.Timeout = t.CommandTimeout
	}
	if t.Sources["InactivityTimeout"] == SourceFlag && t.InactivityTimeout > 0 && o.Inactivity > t.InactivityTimeout {
		o.Inactivity = t.InactivityTimeout
	}
	return o
}

// attachStdin gives the session its standard input: o.Stdin for a raw
// command, else a pipe held open, whose closing stops the wrapped command
// (returned for stopRemote).
func attachStdin(sess *ssh.Session, o RunOptions) (io.WriteCloser, error) {
	switch {
	case o.Raw && o.Stdin != nil:
		sess.Stdin = o.Stdin
	case !o.Raw:
		return sess.StdinPipe()
	}
	return nil, nil
}

// watch waits for the command to end (ended, with the session's Wait
// error) or for the first reason to stop it: cancel, the command timeout,
// or no output for o.Inactivity (stopped, with why).
func watch(ctx context.Context, done <-chan error, o RunOptions, activity *atomic.Int64) (ended bool, waitErr error, stopped Class, stopErr error) {
	var timeout <-chan time.Time
	if o.Timeout > 0 {
		t := time.NewTimer(o.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var tick <-chan time.Time
	if o.Inactivity > 0 {
		t := time.NewTicker(max(10*time.Millisecond, min(o.Inactivity/5, time.Second)))
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case err := <-done:
			return true, err, OK, nil
		case <-ctx.Done():
			return false, nil, Cancelled, errors.New("cancelled")
		case <-timeout:
			return false, nil, TimeoutCommand, fmt.Errorf("still running after the command timeout (%v)", o.Timeout)
		case <-tick:
			if idle := time.Since(time.Unix(0, activity.Load())); idle >= o.Inactivity {
				return false, nil, Inactive, fmt.Errorf("no output for %v (inactivity timeout): the command looks hung", idle.Round(time.Millisecond))
			}
		}
	}
}

// stopRemote stops the remote command: a SIGTERM request (sshd honours it
// for non-root users only) and EOF on its standard input, which the wrapper
// watches for every user; then the session is closed. It waits half a
// second at most: the goroutine in Wait ends when the connection closes.
func stopRemote(sess *ssh.Session, stdin io.Closer, done <-chan error) {
	_ = sess.Signal(ssh.SIGTERM)
	if stdin != nil {
		_ = stdin.Close()
	}
	select {
	case <-done:
		return
	case <-time.After(250 * time.Millisecond):
	}
	sess.Close()
	select {
	case <-done:
	case <-time.After(250 * time.Millisecond):
	}
}

// wrapper runs the command line ($1) so that gpulab can stop everything it
// started. sshd makes each session's shell a session and process-group
// leader; the wrapper (exec'd in its place, so it leads the group) starts a
// watcher that keeps the session's standard input open on fd 3: when gpulab
// closes it (cancel, timeouts) while the command still runs, the watcher
// sends SIGTERM to the whole process group, then SIGKILL a second later.
// Without a pty sshd signals nobody when a session closes, and it refuses
// signal requests for root, so this is the one stop that always works.
// The command reads /dev/null.
//
// The wrapper then execs the user's login shell ($SHELL, which sshd sets
// from the password database) on the command, as sshd runs one: bash
// syntax works where bash is the shell, a missing command is reported by
// that shell in its own words, and the exit status or signal is the
// shell's own, as with ssh HOST CMD. When the command has ended on its
// own, the watcher finds the group's leader gone and leaves background
// jobs alone.
const wrapper = `exec 3<&0 </dev/null
(trap '' TERM; read -r _ <&3; kill -0 $$ 2>/dev/null || exit 0; kill -TERM 0; sleep 1; kill -KILL 0) >/dev/null 2>&1 &
exec 3<&-
exec "${SHELL:-/bin/sh}" -c "$1"`

// Wrap returns the command line that runs command under the wrapper.
func Wrap(command string) string {
	return "exec sh -c " + Quote(wrapper) + " gpulab " + Quote(command)
}

// exitClass reads a finished session's error.
func exitClass(r *Result, err error) (Class, error) {
	var ee *ssh.ExitError
	var missing *ssh.ExitMissingError
	switch {
	case err == nil:
		r.ExitCode = 0
		return OK, nil
	case errors.As(err, &ee) && ee.Signal() != "":
		r.Signal = ee.Signal()
		return Killed, fmt.Errorf("killed by signal %s", ee.Signal())
	case errors.As(err, &ee):
		r.ExitCode = ee.ExitStatus()
		return Exit, nil
	case errors.As(err, &missing):
		return Lost, errors.New("the connection closed before the command reported its exit status (host went away?)")
	}
	return Lost, err
}
