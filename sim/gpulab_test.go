package sim

import (
	"context"
	"testing"

	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/orchestrator"
)

// gpulab reaches a fleet as gpulab does: its inventory resolved with the
// overrides, gpulab's own engine, dialer and keyring.
type gpulab struct {
	engine  *orchestrator.Engine
	targets []orchestrator.Target
}

func newGpulab(t *testing.T, files Files, o orchestrator.Overrides) *gpulab {
	t.Helper()
	inv, err := inventory.Load(files.Inventory)
	if err != nil {
		t.Fatal(err)
	}
	if !inv.Simulated {
		t.Errorf("the inventory of a simulated fleet does not say simulated = true")
	}
	res, err := orchestrator.NewResolver(inv, "", o, t.TempDir(), "tester")
	if err != nil {
		t.Fatal(err)
	}
	hosts, err := inv.Select("@dgx")
	if err != nil {
		t.Fatal(err)
	}
	g := &gpulab{}
	for _, h := range hosts {
		tg, err := res.Resolve(h)
		if err != nil {
			t.Fatalf("resolve %s: %v", h.Name, err)
		}
		g.targets = append(g.targets, tg)
	}
	keys := &orchestrator.Keyring{}
	t.Cleanup(func() { keys.Close() })
	g.engine = &orchestrator.Engine{Dialer: &orchestrator.Dialer{Keys: keys}}
	return g
}

// target is the fleet host called name.
func (g *gpulab) target(t *testing.T, name string) orchestrator.Target {
	t.Helper()
	for _, tg := range g.targets {
		if tg.Name == name {
			return tg
		}
	}
	t.Fatalf("no host %q in the inventory", name)
	return orchestrator.Target{}
}

// dial opens gpulab's connection to one host.
func (g *gpulab) dial(t *testing.T, name string) *orchestrator.Conn {
	t.Helper()
	c, err := g.engine.Dialer.Dial(context.Background(), g.target(t, name))
	if err != nil {
		t.Fatalf("dial %s: %v", name, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// run runs command on host and returns its result.
func (g *gpulab) run(t *testing.T, name, command string) orchestrator.Result {
	t.Helper()
	return g.dial(t, name).Run(context.Background(), "test", command, orchestrator.RunOptions{})
}

// sickHost is the name of the fleet's sick host, from Hosts.
func sickHost(t *testing.T, f *Fleet) string {
	t.Helper()
	for _, h := range f.Hosts() {
		if h.Sick {
			return h.Name
		}
	}
	t.Fatal("the fleet has no sick host")
	return ""
}
