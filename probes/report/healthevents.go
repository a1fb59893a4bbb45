package report

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
)

// HealthEventsSchema names the health-events output's schema
// (docs/health-events.schema.json); it changes only with the schema.
const HealthEventsSchema = "gpulab.health-events/v1"

// HealthEvent is one finding, or one check found clean, in the shape of
// NVSentinel's HealthEvent (its protobuf's JSON form: lowerCamelCase
// fields, enums by name, the timestamp in RFC 3339), so that a site that
// runs NVSentinel can feed gpulab's findings in. docs/health-events.md
// says what each field holds.
type HealthEvent struct {
	Version            uint32            `json:"version"`
	Agent              string            `json:"agent"`
	ComponentClass     string            `json:"componentClass"`
	CheckName          string            `json:"checkName"`
	IsFatal            bool              `json:"isFatal"`
	IsHealthy          bool              `json:"isHealthy"`
	Message            string            `json:"message"`
	RecommendedAction  string            `json:"recommendedAction"`
	ErrorCode          []string          `json:"errorCode,omitempty"`
	EntitiesImpacted   []HealthEntity    `json:"entitiesImpacted,omitempty"`
	Metadata           map[string]string `json:"metadata"`
	GeneratedTimestamp string            `json:"generatedTimestamp"`
	NodeName           string            `json:"nodeName"`
	ProcessingStrategy string            `json:"processingStrategy,omitempty"`
}

// HealthEntity is NVSentinel's Entity.
type HealthEntity struct {
	EntityType  string `json:"entityType"`
	EntityValue string `json:"entityValue"`
}

// probeCheck is one check the probe's snapshot is judged by, and whether
// a snapshot holds what it needs: a check not made is never reported
// healthy.
type probeCheck struct {
	name  string
	ready func(s *Snapshot) bool
	// host: the check judges the host (its processes, crash records, RDMA
	// ports, PCI bus, fabric), not each GPU. why says what its evidence
	// lacks when ready is false, read what its PASS read, applies why it
	// does not apply to a host ("" when it does); nil: the GPU checks'
	// own words.
	host    bool
	why     func(s *Snapshot) string
	read    func(s *Snapshot) string
	applies func(s *Snapshot) string
}

// findCheck is the probe check named check.
func findCheck(check string) (probeCheck, bool) {
	for _, c := range probeChecks {
		if c.name == check {
			return c, true
		}
	}
	return probeCheck{}, false
}

// NotApplicable says why check does not apply to s's host ("" when it
// does): a count or rate judged against the inventory's expectation when
// the inventory gives none.
func NotApplicable(s *Snapshot, check string) string {
	if c, ok := findCheck(check); ok && c.applies != nil {
		return c.applies(s)
	}
	return ""
}

// HostLevel reports whether check judges the host rather than each GPU.
func HostLevel(check string) bool {
	c, _ := findCheck(check)
	return c.host
}

// PassEvidence says what was read for check where it found nothing: the
// evidence of its PASS ("/sys/class/infiniband read: 4 RDMA port(s)").
func PassEvidence(s *Snapshot, check string) string {
	if c, ok := findCheck(check); ok && c.read != nil {
		return c.read(s)
	}
	return fmt.Sprintf("%d GPU(s) read%s", len(s.GPUs), windowWords(s))
}

// windowWords is ", sampled for 2s", or "" for one reading.
func windowWords(s *Snapshot) string {
	if s.WindowSeconds > 0 {
		return fmt.Sprintf(", sampled for %gs", s.WindowSeconds)
	}
	return ""
}

// ProbeChecks lists the checks the probe's findings are made by, in
// Findings' order: the names a runbook's probe-check rule takes.
func ProbeChecks() []string {
	out := make([]string, len(probeChecks))
	for i, c := range probeChecks {
		out[i] = c.name
	}
	return out
}

// CheckMade reports whether s holds the evidence check needs, so that no
// finding of it means the check passed; false for a check it does not
// know.
func CheckMade(s *Snapshot, check string) bool {
	c, ok := findCheck(check)
	return ok && s != nil && s.NVML.Available && HungHost(s) == nil && c.ready(s)
}

// WhyNotMade says why s lacks the evidence of check (CheckMade is
// false): NVML hung, a GPU hung, no GPU, no sampling window, an idle link
// below its generation, or the fields NVML refused.
func WhyNotMade(s *Snapshot, check string) string {
	window := slices.Contains([]string{"clock-events", "pcie-gen", "pcie-replays"}, check)
	c, _ := findCheck(check)
	var hung []string
	for _, g := range s.GPUs {
		if g.Hung != "" {
			hung = append(hung, fmt.Sprintf("GPU%d hung in %s", g.Index, g.Hung))
		}
	}
	switch {
	case HungHost(s) != nil:
		return "NVML hung: " + HungHost(s).Message
	case c.why != nil:
		return c.why(s)
	case len(UnreadGPUs(s)) > 0 && !c.host:
		var words []string
		for _, e := range UnreadGPUs(s) {
			words = append(words, fmt.Sprintf("GPU%d was not read (nvmlDeviceGetHandleByIndex: %s)", *e.GPU, e.Code))
		}
		return strings.Join(words, ", ")
	case len(hung) > 0:
		return strings.Join(hung, ", ") + ": nothing more was read from it"
	case len(s.GPUs) == 0:
		return "NVML listed no GPU"
	case window && s.WindowSeconds == 0:
		return "the probe took one reading, no sampling window (--window, a probe step's window)"
	case check == "pcie-gen":
		return "a GPU was idle with its link shifted down (normal power saving) and not busy long enough in the window to show its link under load: run it with work on the GPUs"
	}
	var refused []string
	for _, e := range s.Errors {
		refused = append(refused, e.Field+" "+e.Code)
	}
	if len(refused) == 0 {
		return "a field it needs was not given"
	}
	return "NVML did not give " + strings.Join(refused[:min(3, len(refused))], ", ")
}

// everyGPU reports whether s has GPUs, every GPU NVML counted was read
// (no handle refused: a GPU left out is not a healthy one), and ok holds
// for each.
func everyGPU(s *Snapshot, ok func(GPU) bool) bool {
	if len(s.GPUs) == 0 || len(UnreadGPUs(s)) > 0 {
		return false
	}
	for _, g := range s.GPUs {
		if !ok(g) {
			return false
		}
	}
	return true
}

// probeChecks are the checks Findings makes, in its order.
var probeChecks = []probeCheck{
	// A hung GPU's links and pairs were not read.
	{name: "nvlink-down", ready: func(s *Snapshot) bool {
		return (len(s.GPUs) == 1 || len(s.Topology) > 0) && everyGPU(s, func(g GPU) bool { return g.Hung == "" })
	}},
	{name: "gpu-missing", ready: func(s *Snapshot) bool { return GPUCountRead(s) }},
	// NVML's returns for every GPU were read: a GPU that answered is not
	// lost, and needs no reset by NVML's word.
	// Every handle NVML was asked for is a finding when refused.
	{name: "gpu-unreadable", ready: func(s *Snapshot) bool { return GPUCountRead(s) }},
	{name: "gpu-lost", ready: func(s *Snapshot) bool { return everyGPU(s, func(GPU) bool { return true }) }},
	{name: "reset-required", ready: func(s *Snapshot) bool { return everyGPU(s, func(GPU) bool { return true }) }},
	{name: "pcie-width", ready: func(s *Snapshot) bool {
		return everyGPU(s, func(g GPU) bool { return g.PCIe.WidthCurrent != nil && g.PCIe.WidthMax != nil })
	}},
	pciePathCheck,
	{name: "row-remap-failed", ready: func(s *Snapshot) bool { return everyGPU(s, func(g GPU) bool { return g.RemappedRows != nil }) }},
	{name: "row-remap-pending", ready: func(s *Snapshot) bool { return everyGPU(s, func(g GPU) bool { return g.RemappedRows != nil }) }},
	{name: "ecc-uncorrected", ready: func(s *Snapshot) bool { return everyGPU(s, func(g GPU) bool { return g.ECC.Volatile != nil }) }},
	{name: "page-retirement-pending", ready: func(s *Snapshot) bool {
		// A100 and newer remap rows instead: their row-remap state answers.
		return everyGPU(s, func(g GPU) bool { return g.RetiredPages != nil || g.RemappedRows != nil })
	}},
	{name: "nvml-hung", ready: func(s *Snapshot) bool { return everyGPU(s, func(GPU) bool { return true }) }},
	{name: "recovery-action", ready: func(s *Snapshot) bool { return everyGPU(s, func(g GPU) bool { return g.RecoveryAction != "" }) }},
	{name: "clock-events", ready: func(s *Snapshot) bool {
		return everyGPU(s, func(g GPU) bool { return g.Window != nil && g.Window.Samples >= MinWindowSamples })
	}},
	// A GPU busy in the window showed its link under load; an idle one
	// whose link stayed at its maximum showed it trains there. An idle
	// link below its maximum is the power-saving down-shift: it shows
	// nothing either way.
	{name: "pcie-gen", ready: func(s *Snapshot) bool {
		return everyGPU(s, func(g GPU) bool {
			w := g.Window
			return w != nil && g.PCIe.GenMax != nil &&
				(w.Busy >= MinWindowSamples || w.PCIeSamples >= MinWindowSamples && w.Busy == 0 && w.PCIeGenBelowIdle == 0)
		})
	}},
	{name: "pcie-replays", ready: func(s *Snapshot) bool {
		return everyGPU(s, func(g GPU) bool { return g.Window != nil && g.Window.ReplaysDelta != nil })
	}},
	{name: "thermal-margin", ready: func(s *Snapshot) bool {
		return everyGPU(s, func(g GPU) bool { return g.SlowdownC != nil && g.TemperatureC != nil })
	}},
	{name: "power-cap", ready: func(s *Snapshot) bool {
		return everyGPU(s, func(g GPU) bool { return g.PowerLimitW != nil && g.PowerDefaultLimitW != nil })
	}},
	nvlinkFabricCheck,
	hostChecks[0], hostChecks[1], hostChecks[2], hostChecks[3],
	ibChecks[0], ibChecks[1], ibChecks[2], ibChecks[3], ibChecks[4],
	fabricChecks[0], fabricChecks[1], fabricChecks[2],
	{name: "xid", ready: func(s *Snapshot) bool { return s.XIDHistory }},
}

// CheckName is a check's name as a HealthEvent's checkName: "Gpulab"
// and the check's words run together ("nvlink-down": GpulabNvlinkDown),
// the form of NVSentinel's own (GpuXidError), which names the node
// condition it sets.
func CheckName(check string) string {
	var b strings.Builder
	b.WriteString("Gpulab")
	for _, w := range strings.Split(check, "-") {
		if w == "" {
			continue
		}
		r := []rune(w)
		r[0] = unicode.ToUpper(r[0])
		b.WriteString(string(r))
	}
	return b.String()
}

// HealthEvents are s's findings as health events for node, then one
// healthy event for each check s holds the evidence for and found
// nothing wrong by, so that a condition an earlier run set is cleared (a
// check that does not apply to the host clears nothing).
// A finding that is Unknown is no event: it neither sets nor clears. A
// host whose NVML did not answer gives none. Events of a simulated
// snapshot are STORE_ONLY: nothing may act on them.
func HealthEvents(node string, s *Snapshot, at time.Time) []HealthEvent {
	if s == nil || !s.NVML.Available {
		return nil
	}
	ts := at.UTC().Format(time.RFC3339Nano)
	event := func(check string) HealthEvent {
		e := HealthEvent{Version: 1, Agent: "gpulab", ComponentClass: "GPU", CheckName: CheckName(check),
			RecommendedAction: ActionNone.NVSentinelAction(), GeneratedTimestamp: ts, NodeName: node,
			Metadata: map[string]string{"gpulab.schema": HealthEventsSchema, "gpulab.check": check}}
		if s.ProbeVersion != "" {
			e.Metadata["gpulab.probe_version"] = s.ProbeVersion
		}
		if s.Simulated {
			e.Metadata["gpulab.simulated"] = "true"
			e.ProcessingStrategy = "STORE_ONLY"
		}
		return e
	}
	var out []HealthEvent
	found := map[string]bool{}
	for _, f := range Findings(s) {
		found[f.Check] = true
		if f.Unknown {
			continue
		}
		e := event(f.Check)
		e.IsFatal, e.Message, e.ErrorCode = f.Fatal, f.Message, f.Codes
		e.RecommendedAction = f.Action.NVSentinelAction()
		e.Metadata["gpulab.action"] = string(f.Action)
		if len(f.Evidence) > 0 {
			e.Metadata["gpulab.evidence"] = strings.Join(f.Evidence, "\n")
		}
		for _, en := range f.Entities {
			e.EntitiesImpacted = append(e.EntitiesImpacted, HealthEntity{en.Type, en.Value})
		}
		out = append(out, e)
	}
	for _, c := range probeChecks {
		if found[c.name] || !CheckMade(s, c.name) || NotApplicable(s, c.name) != "" {
			continue
		}
		e := event(c.name)
		e.IsHealthy, e.Message = true, c.name+": no finding"
		e.Metadata["gpulab.action"] = string(ActionNone)
		e.Metadata["gpulab.evidence"] = PassEvidence(s, c.name)
		out = append(out, e)
	}
	return out
}
