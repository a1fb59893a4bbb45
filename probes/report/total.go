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
// gave none).
func OutcomeOf(s *Snapshot) Outcome {
	switch {
	case s == nil || !s.NVML.Available:
		return Failed
	case len(Flags(s)) > 0:
		return Flagged
	}
	return Healthy
}

// Total is the one line that counts a probe run's hosts, for gpulab probe
// and the workbench alike: "3 hosts: 1 ok, 1 flagged (dgx02), 1 failed
// (dgx03)". snaps[i] is hosts[i]'s snapshot, nil when it has none.
func Total(hosts []string, snaps []*Snapshot) string {
	var flagged, failed []string
	for i, h := range hosts {
		var s *Snapshot
		if i < len(snaps) {
			s = snaps[i]
		}
		switch OutcomeOf(s) {
		case Failed:
			failed = append(failed, h)
		case Flagged:
			flagged = append(flagged, h)
		}
	}
	parts := []string{fmt.Sprintf("%d ok", len(hosts)-len(flagged)-len(failed))}
	if len(flagged) > 0 {
		parts = append(parts, fmt.Sprintf("%d flagged (%s)", len(flagged), inventory.FoldNames(flagged)))
	}
	if len(failed) > 0 {
		parts = append(parts, fmt.Sprintf("%d failed (%s)", len(failed), inventory.FoldNames(failed)))
	}
	noun := "hosts"
	if len(hosts) == 1 {
		noun = "host"
	}
	return fmt.Sprintf("%d %s: %s", len(hosts), noun, strings.Join(parts, ", "))
}
