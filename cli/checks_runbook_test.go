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
		"power-cap": "WARN GPU4: power capped at 250 W", "stuck-process": "WARN pid 5120 (python3) in state D holding /dev/nvidia-uvm, /dev/nvidia7, /dev/nvidiactl",
		"zombie-gpu-process": "WARN pid 5130 (train.py) on GPU1 is a zombie NVML still lists", "pstore-crash": "WARN 1 crash record(s) in pstore from an earlier boot: Kernel panic - not syncing",
		"ib-port-down": "FAIL mlx5_3 port 1 (InfiniBand) is DOWN, Polling", "ib-port-count": "FAIL 3 active InfiniBand port(s) where the inventory expects 4",
		"ib-port-rate": "WARN mlx5_1 port 1 at 100 Gb/s, below 200 Gb/s", "ib-link-flaps": "WARN mlx5_1 port 1 is flapping: down 1 time(s) in the sampling window, 40 time(s)",
		"ib-port-errors": "WARN mlx5_2 port 1: errors rose in the",
		"fabric-manager": "FAIL 6 NVSwitch(es) and no nv-fabricmanager running", "fabric-manager-log": "WARN the fabric manager logged an error: [Feb 27 2025 15:10:02] [ERROR]"}
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

// The health runbook reads the kernel log through the simulated hosts'
// dmesg over SSH. Its xid check reads an NVSwitch's SXid (its detail
// lines folded into it) and an NVLink5 Xid decoded from its interrupt
// info, each with its meaning and fix: a fatal SXid or NVLink error
// FAILs, a non-fatal SXid alone WARNs. Its host-faults check FAILs on a
// task hung inside the NVIDIA driver and WARNs on an OOM kill. A healthy
// host PASSes both.
func TestHealthRunbookReadsTheKernelLog(t *testing.T) {
	fatal := spec.Faults{
		SXids: []spec.SXID{{Switch: 2, Code: 24007, Message: "Fatal, Link 28 sourcetrack timeout error (First)", SecondsAfterBoot: 8123.6}},
		XIDs:  []spec.XID{{GPU: 1, Code: 145, Message: "RLW_REMAP Fatal XC0 i0 Link 02 (0x00000004 0x00000040 0x00000000 0x00000000)", SecondsAfterBoot: 8124.1}},
		KernelLog: []spec.KernelLine{
			{SecondsAfterBoot: 8200, Level: "err", Text: "INFO: task python3:51234 blocked for more than 122 seconds."},
			{SecondsAfterBoot: 8200, Level: "err", Text: "task:python3         state:D stack:0     pid:51234 ppid:51200 flags:0x00004002"},
			{SecondsAfterBoot: 8200, Level: "warn", Text: " os_acquire_rwlock_write+0x31/0x40 [nvidia]"},
		},
	}
	mild := spec.Faults{SXids: []spec.SXID{{Switch: 0, Code: 11004, Message: "Non-fatal, Link 40 ingress invalid ACL (First)", SecondsAfterBoot: 60}},
		KernelLog: []spec.KernelLine{{SecondsAfterBoot: 70, Level: "err", Text: "Out of memory: Killed process 7001 (python3) total-vm:99999kB, anon-rss:88888kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:100kB oom_score_adj:0"}}}
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
		"dgx01 xid": {"PASS", nil},
		"dgx02 xid": {"FAIL", []string{"SXid 24007 on NVSwitch 0000:c6:00.0: NVSwitch sourcetrack timeout error: fatal", "(2 detail line(s) follow it)",
			"Xid 145 on 0000:0f:00: NVLink5 RLW_REMAP error on NVLink 2 (fatal)", "Fix: Now: drain the GPU and reset it"}},
		"dgx03 xid":         {"WARN", []string{"SXid 11004 on NVSwitch 0000:c4:00.0: NVSwitch Ingress invalid ACL: not fatal"}},
		"dgx01 host-faults": {"PASS", nil},
		"dgx02 host-faults": {"FAIL", []string{"task python3 (pid 51234) blocked 122 s in state D inside the NVIDIA driver", "drain the node and reboot it"}},
		"dgx03 host-faults": {"WARN", []string{"OOM killer killed pid 7001 (python3): the host ran out of memory"}},
	}
	seen := 0
	for _, h := range doc.Hosts {
		for _, v := range h.Verdicts {
			w, ok := want[h.Host+" "+v.Check]
			if !ok {
				continue
			}
			seen++
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
	if seen != len(want) {
		t.Errorf("%d of the %d verdicts looked for", seen, len(want))
	}
}
