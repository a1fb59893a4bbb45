package step

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpulab/gpulab/probes/report"
)

// ProbeInput is the input kind of a step that runs gpulab's probe on the
// host (a runbook step with probe = true): its value is the probe's
// *report.Snapshot, not a parser's reading of a command's text.
const ProbeInput = "gpulab-probe"

func init() {
	rules["probe-check"] = Rule{Inputs: []string{ProbeInput}, Fn: probeCheck, CheckWith: probeCheckWith,
		With: map[string]string{"check": "the probe's check to judge: " + strings.Join(probeStepChecks(), ", ")}}
}

// ProbeStepChecks are the probe's checks a probe step can make: not the
// Xid history, which needs the kernel log (the dmesg-xid parser's
// xid-recent rule reads it).
func ProbeStepChecks() []string { return probeStepChecks() }

// JudgeProbe judges each of the probe's checks a probe step can make on
// in (the probe's snapshot), by check name: what a lab's probe step
// gives its metrics as checks.
func JudgeProbe(in Input) map[string]Verdict {
	out := map[string]Verdict{}
	for _, c := range probeStepChecks() {
		out[c] = Judge(Check{ID: c, Rule: "probe-check", With: map[string]any{"check": c}}, []Input{in})
	}
	return out
}

func probeStepChecks() []string {
	return slices.DeleteFunc(report.ProbeChecks(), func(c string) bool { return c == "xid" || c == "xid-history" })
}

// probeCheckWith requires with.check, one of the checks a probe step
// can make.
func probeCheckWith(with map[string]any) error {
	c, _ := with["check"].(string)
	if !slices.Contains(probeStepChecks(), c) {
		if c == "xid" {
			return fmt.Errorf("with.check \"xid\": a probe step does not read the kernel log; judge a dmesg-xid step with rule xid-recent")
		}
		return fmt.Errorf("with.check %q: the checks a probe step makes are %s", c, strings.Join(probeStepChecks(), ", "))
	}
	return nil
}

// probeCheck judges one of the probe's checks (with.check) on its
// snapshot: FAIL for a fatal finding, WARN for another, UNKNOWN for a
// finding that could not be made or a snapshot without the check's
// evidence (no NVML, no sampling window, a field NVML refused), PASS
// only where the evidence was read and showed nothing.
func probeCheck(in []Input, with map[string]any) Verdict {
	s := in[0].Value.(*report.Snapshot)
	name, _ := with["check"].(string)
	step := in[0].Step
	if !s.NVML.Available {
		return verdict(Unknown, "NVML did not answer: "+s.NVML.Error, Evidence{Step: step, Fact: "nvml: " + s.NVML.Error})
	}
	if why := report.NotApplicable(s, name); why != "" {
		return verdict(Skipped, why)
	}
	var found, unknown []Evidence
	var first, firstUnknown string
	worst := Pass
	for _, f := range report.Findings(s) {
		if f.Check != name {
			continue
		}
		e := Evidence{Step: step, Fact: f.Message + " (action: " + string(f.Action) + ")"}
		if f.Unknown {
			if len(unknown) == 0 {
				firstUnknown = f.Message
			}
			unknown = append(unknown, e)
			continue
		}
		if len(found) == 0 {
			first = f.Message
		}
		found = append(found, e)
		if f.Fatal {
			worst = Fail
		} else if worst != Fail {
			worst = Warn
		}
	}
	switch {
	case len(found) > 0:
		if len(found) > 1 {
			first += fmt.Sprintf(", and %d more", len(found)-1)
		}
		return verdict(worst, first, append(found, unknown...)...)
	case len(unknown) > 0:
		return verdict(Unknown, firstUnknown, unknown...)
	case !report.CheckMade(s, name):
		return verdict(Unknown, "the probe did not read this check's evidence: "+report.WhyNotMade(s, name))
	}
	summary := fmt.Sprintf("%s: no finding on %d GPUs", name, len(s.GPUs))
	if report.HostLevel(name) {
		summary = name + ": no finding"
	}
	return verdict(Pass, summary, Evidence{Step: step, Fact: report.PassEvidence(s, name)})
}
