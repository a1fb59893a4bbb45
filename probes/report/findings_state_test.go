package report

import (
	"slices"
	"strings"
	"testing"
)

// window is a sampling window of n samples, busy in busy of them.
func window(n, busy int) *Window {
	return &Window{Samples: n, PCIeSamples: n, Busy: busy, ClockEvents: map[string]int{}, ReplaysDelta: ptr(uint64(0))}
}

// stateGPU is a healthy A100 as the probe reads it with a window.
func stateGPU() GPU {
	return GPU{Index: 2, UUID: "GPU-2", PCIBusID: "00000000:47:00.0",
		PCIe:         PCIe{GenCurrent: ptr(4), GenMax: ptr(4), GenGPUMax: ptr(4), WidthCurrent: ptr(16), WidthMax: ptr(16), Replays: ptr(uint64(3))},
		TemperatureC: ptr(uint32(34)), SlowdownC: ptr(uint32(89)), PowerLimitW: ptr(400.0), PowerDefaultLimitW: ptr(400.0),
		RecoveryAction: "none", Window: window(20, 20)}
}

// fabric is a GPU's fabric state with a health mask.
func fabric(state string, mask uint32) *GPUFabric {
	return &GPUFabric{State: state, Status: "SUCCESS", HealthMask: &mask, HealthSummary: "healthy"}
}

// Each state finding fires on its evidence, at its threshold and not
// below it, with its action; a healthy GPU has none.
func TestStateFindings(t *testing.T) {
	checks := func(g GPU) []string {
		var out []string
		for _, f := range GPUFindings(g) {
			out = append(out, f.Check)
		}
		return out
	}
	if c := checks(stateGPU()); len(c) != 0 {
		t.Fatalf("healthy GPU: %v", c)
	}
	cases := []struct {
		name   string
		change func(*GPU)
		check  string // "" for none
		action Action
		fatal  bool
		msg    string
	}{
		{"hung", func(g *GPU) { g.Hung = "nvmlDeviceGetPowerUsage" }, "nvml-hung", ActionReboot, true, "nvmlDeviceGetPowerUsage did not return"},
		{"drain and reset", func(g *GPU) { g.RecoveryAction = "drain_and_reset" }, "recovery-action", ActionResetGPU, true, "drain and reset"},
		{"node reboot", func(g *GPU) { g.RecoveryAction = "node_reboot" }, "recovery-action", ActionReboot, true, "node reboot"},
		{"imex", func(g *GPU) { g.RecoveryAction = "recover_imex_domain" }, "recovery-action", ActionUnknown, true, "recover imex domain"},
		{"recovery unread", func(g *GPU) { g.RecoveryAction = "" }, "", "", false, ""},
		{"hw slowdown storm", func(g *GPU) { g.Window.ClockEvents["hw_slowdown"] = 20 }, "clock-events", ActionContactSupport, false, "hw_slowdown 20 of 20 samples"},
		{"hw slowdown at the share", func(g *GPU) { g.Window.ClockEvents["hw_thermal_slowdown"] = 4 }, "clock-events", ActionContactSupport, false, "hw_thermal_slowdown 4 of 20"},
		{"hw slowdown below the share", func(g *GPU) { g.Window.ClockEvents["hw_thermal_slowdown"] = 3 }, "", "", false, ""},
		{"too few samples", func(g *GPU) { g.Window = window(4, 4); g.Window.ClockEvents["hw_slowdown"] = 4 }, "", "", false, ""},
		{"power cap reason at the default limit", func(g *GPU) { g.Window.ClockEvents["sw_power_cap"] = 20 }, "", "", false, ""},
		{"one reading of a slowdown", func(g *GPU) { g.Window = nil; g.ThrottleReasons = []string{"hw_slowdown"} }, "clock-events", ActionNone, false, "a rate needs a sampling window"},
		{"gen 2 under load", func(g *GPU) { g.Window.PCIeGenBelowBusy = 18; g.Window.PCIeGenBusyMin = ptr(2) }, "pcie-gen", ActionContactSupport, false, "Gen2 of Gen4 under load (18 of 20"},
		{"gen 2 now and then", func(g *GPU) { g.Window.PCIeGenBelowBusy = 9; g.Window.PCIeGenBusyMin = ptr(2) }, "", "", false, ""},
		{"gen 1 idle", func(g *GPU) { g.Window = window(20, 0); g.Window.PCIeGenBelowIdle = 20 }, "", "", false, ""},
		{"replays", func(g *GPU) { g.Window.ReplaysDelta = ptr(uint64(40)) }, "pcie-replays", ActionContactSupport, false, "rose by 40"},
		{"hot", func(g *GPU) { g.TemperatureC = ptr(uint32(86)) }, "thermal-margin", ActionContactSupport, false, "3 C from its slowdown temperature (86 of 89 C)"},
		{"warm", func(g *GPU) { g.TemperatureC = ptr(uint32(84)) }, "", "", false, ""},
		{"over", func(g *GPU) { g.TemperatureC = ptr(uint32(91)) }, "thermal-margin", ActionContactSupport, false, "2 C above its slowdown temperature (91 of 89 C)"},
		{"capped", func(g *GPU) { g.PowerLimitW = ptr(250.0) }, "power-cap", ActionNone, false, "capped at 250 W of its default 400 W"},
		{"no fabric state (A100)", func(g *GPU) { g.Fabric = &GPUFabric{State: "not_supported"} }, "", "", false, ""},
		{"fabric healthy (every flag false, configuration none)", func(g *GPU) { g.Fabric = fabric("completed", 0x1aa) }, "", "", false, ""},
		{"fabric completed, no mask (driver before 550)", func(g *GPU) { g.Fabric = &GPUFabric{State: "completed", Status: "SUCCESS"} }, "", "", false, ""},
		{"fabric in progress", func(g *GPU) { g.Fabric = &GPUFabric{State: "in_progress"} }, "nvlink-fabric", ActionReboot, true, "registration in progress: CUDA fails"},
		{"fabric not started", func(g *GPU) { g.Fabric = &GPUFabric{State: "not_started"} }, "nvlink-fabric", ActionReboot, true, "registration not started"},
		{"fabric failed", func(g *GPU) { g.Fabric = &GPUFabric{State: "completed", Status: "UNKNOWN"} }, "nvlink-fabric", ActionReboot, true, "registration failed (NVML status UNKNOWN)"},
		{"route unhealthy", func(g *GPU) { g.Fabric = fabric("completed", 0x1aa&^0x30|0x10) }, "nvlink-fabric", ActionContactSupport, true, "NVLink fabric: route unhealthy: drain"},
		{"insufficient NVLinks", func(g *GPU) { g.Fabric = fabric("completed", 0x0aa|0x500) }, "nvlink-fabric", ActionContactSupport, true, "incorrect configuration: insufficient NVLinks"},
		{"degraded bandwidth", func(g *GPU) { g.Fabric = fabric("completed", 0x1aa&^0x3|0x1) }, "nvlink-fabric", ActionRunDiagnostics, false, "NVLink fabric: degraded bandwidth: run field diagnostics"},
		{"route recovery and GFM disconnected", func(g *GPU) { g.Fabric = fabric("completed", 0x1aa&^0xc|0x4|0x8000) }, "nvlink-fabric", ActionRunDiagnostics, false, "route recovery in progress, global fabric manager disconnected"},
		{"summary unhealthy", func(g *GPU) { g.Fabric = fabric("completed", 0x1aa); g.Fabric.HealthSummary = "unhealthy" }, "nvlink-fabric", ActionContactSupport, true, "NVML calls the fabric unhealthy"},
	}
	for _, tc := range cases {
		g := stateGPU()
		tc.change(&g)
		fs := GPUFindings(g)
		if tc.check == "" {
			if len(fs) != 0 {
				t.Errorf("%s: %v, want no finding", tc.name, checks(g))
			}
			continue
		}
		if len(fs) != 1 || fs[0].Check != tc.check || fs[0].Action != tc.action || fs[0].Fatal != tc.fatal || !strings.Contains(fs[0].Message, tc.msg) {
			t.Errorf("%s: %+v, want one %s (%s, fatal %v) saying %q", tc.name, fs, tc.check, tc.action, tc.fatal, tc.msg)
			continue
		}
		if !slices.Contains(fs[0].Entities, Entity{"GPU_UUID", "GPU-2"}) || len(fs[0].Evidence) == 0 {
			t.Errorf("%s: entities %v evidence %v", tc.name, fs[0].Entities, fs[0].Evidence)
		}
		if !slices.ContainsFunc(probeChecks, func(c probeCheck) bool { return c.name == tc.check }) {
			t.Errorf("%s: check %s cannot be cleared (not in probeChecks)", tc.name, tc.check)
		}
	}

	// The power cap that slows the clocks is both findings; the slot's
	// own lower generation is said in the evidence.
	g := stateGPU()
	g.PowerLimitW = ptr(250.0)
	g.Window.ClockEvents["sw_power_cap"] = 20
	g.PCIe.GenMax, g.PCIe.GenGPUMax = ptr(3), ptr(4)
	g.Window.PCIeGenBelowBusy, g.Window.PCIeGenBusyMin = 20, ptr(2)
	got := checks(g)
	if !slices.Equal(got, []string{"clock-events", "pcie-gen", "power-cap"}) {
		t.Fatalf("capped and slot-limited: %v", got)
	}
	fs := GPUFindings(g)
	if fs[0].Action != ActionNone || !strings.Contains(fs[0].Message, "sw_power_cap 20 of 20") || fs[0].Codes[0] != "DCGM_FR_CLOCKS_EVENT_POWER" {
		t.Errorf("power-capped clocks: %+v", fs[0])
	}
	if !strings.Contains(strings.Join(fs[1].Evidence, "\n"), "the slot allows only gen 3, not the GPU's fault") || !strings.Contains(fs[1].Message, "Gen2 of Gen3") {
		t.Errorf("slot-limited link: %+v", fs[1])
	}
}

// A snapshot with a window holds the evidence of the window's checks:
// their healthy events are sent; without one, they are not.
func TestWindowChecksClearOnlyWithAWindow(t *testing.T) {
	s := &Snapshot{NVML: NVMLState{Available: true}, GPUs: []GPU{stateGPU()}, Topology: []TopoLink{}}
	healthy := func() []string {
		var out []string
		for _, e := range HealthEvents("n", s, s.CollectedAt) {
			if e.IsHealthy {
				out = append(out, e.Metadata["gpulab.check"])
			}
		}
		return out
	}
	for _, c := range []string{"clock-events", "pcie-gen", "pcie-replays", "thermal-margin", "power-cap", "recovery-action", "nvml-hung"} {
		if !slices.Contains(healthy(), c) {
			t.Errorf("with a window, %s is not cleared: %v", c, healthy())
		}
	}
	// An idle link below its generation is the power-saving down-shift:
	// no finding, and no evidence that the link trains at its maximum.
	s.GPUs[0].Window = window(20, 0)
	s.GPUs[0].Window.PCIeGenBelowIdle = 20
	if CheckMade(s, "pcie-gen") || slices.Contains(healthy(), "pcie-gen") || len(GPUFindings(s.GPUs[0])) != 0 {
		t.Errorf("idle at a lower generation: made %v, healthy %v", CheckMade(s, "pcie-gen"), healthy())
	}
	s.GPUs[0].Window.PCIeGenBelowIdle = 0
	if !CheckMade(s, "pcie-gen") {
		t.Errorf("idle at its maximum generation: the link was seen to train there")
	}
	s.GPUs[0].Window = nil
	s.GPUs[0].RecoveryAction = ""
	for _, c := range []string{"clock-events", "pcie-gen", "pcie-replays", "recovery-action"} {
		if slices.Contains(healthy(), c) {
			t.Errorf("without its evidence, %s is cleared", c)
		}
	}
}

// A hung GPU's pairs were not read: NVLink is not called clean. NVML
// hung for the whole host is its finding, and no GPU is called missing
// on a count never read; no check is clean then.
func TestHangsMakeNoCleanCheck(t *testing.T) {
	a, b := stateGPU(), stateGPU()
	b.Index, b.Hung = 3, "nvmlDeviceGetPowerUsage"
	s := &Snapshot{NVML: NVMLState{Available: true}, GPUs: []GPU{a, b}, Topology: []TopoLink{{A: 2, B: 3, Level: "NV12"}}}
	if CheckMade(s, "nvlink-down") {
		t.Errorf("nvlink-down made with GPU3 hung")
	}
	host := &Snapshot{NVML: NVMLState{Available: true}, GPUs: []GPU{},
		Errors: []FieldError{{Field: "device_count", Code: "HUNG", Message: "nvmlDeviceGetCount did not return within 5s"}}}
	var checks []string
	for _, f := range Findings(host) {
		checks = append(checks, f.Check)
		if f.Check == "nvml-hung" && (!f.Fatal || f.Action != ActionReboot || !strings.Contains(f.Message, "nvmlDeviceGetCount")) {
			t.Errorf("host-wide hang: %+v", f)
		}
	}
	if !slices.Equal(checks, []string{"nvml-hung"}) {
		t.Errorf("host-wide hang: findings %v, want nvml-hung alone (no gpu-missing on a count never read)", checks)
	}
	for _, e := range HealthEvents("n", host, host.CollectedAt) {
		if e.IsHealthy {
			t.Errorf("host-wide hang: %s called clean", e.CheckName)
		}
	}
}

// A GPU whose handle NVML refused for any reason is a finding naming it:
// hung, lost, needing a reset, or unusable (its power, its interrupts);
// one the probe may not open is unknown, never healthy.
func TestUnreadGPUFindings(t *testing.T) {
	for _, c := range []struct {
		code, check string
		fatal, unk  bool
		action      Action
	}{
		{"HUNG", "nvml-hung", true, false, ActionReboot},
		{"GPU_IS_LOST", "gpu-lost", true, false, ActionReboot},
		{"RESET_REQUIRED", "reset-required", true, false, ActionResetGPU},
		{"INSUFFICIENT_POWER", "gpu-unreadable", true, false, ActionContactSupport},
		{"IRQ_ISSUE", "gpu-unreadable", true, false, ActionReboot},
		{"UNKNOWN", "gpu-unreadable", true, false, ActionReboot},
		{"PANIC", "gpu-unreadable", true, false, ActionReboot},
		{"NO_PERMISSION", "gpu-unreadable", false, true, ActionNone},
	} {
		s := &Snapshot{NVML: NVMLState{Available: true}, GPUs: []GPU{{Index: 0}, {Index: 1}},
			Errors: []FieldError{{Field: "gpu[3]", GPU: ptr(3), Code: c.code, Message: "x"}}}
		fs := Findings(s)
		if len(fs) != 1 || fs[0].Check != c.check || fs[0].Fatal != c.fatal || fs[0].Unknown != c.unk || fs[0].Action != c.action ||
			!slices.Contains(fs[0].Entities, Entity{"GPU", "3"}) || !strings.HasPrefix(fs[0].Message, "GPU3") {
			t.Errorf("%s: %+v", c.code, fs)
		}
		if CheckMade(s, "ecc-uncorrected") {
			t.Errorf("%s: a check of every GPU made with GPU3 unread", c.code)
		}
	}
}
