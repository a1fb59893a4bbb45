package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// hangingAPIServer listens on loopback and accepts connections it never
// answers; accepted gets one value per connection taken. The kubeconfig
// it returns points a context named "hang" at it.
func hangingAPIServer(t *testing.T) (kubeconfig string, accepted <-chan struct{}) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{}, 16)
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	cfg := "apiVersion: v1\nkind: Config\nclusters:\n- name: hang\n  cluster:\n    server: https://" + l.Addr().String() + "\n    insecure-skip-tls-verify: true\n" +
		"users:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: hang\n  context:\n    cluster: hang\n    user: u\ncurrent-context: hang\n"
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, ch
}

// Every command ended by a stop signal exits 130, those that handle the
// signal themselves and those that only read and have nothing to stop:
// a gpulab cluster command waiting on an API server that never answers,
// cluster reconcile reading it, a parser reading a pipe that never ends
// (before, SIGTERM ended them 143, SIGHUP 129, and reconcile said 1).
func TestEveryCommandSignalledExits130(t *testing.T) {
	bin := gpulabBinary(t)
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		args []string
	}{
		{"cluster-nodes-TERM", syscall.SIGTERM, []string{"cluster", "nodes"}},
		{"cluster-pending-HUP", syscall.SIGHUP, []string{"cluster", "pending"}},
		{"reconcile-TERM", syscall.SIGTERM, []string{"cluster", "reconcile", "-H", "127.0.0.1"}},
		{"parse-TERM", syscall.SIGTERM, []string{"parse", "nvidia-smi-topo"}},
		{"parse-HUP", syscall.SIGHUP, []string{"parse", "nvidia-smi-topo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			kubeconfig, accepted := hangingAPIServer(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c := exec.CommandContext(ctx, bin, tc.args...)
			c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "KUBECONFIG=" + kubeconfig}
			var out, errOut strings.Builder
			c.Stdout, c.Stderr = &out, &errOut
			pr, pw, err := os.Pipe() // the parser's stdin: written once, never closed
			if err != nil {
				t.Fatal(err)
			}
			defer pr.Close()
			defer pw.Close()
			c.Stdin = pr
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			if tc.args[0] == "parse" {
				// gpulab has read what was written: it is running, its
				// signal handling set, waiting for more.
				if _, err := pw.WriteString("        GPU0    GPU1\n"); err != nil {
					t.Fatal(err)
				}
				waitDrained(t, ctx, pr)
			} else {
				select { // gpulab has connected: it is waiting for an answer
				case <-accepted:
				case <-ctx.Done():
					t.Fatalf("gpulab %s never connected to the API server\n%s", strings.Join(tc.args, " "), errOut.String())
				}
			}
			if err := c.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			err = c.Wait()
			if ctx.Err() != nil {
				t.Fatalf("gpulab %s did not end within 2 minutes of %v", strings.Join(tc.args, " "), tc.sig)
			}
			if code := c.ProcessState.ExitCode(); code != 130 {
				t.Errorf("gpulab %s: exit %d after %v, want 130 (%v)\nstdout: %s\nstderr: %s", strings.Join(tc.args, " "), code, tc.sig, err, out.String(), errOut.String())
			}
		})
	}
}

// waitDrained waits until nothing written to the pipe is left unread
// (TIOCINQ, FIONREAD on Linux, counts what a pipe holds).
func waitDrained(t *testing.T, ctx context.Context, r *os.File) {
	t.Helper()
	for {
		n, err := unix.IoctlGetInt(int(r.Fd()), unix.TIOCINQ)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("gpulab never read its stdin (%d bytes left)", n)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// reconcile --context simulated keeps its fleet's client key in a
// directory of its own: removed when standard output closes under it
// (| head), which ended gpulab on SIGPIPE with the directory left, and
// the exit status is SIGPIPE's, as the shell reports a program it killed.
func TestReconcileSimulatedClosedPipeCleansUp(t *testing.T) {
	bin := gpulabBinary(t)
	tmp := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, bin, "cluster", "reconcile", "--context", "simulated")
	c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + tmp}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stdout = pw
	var errOut strings.Builder
	c.Stderr = &errOut
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	// Read its first line, then close the pipe, as head -1 does.
	line := make([]byte, 0, 256)
	b := make([]byte, 1)
	for {
		n, err := pr.Read(b)
		if err != nil {
			t.Fatalf("reading its first line: %v (stderr %s)", err, errOut.String())
		}
		if n == 1 && b[0] == '\n' {
			break
		}
		line = append(line, b[:n]...)
	}
	pr.Close()
	c.Wait()
	if ctx.Err() != nil {
		t.Fatal("gpulab did not end within 2 minutes of its pipe closing")
	}
	if !strings.HasPrefix(string(line), "SIMULATED cluster: ") {
		t.Errorf("first line %q", line)
	}
	if code := c.ProcessState.ExitCode(); code != 128+int(syscall.SIGPIPE) && code != -1 {
		t.Errorf("exit %d, want SIGPIPE's (stderr %s)", code, errOut.String())
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "gpulab-reconcile-*")); len(left) > 0 {
		t.Errorf("the simulated fleet's directory (its client key) was left: %v", left)
	}
}
