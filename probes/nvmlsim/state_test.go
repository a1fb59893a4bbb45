package nvmlsim_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpulab/gpulab/probes/collect"
	"github.com/gpulab/gpulab/probes/nvmlsim"
	"github.com/gpulab/gpulab/probes/report"
)

// windowed collects f's machine and samples it for a window of twenty
// readings; calls hang after callTimeout.
func windowed(t *testing.T, f nvmlsim.Faults, callTimeout time.Duration) *report.Snapshot {
	t.Helper()
	s := nvmlsim.DGXA100With(f)
	if r := s.Init(); r != nvml.SUCCESS {
		t.Fatalf("Init: %v", r)
	}
	o := collect.Options{Host: "sim", CallTimeout: callTimeout}
	snap := collect.Collect(s, o)
	collect.Sample(s, snap, o, 20*time.Millisecond, time.Millisecond)
	for _, e := range snap.Errors {
		if e.Code == "PANIC" {
			t.Errorf("the simulated DGX A100 leaves %s unanswered: %s", e.Field, e.Message)
		}
	}
	return snap
}

func checksOf(s *report.Snapshot) map[int][]string {
	out := map[int][]string{}
	for _, f := range report.Findings(s) {
		for _, e := range f.Entities {
			if e.Type == "GPU" {
				var i int
				for _, c := range e.Value {
					i = i*10 + int(c-'0')
				}
				out[i] = append(out[i], f.Check)
			}
		}
	}
	return out
}

// Each state knob of the simulated machine is found by the real
// collector and sampling window, on its GPU only; the healthy machine
// holds every check's evidence and has no finding.
func TestStateKnobsAreFound(t *testing.T) {
	healthy := windowed(t, nvmlsim.Faults{}, 0)
	if c := checksOf(healthy); len(c) != 0 {
		t.Fatalf("healthy machine: %v", c)
	}
	g := healthy.GPUs[4]
	if g.Window == nil || g.Window.Samples != 20 || g.Window.PCIeSamples != 20 || g.Window.ReplaysDelta == nil || *g.Window.ReplaysDelta != 0 ||
		g.RecoveryAction != "none" || *g.SlowdownC != 89 || *g.PowerDefaultLimitW != 400 || g.VBIOSVersion != "92.00.36.00.04" || g.InforomImage != "G506.0200.00.04" ||
		*g.PCIe.GenGPUMax != 4 {
		t.Errorf("healthy GPU4: %+v window %+v", g, g.Window)
	}
	var clean []string
	for _, e := range report.HealthEvents("sim", healthy, time.Unix(0, 0)) {
		if e.IsHealthy {
			clean = append(clean, e.Metadata["gpulab.check"])
		}
	}
	// Idle at Gen4 of Gen4, the links show they train at their maximum.
	for _, c := range []string{"recovery-action", "clock-events", "pcie-gen", "pcie-replays", "thermal-margin", "power-cap", "nvml-hung"} {
		if !slices.Contains(clean, c) {
			t.Errorf("a healthy machine does not clear %s: %v", c, clean)
		}
	}

	sick := windowed(t, nvmlsim.Faults{
		PCIeGen: map[int]int{5: 2, 1: 1}, Utilization: map[int]uint32{5: 95}, PCIeReplays: map[int]uint64{5: 40},
		Throttle: map[int][]string{2: {"hw_slowdown"}}, TemperatureC: map[int]int{2: 87}, PowerLimitW: map[int]int{4: 250},
		RecoveryAction: map[int]string{3: "drain_and_reset"}, VBIOS: "92.00.36.00.02",
		NVMLHang: map[int]string{6: "nvmlDeviceGetTemperature"}, NVLinkFabric: map[int]string{0: "in_progress", 7: "failed"},
	}, 2*time.Second) // generous: a call on the mock takes microseconds, a busy machine must not make one "hung"
	got := checksOf(sick)
	want := map[int][]string{0: {"nvlink-fabric"}, 2: {"clock-events", "thermal-margin"}, 3: {"recovery-action"}, 4: {"power-cap"},
		5: {"pcie-gen", "pcie-replays"}, 6: {"nvml-hung"}, 7: {"nvlink-fabric"}}
	for i := 0; i < 8; i++ {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("GPU%d: %v, want %v", i, got[i], want[i])
		}
	}
	// GPU1's link at Gen1 while idle is the power-saving down-shift.
	if w := sick.GPUs[1].Window; w.PCIeGenBelowIdle != 20 || w.PCIeGenBelowBusy != 0 {
		t.Errorf("GPU1 idle at Gen1: %+v", w)
	}
	h := sick.GPUs[6]
	if h.Hung != "nvmlDeviceGetTemperature" || h.Window != nil || h.PowerW != nil || sick.GPUs[7].PowerW == nil || len(sick.GPUs) != 8 {
		t.Errorf("hung GPU6: hung %q window %v power %v; GPU7 power %v", h.Hung, h.Window, h.PowerW, sick.GPUs[7].PowerW)
	}
	var hung []string
	for _, e := range sick.Errors {
		if e.Code == "HUNG" {
			hung = append(hung, e.Field+": "+e.Message)
		}
	}
	if len(hung) != 1 || !strings.Contains(hung[0], "gpu[6].temperature_c: nvmlDeviceGetTemperature did not return within 2s") {
		t.Errorf("hung calls recorded: %q", hung)
	}
	// The recorded A100s have no fabric state: the check does not apply,
	// and clears nothing; with the knob, the GPUs not named completed.
	if fb := healthy.GPUs[2].Fabric; fb == nil || fb.State != "not_supported" || report.NotApplicable(healthy, "nvlink-fabric") == "" || slices.Contains(clean, "nvlink-fabric") {
		t.Errorf("healthy GPU2 fabric %+v, not applicable %q, cleared %v", fb, report.NotApplicable(healthy, "nvlink-fabric"), clean)
	}
	if fb := sick.GPUs[1].Fabric; fb == nil || fb.State != "completed" || fb.Status != "SUCCESS" || fb.HealthMask != nil {
		t.Errorf("GPU1 fabric %+v: want completed, SUCCESS, no mask (a mock cannot say it exports nvmlDeviceGetGpuFabricInfoV)", fb)
	}
	if fb := sick.GPUs[7].Fabric; fb == nil || fb.State != "completed" || fb.Status != "UNKNOWN" {
		t.Errorf("GPU7 fabric %+v: want completed with status UNKNOWN", fb)
	}
	if sick.GPUs[0].VBIOSVersion != "92.00.36.00.02" {
		t.Errorf("VBIOS %q", sick.GPUs[0].VBIOSVersion)
	}
}

// A GPU that fell off the bus (its handle GPU_IS_LOST) and one whose
// handle never comes are findings of their own, and no check of every
// GPU is made without them: the GPUs read are not the host.
func TestUnreadGPUsAreNotHealthy(t *testing.T) {
	s := windowed(t, nvmlsim.Faults{GPULost: []int{3}, NVMLHang: map[int]string{5: "nvmlDeviceGetHandleByIndex"}}, time.Second)
	if len(s.GPUs) != 6 {
		t.Fatalf("%d GPUs read, want 6", len(s.GPUs))
	}
	got := checksOf(s)
	if !slices.Equal(got[3], []string{"gpu-lost"}) || !slices.Equal(got[5], []string{"nvml-hung"}) || len(got) != 2 {
		t.Errorf("findings %v, want gpu-lost on GPU3 and nvml-hung on GPU5 only", got)
	}
	for _, c := range []string{"ecc-uncorrected", "row-remap-pending", "recovery-action", "clock-events", "pcie-width", "nvlink-fabric"} {
		if report.CheckMade(s, c) {
			t.Errorf("%s made with GPUs 3 and 5 unread", c)
		}
		if why := report.WhyNotMade(s, c); !strings.Contains(why, "GPU3 was not read (nvmlDeviceGetHandleByIndex: GPU_IS_LOST)") || !strings.Contains(why, "GPU5 was not read (nvmlDeviceGetHandleByIndex: HUNG)") {
			t.Errorf("%s: why not made: %q", c, why)
		}
	}
	for _, e := range report.HealthEvents("sim", s, time.Unix(0, 0)) {
		// gpu-missing (NVML counts no GPU) and gpu-unreadable (a handle
		// refused otherwise than lost or hung) are rightly cleared.
		if c := e.Metadata["gpulab.check"]; e.IsHealthy && !report.HostLevel(c) && c != "gpu-missing" && c != "gpu-unreadable" {
			t.Errorf("a GPU check cleared with GPUs unread: %s", e.CheckName)
		}
	}
}
