package sim

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpulab/gpulab/orchestrator"
)

// TestMain lets this test binary be a fleet's child process (Spawn runs
// the program's own executable).
func TestMain(m *testing.M) {
	if IsChild() {
		os.Exit(RunChild())
	}
	os.Exit(m.Run())
}

func spawnFleet(t *testing.T, cfg Config) (*Child, Files) {
	t.Helper()
	c, err := Spawn(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	files, err := c.WriteInventory(filepath.Join(t.TempDir(), "inventory.toml"))
	if err != nil {
		t.Fatal(err)
	}
	return c, files
}

// A fleet in a child process answers as one in this process does; when
// the child dies (here SIGKILL, as the kernel's OOM killer sends), the
// parent says why, and the fleet starts again on the same ports with the
// same keys: the inventory written before still reaches it.
func TestChildFleetStopsAndStartsAgain(t *testing.T) {
	c, files := spawnFleet(t, Config{Hosts: 2, Seed: 3})
	g := newGpulab(t, files, orchestrator.Overrides{})
	if r := g.run(t, "dgx01", "hostname"); string(r.Stdout) != "dgx01\n" {
		t.Fatalf("dgx01 in the child: %s %q %q", r.Class, r.Stdout, r.Stderr)
	}
	if err := c.Err(); err != nil {
		t.Fatalf("Err while running: %v", err)
	}
	kube, err := c.KubeClient(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := kube.Kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 2 {
		t.Fatalf("the child's cluster through the mirror: %v nodes, %v", len(nodes.Items), err)
	}

	c.mu.Lock()
	pid := c.run.cmd.Process.Pid
	c.mu.Unlock()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Stopped():
	case <-time.After(time.Minute):
		t.Fatal("waited a minute for the parent to see its child killed")
	}
	if err := c.Err(); err == nil || !strings.Contains(err.Error(), "the simulated fleet stopped: killed by SIGKILL") {
		t.Errorf("Err after SIGKILL: %v, want it to say the fleet stopped, killed", err)
	}
	if err := c.Kill("dgx01"); err == nil || !strings.Contains(err.Error(), "the simulated fleet stopped") {
		t.Errorf("Kill while the fleet is down: %v", err)
	}
	if err := c.Restart(context.Background()); err != nil {
		t.Fatalf("restart: %v", err)
	}
	g2 := newGpulab(t, files, orchestrator.Overrides{})
	if r := g2.run(t, "dgx02", "hostname"); string(r.Stdout) != "dgx02\n" {
		t.Errorf("dgx02 after the restart, with the inventory written before: %s %q %q", r.Class, r.Stdout, r.Stderr)
	}
	if err := c.Kill("dgx01"); err != nil {
		t.Errorf("Kill after the restart: %v", err)
	}
}
