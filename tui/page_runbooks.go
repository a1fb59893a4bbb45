package tui

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/internal/visible"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/render"
	"github.com/gpulab/gpulab/runbooks"
	"github.com/gpulab/gpulab/step"
	"github.com/gpulab/gpulab/step/parse"
)

// RunbookRunner runs a runbook on some of the fleet's hosts (indices into
// Hosts()), sending each host's run on done as soon as it is complete,
// then closing done.
type RunbookRunner interface {
	Hosts() []app.FleetHost
	RunRunbook(ctx context.Context, rb runbooks.Runbook, hosts []int, params map[string]string, done chan<- app.RunbookHost)
}

// runbooksView lists the runbooks, runs one on the fleet, and shows its
// verdicts folded across hosts as they arrive, with the evidence behind a
// verdict and the topology grid of the host it concerns.
type runbooksView struct {
	runTab[app.RunbookHost]
	runner RunbookRunner
	inv    *inventory.Inventory
	list   []runbooks.Runbook
	keys   runbookKeys

	// The hosts to run on and each runbook's parameters.
	setup *runSetup

	sel      int
	active   *runbooks.Runbook
	names    []string // the hosts of the active run
	runs     []*runbooks.HostRun
	finished int
	folded   []runbooks.Folded
	cursor   int // over verdict groups
	evidence bool
	evScroll scroller // the evidence pane's position
	// listScroll is the list's, when the selected runbook's description
	// runs past a short terminal.
	listScroll scroller
	// focusFail keeps the cursor on the first FAIL as verdicts arrive (a
	// presenter's step that opens the evidence).
	focusFail bool
	// last is the finished run esc put away, kept with its verdicts until
	// the next run.
	last *runbooks.Runbook
	// fencer fences the hosts of a failed check (F); fence is the dialog
	// open.
	fencer Fencer
	fence  *fenceDialog
}

func newRunbooksView(runner RunbookRunner, inv *inventory.Inventory, list []runbooks.Runbook, st Styles) *runbooksView {
	return &runbooksView{runner: runner, inv: inv, list: list, runTab: runTab[app.RunbookHost]{styles: st}, setup: newRunSetup(inv, runner), keys: DefaultRunbookKeys()}
}

// Running is how many hosts the run in flight works on (0: none).
func (v *runbooksView) Running() int {
	if !v.running {
		return v.fence.applying()
	}
	return max(1, len(v.names)-v.finished)
}

// StopRun cancels the run in flight (its remote commands are stopped),
// or the fence under way.
func (v *runbooksView) StopRun(bool) {
	if v.running {
		v.stream.stop()
	}
	v.fence.stop()
}

func (v *runbooksView) Init() tea.Cmd   { return nil }
func (v *runbooksView) Title() string   { return "Runbooks" }
func (v *runbooksView) Capturing() bool { return v.setup.typing() || v.fence != nil }
func (v *runbooksView) SetSize(w, h int) {
	v.width, v.height = w, h
	v.setup.setWidth(w)
	if v.fence != nil {
		v.fence.width, v.fence.height = w, h
		v.fence.draw()
	}
}

func (v *runbooksView) Status() string {
	if v.active == nil {
		return fmt.Sprintf("%d runbooks", len(v.list))
	}
	return fmt.Sprintf("%s: %d/%d hosts", v.active.ID, v.finished, len(v.runs))
}

func (v *runbooksView) ShortHelp() []key.Binding {
	if v.setup.typing() { // a field is open: its keys, not the list's
		return fieldHelp()
	}
	if v.fence != nil {
		return v.fence.keys()
	}
	if v.active != nil {
		keys := moves(v.keys.Up, v.keys.Down, v.cursor, v.groupCount())
		if v.canFence() {
			keys = append(keys, fenceKey)
		}
		if v.evidence {
			pane := v.evidencePane()
			if len(pane) > v.evidenceHeight()-1 {
				keys = append(keys, v.keys.Scroll.PageDown)
			}
			keys = append(keys, v.evScroll.sideKeys(v.keys.Scroll, pane, v.width)...)
		}
		return append(keys, v.keys.Evidence, v.keys.Back)
	}
	keys := moves(v.keys.Up, v.keys.Down, v.sel, len(v.list))
	if v.canRun() { // no key is offered that does nothing
		keys = append(keys, v.keys.Run)
	}
	if v.setup.canChoose() {
		keys = append(keys, v.keys.Hosts)
	}
	if len(v.list) > 0 && len(v.list[v.sel].Params) > 0 {
		keys = append(keys, v.keys.Params)
	}
	return keys
}

// canRun says whether enter runs the selected runbook.
func (v *runbooksView) canRun() bool {
	return len(v.list) > 0 && v.runner != nil && v.setup.hostCount() > 0
}

func (v *runbooksView) FullHelp() [][]key.Binding {
	keys := [][]key.Binding{{v.keys.Up, v.keys.Down, v.keys.Home, v.keys.End}, {v.keys.Scroll.PageUp, v.keys.Scroll.PageDown, v.keys.Scroll.Left, v.keys.Scroll.Right},
		{v.keys.Run, v.keys.Hosts, v.keys.Params, v.keys.Evidence, v.keys.Back}}
	if v.fencer != nil {
		keys[2] = append(keys[2], fenceKey)
	}
	return keys
}

func (v *runbooksView) Update(msg tea.Msg) (Component, tea.Cmd) {
	switch msg := msg.(type) {
	case streamMsg[app.RunbookHost]:
		if !v.stream.current(msg) {
			return v, nil
		}
		for _, h := range msg.items {
			r := h.Run
			if h.Index >= 0 && h.Index < len(v.runs) {
				v.runs[h.Index] = &r
				v.finished++
			}
		}
		if len(msg.items) > 0 {
			v.refold()
		}
		if v.finished >= len(v.names) {
			// Every host has answered: the run is over now, not when
			// its channel's close comes, a frame later on a busy machine
			// (q asked "a run is going" in that moment).
			v.running = false
		}
		if msg.closed {
			v.running = false
			return v, nil
		}
		return v, v.stream.wait()
	case fencePlanned, fenceApplied:
		if v.fence != nil {
			cmd, _ := v.fence.update(msg)
			return v, cmd
		}
	case tea.KeyMsg:
		if v.setup.typing() {
			return v, v.setup.update(msg)
		}
		if v.fence != nil {
			cmd, closed := v.fence.update(msg)
			if closed {
				v.fence = nil
			}
			return v, cmd
		}
		if key.Matches(msg, fenceKey) && v.canFence() {
			return v, v.openFence()
		}
		return v, v.handleKey(msg)
	case tea.MouseMsg:
		switch {
		case v.active != nil && v.evidence:
			v.evScroll.handle(msg, v.keys.Scroll, v.evidencePane(), v.width, v.evidenceHeight()-1)
		case v.active == nil:
			v.listScroll.handle(msg, v.keys.Scroll, v.listLines(), v.width, v.height)
		}
	}
	return v, nil
}

func (v *runbooksView) handleKey(km tea.KeyMsg) tea.Cmd {
	k := v.keys
	if v.active == nil {
		if listScrolls(km, k.Scroll) && v.listScroll.handle(km, k.Scroll, v.listLines(), v.width, v.height) {
			return nil
		}
		sel := v.sel
		defer func() {
			if v.sel != sel {
				v.listScroll.home() // another runbook's description: from the top
			}
		}()
		switch {
		case k.Moves(km, &v.sel, len(v.list)):
		case key.Matches(km, k.Run):
			if v.canRun() {
				return v.start(v.list[v.sel])
			}
		case key.Matches(km, k.Params):
			if len(v.list) > 0 && len(v.list[v.sel].Params) > 0 {
				return v.setup.editParams(v.list[v.sel].ID, v.list[v.sel].Params)
			}
		case key.Matches(km, k.Hosts):
			if v.setup.canChoose() {
				return v.setup.editHosts()
			}
		}
		return nil
	}
	if v.evidence && v.evScroll.handle(km, k.Scroll, v.evidencePane(), v.width, v.evidenceHeight()-1) {
		return nil
	}
	cursor := v.cursor
	defer func() {
		if v.cursor != cursor {
			v.evScroll.home() // another group's evidence: from its top
		}
	}()
	switch {
	case k.Moves(km, &v.cursor, v.groupCount()):
	case key.Matches(km, k.Evidence), key.Matches(km, k.Open):
		v.evidence = !v.evidence
	case key.Matches(km, k.Back):
		v.stream.stop()
		v.last = v.active // its verdicts, for a presenter's step that shows them again
		if v.running {
			v.last = nil // stopped part way: nothing whole to show again
		}
		v.active, v.running, v.evidence = nil, false, false
	}
	v.focusFail = false // the operator moved: the cursor is theirs
	return nil
}

// canFence says whether F fences the hosts of the verdict group under
// the cursor: the run is over, and the group failed or warned.
func (v *runbooksView) canFence() bool {
	if v.fencer == nil || v.active == nil || v.running {
		return false
	}
	_, g := v.selected()
	return g != nil && (g.Status == step.Fail || g.Status == step.Warn)
}

// openFence opens the fence dialog on the hosts of the group under the
// cursor, its reason the check and what it found.
func (v *runbooksView) openFence() tea.Cmd {
	check, g := v.selected()
	sel, err := inventory.Empty().Select(g.Hosts)
	if err != nil {
		return nil
	}
	var idx []int
	for i, h := range v.runner.Hosts() {
		for _, s := range sel {
			if s.Name == h.Name {
				idx = append(idx, i)
			}
		}
	}
	if len(idx) == 0 {
		return nil
	}
	// The summary comes from what the hosts printed: escaped, and cut to
	// a reason's length.
	reason := text.Cut(fmt.Sprintf("runbook %s: %s %s: %s", v.active.ID, check, g.Status, visible.String(g.Summary)), 400)
	d, cmd := newFenceDialog(v.fencer, idx, g.Hosts, reason, false, v.width, v.height)
	v.fence = d
	return cmd
}

// selectID puts the cursor on the runbook called id, if it is listed.
func (v *runbooksView) selectID(id string) {
	for i, rb := range v.list {
		if rb.ID == id {
			v.sel = i
			return
		}
	}
}

// present runs the runbook whose id is run on the chosen hosts and, with
// open, shows the evidence of its first FAIL as soon as there is one.
func (v *runbooksView) present(run string, open, start bool) tea.Cmd {
	var cmd tea.Cmd
	for i, rb := range v.list {
		if rb.ID != run {
			continue
		}
		v.sel = i
		switch {
		case v.active == nil && v.last != nil && v.last.ID == run && !start:
			v.active, v.last = v.last, nil // the step's run, put away with esc
		case (start || v.active == nil) && v.runner != nil && v.setup.hostCount() > 0:
			v.stream.stop()
			cmd = v.start(rb)
		}
		break
	}
	if run == "" && v.active == nil && v.last != nil {
		v.active, v.last = v.last, nil // the run this step opens the evidence of
	}
	v.evidence, v.focusFail = open && v.active != nil, open
	v.cursor = 0
	v.evScroll.home()
	if open {
		v.cursorOnFail()
	}
	return cmd
}

// cursorOnFail puts the cursor on the first FAIL group, if any.
func (v *runbooksView) cursorOnFail() {
	idx := 0
	for _, f := range v.folded {
		for _, g := range f.Groups {
			if g.Status == step.Fail {
				v.cursor = idx
				return
			}
			idx++
		}
	}
}

func (v *runbooksView) start(rb runbooks.Runbook) tea.Cmd {
	v.active, v.last = &rb, nil
	v.names = v.setup.names()
	v.runs = make([]*runbooks.HostRun, len(v.names))
	v.finished, v.running, v.cursor, v.evidence, v.folded = 0, true, 0, false, nil
	runner, hosts, params := v.runner, v.setup.indices(), v.setup.values(rb.ID, rb.Params)
	return v.stream.start(v.base, len(v.names)+1, func(ctx context.Context, ch chan<- app.RunbookHost) {
		runner.RunRunbook(ctx, rb, hosts, params, ch)
	})
}

// summary is the finished run's line, as gpulab runbook run prints it
// (runbooks.Summary), and the hosts that sent no result, if any.
func (v *runbooksView) summary() string {
	var done []runbooks.HostRun
	var missing []string
	for i, r := range v.runs {
		switch {
		case r != nil:
			done = append(done, *r)
		case i < len(v.names):
			missing = append(missing, v.names[i])
		}
	}
	_, line, _ := strings.Cut(runbooks.Summary(done), ": ")
	if len(missing) > 0 {
		line += fmt.Sprintf("; %d with no result (%s)", len(missing), inventory.FoldNames(missing))
	}
	return line
}

func (v *runbooksView) refold() {
	var done []runbooks.HostRun
	for _, r := range v.runs {
		if r != nil {
			done = append(done, *r)
		}
	}
	v.folded = runbooks.Fold(*v.active, done)
	if v.focusFail {
		v.cursorOnFail()
	}
}

func (v *runbooksView) groupCount() int {
	n := 0
	for _, f := range v.folded {
		n += len(f.Groups)
	}
	return max(n, 1)
}

func (v *runbooksView) View() string {
	if v.fence != nil {
		return v.fence.view(v.styles)
	}
	if v.active == nil {
		return v.listView()
	}
	st := v.styles
	state := "running"
	if !v.running {
		state = "done"
	}
	// The finished run's counts, as gpulab runbook run prints them; on a
	// narrow terminal the title gives way to them, then they are cut.
	head := ""
	for _, title := range []string{v.active.ID + ": " + v.active.Title, v.active.ID} {
		head = st.CardTitle.Render(title) + st.CardMuted.Render("  on "+inventory.FoldNames(v.names)) +
			hostBadge(st, v.simulated, false) + st.CardMuted.Render(fmt.Sprintf("  %s %d/%d", state, v.finished, len(v.runs)))
		if !v.running {
			head += st.CardMuted.Render("  " + v.summary())
		}
		if lipgloss.Width(head) <= v.width {
			break
		}
	}
	head = text.Cut(head, v.width)
	body, at := v.verdictLines()
	room := max(1, v.height-1)
	var pane []string
	if _, g := v.selected(); g != nil && v.evidence {
		ph := v.evidenceHeight()
		room = max(1, v.height-2-ph) // the head, and a blank line between the panes
		pane = append([]string{st.Rule.Render("── evidence " + strings.Repeat("─", max(0, v.width-12)))},
			v.evScroll.render(v.evidencePane(), v.width, ph-1, st)...)
	}
	lines := append([]string{head}, cursorWindow(body, at, room, st)...)
	if pane != nil { // right under the verdicts: the room left is below it
		lines = append(append(lines, ""), pane...)
	}
	return strings.Join(lines, "\n")
}

// verdictLines are the run's verdict groups under their checks, and the
// line the cursor is on.
func (v *runbooksView) verdictLines() ([]string, int) {
	st := v.styles
	var body []string
	if v.running {
		var waiting []string
		for i, r := range v.runs {
			if r == nil {
				waiting = append(waiting, v.names[i])
			}
		}
		if len(waiting) > 0 {
			body = append(body, st.Hint.Render("waiting on "+inventory.FoldNames(waiting)))
		}
	}
	at, idx := 0, 0
	for _, f := range v.folded {
		body = append(body, st.CardLabel.Render(f.Title))
		for _, g := range f.Groups {
			marker := "  "
			if idx == v.cursor {
				marker, at = "▶ ", len(body)
			}
			line := marker + drawLine(st, render.Verdict(g), v.simulated)
			body = append(body, hanging(line, v.width-1, 10)...) // whole: a verdict is read to its end
			idx++
		}
	}
	return body, at
}

// selected is the verdict group under the cursor and its check.
func (v *runbooksView) selected() (string, *runbooks.FoldedGroup) {
	idx := 0
	for fi, f := range v.folded {
		for gi := range f.Groups {
			if idx == v.cursor {
				return f.Check, &v.folded[fi].Groups[gi]
			}
			idx++
		}
	}
	return "", nil
}

// evidenceHeight is the evidence pane's lines, its rule included: what
// it needs, leaving the verdicts what they need up to half the view, so
// that neither pane sits half empty while the other scrolls.
func (v *runbooksView) evidenceHeight() int {
	body, _ := v.verdictLines()
	avail := v.height - 1               // below the run's head
	keep := min(len(body), avail/2) + 1 // and a blank line between them
	return max(4, min(len(v.evidencePane())+1, avail-keep))
}

// evidencePane is the selected group's evidence (nil: none selected),
// host names masked.
func (v *runbooksView) evidencePane() []string {
	check, g := v.selected()
	if g == nil {
		return nil
	}
	return v.mask.lines(v.evidenceLines(check, g))
}

// canScroll says whether a page down (down) or up moves the evidence
// pane: it is open and has more below (above).
func (v *runbooksView) canScroll(down bool) bool {
	if v.active == nil {
		return !v.setup.typing() && v.listScroll.more(down, len(v.listLines()), v.height)
	}
	return v.evidence && v.evScroll.more(down, len(v.evidencePane()), v.evidenceHeight()-1)
}

// listView is the list and the selected runbook's description, scrolled
// when they run past the screen (its last line then says what is below).
func (v *runbooksView) listView() string {
	return strings.Join(v.listScroll.render(v.listLines(), v.width, v.height, v.styles), "\n")
}

func (v *runbooksView) listLines() []string {
	st := v.styles
	lines := v.setup.head(st, []string{st.CardTitle.Render("Runbooks"), ""},
		v.runner == nil || len(v.runner.Hosts()) == 0, "No hosts: pass --inventory FILE to run runbooks from here (or use gpulab runbook run ID -H EXPR).", v.paramsKey(), v.simulated)
	for i, rb := range v.list {
		marker := "  "
		if i == v.sel {
			marker = "▶ "
		}
		line := marker + st.CardLabel.Render(fmt.Sprintf("%-20s", rb.ID)) + " " + rb.Title
		if more := st.CardMuted.Render(" (" + rb.Plane + " plane, " + strconv.Itoa(len(rb.Checks)) + " checks)"); lipgloss.Width(line+more) <= v.width {
			line += more // the title first: a narrow terminal keeps it whole
		}
		lines = append(lines, line)
	}
	if v.sel < len(v.list) {
		rb := v.list[v.sel]
		if len(rb.Params) > 0 {
			lines = append(lines, "", v.setup.paramLine(st, rb.ID, rb.Params, v.keys.Params.Help().Key))
		}
		lines = append(lines, "")
		lines = append(lines, wrap(st.CardMuted.Render(rb.Symptom), v.width-2)...)
	}
	return lines
}

// evidenceLines lists, for the hosts of a verdict group, the facts behind
// it, the hint, and the topology grid when the runbook read one.
func (v *runbooksView) evidenceLines(check string, g *runbooks.FoldedGroup) []string {
	st := v.styles
	var out []string
	members := map[string]bool{}
	for _, h := range expandHosts(g.Hosts) {
		members[h] = true
	}
	// The same fact on many hosts is one line, with the hosts folded.
	var first *runbooks.HostRun
	type fact struct{ loc, text string }
	var order []fact
	on := map[fact][]string{}
	for _, r := range v.runs {
		if r == nil || !members[r.Host] {
			continue
		}
		if first == nil {
			first = r
		}
		for _, vd := range r.Verdicts {
			if vd.Check != check {
				continue
			}
			for _, e := range vd.Evidence {
				f := fact{e.Step, e.Fact}
				if e.Line > 0 {
					f.loc += ":" + strconv.Itoa(e.Line)
				}
				if on[f] == nil {
					order = append(order, f)
				}
				on[f] = append(on[f], r.Host)
			}
		}
	}
	for _, f := range order {
		out = append(out, fmt.Sprintf("  %s  %s  %s", inventory.FoldNames(on[f]), st.CardMuted.Render(f.loc), f.text))
	}
	if len(out) == 0 {
		out = append(out, st.CardMuted.Render("  no facts beyond the summary"))
	}
	if g.Hint != "" {
		out = append(out, wrap(drawLine(st, render.Next(g.Hint), false), v.width-2)...)
	}
	if first != nil {
		for _, s := range first.Steps {
			if t, ok := s.Value.(*parse.Topo); ok && len(t.GPUs) > 0 {
				out = append(out, "", st.CardLabel.Render("topology of "+first.Host))
				out = append(out, parseTopoGrid(t, st)...)
			}
		}
	}
	return out
}

func expandHosts(nodeset string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i <= len(nodeset); i++ {
		if i == len(nodeset) || (nodeset[i] == ',' && depth == 0) {
			if names, err := inventory.ExpandPattern(nodeset[start:i]); err == nil {
				out = append(out, names...)
			}
			start = i + 1
			continue
		}
		switch nodeset[i] {
		case '[':
			depth++
		case ']':
			depth--
		}
	}
	return out
}

// parseTopoGrid draws nvidia-smi topo -m facts as the coloured grid.
func parseTopoGrid(t *parse.Topo, st Styles) []string {
	head := "      "
	for _, c := range t.Columns {
		head += fmt.Sprintf("%-7s", text.Cut(c, 6))
	}
	lines := []string{st.TableHeader.Render(head)}
	for _, g := range t.GPUs {
		row := fmt.Sprintf("%-6s", g.Name)
		for _, c := range t.Columns {
			code := t.Links[g.Name][c]
			row += topoStyle(code, st).Render(fmt.Sprintf("%-7s", code))
		}
		if g.CPUAffinity != nil {
			row += " CPU " + *g.CPUAffinity
		}
		lines = append(lines, row)
	}
	return lines
}

// paramsKey is the key that sets the selected item's parameters, "" when
// it has none (the guidance offers no key that does nothing).
func (v *runbooksView) paramsKey() string {
	if len(v.list) > 0 && len(v.list[v.sel].Params) > 0 {
		return v.keys.Params.Help().Key
	}
	return ""
}

// presenting gives setting parameters to P: in presenter mode p steps
// the walkthrough back.
func (v *runbooksView) presenting() { yieldP(&v.keys.Params) }
