package tui

import (
	"sync/atomic"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/cluster"
)

// FleetProbedMsg is a finished probe run of the Fleet: each host's
// outcome, in the Fleet's order. The root passes it to every view: the
// Cluster tab reconciles its nodes with it (what pods are allocated
// against what runs on the GPUs).
type FleetProbedMsg struct {
	Hosts    []string
	Outcomes []app.ProbeOutcome
}

// probedCmd tells the other views what the probe run found.
func (v *fleetView) probedCmd(outcomes []app.ProbeOutcome) tea.Cmd {
	msg := FleetProbedMsg{Hosts: make([]string, len(v.rows)), Outcomes: outcomes}
	for i, r := range v.rows {
		msg.Hosts[i] = r.Name
	}
	return func() tea.Msg { return msg }
}

// nodeProbes holds the latest probe run as the reconciliation takes it,
// by node: a host is the node of its name. Commands read it when they
// compute, so a change computed after a probe run sees that run.
type nodeProbes struct {
	p atomic.Pointer[map[string]cluster.NodeProbe]
}

func (n *nodeProbes) set(msg FleetProbedMsg) {
	m := map[string]cluster.NodeProbe{}
	for i, h := range msg.Hosts {
		np := cluster.NodeProbe{Host: h, Err: "not probed"}
		if i < len(msg.Outcomes) {
			o := msg.Outcomes[i]
			np.Snapshot, np.Err = o.Snapshot, o.Err
			if o.Snapshot != nil && !o.Snapshot.NVML.Available {
				np.Snapshot, np.Err = nil, "host "+h+" has no NVML"
			}
		}
		m[h] = np
	}
	n.p.Store(&m)
}

// get is the latest run's probes, nil before any.
func (n *nodeProbes) get() map[string]cluster.NodeProbe {
	if p := n.p.Load(); p != nil {
		return *p
	}
	return nil
}
