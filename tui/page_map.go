package tui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/landscape"
)

// wideLayout is the width from which the card sits beside the planes
// instead of under them.
const wideLayout = 120

// mapView draws the three planes as bands holding their projects; the
// selected project's card sits beside (wide) or under (narrow) the bands.
type mapView struct {
	cat    *landscape.Catalog
	card   cardRenderer
	styles Styles
	keys   MoveKeys

	order []landscape.Project // plane by plane, catalog order within
	chips []chipPos           // layout of order[i]
	sel   int

	width, height int
	bandsWidth    int

	open  bool      // full card shown in a scrollable viewport
	pager *textPage // the full card, when open
}

type chipPos struct {
	row    int // row among all chip rows, across bands
	x0, x1 int
}

func newMapView(cat *landscape.Catalog, st Styles) *mapView {
	v := &mapView{cat: cat, card: cardRenderer{cat: cat, styles: st}, styles: st, keys: DefaultMoveKeys()}
	for _, p := range cat.Planes {
		v.order = append(v.order, cat.InPlane(p.ID)...)
	}
	return v
}

func (v *mapView) Init() tea.Cmd    { return nil }
func (v *mapView) Title() string    { return "Map" }
func (v *mapView) Capturing() bool  { return false }
func (v *mapView) Selected() string { return v.order[v.sel].ID }

func (v *mapView) Status() string {
	p := v.order[v.sel]
	return p.Name + " (" + strconv.Itoa(v.sel+1) + "/" + strconv.Itoa(len(v.order)) + ")"
}

func (v *mapView) ShortHelp() []key.Binding {
	if v.open {
		return append(v.pager.keysNow(v.keys.Up, v.keys.Down, pageKeys()), v.keys.Back)
	}
	return []key.Binding{moveHint, v.keys.Open}
}

func (v *mapView) FullHelp() [][]key.Binding {
	keys := [][]key.Binding{
		{v.keys.Up, v.keys.Down, v.keys.Left, v.keys.Right},
		{v.keys.Home, v.keys.End, v.keys.Open, v.keys.Back},
	}
	if v.open { // the card's page scrolls
		pk := pageKeys()
		keys = append(keys, []key.Binding{pk.PageUp, pk.PageDown, pk.Left, pk.Right})
	}
	return keys
}

// canScroll says whether a page down (down) or up moves the open card.
func (v *mapView) canScroll(down bool) bool { return v.open && v.pager.canScroll(down) }

func (v *mapView) SetSize(w, h int) {
	v.width, v.height = w, h
	v.bandsWidth = w
	if w >= wideLayout {
		v.bandsWidth = w * 11 / 20
	}
	v.layout()
	if v.open { // drawn again for the new width, where the reader was
		old := v.pager
		v.openCard()
		v.pager.keepPlace(old)
	}
}

// layout places the chips in rows that fit the bands' width.
func (v *mapView) layout() {
	v.chips = make([]chipPos, len(v.order))
	row, i := 0, 0
	inner := v.bandsWidth - 2
	for _, pl := range v.cat.Planes {
		x := 0
		started := false
		for ; i < len(v.order) && v.order[i].Plane == pl.ID; i++ {
			// A column between chips: two marked ones side by side
			// (‹HAMi +ctrl›‹DRA›) read as one name without it.
			w := lipgloss.Width(chipLabel(v.order[i])) + 2
			gap := 0
			if started && x > 0 {
				gap = 1
			}
			if started && x+gap+w > inner {
				row++
				x, gap = 0, 0
			}
			v.chips[i] = chipPos{row: row, x0: x + gap, x1: x + gap + w}
			x += gap + w
			started = true
		}
		if started {
			row++
		}
	}
}

func (v *mapView) Update(msg tea.Msg) (Component, tea.Cmd) {
	if mm, ok := msg.(tea.MouseMsg); ok && v.open {
		v.pager.update(mm, v.keys.Up, v.keys.Down, pageKeys())
	}
	km, ok := msg.(tea.KeyMsg)
	if !ok {
		return v, nil
	}
	if v.open {
		return v.updateOpen(km)
	}
	switch {
	case key.Matches(km, v.keys.Left):
		v.sel = max(0, v.sel-1)
	case key.Matches(km, v.keys.Right):
		v.sel = min(len(v.order)-1, v.sel+1)
	case key.Matches(km, v.keys.Up):
		v.moveRow(-1)
	case key.Matches(km, v.keys.Down):
		v.moveRow(+1)
	case key.Matches(km, v.keys.Home):
		v.sel = 0
	case key.Matches(km, v.keys.End):
		v.sel = len(v.order) - 1
	case key.Matches(km, v.keys.Open):
		v.open = true
		v.openCard()
	}
	return v, nil
}

func (v *mapView) updateOpen(km tea.KeyMsg) (Component, tea.Cmd) {
	if key.Matches(km, v.keys.Back) || key.Matches(km, v.keys.Open) {
		v.open = false
		return v, nil
	}
	v.pager.update(km, v.keys.Up, v.keys.Down, pageKeys())
	return v, nil
}

// openCard shows the selected project's full card in a scrolling page.
func (v *mapView) openCard() {
	v.pager = newTextPage(strings.Split(v.card.full(v.order[v.sel], v.width-2), "\n"), v.width, v.height)
}

// moveRow moves the selection to the chip in the next or previous row whose
// centre is nearest to the current one.
func (v *mapView) moveRow(dir int) {
	cur := v.chips[v.sel]
	target := cur.row + dir
	best, bestDist := -1, 1<<30
	centre := (cur.x0 + cur.x1) / 2
	for i, c := range v.chips {
		if c.row != target {
			continue
		}
		d := abs((c.x0+c.x1)/2 - centre)
		if d < bestDist {
			best, bestDist = i, d
		}
	}
	if best >= 0 {
		v.sel = best
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func (v *mapView) View() string {
	if v.open {
		return v.pager.view(v.styles)
	}
	bands, at := v.bands()
	if v.width >= wideLayout {
		cardW := v.width - v.bandsWidth - 3
		card := v.card.full(v.order[v.sel], cardW)
		card = fit(clip(card, v.height, v.styles.Hint.Render("… enter: whole card")), cardW, v.height)
		sep := strings.TrimSuffix(strings.Repeat(v.styles.Rule.Render("│")+"\n", v.height), "\n")
		window := strings.Join(cursorWindow(bands, at, v.height, v.styles), "\n")
		return lipgloss.JoinHorizontal(lipgloss.Top, fit(window, v.bandsWidth, v.height), " "+sep+" ", card)
	}
	// A short terminal shows the bands around the selection, saying what
	// is above and below, and keeps the card at least its title, summary
	// and keys.
	room := max(1, v.height-1-min(4, v.height/3))
	window := cursorWindow(bands, at, room, v.styles)
	rest := v.height - len(window) - 1
	rule := v.styles.Rule.Render(strings.Repeat("─", v.width))
	return strings.Join(window, "\n") + "\n" + rule + "\n" + v.card.compact(v.order[v.sel], v.width, max(rest, 1))
}

// bands draws the three planes, each a title line and its rows of chips,
// and says which line holds the selected chip.
func (v *mapView) bands() (out []string, at int) {
	st := v.styles
	i := 0
	for n, pl := range v.cat.Planes {
		if n > 0 && v.height >= 30 { // a short terminal spends its lines on words, not spacing
			out = append(out, "")
		}
		title := st.planeTitle(pl.ID).Render("▌" + strings.ToUpper(pl.Name))
		question := st.PlaneText.Render("  " + pl.Question)
		out = append(out, hanging(title+question, v.bandsWidth-1, 2)...)
		var line strings.Builder
		row := -1
		for ; i < len(v.order) && v.order[i].Plane == pl.ID; i++ {
			c := v.chips[i]
			if c.row != row {
				if row >= 0 {
					out = append(out, "  "+line.String())
					line.Reset()
				}
				row = c.row
			} else {
				line.WriteString(" ") // the column between chips (layout)
			}
			if i == v.sel {
				at = len(out)
			}
			line.WriteString(v.chip(i))
		}
		if row >= 0 {
			out = append(out, "  "+line.String())
		}
		out = append(out, v.alsoHere(pl.ID)...)
	}
	legend := v.styles.CardMuted.Render(fit("[selected]  ‹linked to it, another plane›  +ctrl: also acts in that plane", v.bandsWidth, 1))
	if v.height >= 30 { // a short terminal keeps the card's room
		out = append(out, "", legend)
	}
	return out, at
}

// alsoHere lists the projects of other planes that also act in plane:
// a plane's band shows everything the plane filter of the Matrix keeps.
func (v *mapView) alsoHere(plane string) []string {
	var names []string
	for _, p := range v.order {
		if slices.Contains(p.Spans, plane) {
			names = append(names, p.Name+" ("+planeAbbrev(p.Plane)+")")
		}
	}
	if len(names) == 0 {
		return nil
	}
	line := "   also acts here: " + strings.Join(names, " · ")
	if v.height < 30 { // a short terminal keeps the card's room: the chips of the other bands say it too
		line = fmt.Sprintf("   also acts here: the %s marked +%s in the other planes", text.Plural(len(names), "project", "projects"), planeAbbrev(plane))
	}
	return hanging(v.styles.CardMuted.Render(line), v.bandsWidth-1, 5)
}

// chipLabel is a project's name and the other planes it acts in:
// "HAMi +ctrl".
func chipLabel(p landscape.Project) string {
	label := p.Name
	for _, sp := range p.Spans {
		label += " +" + planeAbbrev(sp)
	}
	return label
}

func (v *mapView) chip(i int) string {
	name := chipLabel(v.order[i])
	switch {
	case i == v.sel:
		return v.styles.ChipSelected.Render("[" + name + "]")
	case v.linked(i):
		return v.styles.FilterOn.Render("‹" + name + "›")
	}
	return v.styles.Chip.Render(" " + name + " ")
}

// linked says whether order[i] is in another plane than the selected
// project and linked to it (builds on, alternative to, works with, either
// way).
func (v *mapView) linked(i int) bool {
	sel, p := v.order[v.sel], v.order[i]
	if p.Plane == sel.Plane {
		return false
	}
	for _, l := range sel.Links() {
		if l.To == p.ID {
			return true
		}
	}
	for _, l := range p.Links() {
		if l.To == sel.ID {
			return true
		}
	}
	return false
}

// clip keeps the first height lines of s, ending with more when it cut.
func clip(s string, height int, more string) string {
	lines := strings.Split(s, "\n")
	if len(lines) <= height {
		return s
	}
	return strings.Join(append(lines[:height-1], more), "\n")
}
