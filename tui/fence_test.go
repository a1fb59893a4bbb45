package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/fence"
)

// blockingFencer is a Fleet whose fence plans one change and acts until
// its context ends: a fence under way.
type blockingFencer struct {
	fakeFleet
	stopped chan struct{}
}

func (f blockingFencer) PlanFence(ctx context.Context, hosts []int, reason string, release bool) (*app.FenceAction, error) {
	return &app.FenceAction{Target: "slurm", Plans: []fence.Plan{{Node: "gpu001", In: fence.InSlurm, Changes: []fence.Change{{Op: fence.OpDrain, What: "drain"}}}}}, nil
}

func (f blockingFencer) ApplyFence(ctx context.Context, a *app.FenceAction) app.Fenced {
	<-ctx.Done()
	close(f.stopped)
	return app.Fenced{Results: []fence.Result{{Plan: a.Plans[0], Outcome: fence.Failed, Detail: ctx.Err().Error()}}}
}

// A fence under way holds a quit as a run does: ctrl+c asks (q is the
// dialog's while it is open), the second stops the action (its context
// ends), and the workbench quits once its outcome is back, not before.
func TestQuitWaitsForAFenceUnderWay(t *testing.T) {
	f := blockingFencer{fakeFleet{n: 4, odd: -1}, make(chan struct{})}
	m := newDemoModel(t, Options{Fleet: f}, 120, 32)
	m, cmd := press(t, m, "3", "F", "reason", "enter")
	next, _ := m.Update(msgOf(cmd)) // the plan
	m = next.(Model)
	if !strings.Contains(m.View(), "y: gather the evidence") {
		t.Fatalf("the plan is not shown:\n%s", m.View())
	}
	m, cmd = press(t, m, "y")
	outcome, apply := make(chan tea.Msg, 1), cmd
	go func() { outcome <- apply() }()
	if m.running() != 1 {
		t.Fatalf("a fence under way counts %d hosts running, want 1", m.running())
	}
	m, cmd = press(t, m, "ctrl+c")
	if msgOf(cmd) != nil || !strings.Contains(m.View(), "a run is going") {
		t.Fatalf("ctrl+c during a fence did not ask:\n%s", m.View())
	}
	m, cmd = press(t, m, "ctrl+c")
	if cmd != nil {
		t.Fatalf("the second ctrl+c quit with the fence under way")
	}
	select {
	case <-f.stopped: // the action's context ended
	case <-time.After(time.Minute):
		t.Fatal("waited a minute for the second q to stop the fence")
	}
	next, cmd = m.Update(<-outcome)
	if _, quit := msgOf(cmd).(tea.QuitMsg); !quit {
		t.Errorf("the workbench did not quit once the fence's outcome was back:\n%s", next.(Model).View())
	}
}
