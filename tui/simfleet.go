package tui

import (
	"context"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// SimFleet is the simulated fleet gpulab demo runs in a child process of
// its own (sim.Child): when that process stops (a simulated command ran
// it into a hard limit), the workbench goes on, says so and why in the
// status bar, and R starts the fleet again on the same ports with the
// same keys.
type SimFleet interface {
	// Stopped is closed when the fleet's process ends.
	Stopped() <-chan struct{}
	// Err says why it ended ("the simulated fleet stopped: ...").
	Err() error
	// Restart starts it again.
	Restart(ctx context.Context) error
}

// fleetStoppedMsg says the simulated fleet's process ended; gen is the
// start it belongs to, so that a message of an earlier one is dropped.
type fleetStoppedMsg struct {
	gen int
	err error
}

// fleetRestartedMsg is what Restart answered.
type fleetRestartedMsg struct{ err error }

// simFleetState is what the workbench knows of its simulated fleet.
type simFleetState struct {
	fleet      SimFleet
	gen        int
	down       string // why it stopped ("" while it runs)
	restarting bool
	restart    key.Binding
}

func newSimFleetState(f SimFleet) *simFleetState {
	if f == nil {
		return nil
	}
	return &simFleetState{fleet: f, restart: key.NewBinding(key.WithKeys("R"), key.WithHelp("R", "start the simulated fleet again"))}
}

// watch waits for the fleet's process to end.
func (s *simFleetState) watch() tea.Cmd {
	if s == nil {
		return nil
	}
	gen, done := s.gen, s.fleet.Stopped()
	f := s.fleet
	return func() tea.Msg {
		<-done
		err := f.Err()
		return fleetStoppedMsg{gen: gen, err: err}
	}
}

// update takes the fleet's messages; handled is false for any other.
func (s *simFleetState) update(ctx context.Context, msg tea.Msg) (tea.Cmd, bool) {
	if s == nil {
		return nil, false
	}
	switch msg := msg.(type) {
	case fleetStoppedMsg:
		if msg.gen == s.gen {
			s.down = "the simulated fleet stopped"
			if msg.err != nil {
				s.down = msg.err.Error()
			}
		}
		return nil, true
	case fleetRestartedMsg:
		s.restarting = false
		if msg.err != nil {
			s.down = "the simulated fleet did not start again: " + msg.err.Error()
			return nil, true
		}
		s.down = ""
		s.gen++
		return s.watch(), true
	}
	return nil, false
}

// key handles R while the fleet is down.
func (s *simFleetState) key(ctx context.Context, msg tea.KeyMsg) (tea.Cmd, bool) {
	if s == nil || s.down == "" || s.restarting || !key.Matches(msg, s.restart) {
		return nil, false
	}
	s.restarting = true
	f := s.fleet
	return func() tea.Msg { return fleetRestartedMsg{err: f.Restart(ctx)} }, true
}

// status is the status bar's line while the fleet is down ("" while it
// runs).
func (s *simFleetState) status() string {
	switch {
	case s == nil || s.down == "":
		return ""
	case s.restarting:
		return s.down + ": starting it again…"
	}
	return s.down + ": R starts it again"
}
