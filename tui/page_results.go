package tui

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/internal/visible"
	"github.com/gpulab/gpulab/labs"
	"github.com/gpulab/gpulab/render"
)

// resultsView lists the lab records in the results directory (newest
// first), shows one (its Markdown), and compares one against a baseline:
// throughput ratio and P99 interference coefficient.
type resultsView struct {
	dir string
	// notice answers the last key where it did nothing else ("this run
	// is the baseline"); the next key clears it.
	notice string
	styles Styles
	keys   resultsKeys
	// redraw draws the open page again (a record at a new width).
	redraw func()

	refs    []labs.RecordRef
	err     string
	sel     int
	base    string // the baseline's record directory; "" when none is marked
	loading bool
	page    *textPage
	// openNewest opens the newest record once one is listed (a
	// presenter's step); mask hides host names in a page before it is
	// wrapped (nil: shown).
	openNewest bool
	mask       *masker
	// pending is the record being read for its page (read off the UI
	// goroutine), shown is the record whose page is open ("" for none, or
	// a comparison), and reopen the record to read again once the list is
	// reloaded: a lab run that just ended has rewritten it.
	pending, shown, reopen string
	// gone says the records go when the workbench quits (the demo's).
	gone bool

	width, height int
}

func newResultsView(dir string, st Styles) *resultsView {
	v := &resultsView{dir: dir, styles: st, keys: DefaultResultsKeys()}
	return v
}

// recordsMsg is the records read from the results directory.
type recordsMsg struct {
	refs []labs.RecordRef
	err  error
}

// load reads the records off the UI goroutine: a results directory can
// hold thousands of records, each read whole.
func (v *resultsView) load() tea.Cmd {
	if v.dir == "" {
		return nil
	}
	v.loading = true
	dir := v.dir
	return func() tea.Msg {
		refs, err := labs.ListRecords(dir)
		return recordsMsg{refs, err}
	}
}

// loaded shows the records read; the selection and the baseline are kept
// by record directory, not by position (a new record shifts the list).
func (v *resultsView) loaded(m recordsMsg) tea.Cmd {
	selDir := ""
	if v.sel < len(v.refs) {
		selDir = v.refs[v.sel].Dir
	}
	v.refs, v.err, v.loading = m.refs, "", false
	if m.err != nil {
		v.err = m.err.Error()
	}
	v.sel = min(v.sel, max(0, len(v.refs)-1))
	if i := v.index(selDir); i >= 0 {
		v.sel = i
	}
	if v.index(v.base) < 0 {
		v.base = "" // its record is gone
	}
	if v.openNewest && len(v.refs) > 0 {
		v.sel, v.openNewest = 0, false
		return v.open()
	}
	if dir := v.reopen; dir != "" {
		v.reopen = ""
		if i := v.index(dir); i >= 0 && v.shown == dir {
			v.sel, v.pending = i, dir
			return readRecord(v.refs[i], true)
		}
	}
	return nil
}

// present opens the newest record, now or as soon as one is listed.
func (v *resultsView) present(_ string, open, _ bool) tea.Cmd {
	if !open {
		v.page, v.shown, v.openNewest = nil, "", false
		return nil
	}
	v.openNewest = true
	return v.load()
}

// index is the position of the record in dir, -1 when it is not listed.
func (v *resultsView) index(dir string) int {
	for i, r := range v.refs {
		if dir != "" && r.Dir == dir {
			return i
		}
	}
	return -1
}

func (v *resultsView) Init() tea.Cmd   { return v.load() }
func (v *resultsView) Title() string   { return "Results" }
func (v *resultsView) Capturing() bool { return false }
func (v *resultsView) SetSize(w, h int) {
	resized := w != v.width
	v.width, v.height = w, h
	if v.page == nil {
		return
	}
	v.page.height = h
	if resized && v.redraw != nil { // drawn again for the new width, where the reader was
		old := v.page
		v.redraw()
		v.page.keepPlace(old)
	}
}

func (v *resultsView) Status() string {
	if v.notice != "" {
		return v.notice
	}
	return text.Plural(len(v.refs), "record", "records")
}

func (v *resultsView) ShortHelp() []key.Binding {
	if v.page != nil {
		return append(v.page.keysNow(v.keys.Up, v.keys.Down, v.keys.Page), v.keys.Back)
	}
	if len(v.refs) == 0 { // nothing to move to, open, mark or compare
		return []key.Binding{v.keys.Refresh}
	}
	keys := append(moves(v.keys.Up, v.keys.Down, v.sel, len(v.refs)), v.keys.Open, v.keys.Baseline)
	if len(v.refs) > 1 {
		keys = append(keys, v.keys.Compare)
	}
	return append(keys, v.keys.Refresh)
}

// canScroll says whether a page down (down) or up moves the open page.
func (v *resultsView) canScroll(down bool) bool { return v.page != nil && v.page.canScroll(down) }

func (v *resultsView) FullHelp() [][]key.Binding {
	return [][]key.Binding{{v.keys.Up, v.keys.Down, v.keys.Home, v.keys.End, v.keys.Open}, {v.keys.Page.PageUp, v.keys.Page.PageDown, v.keys.Page.Left, v.keys.Page.Right},
		{v.keys.Baseline, v.keys.Compare, v.keys.Refresh, v.keys.Back}}
}

func (v *resultsView) Update(msg tea.Msg) (Component, tea.Cmd) {
	if _, ok := msg.(recordsChangedMsg); ok {
		// A lab run from the Labs tab just wrote its record: the list,
		// and the record open, if it is that one (a presenter opens the
		// newest while the run still writes it), are read again.
		v.reopen = v.shown
		return v, v.load()
	}
	if m, ok := msg.(recordsMsg); ok {
		return v, v.loaded(m)
	}
	if m, ok := msg.(recordPageMsg); ok {
		v.opened(m)
		return v, nil
	}
	if mm, ok := msg.(tea.MouseMsg); ok && v.page != nil {
		v.page.update(mm, v.keys.Up, v.keys.Down, v.keys.Page)
		return v, nil
	}
	km, ok := msg.(tea.KeyMsg)
	if !ok {
		return v, nil
	}
	k := v.keys
	v.notice = ""
	if v.page != nil {
		switch {
		case key.Matches(km, k.Back):
			v.page, v.shown, v.pending = nil, "", ""
			return v, nil
		case key.Matches(km, k.Baseline) && v.shown != "":
			// The open record is marked where it is read (the walkthrough's
			// last step opens it and offers b).
			v.base, v.notice = v.shown, "baseline: this run; c in the list compares another run with it"
			return v, nil
		case key.Matches(km, k.Compare) && v.shown != "":
			// c where a record is read compares it with the baseline, or
			// says why it cannot (it did nothing).
			b, r := v.index(v.base), v.index(v.shown)
			switch {
			case b < 0:
				v.notice = "no baseline: b marks this run one, then c on another run compares it"
			case b == r:
				v.notice = "this run is the baseline: esc, then c on another run compares it with this one"
			case r >= 0:
				v.show(v.compare(labs.Compare([]labs.RecordRef{v.refs[b], v.refs[r]})))
			}
			return v, nil
		}
		v.page.update(msg, k.Up, k.Down, k.Page)
		return v, nil
	}
	switch {
	case k.Moves(km, &v.sel, len(v.refs)):
	case key.Matches(km, k.Refresh):
		return v, v.load()
	case key.Matches(km, k.Baseline):
		if len(v.refs) > 0 {
			v.base = v.refs[v.sel].Dir
		}
	case key.Matches(km, k.Open):
		return v, v.open()
	case key.Matches(km, k.Compare):
		switch b := v.index(v.base); {
		case b < 0:
			v.notice = "no baseline: b marks one"
		case b == v.sel:
			v.notice = "this run is the baseline: pick another run to compare with it" // as results compare refuses a run with itself
		default:
			v.show(v.compare(labs.Compare([]labs.RecordRef{v.refs[b], v.refs[v.sel]})))
		}
	}
	return v, nil
}

// recordPageMsg is a record's Markdown, read for its page; keep says it
// is the open page read again, to be shown where the reader was.
type recordPageMsg struct {
	dir, md string
	keep    bool
}

// open reads the selected record's Markdown for its page, off the UI
// goroutine (record.md is a file on a disk that may be slow or remote).
func (v *resultsView) open() tea.Cmd {
	if len(v.refs) == 0 {
		return nil
	}
	v.pending = v.refs[v.sel].Dir
	return readRecord(v.refs[v.sel], false)
}

func readRecord(ref labs.RecordRef, keep bool) tea.Cmd {
	return func() tea.Msg {
		md, err := labs.ReadMarkdown(ref.Dir, ref.Record)
		if err != nil {
			md = err.Error() + "\n\nThe record, from record.json:\n\n" + ref.Record.Markdown()
		}
		return recordPageMsg{dir: ref.Dir, md: md, keep: keep}
	}
}

// opened shows a record read, unless the reader has gone on (back to the
// list, or to another record) since it was asked for.
func (v *resultsView) opened(m recordPageMsg) {
	if m.dir != v.pending {
		return
	}
	old := v.page
	v.pending, v.shown = "", m.dir
	// A record is anyone's file: its control characters are escaped
	// before it is rendered.
	v.redraw = func() {
		v.page = newTextPage(renderMarkdown(v.mask.apply(visible.Text(m.md)), v.width), v.width, v.height)
	}
	v.redraw()
	if m.keep && old != nil {
		v.page.keepPlace(old)
	}
}

// show opens text (a comparison) in a scrolling page.
func (v *resultsView) show(text string) {
	v.shown, v.pending = "", ""
	v.redraw = func() { v.page = newTextPage(plainLines(v.mask.apply(visible.Text(text)), v.width), v.width, v.height) }
	v.redraw()
}

func (v *resultsView) compare(rows []labs.CompareRow) string {
	f := func(x *float64) string {
		if x == nil {
			return "—"
		}
		return labs.FormatValue(*x)
	}
	out := []string{"Comparison (the first row is the baseline; coefficients are the row's figure ÷ the baseline's)", ""}
	for _, r := range rows {
		verdict := r.Outcome()
		if r.Simulated {
			verdict += ", SIMULATED fleet"
		}
		out = append(out, fmt.Sprintf("%s on %s: %s  (run %s)", r.Lab, r.Host, verdict, filepath.Base(r.Dir)))
		if r.Throughput == nil && r.P50 == nil && r.P99 == nil {
			out = append(out, fmt.Sprintf("  %s, %s: no throughput or latency figures", r.Workload, r.Mode), "")
			continue
		}
		out = append(out, fmt.Sprintf("  %s, %s", r.Workload, r.Mode),
			fmt.Sprintf("  throughput %s %s (× %s)   P50 %s   P99 %s (interference %s)", f(r.Throughput), r.Unit, f(r.ThroughputRatio), f(r.P50), f(r.P99), f(r.P99Coefficient)), "")
	}
	out = append(out, compareBars(rows, v.width)...)
	out = append(out, "esc goes back")
	return strings.Join(out, "\n")
}

// simMark is what starts the row of a simulated fleet's record: "SIM ".
func simMark(st Styles) string { return st.Badge.Render("SIM") + " " }

func (v *resultsView) View() string {
	if v.page != nil {
		return v.page.view(v.styles)
	}
	st := v.styles
	lines := []string{st.CardTitle.Render("Results") + st.CardMuted.Render("  lab records in "+visible.String(v.dir)), ""}
	if v.gone {
		lines = append(lines[:1], wrap(st.Hint.Render("Removed when the demo quits; GPULAB_RESULTS=DIR gpulab demo keeps them in DIR."), v.width-2)...)
		lines = append(lines, "")
	}
	if v.err != "" {
		lines = append(lines, st.Error.Render(visible.Text(v.err)))
	}
	if len(v.refs) == 0 {
		lines = append(lines, st.Hint.Render("No lab records yet: run a lab from the Labs tab or with gpulab lab run ID -H EXPR."))
		return strings.Join(lines, "\n")
	}
	// A record of a simulated fleet says SIM at the start of its row,
	// where a narrow terminal cannot cut it off; when one is listed, every
	// row and the header make room for the mark, so columns stay in line.
	simCol, noSim := false, ""
	for _, r := range v.refs {
		simCol = simCol || r.Record.Simulated
	}
	if simCol {
		noSim = strings.Repeat(" ", lipgloss.Width(simMark(st)))
	}
	runW := v.width - 2 - lipgloss.Width(noSim) - lipgloss.Width(v.rowText("", "", "", "", "", ""))
	head := ""
	if runW >= 10 {
		head = "RUN"
	}
	lines = append(lines, st.TableHeader.Render("  "+noSim+v.rowText("STARTED", "LAB", "HOSTS", "RESULT", "BASELINE", head)))
	room := max(1, v.height-len(lines))
	top := 0
	if v.sel >= room {
		top = v.sel - room + 1
	}
	for i := top; i < len(v.refs) && i < top+room; i++ {
		lines = append(lines, v.recordRow(i, noSim, runW))
	}
	return strings.Join(lines, "\n")
}

// rowText lays a row of the record list out in its columns, each as wide
// whatever it holds (a baseline is a column of its own, not a longer
// RESULT), so that the list stays aligned whatever is marked.
func (v *resultsView) rowText(started, lab, hosts, result, base, run string) string {
	// cell pads and cuts by columns: a wide character's two kept the rows
	// in line no more than fmt's padding by runes did.
	s := fmt.Sprintf("%-19s %s %s %-10s %-8s ", started, cell(lab, 20), cell(hosts, 16), result, base)
	if run == "" {
		return s
	}
	return s + run
}

// recordRow is the i-th record's row; runW is what is left for RUN (under
// 10 columns it is left out).
func (v *resultsView) recordRow(i int, noSim string, runW int) string {
	st := v.styles
	r := v.refs[i].Record
	marker := "  "
	if i == v.sel {
		marker = "▶ "
	}
	started, lab, hosts, res := render.Record(r)
	base := ""
	if v.refs[i].Dir == v.base {
		base = "base"
	}
	if r.Simulated {
		marker += simMark(st)
	} else {
		marker += noSim
	}
	run := ""
	if runW >= 10 {
		run = cell(visible.String(filepath.Base(v.refs[i].Dir)), runW)
	}
	return marker + v.rowText(started, lab, hosts, res, base, run)
}
