package report

import (
	"fmt"
	"slices"
	"strings"
)

// Thresholds of the findings a sampling window makes. A rate is a count
// of samples; fewer than MinWindowSamples make no rate at all.
const (
	// MinWindowSamples is the fewest samples a rate is read from.
	MinWindowSamples = 5
	// ClockEventShare is the share of samples (in percent) a clock-event
	// reason must be active in to be a finding.
	ClockEventShare = 20
	// PCIeBelowShare is the share of busy samples (in percent) the link
	// must run below its maximum generation in to be a finding.
	PCIeBelowShare = 50
	// ThermalMarginC is the margin to the slowdown temperature under
	// which a GPU is a finding.
	ThermalMarginC = 5
)

// slowdownReasons are the clock-event reasons that are a finding when
// frequent, with the DCGM failure code each answers to; sw_power_cap
// only when someone capped the power (powerCapped).
var slowdownReasons = []struct{ name, code string }{
	{"hw_slowdown", "DCGM_FR_CLOCKS_EVENT_THERMAL"},
	{"hw_thermal_slowdown", "DCGM_FR_CLOCKS_EVENT_THERMAL"},
	{"hw_power_brake_slowdown", "DCGM_FR_CLOCKS_EVENT_POWER"},
	{"sw_thermal_slowdown", "DCGM_FR_CLOCKS_EVENT_THERMAL"},
	{"sw_power_cap", "DCGM_FR_CLOCKS_EVENT_POWER"},
}

// stateFindings are what a GPU's state says beyond its error counters,
// entities not yet set.
func stateFindings(g GPU) []Finding {
	var out []Finding
	if g.Hung != "" {
		out = append(out, Finding{Check: "nvml-hung", Fatal: true, Action: ActionReboot,
			Message:  fmt.Sprintf("NVML hung: %s did not return (nothing more was read from this GPU)", g.Hung),
			Evidence: []string{"hung call: " + g.Hung}})
	}
	if a := g.RecoveryAction; a != "" && a != "none" {
		out = append(out, Finding{Check: "recovery-action", Fatal: true, Action: recoveryAction(a),
			Message:  "the driver asks for recovery: " + strings.ReplaceAll(a, "_", " "),
			Evidence: []string{"recovery_action " + a + " (NVML field FI_DEV_GET_GPU_RECOVERY_ACTION)"}})
	}
	out = append(out, windowFindings(g)...)
	if g.SlowdownC != nil && g.TemperatureC != nil && int(*g.SlowdownC)-int(*g.TemperatureC) < ThermalMarginC {
		margin := int(*g.SlowdownC) - int(*g.TemperatureC)
		where := fmt.Sprintf("%d C from its slowdown temperature", margin)
		if margin < 0 {
			where = fmt.Sprintf("%d C above its slowdown temperature", -margin)
		}
		out = append(out, Finding{Check: "thermal-margin", Action: ActionContactSupport, Codes: []string{"DCGM_FR_TEMP_VIOLATION"},
			Message:  fmt.Sprintf("%s (%d of %d C): check the cooling (airflow, fans, inlet temperature)", where, *g.TemperatureC, *g.SlowdownC),
			Evidence: []string{fmt.Sprintf("temperature_c %d, slowdown_c %d", *g.TemperatureC, *g.SlowdownC)}})
	}
	if powerCapped(g) {
		out = append(out, Finding{Check: "power-cap", Action: ActionNone,
			Message:  fmt.Sprintf("power capped at %.0f W of its default %.0f W (nvidia-smi -pl %.0f restores it if the cap was not meant)", *g.PowerLimitW, *g.PowerDefaultLimitW, *g.PowerDefaultLimitW),
			Evidence: []string{fmt.Sprintf("power_limit_w %.2f, power_default_limit_w %.2f", *g.PowerLimitW, *g.PowerDefaultLimitW)}})
	}
	if f, ok := nvlinkFabricFinding(g); ok {
		out = append(out, f)
	}
	return out
}

// powerCapped: the enforced power limit is below the board's default.
func powerCapped(g GPU) bool {
	return g.PowerLimitW != nil && g.PowerDefaultLimitW != nil && *g.PowerLimitW < *g.PowerDefaultLimitW-0.5
}

// recoveryAction is the action for a recovery action the driver names.
func recoveryAction(a string) Action {
	switch a {
	case "gpu_reset", "drain_and_reset", "drain_p2p", "bus_reset":
		return ActionResetGPU
	case "node_reboot", "system_reboot":
		return ActionReboot
	}
	return ActionUnknown // recover_imex_domain, or a name this gpulab does not know
}

// windowFindings are the rates of the sampling window: clock events, a
// PCIe link below its generation under load, PCIe replays. Without a
// window, an instant reading of a hardware slowdown is a suspicion
// (Unknown), never a rate.
func windowFindings(g GPU) []Finding {
	w := g.Window
	if w == nil {
		var hw []string
		for _, r := range g.ThrottleReasons {
			if strings.HasPrefix(r, "hw_") {
				hw = append(hw, r)
			}
		}
		if len(hw) == 0 {
			return nil
		}
		return []Finding{{Check: "clock-events", Unknown: true, Action: ActionNone,
			Message:  fmt.Sprintf("%s active in one reading: a rate needs a sampling window (gpulab probe --window 2s)", strings.Join(hw, ", ")),
			Evidence: []string{"throttle_reasons " + strings.Join(g.ThrottleReasons, ",")}}}
	}
	var out []Finding
	if f, ok := clockEventFinding(g); ok {
		out = append(out, f)
	}
	if p := g.PCIe; p.GenMax != nil && w.Busy >= MinWindowSamples && w.PCIeGenBelowBusy*100 >= w.Busy*PCIeBelowShare && w.PCIeGenBusyMin != nil {
		ev := []string{fmt.Sprintf("window: %d of %d busy samples below gen_max %d, lowest gen %d", w.PCIeGenBelowBusy, w.Busy, *p.GenMax, *w.PCIeGenBusyMin)}
		if p.GenGPUMax != nil && *p.GenGPUMax > *p.GenMax {
			ev = append(ev, fmt.Sprintf("gen_gpu_max %d: the slot allows only gen %d, not the GPU's fault", *p.GenGPUMax, *p.GenMax))
		}
		if lim := slotLimit(g); lim != "" {
			ev = append(ev, lim)
		}
		if p.PathRead {
			ev = append(ev, "path: "+PathWords(p.Path))
		}
		out = append(out, Finding{Check: "pcie-gen", Action: ActionContactSupport,
			Message:  fmt.Sprintf("PCIe link at Gen%d of Gen%d under load (%d of %d busy samples): reseat the GPU or check the riser and slot", *w.PCIeGenBusyMin, *p.GenMax, w.PCIeGenBelowBusy, w.Busy),
			Evidence: ev})
	}
	if d := w.ReplaysDelta; d != nil && *d > 0 {
		out = append(out, Finding{Check: "pcie-replays", Action: ActionContactSupport, Codes: []string{"DCGM_FR_PCI_REPLAY_RATE"},
			Message:  fmt.Sprintf("PCIe replays rose by %d during the sampling window: the link resends packets (reseat, riser, slot)", *d),
			Evidence: []string{fmt.Sprintf("pcie.replays %d at the start, +%d over %d samples", deref(g.PCIe.Replays), *d, w.Samples)}})
	}
	return out
}

// clockEventFinding is the window's clock-event reasons active in at
// least ClockEventShare percent of its samples.
func clockEventFinding(g GPU) (Finding, bool) {
	w := g.Window
	if w.Samples < MinWindowSamples {
		return Finding{}, false
	}
	var parts, codes, ev []string
	hw := false
	for _, r := range slowdownReasons {
		n := w.ClockEvents[r.name]
		if n*100 < w.Samples*ClockEventShare || (r.name == "sw_power_cap" && !powerCapped(g)) {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %d of %d samples", r.name, n, w.Samples))
		ev = append(ev, fmt.Sprintf("window.clock_events.%s %d of %d", r.name, n, w.Samples))
		if !slices.Contains(codes, r.code) {
			codes = append(codes, r.code)
		}
		hw = hw || r.name != "sw_power_cap"
	}
	if len(parts) == 0 {
		return Finding{}, false
	}
	// Held at a power cap someone set: the power-cap finding says how to
	// lift it. A slowdown of the hardware's own is cooling or power.
	action, why := ActionNone, " (the power cap)"
	if hw {
		action, why = ActionContactSupport, ": check the cooling and the power delivery"
	}
	return Finding{Check: "clock-events", Action: action, Codes: codes,
		Message:  "clocks slowed by " + strings.Join(parts, ", ") + why,
		Evidence: ev}, true
}

func deref(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}
