package tui

import (
	"fmt"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
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
	// present puts the view in the step's state, whatever keys were
	// pressed since: the step's run (see PresentStep.Run) selected, and
	// started when start (the first time the step is reached going
	// forward); its detail open when open, closed when not. It returns the
	// command of the run it started, if any.
	present(run string, open, start bool) tea.Cmd
}

// scrollable is a view whose pane in view page down and page up scroll:
// a presenter's clicker pages it before it steps the walkthrough.
type scrollable interface {
	// canScroll says whether page down (down) or page up would move the
	// pane in view: it has more below, or is scrolled down.
	canScroll(down bool) bool
}

// The views with a pane that page down scrolls.
var _ = []scrollable{(*fleetView)(nil), (*runbooksView)(nil), (*labsView)(nil), (*resultsView)(nil), (*mapView)(nil), (*matrixView)(nil)}

// presentKeys step through a walkthrough; they take n and p from the
// views. Down and Up are a presenter's clicker (it sends page down and
// page up): they scroll the pane in view while it has more that way, and
// step when it has none.
type presentKeys struct {
	Next, Prev, Down, Up key.Binding
}

func defaultPresentKeys() presentKeys {
	return presentKeys{
		Next: key.NewBinding(key.WithKeys("n"), key.WithHelp("n", "next step")),
		Prev: key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "previous step")),
		Down: key.NewBinding(key.WithKeys("pgdown"), key.WithHelp("pgdn", "scroll, then next step")),
		Up:   key.NewBinding(key.WithKeys("pgup"), key.WithHelp("pgup", "scroll up, then step back")),
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
	// notice takes the caption's place until the next step (n at the
	// last one says there is none).
	notice string
}

func newPresenter(steps []PresentStep) *presenter {
	return &presenter{steps: steps, at: -1, started: map[int]bool{}, keys: defaultPresentKeys()}
}

// caption is the line above the view: the step, its caption, and the
// keys; the clicker's too where the width has room for them.
func (p *presenter) caption(width int) string {
	if p.at < 0 {
		long := fmt.Sprintf("Presenter mode: %d steps. n next step · p previous step · pgdn/pgup scroll, then step · q quit", len(p.steps))
		if ansi.StringWidth(long)+2 <= width {
			return long
		}
		return fmt.Sprintf("Presenter mode: %d steps. n next step · p previous step · q quit", len(p.steps))
	}
	c := fmt.Sprintf("%d/%d  %s", p.at+1, len(p.steps), p.steps[p.at].Caption)
	if end := " · the end: p goes back, q quits"; p.at == len(p.steps)-1 && ansi.StringWidth(c+end)+2 <= width {
		c += end
	}
	if p.notice != "" {
		// The caption was read already: the notice comes first, and the
		// caption after it where the width has room (its offers, such as
		// the last step's b and c, still hold).
		n := fmt.Sprintf("%d/%d  %s", p.at+1, len(p.steps), p.notice)
		if both := n + " · " + p.steps[p.at].Caption; ansi.StringWidth(both)+2 <= width {
			return both
		}
		return n
	}
	return c
}

// offStep is the caption while the tab in front is not the step's (the
// presenter went to another tab by hand): the step's caption would
// describe a screen that is not shown.
func (p *presenter) offStep(tab string) string {
	return fmt.Sprintf("%d/%d is on the %s tab: n goes on from there, p goes back (this is %s)", p.at+1, len(p.steps), p.steps[p.at].Tab, tab)
}

// goTo moves the walkthrough to step i (clamped) and shows it: its tab,
// and, the first time it is reached going forward, its run and detail.
func (m *Model) goTo(i int) tea.Cmd {
	p := m.present
	i = max(0, min(i, len(p.steps)-1))
	forward := i > p.at
	p.at, p.notice = i, ""
	s := p.steps[i]
	for k, v := range m.views {
		if v.Title() == s.Tab {
			m.selectTab(k)
			break
		}
	}
	// Each step owns its whole screen: entered from either side, or after
	// any key the presenter pressed, it shows what it shows going forward.
	m.showHelp = false
	start := forward && !p.started[i]
	p.started[i] = p.started[i] || forward
	if pv, ok := m.views[m.active].(presentable); ok {
		return pv.present(s.Run, s.Open, start)
	}
	return nil
}

// handlePresentKey steps through the walkthrough: n and p always, page
// down and up once the pane in view has nothing more that way (until
// then the key is the view's, and scrolls it: handled is false).
func (m *Model) handlePresentKey(msg tea.KeyMsg) (cmd tea.Cmd, handled bool) {
	k := m.present.keys
	switch {
	case key.Matches(msg, k.Down) && m.paneScrolls(true), key.Matches(msg, k.Up) && m.paneScrolls(false):
		return nil, false
	case (key.Matches(msg, k.Next) || key.Matches(msg, k.Down)) && m.present.at == len(m.present.steps)-1:
		m.present.notice = "That was the last step: p goes back, q quits"
		return nil, true
	case key.Matches(msg, k.Next), key.Matches(msg, k.Down):
		return m.goTo(m.present.at + 1), true
	case key.Matches(msg, k.Prev), key.Matches(msg, k.Up):
		if m.present.at <= 0 {
			return nil, true
		}
		return m.goTo(m.present.at - 1), true
	}
	return nil, false
}

// paneScrolls says whether the view in front has a pane that page down
// (down) or page up would move; under the help panel, whether the panel
// would move (it hides the view).
func (m *Model) paneScrolls(down bool) bool {
	if m.showHelp {
		return m.helpPage().canScroll(down)
	}
	s, ok := m.views[m.active].(scrollable)
	return ok && s.canScroll(down)
}

// present shows the Map as it opens: the first project, no card.
func (v *mapView) present(string, bool, bool) tea.Cmd {
	fresh := newMapView(v.cat, v.styles)
	fresh.SetSize(v.width, v.height)
	*v = *fresh
	return nil
}

// present shows the Matrix as it opens: no filter, search, sort or card.
func (v *matrixView) present(string, bool, bool) tea.Cmd {
	fresh := newMatrixView(v.cat, v.styles)
	fresh.SetSize(v.width, v.height)
	*v = *fresh
	return nil
}

// present shows what waits, the first item selected with its why from the
// top (open), or the nodes (not open).
func (v *clusterView) present(_ string, open, _ bool) tea.Cmd {
	v.focus = focusNodes
	if open {
		v.focus = focusWaiting
	}
	v.waitCursor, v.waitOffset, v.waitChosen = 0, 0, false
	v.nodeCursor, v.nodeOffset, v.nodeChosen = 0, 0, false
	v.why.home()
	v.whyOf = ""
	return nil
}
