package orchestrator_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpulab/gpulab/internal/sshtest"
	"github.com/gpulab/gpulab/orchestrator"
)

// clientPorts runs `echo $SSH_CONNECTION` on every host and returns each
// host's client-side port: the same port twice means the same TCP
// connection, so no second handshake.
func clientPorts(t *testing.T, e *orchestrator.Engine, ts []orchestrator.Target) ([]string, []orchestrator.HostResult) {
	t.Helper()
	res := e.Run(context.Background(), orchestrator.Plan{Targets: ts, Steps: step(`echo "$SSH_CONNECTION"`)}, nil)
	ports := make([]string, len(res))
	for i, r := range res {
		if r.Class != orchestrator.OK {
			t.Fatalf("%s: %s %s", r.Host, r.Class, r.Err)
		}
		f := strings.Fields(string(r.Steps[0].Stdout))
		if len(f) != 4 {
			t.Fatalf("%s: SSH_CONNECTION %q", r.Host, r.Steps[0].Stdout)
		}
		ports[i] = f[1]
	}
	return ports, res
}

func TestPoolReusesConnections(t *testing.T) {
	f := sshtest.Start(t, 3, sshtest.Options{})
	ts := targets(f)
	e := newEngine()
	e.Pool = &orchestrator.Pool{Dialer: e.Dialer}
	defer e.Pool.Close()

	first, res := clientPorts(t, e, ts)
	for _, r := range res {
		if r.Reused {
			t.Errorf("%s: the first run cannot reuse a connection", r.Host)
		}
	}
	if n := e.Pool.Idle(); n != len(ts) {
		t.Errorf("after the first run the pool holds %d connections, want %d", n, len(ts))
	}
	second, res := clientPorts(t, e, ts)
	for i := range ts {
		if first[i] != second[i] || !res[i].Reused {
			t.Errorf("%s: second run on client port %s (first %s), reused %v: want the same connection", ts[i].Name, second[i], first[i], res[i].Reused)
		}
	}

	// Without a pool every run is a connection of its own.
	plain := newEngine()
	a, _ := clientPorts(t, plain, ts[:1])
	b, _ := clientPorts(t, plain, ts[:1])
	if a[0] == b[0] {
		t.Errorf("without a pool two runs shared client port %s", a[0])
	}
}

// A host that went away is redialled, not reported lost: the pooled
// connection is found dead before it is used.
func TestPoolRedialsADeadConnection(t *testing.T) {
	f := sshtest.Start(t, 2, sshtest.Options{})
	ts := targets(f)
	e := newEngine()
	e.Pool = &orchestrator.Pool{Dialer: e.Dialer}
	defer e.Pool.Close()
	first, _ := clientPorts(t, e, ts)

	f.Servers[0].Kill()
	if err := f.Servers[0].Restart(); err != nil {
		t.Fatal(err)
	}
	second, res := clientPorts(t, e, ts)
	if first[0] == second[0] || res[0].Reused {
		t.Errorf("the restarted host's run reused its dead connection (port %s, reused %v)", second[0], res[0].Reused)
	}
	if first[1] != second[1] || !res[1].Reused {
		t.Errorf("the other host did not reuse its connection")
	}
}

func TestPoolIdleTimeoutAndClose(t *testing.T) {
	f := sshtest.Start(t, 2, sshtest.Options{})
	ts := targets(f)
	e := newEngine()
	e.Pool = &orchestrator.Pool{Dialer: e.Dialer, IdleTimeout: 20 * time.Millisecond}
	clientPorts(t, e, ts)
	deadline := time.Now().Add(30 * time.Second)
	for e.Pool.Idle() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // waiting for the idle timers, not timing them
	}
	if n := e.Pool.Idle(); n != 0 {
		t.Fatalf("%d connections outlived the idle timeout", n)
	}

	e.Pool.IdleTimeout = time.Hour
	clientPorts(t, e, ts)
	e.Pool.Close()
	if n := e.Pool.Idle(); n != 0 {
		t.Errorf("Close left %d idle connections", n)
	}
	// After Close a run still works; its connections are not kept.
	if _, res := clientPorts(t, e, ts); res[0].Reused || e.Pool.Idle() != 0 {
		t.Errorf("after Close: reused %v, idle %d", res[0].Reused, e.Pool.Idle())
	}
}
