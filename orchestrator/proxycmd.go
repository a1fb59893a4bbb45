package orchestrator

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proxyConn is a connection through a ProxyCommand: the command's stdin and
// stdout carry the SSH stream, as with OpenSSH. The command runs as
// `$SHELL -c "exec COMMAND"` in its own process group, which Close ends.
type proxyConn struct {
	command string
	r, w    *os.File // the command's stdout (read) and stdin (write)
	cmd     *exec.Cmd
	stderr  *capBuffer
	addr    fakeAddr
	done    chan struct{} // closed when the command has exited
	waitErr error
	once    sync.Once
}

// expandProxyCommand expands ProxyCommand's tokens as OpenSSH does: %h the
// host name dialled, %p the port, %r the remote user, %n the name as given,
// %% a percent sign. Values are shell-quoted, since the result is run by a
// shell and a name may come from an inventory.
func expandProxyCommand(command string, t Target) string {
	var b strings.Builder
	for i := 0; i < len(command); i++ {
		c := command[i]
		if c != '%' || i+1 == len(command) {
			b.WriteByte(c)
			continue
		}
		i++
		switch command[i] {
		case 'h':
			b.WriteString(Quote(t.HostName))
		case 'p':
			b.WriteString(strconv.Itoa(t.Port))
		case 'r':
			b.WriteString(Quote(t.User))
		case 'n':
			b.WriteString(Quote(t.Name))
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(command[i])
		}
	}
	return b.String()
}

func dialProxyCommand(t Target) (*proxyConn, error) {
	shell := os.Getenv("SHELL")
	if shell == "" {
		shell = "/bin/sh"
	}
	command := expandProxyCommand(t.ProxyCommand, t)
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("ProxyCommand: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("ProxyCommand: %w", err)
	}
	p := &proxyConn{command: command, r: outR, w: inW, stderr: &capBuffer{max: 4096}, addr: fakeAddr(t.HostPort()), done: make(chan struct{})}
	p.cmd = exec.Command(shell, "-c", "exec "+command)
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = inR, outW, p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A child the command detaches (setsid) may hold its stderr open long
	// after it exited: Wait does not wait for that.
	p.cmd.WaitDelay = time.Second
	err = p.cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		outR.Close()
		inW.Close()
		return nil, fmt.Errorf("ProxyCommand %s: %w", command, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *proxyConn) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p *proxyConn) Write(b []byte) (int, error) { return p.w.Write(b) }

// Close ends the command (its whole process group) and waits for it.
func (p *proxyConn) Close() error {
	p.once.Do(func() {
		p.w.Close()
		p.r.Close()
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGHUP)
		select {
		case <-p.done:
		case <-time.After(2 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	})
	return nil
}

// explain adds what the command said when the handshake over it failed:
// its exit status and its first lines of stderr.
func (p *proxyConn) explain(err error) error {
	select {
	case <-p.done:
	case <-time.After(time.Second): // still running: it said what it said
	}
	var parts []string
	select {
	case <-p.done:
		var ee *exec.ExitError
		if errors.As(p.waitErr, &ee) {
			parts = append(parts, ee.ProcessState.String())
		} else {
			parts = append(parts, "exited")
		}
	default:
	}
	if msg := strings.TrimSpace(p.stderr.String()); msg != "" {
		parts = append(parts, msg)
	}
	if len(parts) == 0 {
		return fmt.Errorf("through ProxyCommand %s: %w", p.command, err)
	}
	return fmt.Errorf("ProxyCommand %s %s: %w", p.command, strings.Join(parts, ": "), err)
}

func (p *proxyConn) LocalAddr() net.Addr  { return fakeAddr("proxycommand:0") }
func (p *proxyConn) RemoteAddr() net.Addr { return p.addr }

func (p *proxyConn) SetDeadline(t time.Time) error {
	return errors.Join(p.r.SetReadDeadline(t), p.w.SetWriteDeadline(t))
}
func (p *proxyConn) SetReadDeadline(t time.Time) error  { return p.r.SetReadDeadline(t) }
func (p *proxyConn) SetWriteDeadline(t time.Time) error { return p.w.SetWriteDeadline(t) }

// capBuffer keeps the first max bytes written to it.
type capBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
}

func (c *capBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (c *capBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.b)
}
