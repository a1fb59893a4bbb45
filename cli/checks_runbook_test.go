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

// The health runbook's xid check reads an NVSwitch's SXid (its detail
// lines folded into it) and an NVLink5 Xid decoded from its interrupt
// info, each with its meaning and fix, through the simulated hosts'
// dmesg over SSH: a fatal SXid or NVLink error FAILs, a non-fatal SXid
// alone WARNs, a healthy host PASSes.
func TestHealthRunbookReadsSXidAndNVLinkXid(t *testing.T) {
	fatal := spec.Faults{
		SXids: []spec.SXID{{Switch: 2, Code: 24007, Message: "Fatal, Link 28 sourcetrack timeout error (First)", SecondsAfterBoot: 8123.6}},
		XIDs:  []spec.XID{{GPU: 1, Code: 145, Message: "RLW_REMAP Fatal XC0 i0 Link 02 (0x00000004 0x00000040 0x00000000 0x00000000)", SecondsAfterBoot: 8124.1}},
	}
	mild := spec.Faults{SXids: []spec.SXID{{Switch: 0, Code: 11004, Message: "Non-fatal, Link 40 ingress invalid ACL (First)", SecondsAfterBoot: 60}}}
	_, files := simFleet(t, sim.Config{Hosts: 3, Seed: 1, Faults: map[string]spec.Faults{"dgx01": {}, "dgx02": fatal, "dgx03": mild}})
	r := run(t, noEnv(t), "runbook", "run", "health", "--inventory", files.Inventory, "-H", "*", "--json")
	if r.code != ExitFailed {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var doc struct {
		Hosts []struct {
			Host     string
			Verdicts []struct {
				Check, Status, Summary string
				Evidence               []struct{ Fact string }
			}
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	want := map[string]struct {
		status string
		facts  []string
	}{
		"dgx01": {"PASS", nil},
		"dgx02": {"FAIL", []string{"SXid 24007 on NVSwitch 0000:c6:00.0: NVSwitch sourcetrack timeout error: fatal", "(2 detail line(s) follow it)",
			"Xid 145 on 0000:0f:00: NVLink5 RLW_REMAP error on NVLink 2 (fatal)", "Fix: Now: drain the GPU and reset it"}},
		"dgx03": {"WARN", []string{"SXid 11004 on NVSwitch 0000:c4:00.0: NVSwitch Ingress invalid ACL: not fatal"}},
	}
	seen := 0
	for _, h := range doc.Hosts {
		for _, v := range h.Verdicts {
			if v.Check != "xid" {
				continue
			}
			seen++
			w := want[h.Host]
			var facts []string
			for _, e := range v.Evidence {
				facts = append(facts, e.Fact)
			}
			all := strings.Join(facts, "\n")
			if v.Status != w.status {
				t.Errorf("%s xid: %s %s, want %s\n%s", h.Host, v.Status, v.Summary, w.status, all)
			}
			for _, f := range w.facts {
				if !strings.Contains(all, f) {
					t.Errorf("%s xid evidence lacks %q:\n%s", h.Host, f, all)
				}
			}
		}
	}
	if seen != 3 {
		t.Errorf("%d hosts with an xid verdict, want 3", seen)
	}
}
