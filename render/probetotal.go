package render

import (
	"fmt"
	"strings"

	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/probes/report"
)

// ProbeTotal is the one line that counts a probe run's hosts, for gpulab probe
// and the workbench alike: "4 hosts: 1 ok, 1 flagged (dgx02), 2 failed:
// 1 refused (dgx03), 1 no NVML (dgx04)", then what the hosts do not agree
// on (FleetDrift): "drift in VBIOS (dgx16)". snaps[i] is hosts[i]'s snapshot,
// nil when it has none; classes[i] is how reaching it ended (the
// orchestrator's class: refused, auth, exit, ...), which names why a host
// without a snapshot failed. A host whose snapshot has no NVML failed for
// that reason, whatever its class.
func ProbeTotal(hosts []string, snaps []*report.Snapshot, classes []string) string {
	var flagged, failed []string
	why := map[string][]string{}
	var whyOrder []string
	for i, h := range hosts {
		var s *report.Snapshot
		if i < len(snaps) {
			s = snaps[i]
		}
		class := ""
		if i < len(classes) {
			class = classes[i]
		}
		switch report.OutcomeOf(s, class) {
		case report.Failed:
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
		case report.Flagged:
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
	if d := DriftTotal(FleetDrift(hosts, snaps, classes)); d != "" {
		parts = append(parts, d)
	}
	return fmt.Sprintf("%s: %s", text.Plural(len(hosts), "host", "hosts"), strings.Join(parts, ", "))
}
