package tui

import (
	"context"
	"errors"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/landscape"
)

// fakeSimFleet is a simulated fleet's process for the model's shape: the
// real one is sim.Child, driven end to end in the demo's tmux test.
type fakeSimFleet struct {
	done     chan struct{}
	err      error
	restarts int
}

func (f *fakeSimFleet) Stopped() <-chan struct{} { return f.done }
func (f *fakeSimFleet) Err() error               { return f.err }
func (f *fakeSimFleet) Restart(context.Context) error {
	f.restarts++
	f.done, f.err = make(chan struct{}), nil
	return nil
}

func TestSimFleetStoppedSaysWhyAndRestarts(t *testing.T) {
	c, err := landscape.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeSimFleet{done: make(chan struct{})}
	m := New(Options{Catalog: c, Inventory: inventory.Empty(), Styles: DefaultStyles(), Simulated: true, SimFleet: f})
	next, _ := m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	m = next.(Model)
	if strings.Contains(m.View(), "stopped") {
		t.Fatalf("the status bar says the fleet stopped while it runs:\n%s", m.View())
	}
	// R does nothing while the fleet runs (it is no key of the Map's).
	if m, _ = press(t, m, "R"); f.restarts != 0 {
		t.Fatalf("R restarted a running fleet")
	}
	f.err = errors.New("the simulated fleet stopped: it ran out of memory (its address space is bounded to 8 GiB)")
	close(f.done)
	next, _ = m.Update(m.sim.watch()())
	m = next.(Model)
	if v := m.View(); !strings.Contains(v, "the simulated fleet stopped: it ran out of memory (its address space is bounded to 8 GiB): R starts it again") {
		t.Fatalf("after the fleet's process ended, the status bar:\n%s", v)
	}
	m, cmd := press(t, m, "R")
	if cmd == nil {
		t.Fatal("R while the fleet is down gave no command")
	}
	if v := m.View(); !strings.Contains(v, "starting it again") {
		t.Errorf("while restarting:\n%s", v)
	}
	next, cmd = m.Update(cmd())
	m = next.(Model)
	if f.restarts != 1 || strings.Contains(m.View(), "stopped") || cmd == nil {
		t.Errorf("after R: %d restarts, watching again %v, view:\n%s", f.restarts, cmd != nil, m.View())
	}
}
