package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/gpulab/gpulab/internal/text"
)

// ScrollKeys move a pane of text taller or wider than its room.
type ScrollKeys struct {
	PageUp, PageDown, Top, Bottom key.Binding
	// Left and Right move the pane sideways, for lines wider than it;
	// a pane without them (zero bindings) cuts such lines.
	Left, Right key.Binding
}

// DefaultScrollKeys returns page up/down, home/end, and < and > (or
// shift and an arrow) sideways.
func DefaultScrollKeys() ScrollKeys {
	return ScrollKeys{
		PageUp:   key.NewBinding(key.WithKeys("pgup"), key.WithHelp("pgup", "output up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown"), key.WithHelp("pgdn", "more output")),
		Top:      key.NewBinding(key.WithKeys("home"), key.WithHelp("home", "output's top")),
		Bottom:   key.NewBinding(key.WithKeys("end"), key.WithHelp("end", "output's end")),
		// The help names < and > alone: a column of help as wide as
		// shift+← would not fit beside the others at 80 columns.
		Left:  key.NewBinding(key.WithKeys("<", "shift+left"), key.WithHelp("<", "scroll left")),
		Right: key.NewBinding(key.WithKeys(">", "shift+right"), key.WithHelp(">", "scroll right")),
	}
}

// wheelLines is how far one turn of the mouse wheel scrolls.
const wheelLines = 3

// scroller is the position of a pane of text in its room: the first line
// shown, whether it follows the end as lines arrive, and the first column
// shown. A pane whose text does not fit gives its last line to a marker
// that says how much is above and below, and a line cut at an edge ends
// in "…" there, so that nothing is ever cut silently.
//
// The column stays where < and > put it: the top, the end and another
// text in the pane (another host's output) keep it, so that columns read
// across hosts stay in place; it is never further right than the widest
// line of the text in the pane needs.
type scroller struct {
	top    int
	follow bool
	col    int
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

// more says whether the pane has lines below its view (down) or above it:
// whether a page down (up) would move it.
func (s scroller) more(down bool, total, height int) bool {
	if total <= height {
		return false
	}
	if down {
		return s.position(total, height) < s.maxTop(total, height)
	}
	return s.position(total, height) > 0
}

// widest is the width of the widest of lines, in cells.
func widest(lines []string) int {
	w := 0
	for _, l := range lines {
		w = max(w, ansi.StringWidth(l))
	}
	return w
}

// maxCol is the column that shows the end of the widest line (wide
// cells) in a pane width cells wide: further right shows nothing more.
func maxCol(wide, width int) int { return max(0, wide-width) }

// column is the first column shown of lines whose widest is wide.
func (s scroller) column(wide, width int) int { return min(s.col, maxCol(wide, width)) }

// sideStep is how far < and > move a pane width cells wide: half of it,
// so that what was at one edge is still in view, 8 columns at least.
func sideStep(width int) int { return max(8, width/2) }

// side moves the pane a step left (dir < 0) or right over lines.
func (s *scroller) side(dir int, lines []string, width int) {
	wide := widest(lines)
	s.col = max(0, min(maxCol(wide, width), s.column(wide, width)+dir*sideStep(width)))
}

// handle moves the pane of lines, width×height, for a scroll key or a
// wheel turn; it reports whether msg was one.
func (s *scroller) handle(msg tea.Msg, k ScrollKeys, lines []string, width, height int) bool {
	total := len(lines)
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
		case key.Matches(msg, k.Left):
			s.side(-1, lines, width)
		case key.Matches(msg, k.Right):
			s.side(1, lines, width)
		default:
			return false
		}
	default:
		return false
	}
	return true
}

// render shows lines in a pane width×height: those in view, each cut to
// the width from the pane's column, and, when they do not all fit, a
// marker of what is above and below (and aside).
func (s scroller) render(lines []string, width, height int, st Styles) []string {
	if height <= 0 {
		return nil
	}
	wide := widest(lines)
	col := s.column(wide, width)
	top, n := 0, len(lines)
	if len(lines) > height {
		top, n = s.position(len(lines), height), room(len(lines), height)
	}
	out := make([]string, 0, height)
	for _, l := range lines[top : top+n] {
		out = append(out, cutSideways(l, col, width))
	}
	if len(lines) <= height {
		return out
	}
	marker := moreMarker(top, len(lines)-top-n)
	if aside := sideMarker(col, maxCol(wide, width)); aside != "" && ansi.StringWidth(marker+" · "+aside) <= width {
		marker += " · " + aside
	}
	return append(out, st.Hint.Render(marker))
}

// cutSideways is what a pane width cells wide shows of line l from column
// col: a "…" at its left edge when something is hidden to the left (the
// column under the "…" included), and at its right edge when the line
// goes on past it. Styles are kept; a wide character cut in half shows
// its visible half as a space.
func cutSideways(l string, col, width int) string {
	if col <= 0 || width < 2 {
		return text.Cut(l, width)
	}
	lw := ansi.StringWidth(l)
	switch {
	case lw == 0:
		return l
	case lw <= col+1: // all of it is left of the view
		return "…"
	}
	rest, half := text.From(l, col+1), ""
	if ansi.StringWidth(rest) > lw-col-1 { // a wide character across the edge
		rest, half = text.From(l, col+2), " "
	}
	return text.Cut("…"+half+rest, width)
}

// moreMarker says how many lines are above and below the view, and which
// keys reach them.
func moreMarker(above, below int) string {
	switch {
	case above == 0:
		return fmt.Sprintf("↓ %s below · pgdn", text.Plural(below, "more line", "more lines"))
	case below == 0:
		return fmt.Sprintf("↑ %s above · pgup · end of output", text.Plural(above, "line", "lines"))
	}
	return fmt.Sprintf("↑ %d above · ↓ %d more below · pgup/pgdn", above, below)
}

// sideMarker says which of < and > move a pane shifted to column col of
// last; "" when every line fits.
func sideMarker(col, last int) string {
	switch {
	case last == 0:
		return ""
	case col == 0:
		return "> sideways"
	case col == last:
		return "< sideways"
	}
	return "</> sideways"
}

// sideKeys is what a status bar offers to move the pane of lines, width
// cells wide, sideways: > while lines go on past its right edge, < while
// it is shifted, nothing when every line fits (or the pane has no such
// keys), so that no key is offered that does nothing.
func (s scroller) sideKeys(k ScrollKeys, lines []string, width int) []key.Binding {
	if len(k.Left.Keys()) == 0 || len(k.Right.Keys()) == 0 {
		return nil
	}
	wide := widest(lines)
	last := maxCol(wide, width)
	col := s.column(wide, width)
	left, right := k.Left.Keys()[0], k.Right.Keys()[0]
	switch {
	case last == 0:
		return nil
	case col == 0:
		return []key.Binding{key.NewBinding(key.WithKeys(k.Right.Keys()...), key.WithHelp(right, "sideways"))}
	case col == last:
		return []key.Binding{key.NewBinding(key.WithKeys(k.Left.Keys()...), key.WithHelp(left, "sideways"))}
	}
	both := append(append([]string(nil), k.Left.Keys()...), k.Right.Keys()...)
	return []key.Binding{key.NewBinding(key.WithKeys(both...), key.WithHelp(left+"/"+right, "sideways"))}
}

// textPage is a whole view of text (a host's GPUs, a record): the
// arrows move it a line, the scroll keys a page (or sideways), and its
// last line says what is above and below.
type textPage struct {
	lines         []string
	s             scroller
	width, height int
}

func newTextPage(lines []string, width, height int) *textPage {
	return &textPage{lines: lines, width: width, height: height}
}

// keepPlace puts p, a page drawn again for a new size, where old was:
// at its end if old was, else at the same share of the text (a wrapped
// line count changes with the width), and at old's column.
func (p *textPage) keepPlace(old *textPage) {
	if p == nil || old == nil {
		return
	}
	top := old.s.position(len(old.lines), old.height)
	p.s = scroller{follow: old.s.follow, col: old.s.col}
	if len(old.lines) > 0 {
		p.s.top = top * len(p.lines) / len(old.lines)
	}
	if last := old.s.maxTop(len(old.lines), old.height); top > 0 && top >= last {
		p.s.end(len(p.lines), p.height)
	}
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
	return p.s.handle(msg, k, p.lines, p.width, p.height)
}

func (p *textPage) view(st Styles) string {
	return strings.Join(p.s.render(p.lines, p.width, p.height, st), "\n")
}

// canScroll says whether a page down (down) or up moves the page.
func (p *textPage) canScroll(down bool) bool { return p.s.more(down, len(p.lines), p.height) }

// keysNow are the page's keys that move it now, for a status bar: up
// (and k's page up) when something is above, down and page down when
// something is below, and the sideways keys that move it (a status bar
// offers no key that does nothing).
func (p *textPage) keysNow(up, down key.Binding, k ScrollKeys) []key.Binding {
	var keys []key.Binding
	if p.canScroll(false) {
		keys = append(keys, up)
	}
	if p.canScroll(true) {
		keys = append(keys, down, k.PageDown)
	}
	return append(keys, p.sideKeys(k)...)
}

// sideKeys are the sideways keys that move the page now (see
// scroller.sideKeys).
func (p *textPage) sideKeys(k ScrollKeys) []key.Binding { return p.s.sideKeys(k, p.lines, p.width) }

// pageKeys are a page's scroll keys: also g and G for its ends.
func pageKeys() ScrollKeys {
	k := DefaultScrollKeys()
	k.Top = key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g/home", "top"))
	k.Bottom = key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G/end", "end"))
	k.PageUp.SetHelp("pgup", "page up")
	k.PageDown.SetHelp("pgdn", "page down")
	return k
}
