package report

import (
	"fmt"
	"strings"

	"github.com/gpulab/gpulab/inventory"
)

// Outcome is how one host's probe ended, as every count of a probe run
// counts it.
type Outcome int

// Outcomes.
const (
	// Healthy: the probe read the GPUs through NVML and flagged nothing.
	Healthy Outcome = iota
	// Flagged: the probe read the GPUs and found something worth a look
	// (Flags).
	Flagged
	// Failed: no snapshot, or one without NVML: the probe saw no GPU, so
	// it can tell nothing about this host's health.
	Failed
)

// OutcomeOf is a host's outcome from its snapshot (nil when the probe
// gave none) and its class, how reaching it ended (the orchestrator's
// class: "ok", "lost", "timeout-command", ...; "" when unknown). A run
// that did not end as it should (any class but "ok" or "no-nvml") is
// Failed whatever its snapshot says: what it printed may be the start of
// a report, never evidence of a healthy host.
func OutcomeOf(s *Snapshot, class string) Outcome {
	switch {
	case s == nil || !s.NVML.Available:
		return Failed
	case class != "" && class != "ok" && class != "no-nvml":
		return Failed
	case len(Flags(s)) > 0:
		return Flagged
	}
	return Healthy
}

// Total is the one line that counts a probe run's hosts, for gpulab probe
// and the workbench alike: "4 hosts: 1 ok, 1 flagged (dgx02), 2 failed:
// 1 refused (dgx03), 1 no NVML (dgx04)". snaps[i] is hosts[i]'s snapshot,
// nil when it has none; classes[i] is how reaching it ended (the
// orchestrator's class: refused, auth, exit, ...), which names why a host
// without a snapshot failed. A host whose snapshot has no NVML failed for
// that reason, whatever its class.
func Total(hosts []string, snaps []*Snapshot, classes []string) string {
	var flagged, failed []string
	why := map[string][]string{}
	var whyOrder []string
	for i, h := range hosts {
		var s *Snapshot
		if i < len(snaps) {
			s = snaps[i]
		}
		class := ""
		if i < len(classes) {
			class = classes[i]
		}
		switch OutcomeOf(s, class) {
		case Failed:
			failed = append(failed, h)
			reason := "no NVML"
			switch {
			case s != nil && !s.NVML.Available: // the probe ran and saw no GPU
			case class != "" && class != "ok" && class != "no-nvml":
				reason = class
			case s == nil:
				reason = "no snapshot"
			}
			if _, ok := why[reason]; !ok {
				whyOrder = append(whyOrder, reason)
			}
			why[reason] = append(why[reason], h)
		case Flagged:
			flagged = append(flagged, h)
		}
	}
	parts := []string{fmt.Sprintf("%d ok", len(hosts)-len(flagged)-len(failed))}
	if len(flagged) > 0 {
		parts = append(parts, fmt.Sprintf("%d flagged (%s)", len(flagged), inventory.FoldNames(flagged)))
	}
	if len(failed) > 0 {
		reasons := make([]string, len(whyOrder))
		for i, r := range whyOrder {
			reasons[i] = fmt.Sprintf("%d %s (%s)", len(why[r]), r, inventory.FoldNames(why[r]))
		}
		parts = append(parts, fmt.Sprintf("%d failed: %s", len(failed), strings.Join(reasons, ", ")))
	}
	// Not internal/text's Plural: report is in the probe pushed to every
	// host, and text brings its terminal-cell tables (130 KB of probe).
	noun := "hosts"
	if len(hosts) == 1 {
		noun = "host"
	}
	return fmt.Sprintf("%d %s: %s", len(hosts), noun, strings.Join(parts, ", "))
}

// String is the outcome as the summary line counts it and probe --json
// names it: "ok", "flagged", "failed".
func (o Outcome) String() string {
	switch o {
	case Healthy:
		return "ok"
	case Flagged:
		return "flagged"
	}
	return "failed"
}
