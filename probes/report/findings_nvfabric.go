package report

import (
	"fmt"
	"strings"
)

// The fields of NVML's fabric health mask (nvml.h's
// NVML_GPU_FABRIC_HEALTH_MASK_*): each is (mask >> shift) & width.
const (
	fabricShiftDegradedBW        = 0
	fabricShiftRouteRecovery     = 2
	fabricShiftRouteUnhealthy    = 4
	fabricShiftAccessTimeout     = 6
	fabricShiftIncorrectConfig   = 8
	fabricShiftGFMState          = 14
	fabricWidthFlag              = 0x3
	fabricWidthIncorrectConfig   = 0xf
	fabricFlagTrue               = 1 // the _TRUE value of a two-bit flag
	fabricIncorrectConfigNone    = 1
	fabricGFMStateDisconnected   = 2
	fabricIncorrectConfigFirstID = 2
)

// fabricConfigProblems name the incorrect-configuration values from
// NVML_GPU_FABRIC_HEALTH_MASK_INCORRECT_CONFIGURATION_INCORRECT_SYSGUID
// (2) on.
var fabricConfigProblems = []string{"incorrect system GUID", "incorrect chassis serial number", "no partition",
	"insufficient NVLinks", "incompatible GPU firmware", "invalid location", "GPU state invalid"}

// FabricProblem is one thing a GPU's fabric health says.
type FabricProblem struct {
	What  string
	Fatal bool
}

// FabricHealth decodes a fabric health mask into what it says is wrong:
// degraded bandwidth, a route recovery or an access-timeout recovery in
// progress, an unhealthy route, an incorrect configuration, the global
// fabric manager disconnected. None: healthy, or nothing the mask
// supports.
func FabricHealth(mask uint32) []FabricProblem {
	flag := func(shift uint) bool { return mask>>shift&fabricWidthFlag == fabricFlagTrue }
	var out []FabricProblem
	if flag(fabricShiftRouteUnhealthy) {
		out = append(out, FabricProblem{"route unhealthy", true})
	}
	if c := mask >> fabricShiftIncorrectConfig & fabricWidthIncorrectConfig; c >= fabricIncorrectConfigFirstID {
		what := fmt.Sprintf("incorrect configuration (%d)", c)
		if k := int(c - fabricIncorrectConfigFirstID); k < len(fabricConfigProblems) {
			what = "incorrect configuration: " + fabricConfigProblems[k]
		}
		out = append(out, FabricProblem{what, true})
	}
	if flag(fabricShiftDegradedBW) {
		out = append(out, FabricProblem{"degraded bandwidth", false})
	}
	if flag(fabricShiftRouteRecovery) {
		out = append(out, FabricProblem{"route recovery in progress", false})
	}
	if flag(fabricShiftAccessTimeout) {
		out = append(out, FabricProblem{"access timeout recovery in progress", false})
	}
	if mask>>fabricShiftGFMState&fabricWidthFlag == fabricGFMStateDisconnected {
		out = append(out, FabricProblem{"global fabric manager disconnected", false})
	}
	return out
}

// nvlinkFabricFinding is what a GPU's fabric state says is wrong: not
// registered with the fabric (not started, in progress, or completed
// with an error: CUDA fails on it), or its health mask's problems.
func nvlinkFabricFinding(g GPU) (Finding, bool) {
	fb := g.Fabric
	if fb == nil || fb.State == "not_supported" {
		return Finding{}, false
	}
	ev := fmt.Sprintf("fabric state %s", fb.State)
	if fb.Status != "" {
		ev += ", status " + fb.Status
	}
	if fb.HealthMask != nil {
		ev += fmt.Sprintf(", health mask %#x", *fb.HealthMask)
	}
	if fb.HealthSummary != "" {
		ev += ", health summary " + fb.HealthSummary
	}
	f := Finding{Check: "nvlink-fabric", Codes: []string{"NVML_GPU_FABRIC"}, Evidence: []string{ev + " (nvmlDeviceGetGpuFabricInfo)"}}
	switch {
	case fb.State != "completed":
		f.Fatal, f.Action = true, ActionReboot
		f.Message = fmt.Sprintf("NVLink fabric registration %s: CUDA fails on this GPU until the fabric manager completes it (systemctl status nvidia-fabricmanager; restart it, else drain and reboot)", strings.ReplaceAll(fb.State, "_", " "))
		return f, true
	case fb.Status != "" && fb.Status != "SUCCESS":
		f.Fatal, f.Action = true, ActionReboot
		f.Message = "NVLink fabric registration failed (NVML status " + fb.Status + "): the fabric manager's log says why; restart it, else drain and reboot"
		return f, true
	}
	var problems []FabricProblem
	if fb.HealthMask != nil {
		problems = FabricHealth(*fb.HealthMask)
	}
	switch fb.HealthSummary {
	case "unhealthy":
		problems = append(problems, FabricProblem{"NVML calls the fabric unhealthy", true})
	case "limited_capacity":
		problems = append(problems, FabricProblem{"NVML says the fabric runs at limited capacity", false})
	}
	if len(problems) == 0 {
		return Finding{}, false
	}
	var words []string
	f.Action = ActionRunDiagnostics
	for _, p := range problems {
		words = append(words, p.What)
		if p.Fatal {
			f.Fatal, f.Action = true, ActionContactSupport
		}
	}
	f.Message = "NVLink fabric: " + strings.Join(words, ", ")
	if f.Fatal {
		f.Message += ": drain the GPU; nvidia-bug-report.sh and the fabric manager's log for the vendor"
	} else {
		f.Message += ": run field diagnostics (dcgmi diag -r 3) if it stays"
	}
	return f, true
}

// nvlinkFabricCheck is the probe check of each GPU's fabric state.
var nvlinkFabricCheck = probeCheck{name: "nvlink-fabric",
	ready: func(s *Snapshot) bool { return everyGPU(s, func(g GPU) bool { return g.Fabric != nil }) },
	applies: func(s *Snapshot) string {
		if everyGPU(s, func(g GPU) bool { return g.Fabric != nil && g.Fabric.State == "not_supported" }) {
			return "NVML gives these GPUs no NVLink fabric state (only NVSwitch systems of Hopper and newer have one)"
		}
		return ""
	},
	read: func(s *Snapshot) string {
		masks := 0
		for _, g := range s.GPUs {
			if g.Fabric != nil && g.Fabric.HealthMask != nil {
				masks++
			}
		}
		msg := fmt.Sprintf("%d GPU(s) read: NVLink fabric registration completed", len(s.GPUs))
		if masks < len(s.GPUs) {
			return msg + fmt.Sprintf("; health mask read on %d (drivers before 550 do not give it; a refusal is in the snapshot's errors)", masks)
		}
		return msg + "; health mask shows no problem"
	},
}
