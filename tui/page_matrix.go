package tui

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/gpulab/gpulab/landscape"
)

// Matrix columns before the axes.
const (
	colProject = iota
	colPlane
	firstAxisCol
)

// matrixView is projects × the decision axes: a table with a cell cursor
// whose cell explains itself, sortable by any column and filtered by plane,
// by a level of an axis and by text.
type matrixView struct {
	cat    *landscape.Catalog
	card   cardRenderer
	styles Styles
	keys   MatrixKeys

	rows     []landscape.Project
	row, col int
	offset   int

	filter   landscape.Filter
	sortCol  int // -1 when unsorted
	sortDesc bool

	search    textinput.Model
	searching bool

	open  bool
	pager *textPage // the full card, when open

	width, height int
	colW          []int
	narrow        bool        // short labels: level labels, axis short names, plane abbreviations
	labels        []labelMode // each column's labels, as chooseLabels fits them to the width
}

// labelMode is how much of a cell a column shows: whole words, short
// labels, or an axis's marks alone (its levels' names are in the legend
// and the detail under the table).
type labelMode uint8

const (
	fullLabels labelMode = iota
	shortLabels
	marksOnly
)

func newMatrixView(cat *landscape.Catalog, st Styles) *matrixView {
	ti := textinput.New()
	ti.Prompt = "/"
	ti.Placeholder = "search name, kind, summary"
	ti.CharLimit = 64
	v := &matrixView{cat: cat, card: cardRenderer{cat: cat, styles: st}, styles: st, keys: DefaultMatrixKeys(),
		sortCol: -1, search: ti}
	v.refresh("")
	return v
}

func (v *matrixView) Init() tea.Cmd   { return nil }
func (v *matrixView) Title() string   { return "Matrix" }
func (v *matrixView) Capturing() bool { return v.searching }

func (v *matrixView) Status() string {
	return strconv.Itoa(len(v.rows)) + " of " + strconv.Itoa(len(v.cat.Projects)) + " projects"
}

func (v *matrixView) ShortHelp() []key.Binding {
	switch {
	case v.searching:
		return []key.Binding{key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "keep")), key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel"))}
	case v.open:
		return append(v.pager.keysNow(v.keys.Up, v.keys.Down, pageKeys()), v.keys.Back)
	}
	return []key.Binding{moveHint, v.keys.Sort, v.keys.Plane, v.keys.Level, v.keys.Search}
}

func (v *matrixView) FullHelp() [][]key.Binding {
	k := v.keys
	keys := [][]key.Binding{
		{k.Up, k.Down, k.Left, k.Right},
		{k.PageUp, k.PageDown, k.Home, k.End},
		{k.Sort, k.Plane, k.Level, k.Search, k.Clear, k.Open},
	}
	if v.open { // the card's page scrolls sideways too
		pk := pageKeys()
		keys = append(keys, []key.Binding{pk.Left, pk.Right})
	}
	return keys
}

// canScroll says whether a page down (down) or up moves the open card.
func (v *matrixView) canScroll(down bool) bool {
	return v.open && !v.searching && v.pager.canScroll(down)
}

// presenting gives the plane filter to P alone: in presenter mode p
// steps the walkthrough back.
func (v *matrixView) presenting() { yieldP(&v.keys.Plane) }

// columns returns the column titles.
func (v *matrixView) columns() []string {
	cols := []string{"Project", "Plane"}
	for _, a := range v.cat.Axes {
		if v.narrow {
			cols = append(cols, a.Short)
		} else {
			cols = append(cols, a.Name)
		}
	}
	return cols
}

func (v *matrixView) SetSize(w, h int) {
	v.width, v.height = w, h
	if v.open { // drawn again for the new width, where the reader was
		old := v.pager
		v.openCard()
		v.pager.keepPlace(old)
	}
	v.narrow = w < 130
	avail := w - 2 - (len(v.columns()) - 1) // cursor marker, one space between columns
	v.chooseLabels(avail)
	v.colW = v.columnWidths(avail)
	v.clampOffset()
}

// chooseLabels picks each column's labels for the width: where whole
// words do not fit, the column that saves the most steps down first
// (whole words, then short labels, then an axis's marks alone), so that a
// wide terminal keeps whole words wherever there is room and a narrow one
// cuts no cell to "job/mo…": it shows ○●●○ and names the levels below.
func (v *matrixView) chooseLabels(avail int) {
	base := fullLabels
	if v.narrow {
		base = shortLabels
	}
	v.labels = make([]labelMode, len(v.columns()))
	for c := range v.labels {
		v.labels[c] = base
	}
	total := func() int {
		t := 0
		for c, m := range v.labels {
			t += v.naturalWidth(c, m)
		}
		return t
	}
	// Every column goes to short labels (the one that saves the most
	// first) before any goes to marks alone.
	for m := base; m < marksOnly && total() > avail; m++ {
		for total() > avail {
			best, gain := -1, 0
			for c := colPlane; c < len(v.labels); c++ {
				if v.labels[c] != m || m == shortLabels && c < firstAxisCol {
					continue // the plane has no marks
				}
				if g := v.naturalWidth(c, m) - v.naturalWidth(c, m+1); g > gain {
					best, gain = c, g
				}
			}
			if best < 0 {
				break
			}
			v.labels[best]++
		}
	}
	// The room the last choices left goes back a step at a time, marks to
	// short labels in every column before any short labels to whole words.
	for m := marksOnly; m > base; m-- {
		for c := range v.labels {
			if v.labels[c] == m {
				if v.labels[c]--; total() > avail {
					v.labels[c]++
				}
			}
		}
	}
}

// headRoom is the least width of column c's head: its title, with room
// for [ ] and a sort arrow unless the column shows marks alone (its
// head is then cut, and the detail under the table names the axis).
func (v *matrixView) headRoom(c int, m labelMode) int {
	w := lipgloss.Width(v.columns()[c])
	if m == marksOnly {
		return w
	}
	return w + 4
}

// naturalWidth is what column c needs to show every project's cell
// whole, as m says.
func (v *matrixView) naturalWidth(c int, m labelMode) int {
	w := v.headRoom(c, m)
	for _, p := range v.cat.Projects {
		w = max(w, lipgloss.Width(v.cellLabel(p, c, m)))
	}
	return w
}

// columnWidths sizes the columns from what they hold (every project's
// cell, not only the shown ones, so that filtering does not move them);
// when they do not fit in avail, the widest give way first.
func (v *matrixView) columnWidths(avail int) []int {
	cols := v.columns()
	w := make([]int, len(cols))
	for c := range cols {
		w[c] = v.headRoom(c, v.mode(c))
		for _, p := range v.cat.Projects {
			w[c] = max(w[c], lipgloss.Width(v.cellText(p, c)))
		}
	}
	total := 0
	for _, x := range w {
		total += x
	}
	for ; total > avail; total-- {
		widest := 0
		for c := range w {
			if w[c] > w[widest] {
				widest = c
			}
		}
		if w[widest] <= 6 {
			break
		}
		w[widest]--
	}
	return w
}

// Layout: filter bar, header, rows, rule, detail.
func (v *matrixView) detailHeight() int { return max(4, min(10, v.height/3)) }
func (v *matrixView) visibleRows() int  { return max(1, v.height-3-v.detailHeight()) }

func (v *matrixView) Update(msg tea.Msg) (Component, tea.Cmd) {
	if mm, ok := msg.(tea.MouseMsg); ok && v.open {
		v.pager.update(mm, v.keys.Up, v.keys.Down, pageKeys())
	}
	km, ok := msg.(tea.KeyMsg)
	if !ok {
		return v, nil
	}
	switch {
	case v.searching:
		return v.updateSearch(km)
	case v.open:
		if key.Matches(km, v.keys.Back) || key.Matches(km, v.keys.Open) {
			v.open = false
			return v, nil
		}
		v.pager.update(km, v.keys.Up, v.keys.Down, pageKeys())
		return v, nil
	}
	v.handleKey(km)
	return v, nil
}

func (v *matrixView) handleKey(km tea.KeyMsg) {
	k := v.keys
	switch {
	case key.Matches(km, k.Up):
		v.row--
	case key.Matches(km, k.Down):
		v.row++
	case key.Matches(km, k.Left):
		v.col = max(0, v.col-1)
	case key.Matches(km, k.Right):
		v.col = min(len(v.columns())-1, v.col+1)
	case key.Matches(km, k.PageUp):
		v.row -= v.visibleRows()
	case key.Matches(km, k.PageDown):
		v.row += v.visibleRows()
	case key.Matches(km, k.Home):
		v.row = 0
	case key.Matches(km, k.End):
		v.row = len(v.rows) - 1
	case key.Matches(km, k.Sort):
		v.cycleSort()
	case key.Matches(km, k.Plane):
		v.cyclePlane()
	case key.Matches(km, k.Level):
		v.cycleLevel()
	case key.Matches(km, k.Search):
		v.searching = true
		v.search.Focus()
	case key.Matches(km, k.Clear):
		v.filter, v.sortCol, v.sortDesc = landscape.Filter{}, -1, false
		v.search.SetValue("")
		v.refresh(v.selectedID())
	case key.Matches(km, k.Open):
		if len(v.rows) > 0 {
			v.open = true
			v.openCard()
		}
	}
	v.clampOffset()
}

// openCard shows the selected project's full card in a scrolling page.
func (v *matrixView) openCard() {
	v.pager = newTextPage(strings.Split(v.card.full(v.rows[v.row], v.width-2), "\n"), v.width, v.height)
}

func (v *matrixView) updateSearch(km tea.KeyMsg) (Component, tea.Cmd) {
	switch km.Type {
	case tea.KeyEnter:
		v.searching = false
		v.search.Blur()
		return v, nil
	case tea.KeyEsc:
		v.searching = false
		v.search.Blur()
		v.search.SetValue("")
		v.filter.Text = ""
		v.refresh(v.selectedID())
		return v, nil
	}
	var cmd tea.Cmd
	v.search, cmd = v.search.Update(km)
	v.filter.Text = v.search.Value()
	v.refresh(v.selectedID())
	return v, cmd
}

func (v *matrixView) selectedID() string {
	if v.row >= 0 && v.row < len(v.rows) {
		return v.rows[v.row].ID
	}
	return ""
}

// cycleSort sorts by the cursor's column: ascending, descending, then off.
func (v *matrixView) cycleSort() {
	switch {
	case v.sortCol != v.col:
		v.sortCol, v.sortDesc = v.col, false
	case !v.sortDesc:
		v.sortDesc = true
	default:
		v.sortCol, v.sortDesc = -1, false
	}
	v.refresh(v.selectedID())
}

func (v *matrixView) cyclePlane() {
	ids := []string{""}
	for _, p := range v.cat.Planes {
		ids = append(ids, p.ID)
	}
	v.filter.Plane = next(ids, v.filter.Plane)
	v.refresh(v.selectedID())
}

// cycleLevel filters by the next level of the cursor column's axis.
func (v *matrixView) cycleLevel() {
	if v.col < firstAxisCol {
		return
	}
	a := v.cat.Axes[v.col-firstAxisCol]
	ids := []string{""}
	for _, l := range a.Levels {
		ids = append(ids, l.ID)
	}
	cur := ""
	if v.filter.Axis == a.ID {
		cur = v.filter.Level
	}
	v.filter.Axis, v.filter.Level = a.ID, next(ids, cur)
	if v.filter.Level == "" {
		v.filter.Axis = ""
	}
	v.refresh(v.selectedID())
}

func next(ids []string, cur string) string {
	i := slices.Index(ids, cur)
	return ids[(i+1)%len(ids)]
}

// refresh recomputes the rows and keeps keep selected when it is still there.
func (v *matrixView) refresh(keep string) {
	v.rows = v.rows[:0]
	for _, p := range v.cat.Projects {
		if v.filter.Match(p) {
			v.rows = append(v.rows, p)
		}
	}
	switch {
	case v.sortCol == colProject:
		slices.SortStableFunc(v.rows, func(a, b landscape.Project) int {
			r := cmp.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name))
			if v.sortDesc {
				r = -r
			}
			return r
		})
	case v.sortCol == colPlane:
		v.cat.Sort(v.rows, "", v.sortDesc)
	case v.sortCol >= firstAxisCol:
		v.cat.Sort(v.rows, v.cat.Axes[v.sortCol-firstAxisCol].ID, v.sortDesc)
	}
	v.row = 0
	for i, p := range v.rows {
		if p.ID == keep {
			v.row = i
		}
	}
	v.clampOffset()
}

func (v *matrixView) clampOffset() {
	v.row, v.offset = follow(v.row, v.offset, len(v.rows), v.visibleRows())
}

func (v *matrixView) View() string {
	if v.open {
		return v.pager.view(v.styles)
	}
	lines := []string{v.filterBar(), v.headerLine()}
	n := v.visibleRows()
	for i := v.offset; i < len(v.rows) && i < v.offset+n; i++ {
		lines = append(lines, v.rowLine(i))
	}
	if len(v.rows) == 0 {
		lines = append(lines, v.styles.Hint.Render("  no project matches; esc clears the filters"))
	}
	for len(lines) < n+2 {
		lines = append(lines, "")
	}
	more := ""
	if len(v.rows) > n {
		more = " " + strconv.Itoa(v.offset+1) + "-" + strconv.Itoa(min(len(v.rows), v.offset+n)) + " of " + strconv.Itoa(len(v.rows)) + " "
	}
	legend := v.legend(lipgloss.Width(more))
	lines = append(lines, v.styles.Rule.Render("──"+legend+strings.Repeat("─", max(0, v.width-2-lipgloss.Width(legend)-lipgloss.Width(more)))+more))
	lines = append(lines, v.detail()...)
	return strings.Join(lines, "\n")
}

func (v *matrixView) filterBar() string {
	st := v.styles
	if v.searching {
		return v.search.View()
	}
	var parts []string
	if v.filter.Plane != "" {
		p, _ := v.cat.Plane(v.filter.Plane)
		parts = append(parts, "plane: "+st.FilterOn.Render(p.Name))
	}
	if v.filter.Axis != "" {
		a, _ := v.cat.Axis(v.filter.Axis)
		l, _, _ := a.Level(v.filter.Level)
		parts = append(parts, a.Name+": "+st.FilterOn.Render(l.Name))
	}
	if v.filter.Text != "" {
		parts = append(parts, "search: "+st.FilterOn.Render(strconv.Quote(v.filter.Text)))
	}
	if v.sortCol >= 0 {
		dir := "ascending"
		if v.sortDesc {
			dir = "descending"
		}
		parts = append(parts, "sort: "+st.FilterOn.Render(v.columns()[v.sortCol]+" "+dir))
	}
	if len(parts) == 0 {
		p := v.keys.Plane.Help().Key
		hint := "All projects. s sorts by the column, " + p + " filters a plane, f a level of the column's axis, / searches."
		if lipgloss.Width(hint) > v.width {
			hint = "All projects. s sort · " + p + " plane · f column's level · / search · enter card"
		}
		return st.Hint.Render(hint)
	}
	return strings.Join(parts, st.CardMuted.Render("  ·  ")) + st.Hint.Render("   (esc clears)")
}

func (v *matrixView) headerLine() string {
	var cells []string
	for i, c := range v.columns() {
		if i == v.sortCol {
			if v.sortDesc {
				c += " ↓"
			} else {
				c += " ↑"
			}
		}
		if i == v.col {
			c = "[" + c + "]"
		}
		cells = append(cells, cell(c, v.colW[i]))
	}
	return "  " + v.styles.TableHeader.Render(strings.Join(cells, " "))
}

func (v *matrixView) cellText(p landscape.Project, col int) string {
	return v.cellLabel(p, col, v.mode(col))
}

// mode is how column col shows its cells now.
func (v *matrixView) mode(col int) labelMode {
	m := fullLabels
	if col < len(v.labels) {
		m = v.labels[col]
	}
	if v.narrow && m == fullLabels {
		m = shortLabels
	}
	return m
}

func (v *matrixView) cellLabel(p landscape.Project, col int, m labelMode) string {
	switch col {
	case colProject:
		return p.Name
	case colPlane:
		return planeLabel(p, m != fullLabels)
	}
	a := v.cat.Axes[col-firstAxisCol]
	if m == marksOnly {
		return scale(a, p.Axes[a.ID].Levels)
	}
	return scale(a, p.Axes[a.ID].Levels) + " " + v.cat.LevelLabels(p, a.ID, m == shortLabels)
}

// planeLabel is a project's plane and, after a +, the others it acts in:
// "data +ctrl".
func planeLabel(p landscape.Project, short bool) string {
	name := func(id string) string {
		if short {
			return planeAbbrev(id)
		}
		return id
	}
	out := name(p.Plane)
	for _, sp := range p.Spans {
		out += " +" + name(sp)
	}
	return out
}

// Marks of a scale: a level the project holds, and one it does not.
const (
	scaleOn  = "●"
	scaleOff = "○"
)

// scale draws an axis's ordered levels as marks, filled where the
// project holds the level: "○●●○" is the second and third of four.
func scale(a landscape.Axis, held []string) string {
	var b strings.Builder
	for _, l := range a.Levels {
		if slices.Contains(held, l.ID) {
			b.WriteString(scaleOn)
		} else {
			b.WriteString(scaleOff)
		}
	}
	return b.String()
}

func (v *matrixView) rowLine(i int) string {
	p := v.rows[i]
	var cells []string
	for c := range v.columns() {
		txt := cell(v.cellText(p, c), v.colW[c])
		switch {
		case i == v.row && c == v.col:
			txt = v.styles.TableCell.Render(txt)
		case i == v.row:
			txt = v.styles.TableCursor.Render(txt)
		case c == colPlane:
			txt = v.styles.planeTitle(p.Plane).Render(txt)
		default:
			txt = v.styles.TableRow.Render(txt)
		}
		cells = append(cells, txt)
	}
	marker := "  "
	if i == v.row {
		marker = v.styles.TableCursor.Render("▶ ")
	}
	return marker + strings.Join(cells, " ")
}

// detail explains the selected cell.
func (v *matrixView) detail() []string {
	st := v.styles
	w := v.width - 2
	if len(v.rows) == 0 {
		return nil
	}
	p := v.rows[v.row]
	var out []string
	switch v.col {
	case colProject:
		out = append(out, st.CardTitle.Render(p.Name)+st.CardMuted.Render(" · "+p.Kind))
		out = append(out, wrap(st.CardText.Render(p.Summary), w)...)
		out = append(out, st.Hint.Render("enter: full card"))
	case colPlane:
		pl, _ := v.cat.Plane(p.Plane)
		out = append(out, st.CardTitle.Render(p.Name)+st.CardMuted.Render(" lives in the ")+st.planeTitle(pl.ID).Render(pl.Name))
		for _, sp := range p.Spans {
			if o, ok := v.cat.Plane(sp); ok {
				out = append(out, st.CardText.Render("and also acts in the ")+st.planeTitle(o.ID).Render(o.Name))
			}
		}
		out = append(out, wrap(st.CardMuted.Render(pl.Question+" "+pl.Summary), w)...)
	default:
		out = v.axisDetail(p, w)
	}
	if n := v.detailHeight(); len(out) > n {
		out = append(out[:n-1], st.Hint.Render(fmt.Sprintf("… %d more lines: enter opens the whole card", len(out)-n+1)))
	}
	return out
}

// legend says what the scales' marks are and, for the axis column the
// cursor is on, its levels in order ("Isolation: none · soft · hard ·
// physical"), as much as the rule has room for beside more.
func (v *matrixView) legend(more int) string {
	room := v.width - more - 4
	marks := " " + scaleOn + " holds  " + scaleOff + " not "
	if v.col >= firstAxisCol && v.col-firstAxisCol < len(v.cat.Axes) {
		a := v.cat.Axes[v.col-firstAxisCol]
		// Full names, then short labels, with the axis's name, its short
		// form or none: a narrow rule still names every level.
		for _, short := range []bool{false, true} {
			names := make([]string, len(a.Levels))
			for i, l := range a.Levels {
				names[i] = l.Label(short)
			}
			for _, form := range []string{a.Name + ", in order: ", a.Short + ": ", ""} { // "": the header's [column] names the axis
				full := marks + "· " + form + strings.Join(names, " · ") + " "
				if lipgloss.Width(full) <= room {
					return full
				}
			}
		}
		return marks + "· " + a.Short + " "
	}
	if long := " " + scaleOn + " holds the level  " + scaleOff + " does not (levels in the axis's order; move to an axis column for its levels) "; lipgloss.Width(long) <= room {
		return long
	}
	return marks
}

// axisDetail is the selected axis cell in full: the levels held, why,
// and the axis's scale level by level (its legend).
func (v *matrixView) axisDetail(p landscape.Project, w int) []string {
	st := v.styles
	a := v.cat.Axes[v.col-firstAxisCol]
	pl := p.Axes[a.ID]
	out := wrap(st.CardTitle.Render(p.Name)+st.CardMuted.Render(" × "+a.Name+" ("+a.Question+"): ")+
		st.FilterOn.Render(scale(a, pl.Levels)+" "+v.cat.LevelNames(p, a.ID)), w)
	out = append(out, wrap(st.CardLabel.Render("Why: ")+st.CardText.Render(pl.Why), w)...)
	for _, l := range a.Levels {
		if slices.Contains(pl.Levels, l.ID) {
			out = append(out, wrap(st.CardText.Render(scaleOn+" "+l.Name+": ")+st.CardMuted.Render(l.Description), w)...)
		} else {
			out = append(out, st.CardMuted.Render(scaleOff+" "+l.Name))
		}
	}
	return out
}
