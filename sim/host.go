package sim

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
	"golang.org/x/term"
)

// machine is a simulated host's hardware side: the GPU and cluster tools
// it answers (sim/dgx).
type machine interface {
	run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, args []string) (int, bool)
	tools() []string
}

// host is one simulated host: an SSH server on its own loopback port with
// its own host key, a private tree, and a machine.
type host struct {
	name    string
	index   int
	addr    string // 127.0.0.1:port
	fleet   *Fleet
	fs      *vfs
	machine machine
	faults  []byte // the probe's --mock-faults
	sick    bool
	mode    Fault
	signer  ssh.Signer
	config  *ssh.ServerConfig
	kubelet *kubelet // Config.Kubelet's endpoint, nil without

	reserved int // a Drop host's bound, never listening socket

	mu       sync.Mutex
	ln       net.Listener
	conns    map[net.Conn]struct{}
	killed   bool
	startups atomic.Int32 // connections not logged in yet (maxStartups)
	probes   atomic.Int32 // real probe processes running (maxProbesPerHost)
	// acceptErrs counts accept's failures (EMFILE), each retried.
	acceptErrs atomic.Int64
}

// serve accepts connections until the listener closes. An error such as
// EMFILE (too many open files) is retried after a wait that grows to
// acceptBackoff, as net/http's server does, so that a host outlives a
// moment without descriptors.
func (h *host) serve(ln net.Listener) {
	defer h.fleet.wg.Done()
	var wait time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || h.fleet.ctx.Err() != nil {
				return
			}
			h.acceptErrs.Add(1)
			wait = min(max(2*wait, 5*time.Millisecond), acceptBackoff)
			select {
			case <-time.After(wait):
			case <-h.fleet.ctx.Done():
				return
			}
			continue
		}
		wait = 0
		if !h.track(c) {
			c.Close()
			continue
		}
		h.fleet.wg.Add(1)
		go func() {
			defer h.fleet.wg.Done()
			defer h.untrack(c)
			h.handle(c)
		}()
	}
}

func (h *host) track(c net.Conn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.killed {
		return false
	}
	h.conns[c] = struct{}{}
	return true
}

func (h *host) untrack(c net.Conn) {
	h.mu.Lock()
	delete(h.conns, c)
	h.mu.Unlock()
	c.Close()
}

// kill stops the host as a power cut would: no new connection, and every
// open one (and the commands in it) cut.
func (h *host) kill() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.killed = true
	if h.ln != nil {
		h.ln.Close()
	}
	if h.kubelet != nil {
		h.kubelet.srv.Close()
	}
	if h.reserved > 0 {
		syscall.Close(h.reserved)
		h.reserved = 0
	}
	for c := range h.conns {
		c.Close()
	}
}

// slowConn delays every write by the fleet's latency.
type slowConn struct {
	net.Conn
	delay time.Duration
}

func (c slowConn) Write(p []byte) (int, error) {
	time.Sleep(c.delay)
	return c.Conn.Write(p)
}

func (h *host) handle(c net.Conn) {
	if h.mode == Hang {
		_, _ = io.Copy(io.Discard, c) // accepts, never answers
		return
	}
	// Until it has logged in, a connection has handshakeTimeout, and a
	// host holds maxStartups such connections at most, as sshd's
	// LoginGraceTime and MaxStartups.
	if n := h.startups.Add(1); dropStartup(int(n)) {
		h.startups.Add(-1)
		return
	}
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	if d := h.fleet.cfg.Latency; d > 0 {
		c = slowConn{Conn: c, delay: d}
	}
	sc, chans, reqs, err := ssh.NewServerConn(c, h.config)
	h.startups.Add(-1)
	if err != nil {
		return
	}
	_ = c.SetDeadline(time.Time{})
	ctx, cancel := context.WithCancel(h.fleet.ctx)
	defer cancel()
	go ssh.DiscardRequests(reqs) // keepalives get their (negative) answer
	go func() {
		_ = sc.Wait()
		cancel()
	}()
	var wg sync.WaitGroup
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.Prohibited, "a simulated host opens sessions only (no forwarding)")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.session(ctx, sc, ch, creqs)
		}()
	}
	wg.Wait()
}

// session serves one SSH session: env, pty-req, exec, shell, the sftp
// subsystem and signals, as sshd does.
func (h *host) session(ctx context.Context, sc *ssh.ServerConn, ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	env := append(h.baseEnv(), sshConnEnv(sc)...)
	ctx, cancel := context.WithCancel(withBounds(ctx))
	defer cancel()
	defer h.fleet.watch.add(h.name, cancel, ch.Stderr())()
	pty, started := false, false
	envAdded, envBytes := 0, 0 // what env requests added (maxEnv, maxEnvBytes)
	done := make(chan struct{})
	for req := range reqs {
		ok := false
		switch req.Type {
		case "env":
			var kv struct{ Name, Value string }
			if ssh.Unmarshal(req.Payload, &kv) == nil && acceptEnv(kv.Name) && envAdded < maxEnv && envBytes+len(kv.Name)+len(kv.Value) <= maxEnvBytes {
				env, ok = append(env, kv.Name+"="+kv.Value), true
				envAdded, envBytes = envAdded+1, envBytes+len(kv.Name)+len(kv.Value)
			}
		case "pty-req":
			pty, ok = true, true
		case "window-change":
			ok = true
		case "signal":
			cancel()
			ok = true
		case "exec", "shell", "subsystem":
			if started {
				break
			}
			if h.mode == Die && req.Type == "exec" { // the command starts, and the connection is cut under it
				if req.WantReply {
					_ = req.Reply(true, nil)
				}
				sc.Close()
				continue
			}
			if h.mode == Stall && req.Type == "exec" { // the command starts, and never prints or ends
				started = true
				stall(ctx, ch, req, done)
				continue
			}
			start, ok := h.starter(ctx, ch, req, env, pty)
			// The reply goes before the command starts: a command that ends
			// at once closes the channel, and a reply after that is lost.
			if req.WantReply {
				_ = req.Reply(ok, nil)
			}
			if ok {
				started = true
				go func() {
					defer close(done)
					defer func() {
						// A bug in the simulation ends this session, never
						// the fleet (or the workbench it runs in).
						if v := recover(); v != nil {
							fmt.Fprintf(ch.Stderr(), "gpulab sim: internal error on %s: %v\n", h.name, v)
							sendExit(ch, 70, nil)
						}
						_ = ch.Close() // after the exit status: the session is over
					}()
					start()
				}()
			}
			continue
		}
		if req.WantReply {
			_ = req.Reply(ok, nil)
		}
	}
	cancel()
	if started {
		<-done
	}
}

// stall starts a command that never prints or ends (a --stall host's):
// the channel stays open until a signal or the client ends the session,
// then done is closed.
func stall(ctx context.Context, ch ssh.Channel, req *ssh.Request, done chan<- struct{}) {
	if req.WantReply {
		_ = req.Reply(true, nil)
	}
	go func() {
		defer close(done)
		<-ctx.Done()
		_ = ch.Close()
	}()
}

// acceptEnv is sshd's default AcceptEnv on Debian and Ubuntu.
func acceptEnv(name string) bool {
	return name == "LANG" || strings.HasPrefix(name, "LC_") || name == "COLORTERM" || name == "NO_COLOR"
}

func sshConnEnv(sc *ssh.ServerConn) []string {
	rh, rp, _ := net.SplitHostPort(sc.RemoteAddr().String())
	lh, lp, _ := net.SplitHostPort(sc.LocalAddr().String())
	return []string{"SSH_CONNECTION=" + strings.Join([]string{rh, rp, lh, lp}, " "), "SSH_CLIENT=" + strings.Join([]string{rh, rp, lp}, " ")}
}

// starter returns what an exec, shell or subsystem request runs.
func (h *host) starter(ctx context.Context, ch ssh.Channel, req *ssh.Request, env []string, pty bool) (func(), bool) {
	mu := new(sync.Mutex)
	c := &call{h: h, env: env, stdin: ch, stdout: syncWriter{mu, ch}, stderr: syncWriter{mu, ch.Stderr()}}
	// The exit status and the end of output go in the streams' turn: a
	// background job still writing when its command line ended raced the
	// channel's CloseWrite.
	exitCh := lockedChannel{Channel: ch, mu: mu}
	switch req.Type {
	case "exec":
		var p struct{ Command string }
		if ssh.Unmarshal(req.Payload, &p) != nil {
			return nil, false
		}
		return func() {
			var code int
			var err error
			if cmd, ok := unwrap(p.Command); ok {
				code, err = c.runWrapped(ctx, cmd, ch)
			} else {
				code, err = c.runLine(ctx, p.Command)
			}
			sendExit(exitCh, code, err)
		}, true
	case "shell":
		return func() { sendExit(exitCh, h.shell(ctx, c, ch, pty), nil) }, true
	case "subsystem":
		var p struct{ Name string }
		if ssh.Unmarshal(req.Payload, &p) != nil || p.Name != "sftp" {
			return nil, false
		}
		return func() {
			srv := sftp.NewRequestServer(ch, h.sftpHandlers(), sftp.WithStartDirectory(Home))
			err := srv.Serve() // the channel closes after the exit status
			code := 0
			if err != nil && !errors.Is(err, io.EOF) {
				code = 1
			}
			sendExit(exitCh, code, nil)
		}, true
	}
	return nil, false
}

// syncWriter serialises the writes to a session's streams: the stages of
// a pipeline and background jobs write at once, as processes do, and an
// SSH channel's write reuses one buffer per stream (overlapping writes
// mixed their data).
type syncWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (s syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// lockedChannel is a session's channel whose CloseWrite waits for the
// writes of its streams (syncWriter's mutex).
type lockedChannel struct {
	ssh.Channel
	mu *sync.Mutex
}

func (l lockedChannel) CloseWrite() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.Channel.CloseWrite()
}

func sendExit(ch ssh.Channel, code int, err error) {
	if errors.Is(err, errKilled) {
		_, _ = ch.SendRequest("exit-signal", false, ssh.Marshal(struct {
			Signal     string
			CoreDumped bool
			Error      string
			Lang       string
		}{Signal: "TERM"}))
	} else {
		b := make([]byte, 4)
		binary.BigEndian.PutUint32(b, uint32(code))
		_, _ = ch.SendRequest("exit-status", false, b)
	}
	_ = ch.CloseWrite()
}

// shell is a login shell: with a terminal, a prompt and line editing, one
// command line at a time in one shell (cd and variables stay); without,
// the script read from standard input, as `ssh HOST < script` runs it.
func (h *host) shell(ctx context.Context, c *call, ch ssh.Channel, pty bool) int {
	if !pty {
		b := new(strings.Builder)
		if n, _ := io.Copy(b, io.LimitReader(ch, maxScript+1)); n > maxScript {
			fmt.Fprintf(ch.Stderr(), "bash: the script on standard input is over %d MiB (a simulated host reads no more)\n", maxScript>>20)
			return 126
		}
		c.stdin = devNull{}
		code, _ := c.runLine(ctx, b.String())
		return code
	}
	t := term.NewTerminal(ch, User+"@"+h.name+":~$ ")
	fmt.Fprintf(t, "gpulab SIMULATED host %s: a DGX A100 that is not there; every output is simulated\n", h.name)
	c.stdin, c.stdout, c.stderr = devNull{}, t, t
	r, done, err := c.runner(nil)
	if err != nil {
		return 1
	}
	defer done()
	status := 0
	for {
		line, err := t.ReadLine()
		if err != nil {
			return status
		}
		prog, perr := parser().Parse(strings.NewReader(line), "")
		if perr == nil {
			perr = refuseProcSubst(prog)
		}
		if perr != nil {
			fmt.Fprintf(t, "bash: %s\n", shellSyntaxError(perr))
			status = 2
			continue
		}
		boundJobs(prog)
		err = r.Run(ctx, prog)
		if st, ok := exitStatus(err); ok {
			status = st
		}
		if r.Exited() || ctx.Err() != nil {
			return status
		}
		t.SetPrompt(User + "@" + h.name + ":" + tildePath(r.Dir) + "$ ")
	}
}

func tildePath(dir string) string {
	if dir == Home || strings.HasPrefix(dir, Home+"/") {
		return "~" + strings.TrimPrefix(dir, Home)
	}
	return dir
}

// portOf is the port of a host's listener.
func portOf(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return n
}

// dropStartup says whether a connection that makes n not logged in is
// closed at once: sshd's random early drop (MaxStartups start:rate:full).
func dropStartup(n int) bool {
	start := min(startupsStart, maxStartups)
	switch {
	case n <= start:
		return false
	case n > maxStartups:
		return true
	}
	p := startupsRate + (100-startupsRate)*(n-start)/(maxStartups-start+1)
	return rand.IntN(100) < p
}
