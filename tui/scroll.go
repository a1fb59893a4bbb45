package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// ScrollKeys move a pane of text taller than its room.
type ScrollKeys struct {
	PageUp, PageDown, Top, Bottom key.Binding
}

// DefaultScrollKeys returns page up/down and home/end.
func DefaultScrollKeys() ScrollKeys {
	return ScrollKeys{
		PageUp:   key.NewBinding(key.WithKeys("pgup"), key.WithHelp("pgup", "output up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown"), key.WithHelp("pgdn", "more output")),
		Top:      key.NewBinding(key.WithKeys("home"), key.WithHelp("home", "output's top")),
		Bottom:   key.NewBinding(key.WithKeys("end"), key.WithHelp("end", "output's end")),
	}
}

// wheelLines is how far one turn of the mouse wheel scrolls.
const wheelLines = 3

// scroller is the position of a pane of text in its room: the first line
// shown, and whether it follows the end as lines arrive. A pane whose text
// does not fit gives its last line to a marker that says how much is above
// and below, so that nothing is ever cut silently.
type scroller struct {
	top    int
	follow bool
}

// room is how many of the pane's height lines show text.
func room(total, height int) int {
	if total > height {
		return max(1, height-1)
	}
	return height
}

func (s *scroller) maxTop(total, height int) int { return max(0, total-room(total, height)) }

// by moves the pane n lines (negative: up) over total lines.
func (s *scroller) by(n, total, height int) {
	last := s.maxTop(total, height)
	if s.follow {
		s.top = last
	}
	s.top = max(0, min(last, s.top+n))
	s.follow = s.top == last && n > 0
}

// home and end move to the first and the last line; at the end the pane
// follows lines that arrive.
func (s *scroller) home()            { s.top, s.follow = 0, false }
func (s *scroller) end(total, h int) { s.top, s.follow = s.maxTop(total, h), true }

func (s scroller) position(total, height int) int {
	last := s.maxTop(total, height)
	if s.follow {
		return last
	}
	return min(s.top, last)
}

// handle moves the pane for a scroll key or a wheel turn; it reports
// whether msg was one.
func (s *scroller) handle(msg tea.Msg, k ScrollKeys, total, height int) bool {
	page := max(1, room(total, height)-1)
	switch msg := msg.(type) {
	case tea.MouseMsg:
		switch msg.Button {
		case tea.MouseButtonWheelUp:
			s.by(-wheelLines, total, height)
		case tea.MouseButtonWheelDown:
			s.by(wheelLines, total, height)
		default:
			return false
		}
	case tea.KeyMsg:
		switch {
		case key.Matches(msg, k.PageUp):
			s.by(-page, total, height)
		case key.Matches(msg, k.PageDown):
			s.by(page, total, height)
		case key.Matches(msg, k.Top):
			s.home()
		case key.Matches(msg, k.Bottom):
			s.end(total, height)
		default:
			return false
		}
	default:
		return false
	}
	return true
}

// render shows lines in height lines at most: those in view, and, when
// they do not all fit, a marker of what is above and below.
func (s scroller) render(lines []string, height int, st Styles) []string {
	if height <= 0 {
		return nil
	}
	if len(lines) <= height {
		return lines
	}
	top := s.position(len(lines), height)
	n := room(len(lines), height)
	out := append(make([]string, 0, height), lines[top:top+n]...)
	return append(out, st.Hint.Render(moreMarker(top, len(lines)-top-n)))
}

// moreMarker says how many lines are above and below the view, and which
// keys reach them.
func moreMarker(above, below int) string {
	switch {
	case above == 0:
		return fmt.Sprintf("↓ %d more line%s below · pgdn", below, plural(below))
	case below == 0:
		return fmt.Sprintf("↑ %d line%s above · pgup · end of output", above, plural(above))
	}
	return fmt.Sprintf("↑ %d above · ↓ %d more below · pgup/pgdn", above, below)
}

// textPage is a whole view of text (a host's GPUs, a record): the
// arrows move it a line, the scroll keys a page, and its last line says
// what is above and below.
type textPage struct {
	lines  []string
	s      scroller
	height int
}

func newTextPage(lines []string, height int) *textPage {
	return &textPage{lines: lines, height: height}
}

// update moves the page; it reports whether msg did.
func (p *textPage) update(msg tea.Msg, up, down key.Binding, k ScrollKeys) bool {
	if km, ok := msg.(tea.KeyMsg); ok {
		switch {
		case key.Matches(km, up):
			p.s.by(-1, len(p.lines), p.height)
			return true
		case key.Matches(km, down):
			p.s.by(1, len(p.lines), p.height)
			return true
		}
	}
	return p.s.handle(msg, k, len(p.lines), p.height)
}

func (p *textPage) view(st Styles) string {
	return strings.Join(p.s.render(p.lines, p.height, st), "\n")
}

// pageKeys are a page's scroll keys: also g and G for its ends.
func pageKeys() ScrollKeys {
	k := DefaultScrollKeys()
	k.Top = key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g/home", "top"))
	k.Bottom = key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G/end", "end"))
	k.PageUp.SetHelp("pgup", "page up")
	k.PageDown.SetHelp("pgdn", "page down")
	return k
}
