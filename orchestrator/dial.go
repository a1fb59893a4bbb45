package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gpulab/gpulab/internal/problem"
	"golang.org/x/crypto/ssh"
)

// Dialer opens SSH connections: TCP connect and handshake bounded together
// by the target's connect timeout, host keys verified, ProxyJump chains
// followed, keepalives sent while the connection is open.
type Dialer struct {
	Keys *Keyring
	// AcceptNew adds unknown host keys to known_hosts (never changed ones).
	AcceptNew bool

	mu       sync.Mutex
	hostKeys map[string]*HostKeys
}

// DialError is a failed dial with its class.
type DialError struct {
	Class Class
	Host  string // host:port dialled
	Err   error
}

func (e *DialError) Error() string { return fmt.Sprintf("dial %s: %v", e.Host, e.Err) }
func (e *DialError) Unwrap() error { return e.Err }

// Where is the host dialled (problem.Placed).
func (e *DialError) Where() problem.Place { return problem.Place{Host: e.Host} }

// Conn is an open connection to one host, reused for every step and push
// of a run. Close it when done; it closes its jump hosts too.
type Conn struct {
	Target Target
	client *ssh.Client // over SSH
	kube   *kubeLink   // through the API server (KubeTransport)
	jumps  []*ssh.Client
	stop   chan struct{}
	once   sync.Once
	dead   chan struct{} // closed when the transport ends, for whatever reason
	reused bool          // taken from a Pool: no handshake was paid
}

// SimulatedServerVersion is how gpulab's simulated hosts (package sim)
// identify themselves in the SSH handshake. Whatever route reached them
// (an inventory, ssh_config, -H), what is made on them says SIMULATED.
const SimulatedServerVersion = "SSH-2.0-gpulab_sim"

// Simulated reports whether the host is one of gpulab's simulated hosts.
func (c *Conn) Simulated() bool {
	if c.kube != nil {
		return c.kube.simulated
	}
	return strings.HasPrefix(string(c.client.ServerVersion()), SimulatedServerVersion)
}

// Alive reports whether the connection's transport is still up: a run
// that used it can tell that the host was lost under it, whichever
// command saw it go.
func (c *Conn) Alive() bool {
	if c.kube != nil {
		select {
		case <-c.kube.dead:
			return false
		default:
			return true
		}
	}
	return c.alive()
}

// alive reports whether the connection's transport is still up (through
// Kubernetes: whether its pod may take another command).
func (c *Conn) alive() bool {
	if c.kube != nil {
		return c.kube.usable()
	}
	select {
	case <-c.dead:
		return false
	default:
		return true
	}
}

// Close ends the connection and its jump hosts.
func (c *Conn) Close() error {
	var err error
	c.once.Do(func() {
		close(c.stop)
		if c.kube != nil {
			c.kube.markDead()
			err = c.kube.k.deletePod(context.Background(), c.kube.pod)
			return
		}
		err = c.client.Close()
		for i := len(c.jumps) - 1; i >= 0; i-- {
			c.jumps[i].Close()
		}
	})
	return err
}

func (d *Dialer) hostKeysFor(files []string) (*HostKeys, error) {
	key := strings.Join(files, "\x00")
	d.mu.Lock()
	defer d.mu.Unlock()
	if h, ok := d.hostKeys[key]; ok {
		return h, nil
	}
	h, err := NewHostKeys(files, d.AcceptNew)
	if err != nil {
		return nil, err
	}
	if d.hostKeys == nil {
		d.hostKeys = map[string]*HostKeys{}
	}
	d.hostKeys[key] = h
	return h, nil
}

// Dial connects to t through its jump hosts.
func (d *Dialer) Dial(ctx context.Context, t Target) (*Conn, error) {
	if !t.Reachable() {
		return nil, &DialError{Class: Error, Host: t.Name, Err: errors.New(t.Unresolved)}
	}
	if t.Kube != nil {
		return t.Kube.transport.dial(ctx, t)
	}
	var via *ssh.Client
	var jumps []*ssh.Client
	fail := func(err error) (*Conn, error) {
		for i := len(jumps) - 1; i >= 0; i-- {
			jumps[i].Close()
		}
		return nil, err
	}
	for _, hop := range t.Jump {
		c, err := d.dialHop(ctx, via, hop)
		if err != nil {
			var de *DialError
			if errors.As(err, &de) {
				de.Err = fmt.Errorf("jump host %s: %w", hop.Name, de.Err)
			}
			return fail(err)
		}
		jumps = append(jumps, c)
		via = c
	}
	c, err := d.dialHop(ctx, via, t)
	if err != nil {
		return fail(err)
	}
	conn := &Conn{Target: t, client: c, jumps: jumps, stop: make(chan struct{}), dead: make(chan struct{})}
	go func() {
		_ = c.Wait()
		close(conn.dead)
	}()
	go conn.keepalive(t.ServerAliveInterval, t.ServerAliveCountMax)
	return conn, nil
}

func (d *Dialer) dialHop(ctx context.Context, via *ssh.Client, t Target) (*ssh.Client, error) {
	addr := t.HostPort()
	if via != nil && t.ProxyCommand != "" {
		return nil, &DialError{Class: Error, Host: addr, Err: fmt.Errorf("ProxyCommand (from %s) on a host reached through ProxyJump: gpulab runs a ProxyCommand only for the first hop; refusing rather than taking another route", t.Sources["ProxyCommand"])}
	}
	// The name looked up in known_hosts: HostKeyAlias as it is, else
	// host:port ([host]:port for other ports than 22).
	// Host names are looked up lower-cased, as OpenSSH does.
	keyHost := strings.ToLower(addr)
	if t.HostKeyAlias != "" {
		keyHost = joinHostPort(strings.ToLower(t.HostKeyAlias), 22)
	}
	hk, err := d.hostKeysFor(t.KnownHosts)
	if err != nil {
		return nil, &DialError{Class: Error, Host: addr, Err: err}
	}
	auth, authLog, err := d.Keys.AuthMethod(t.IdentityFiles, t.Explicit, t.IdentitiesOnly, t.IdentityAgent)
	if err != nil {
		return nil, &DialError{Class: Error, Host: addr, Err: err}
	}
	deadline := time.Now().Add(t.ConnectTimeout)
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for attempt := 0; ; attempt++ {
		var keyErr error
		cb := hk.Callback()
		cfg := &ssh.ClientConfig{
			User: t.User,
			Auth: []ssh.AuthMethod{auth},
			HostKeyCallback: func(h string, r net.Addr, k ssh.PublicKey) error {
				keyErr = cb(h, r, k)
				return keyErr
			},
			HostKeyAlgorithms: hk.Algorithms(keyHost),
			ClientVersion:     "SSH-2.0-gpulab",
		}
		conn, proxy, err := dialTransport(dctx, via, t)
		if err != nil {
			class := classifyDial(ctx, err)
			return nil, &DialError{Class: class, Host: addr, Err: connectTimeoutError(class, t.ConnectTimeout, "TCP connect", err)}
		}
		_ = conn.SetDeadline(deadline)
		stop := context.AfterFunc(dctx, func() { conn.Close() }) // cancel or deadline unblocks the handshake
		c, chans, reqs, err := ssh.NewClientConn(conn, keyHost, cfg)
		if !stop() && err == nil {
			c.Close()
			err = dctx.Err()
		}
		if err == nil {
			_ = conn.SetDeadline(time.Time{})
			return ssh.NewClient(c, chans, reqs), nil
		}
		if proxy != nil && keyErr == nil && ctx.Err() == nil {
			err = proxy.explain(err)
		}
		conn.Close()
		if keyErr != nil {
			return nil, hostKeyDialError(addr, keyErr)
		}
		if proxy == nil && attempt < handshakeRetries && resetDuringHandshake(err) && dctx.Err() == nil {
			// sshd drops handshakes beyond MaxStartups; back off and retry.
			select {
			case <-time.After(time.Duration(20+rand.IntN(80)*(attempt+1)) * time.Millisecond):
				continue
			case <-dctx.Done():
			}
		}
		class := classifyHandshake(ctx, dctx, err)
		if class == Auth {
			err = fmt.Errorf("authentication as %s failed; %s; %w", t.User, authLog.Summary(), err)
		}
		return nil, &DialError{Class: class, Host: addr, Err: connectTimeoutError(class, t.ConnectTimeout, "SSH handshake", err)}
	}
}

// dialTransport opens the byte stream an SSH handshake runs over: a
// channel through the jump host via, the ProxyCommand's pipes (proxy, for
// its stderr), or TCP.
func dialTransport(ctx context.Context, via *ssh.Client, t Target) (net.Conn, *proxyConn, error) {
	switch {
	case via != nil:
		conn, err := via.DialContext(ctx, "tcp", t.HostPort())
		return conn, nil, err
	case t.ProxyCommand != "":
		proxy, err := dialProxyCommand(t)
		if err != nil {
			return nil, nil, err
		}
		return proxy, proxy, nil
	default:
		conn, err := (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext(ctx, "tcp", t.HostPort())
		return conn, nil, err
	}
}

// hostKeyDialError classes a host key refusal: changed, or unknown.
func hostKeyDialError(addr string, keyErr error) *DialError {
	class := HostKeyUnknown
	var he *HostKeyError
	if errors.As(keyErr, &he) && he.Changed {
		class = HostKeyChanged
	}
	return &DialError{Class: class, Host: addr, Err: keyErr}
}

// connectTimeoutError names the limit a connection ran into, and where it
// is set, so "i/o timeout" after a slow handshake reads as what it is.
func connectTimeoutError(class Class, limit time.Duration, during string, err error) error {
	if class != TimeoutConnect {
		return err
	}
	return fmt.Errorf("no %s within the connect timeout of %s (ConnectTimeout in ssh_config, connect_timeout in the inventory, --connect-timeout): %w", during, limit, err)
}

// handshakeRetries is how often a handshake reset by the server (sshd's
// MaxStartups dropping connections) is tried again, within the connect
// timeout.
const handshakeRetries = 3

func resetDuringHandshake(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, syscall.EPIPE)
}

func classifyDial(parent context.Context, err error) Class {
	switch {
	case parent.Err() != nil:
		return Cancelled
	case errors.Is(err, syscall.ECONNREFUSED):
		return Refused
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) || isTimeout(err):
		return TimeoutConnect
	case strings.Contains(err.Error(), "connect failed"): // via a jump host: the hop could not reach it
		if strings.Contains(err.Error(), "refused") {
			return Refused
		}
		return Unreachable
	}
	return Unreachable
}

func classifyHandshake(parent, dctx context.Context, err error) Class {
	switch {
	case parent.Err() != nil:
		return Cancelled
	case dctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) || isTimeout(err):
		return TimeoutConnect
	case isAuthFailure(err):
		return Auth
	}
	return Unreachable
}

// isAuthFailure reports whether a handshake failed in authentication: no
// key was accepted, sshd gave up ("Too many authentication failures"), or
// an accepted key could not be used (a wrong passphrase).
func isAuthFailure(err error) bool {
	var ae *authError
	if errors.As(err, &ae) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "unable to authenticate") || strings.Contains(msg, "no supported methods remain") ||
		strings.Contains(msg, "authentication failures")
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// keepalive sends keepalive@openssh.com every interval and closes the
// connection when countMax intervals pass without an answer, as OpenSSH's
// ServerAliveInterval/ServerAliveCountMax do.
func (c *Conn) keepalive(interval time.Duration, countMax int) {
	if interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		reply := make(chan error, 1)
		go func() {
			_, _, err := c.client.SendRequest("keepalive@openssh.com", true, nil)
			reply <- err
		}()
		select {
		case err := <-reply:
			if err != nil {
				c.client.Close()
				return
			}
		case <-time.After(interval * time.Duration(max(1, countMax))):
			c.client.Close()
			return
		case <-c.stop:
			return
		}
	}
}
