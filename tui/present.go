package tui

import (
	"fmt"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// PresentStep is one step of a presenter's scripted walkthrough (gpulab
// demo --present): the view it shows, what it starts there, and one line
// that says what to look at.
type PresentStep struct {
	// Tab is the view's title ("Fleet", "Runbooks").
	Tab string
	// Run is what the step starts when it is first reached: "probe" in the
	// Fleet, a runbook's id in Runbooks, a lab's id in Labs; "" starts
	// nothing.
	Run string
	// Open opens the detail the step is about, as soon as there is one:
	// the first flagged host's GPUs (Fleet), the evidence of the first
	// FAIL (Runbooks), the newest record (Results).
	Open bool
	// Caption is the one line shown above the view.
	Caption string
}

// presentable is a view a presenter's step can drive.
type presentable interface {
	// present starts run (see PresentStep.Run) and opens the detail when
	// open; it returns the command of the run it started, if any.
	present(run string, open bool) tea.Cmd
}

// presentKeys step through a walkthrough; they take n and p from the views.
type presentKeys struct {
	Next, Prev key.Binding
}

func defaultPresentKeys() presentKeys {
	return presentKeys{
		// A presenter's clicker sends page down and page up.
		Next: key.NewBinding(key.WithKeys("n", "pgdown"), key.WithHelp("n", "next step")),
		Prev: key.NewBinding(key.WithKeys("p", "pgup"), key.WithHelp("p", "previous step")),
	}
}

// presenter is the walkthrough's state: the steps, where it is, and which
// steps have started their run (going back and forth again shows the run,
// it does not start another).
type presenter struct {
	steps   []PresentStep
	at      int // -1 before the first n
	started map[int]bool
	keys    presentKeys
}

func newPresenter(steps []PresentStep) *presenter {
	return &presenter{steps: steps, at: -1, started: map[int]bool{}, keys: defaultPresentKeys()}
}

// caption is the line above the view: the step, its caption, and the keys.
func (p *presenter) caption() string {
	if p.at < 0 {
		return fmt.Sprintf("Presenter mode: %d steps. n next step · p previous step · q quit", len(p.steps))
	}
	return fmt.Sprintf("%d/%d  %s", p.at+1, len(p.steps), p.steps[p.at].Caption)
}

// goTo moves the walkthrough to step i (clamped) and shows it: its tab,
// and, the first time it is reached going forward, its run and detail.
func (m *Model) goTo(i int) tea.Cmd {
	p := m.present
	i = max(0, min(i, len(p.steps)-1))
	forward := i > p.at
	p.at = i
	s := p.steps[i]
	for k, v := range m.views {
		if v.Title() == s.Tab {
			m.selectTab(k)
			break
		}
	}
	if !forward || p.started[i] {
		return nil
	}
	p.started[i] = true
	if pv, ok := m.views[m.active].(presentable); ok && (s.Run != "" || s.Open) {
		return pv.present(s.Run, s.Open)
	}
	return nil
}

// handlePresentKey steps through the walkthrough.
func (m *Model) handlePresentKey(msg tea.KeyMsg) (tea.Cmd, bool) {
	switch {
	case key.Matches(msg, m.present.keys.Next):
		return m.goTo(m.present.at + 1), true
	case key.Matches(msg, m.present.keys.Prev):
		if m.present.at <= 0 {
			return nil, true
		}
		return m.goTo(m.present.at - 1), true
	}
	return nil, false
}
