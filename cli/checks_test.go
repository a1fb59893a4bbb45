package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/sim"
	"github.com/gpulab/gpulab/sim/spec"
)

// stateKnobs are one host's faults with every knob of a GPU's state, one
// GPU each.
var stateKnobs = spec.Faults{
	PCIeGen: map[int]int{5: 2}, Utilization: map[int]uint32{5: 95}, PCIeReplays: map[int]uint64{5: 40},
	Throttle: map[int][]string{2: {"hw_slowdown", "hw_thermal_slowdown"}}, TemperatureC: map[int]int{2: 87},
	PowerLimitW: map[int]int{4: 250}, RecoveryAction: map[int]string{3: "drain_and_reset"}, PCIeBridgeWidth: map[int]int{4: 8},
	NVMLHang: map[int]string{6: "nvmlDeviceGetPowerUsage"}, NVLinkFabric: map[int]string{0: "in_progress"},
	Processes: []spec.Process{{GPU: 7, PID: 5120, Name: "python3", UsedMiB: 1024, State: "D"},
		{GPU: 1, PID: 5130, Name: "train.py", UsedMiB: 2048, State: "Z"}},
	Pstore:        map[string]string{"dmesg-efi-171000000101001": "Panic#1 Part1\n<0>[ 8123.512007] Kernel panic - not syncing: Fatal exception in interrupt\n"},
	IB:            map[string]spec.IBPort{"mlx5_3": {Down: true}, "mlx5_1": {RateGbps: 100, LinkDowned: 40, Flaps: 1}, "mlx5_2": {SymbolErrors: 5}},
	FabricManager: spec.FabricManager{Stopped: true, Log: []string{"[Feb 27 2025 15:10:02] [ERROR] [tid 12727] detected NVSwitch non-fatal error 12028 on fid 0 on NVSwitch pci bus id 00000000:C6:00.0 physical id 3 port 61"}},
}

// gpulab probe on a simulated fleet whose host has every state knob
// turned, over SSH through the pushed probe: each knob is its finding on
// its GPU, with its action, in --json and as health events (which
// validate against the documented schema); the healthy hosts have none
// and clear those checks.
func TestProbeFindsEveryStateKnob(t *testing.T) {
	schema := healthEventsSchema(t)
	f, files := simFleet(t, sim.Config{Hosts: 3, Seed: 1, Faults: map[string]spec.Faults{"dgx03": stateKnobs, "dgx01": {}, "dgx02": {}}})
	_ = f
	r := run(t, noEnv(t), "probe", "--inventory", files.Inventory, "-H", "*", "--json", "--window", "1s")
	if r.code != ExitFailed {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var doc struct {
		Hosts []struct {
			Host     string
			Findings []struct {
				Check, Action, Message string
				Fatal                  bool
				Entities               []struct{ Type, Value string }
			}
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	got := map[string][]string{}
	for _, h := range doc.Hosts {
		for _, fd := range h.Findings {
			gpu := ""
			for _, e := range fd.Entities {
				if e.Type == "GPU" {
					gpu = e.Value
				}
			}
			got[h.Host] = append(got[h.Host], "GPU"+gpu+" "+fd.Check+" "+fd.Action)
		}
	}
	want := []string{"GPU fabric-manager reboot", "GPU fabric-manager-log none", "GPU ib-link-flaps contact-support", "GPU ib-port-count contact-support", "GPU ib-port-down contact-support",
		"GPU ib-port-errors contact-support", "GPU ib-port-rate contact-support", "GPU pstore-crash none", "GPU0 nvlink-fabric reboot", "GPU1 zombie-gpu-process reset-gpu", "GPU2 clock-events contact-support", "GPU2 thermal-margin contact-support", "GPU3 recovery-action reset-gpu",
		"GPU4 pcie-path contact-support", "GPU4 power-cap none", "GPU5 pcie-gen contact-support", "GPU5 pcie-replays contact-support", "GPU6 nvml-hung reboot", "GPU7 stuck-process reboot"}
	slices.Sort(got["dgx03"])
	if !slices.Equal(got["dgx03"], want) || len(got["dgx01"])+len(got["dgx02"]) != 0 {
		t.Errorf("findings %v\nwant dgx03 %v, and none elsewhere", got, want)
	}

	ev := run(t, noEnv(t), "probe", "--inventory", files.Inventory, "-H", "dgx[01-03]", "--output", "health-events", "--window", "1s")
	clean := map[string][]string{}
	sc := bufio.NewScanner(strings.NewReader(ev.stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(v); err != nil {
			t.Errorf("does not validate: %v\n%s", err, sc.Text())
		}
		var e struct {
			NodeName  string
			IsHealthy bool
			Metadata  map[string]string
		}
		_ = json.Unmarshal(sc.Bytes(), &e)
		if e.IsHealthy {
			clean[e.NodeName] = append(clean[e.NodeName], e.Metadata["gpulab.check"])
		}
	}
	for _, c := range []string{"recovery-action", "clock-events", "pcie-replays", "pcie-path", "thermal-margin", "power-cap", "nvml-hung", "stuck-process", "zombie-gpu-process", "pstore-crash",
		"ib-port-down", "ib-port-count", "ib-port-rate", "ib-link-flaps", "ib-port-errors", "fabric-manager", "fabric-manager-log"} {
		if !slices.Contains(clean["dgx01"], c) || slices.Contains(clean["dgx03"], c) {
			t.Errorf("%s: cleared on dgx01 %v, on the sick dgx03 %v", c, clean["dgx01"], clean["dgx03"])
		}
	}
}

// sim serve --faults refuses, before any host starts, a host the fleet
// does not have and a knob no DGX A100 can show, naming the file's place.
func TestSimServeFaultsRefused(t *testing.T) {
	dir := t.TempDir()
	inv := filepath.Join(dir, "inventory.toml")
	for _, tc := range []struct{ file, want string }{
		{`{"dgx09": {"pcie_gen": {"5": 2}}}`, `faults.json:1:11: host "dgx09" is not among the fleet's hosts (dgx01 to dgx04)`},
		{`{"dgx02": {"pcie_gen": {"5": 7}}}`, `host "dgx02": pcie_gen: GPU 5: generation 7`},
		{`{"dgx02": {"throttle": {"1": ["hot"]}}}`, `throttle: GPU 1: "hot": the reasons are`},
		{`{"dgx02": {"xids": [{"gpu": 1, "code": 13, "seconds_after_boot": 1, "message": "` + strings.Repeat("x", 70000) + `"}]}}`, `host "dgx02": its faults are 70`},
		{`{"dgx02": {"xids": [{"gpu": 1, "code": 13, "seconds_after_boot": 1, "message": "a\nNVRM: Xid (PCI:0000:07:00): 79, forged"}]}}`, `xids[0]: want one line of text`},
	} {
		file := filepath.Join(dir, "faults.json")
		if err := os.WriteFile(file, []byte(tc.file), 0o600); err != nil {
			t.Fatal(err)
		}
		run(t, noEnv(t), "sim", "serve", "--faults", file, inv).expect(t, ExitUsage, "", tc.want)
		if _, err := os.Stat(inv); err == nil {
			t.Errorf("%s: the inventory was written: a host started", tc.file)
		}
	}
	for _, w := range []string{"-1s", "11m0s"} {
		run(t, noEnv(t), "probe", "--local", "--mock", "dgxa100", "--window", w).expect(t, ExitUsage, "", "--window "+w+": between 0 (one reading) and 10m0s")
	}
}

// gpulab probe names what the fleet does not agree on: one host's VBIOS
// (the vbios knob) is the drift, on stdout, in --json and in the summary
// line, and the run exits 1; the hosts that agree are the first value.
func TestProbeNamesTheFleetsDrift(t *testing.T) {
	_, files := simFleet(t, sim.Config{Hosts: 3, Seed: 1, Faults: map[string]spec.Faults{"dgx01": {}, "dgx02": {}, "dgx03": {VBIOS: "92.00.36.00.02"}}})
	r := run(t, noEnv(t), "probe", "--inventory", files.Inventory, "-H", "*", "--window", "0")
	want := "VBIOS: dgx[01-02] " + spec.VBIOSVersion + "; dgx03 92.00.36.00.02"
	if r.code != ExitFailed || !strings.Contains(r.stdout, "drift: the hosts do not agree on\n"+want+"\n") || !strings.Contains(r.stderr, "drift in VBIOS (dgx03)") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	j := run(t, noEnv(t), "probe", "--inventory", files.Inventory, "-H", "*", "--window", "0", "--json")
	var doc struct {
		Drift []struct {
			Attribute string
			Values    []struct {
				Value, Hosts string
				Count        int
			}
		}
	}
	if err := json.Unmarshal([]byte(j.stdout), &doc); err != nil || len(doc.Drift) != 1 || doc.Drift[0].Attribute != "VBIOS" ||
		doc.Drift[0].Values[1].Hosts != "dgx03" || doc.Drift[0].Values[0].Count != 2 {
		t.Errorf("%v %+v", err, doc.Drift)
	}
}

// A lab reads the probe's checks: health-gate's probe step, through the
// pushed probe on the simulated fleet, fails the criteria the knobs break
// on their host (a recovery action; an NVLink fabric not complete; an
// RDMA port down; a process stuck in the driver) and passes
// them on the healthy ones.
func TestLabReadsTheProbesChecks(t *testing.T) {
	_, files := simFleet(t, sim.Config{Hosts: 4, Seed: 1, Faults: map[string]spec.Faults{"dgx01": {}, "dgx02": {}, "dgx04": {},
		"dgx03": {RecoveryAction: map[int]string{3: "gpu_reset"}, NVLinkFabric: map[int]string{5: "in_progress"},
			IB: map[string]spec.IBPort{"mlx5_3": {Down: true}}, Processes: []spec.Process{{GPU: 7, PID: 5120, Name: "python3", UsedMiB: 1024, State: "D"}}}}})
	got := labScores(t, noEnv(t), "health-gate", []string{"--inventory", files.Inventory, "-H", "*"})
	wantVerdicts(t, "lab health-gate", got, "dgx03", []string{"gpu-says-ok", "fabric", "rdma", "no-stuck-process"}, nil)
}
