package tui

import "github.com/gpulab/gpulab/app"

// FleetProbedMsg is a finished probe run of the Fleet: each host's
// outcome, in the Fleet's order. The root passes it to every view: the
// Cluster tab reconciles its nodes with it (what pods are allocated
// against what runs on the GPUs). It is the one message one page sends
// another, so it lives with the shared parts, not in either page.
type FleetProbedMsg struct {
	Hosts    []string
	Outcomes []app.ProbeOutcome
}
