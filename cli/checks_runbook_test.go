package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/sim"
	"github.com/gpulab/gpulab/sim/spec"
)

// gpulab runbook run health on the same kind of fleet: the probe step
// pushes the probe, and each state check FAILs or WARNs on the knob's
// host with the knob's GPU in its evidence, and PASSes on a healthy host
// (which held the evidence). The run's JSON keeps the probe step's
// snapshot as its facts.
func TestHealthRunbookReadsTheProbe(t *testing.T) {
	_, files := simFleet(t, sim.Config{Hosts: 2, Seed: 1, Faults: map[string]spec.Faults{"dgx02": stateKnobs, "dgx01": {}}})
	r := run(t, noEnv(t), "runbook", "run", "health", "--inventory", files.Inventory, "-H", "*", "--json")
	if r.code != ExitFailed {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var doc struct {
		Hosts []struct {
			Host  string
			Steps []struct {
				ID    string
				Facts json.RawMessage
			}
			Verdicts []struct{ Check, Status, Summary string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	want := map[string]string{"recovery": "FAIL GPU3: the driver asks for recovery: drain and reset", "nvml-hung": "FAIL GPU6: NVML hung: nvmlDeviceGetPowerUsage",
		"pcie-gen": "WARN GPU5: PCIe link at Gen2 of Gen4 under load", "pcie-replays": "WARN GPU5: PCIe replays rose by 40",
		"clock-events": "WARN GPU2: clocks slowed by hw_slowdown", "thermal-margin": "WARN GPU2: 2 C from its slowdown temperature",
		"power-cap": "WARN GPU4: power capped at 250 W"}
	for _, h := range doc.Hosts {
		got := map[string]string{}
		for _, v := range h.Verdicts {
			got[v.Check] = v.Status + " " + v.Summary
		}
		for check, w := range want {
			if h.Host == "dgx01" && !strings.HasPrefix(got[check], "PASS") {
				t.Errorf("healthy dgx01 %s: %s, want PASS", check, got[check])
			}
			if h.Host == "dgx02" && !strings.HasPrefix(got[check], w) {
				t.Errorf("dgx02 %s: %q, want %q", check, got[check], w)
			}
		}
		i := slices.IndexFunc(h.Steps, func(s struct {
			ID    string
			Facts json.RawMessage
		}) bool {
			return s.ID == "probe"
		})
		if i < 0 || !strings.Contains(string(h.Steps[i].Facts), `"window_seconds"`) {
			t.Errorf("%s: the probe step's facts are not its snapshot", h.Host)
		}
	}
}
