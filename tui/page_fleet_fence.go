package tui

import (
	"context"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/gpulab/gpulab/app"
)

// nodeStater says what the cluster says of each host as a node
// (app.Workbench: Slurm's state and drain reason).
type nodeStater interface {
	NodeStates(ctx context.Context) (map[string]app.NodeState, error)
}

type nodeStatesMsg struct {
	states map[string]app.NodeState
	err    error
}

// loadNodeStates reads the hosts' node states, when the runner can.
func loadNodeStates(r FleetRunner) tea.Cmd {
	ns, ok := r.(nodeStater)
	if !ok {
		return nil
	}
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s, err := ns.NodeStates(ctx)
		return nodeStatesMsg{s, err}
	}
}
