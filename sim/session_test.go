package sim

import (
	"context"
	"os"
	"testing"

	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/orchestrator"
)

// fleetTargets resolves a written inventory as gpulab does.
func fleetTargets(t *testing.T, files Files) []orchestrator.Target {
	t.Helper()
	loaded, err := inventory.Load(files.Inventory)
	if err != nil {
		t.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	res, err := orchestrator.NewResolver(loaded, "", orchestrator.Overrides{}, home, "operator")
	if err != nil {
		t.Fatal(err)
	}
	var targets []orchestrator.Target
	for _, h := range loaded.Hosts {
		tg, err := res.Resolve(h)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, tg)
	}
	return targets
}

// A command that ends at once must not close its session before the
// exec request's reply went out (the client then sees "start command:
// EOF", a lost host): seen once in 1,000 on a busy machine.
func TestInstantCommandsAreNeverLost(t *testing.T) {
	_, files := startFleet(t, Config{Hosts: 20})
	targets := fleetTargets(t, files)
	e := &orchestrator.Engine{Dialer: &orchestrator.Dialer{Keys: &orchestrator.Keyring{}}, Concurrency: len(targets)}
	e.Pool = &orchestrator.Pool{Dialer: e.Dialer}
	defer e.Pool.Close()
	for i := 0; i < 50; i++ {
		for _, r := range e.Run(context.Background(), orchestrator.Plan{Targets: targets, Steps: []orchestrator.Step{{Name: "true", Command: "true"}, {Name: "exit", Command: "exit 3"}}}, nil) {
			if r.Class != orchestrator.OK && r.Class != orchestrator.Exit {
				t.Fatalf("run %d, %s: %s %s", i, r.Host, r.Class, r.Err)
			}
		}
	}
}
