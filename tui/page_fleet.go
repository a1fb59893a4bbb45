package tui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/progress"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/internal/visible"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/probes/report"
	"github.com/gpulab/gpulab/render"
)

// FleetRunner runs commands and the NVML probe on the fleet; the Fleet
// view's only way to reach hosts. Run and Probe must send progress on
// events, close it, then return (orchestrator.Engine.Run does).
type FleetRunner interface {
	// Hosts lists the hosts a run reaches, in order.
	Hosts() []app.FleetHost
	Run(ctx context.Context, command string, events chan<- orchestrator.Event) []orchestrator.HostResult
	// Probe pushes and runs the NVML probe; one outcome per host, in order.
	Probe(ctx context.Context, events chan<- orchestrator.Event) []app.ProbeOutcome
}

// hostState is a host's live state during and after a run.
type hostState int

const (
	stateIdle hostState = iota
	stateConnecting
	stateRunning
	stateDone
)

type hostRow struct {
	app.FleetHost
	state   hostState
	class   orchestrator.Class
	connect time.Duration
	total   time.Duration
	result  *orchestrator.HostResult
	started time.Time
	probe   *app.ProbeOutcome
	// flags are what the probe found worth a look (an NVLink down, ECC
	// errors, Xids): the row is flagged with them.
	flags []string
	// live is the tail of what the running command printed (StepOutput
	// events), shown until the result arrives.
	live []byte
}

// liveTail is how much of a running command's output a row keeps.
const liveTail = 4 << 10

// runLog is one line of the command log: what ran where, and how it ended.
type runLog struct {
	command string
	hosts   string
	started time.Time
	summary string
}

// fleetItem is one update of a Fleet run: an engine event, or the end of
// the run with its results (or the probe's outcomes).
type fleetItem struct {
	event *orchestrator.Event
	done  *fleetDone
}

type fleetDone struct {
	results []orchestrator.HostResult
	probes  []app.ProbeOutcome
}

// pane is what the lower pane shows.
type pane int

const (
	paneHost pane = iota
	paneFolded
	paneLog
)

type fleetView struct {
	runTab[fleetItem]
	runner FleetRunner
	keys   fleetKeys

	rows   []hostRow
	cursor int
	offset int
	pane   pane
	// lastCommand is the command the last run ran, for ↑ in the field.
	lastCommand string

	input    textinput.Model
	typing   bool
	bar      progress.Model
	probing  bool
	hostView *textPage // the selected host's snapshot, when open
	scroll   scroller  // the output pane's position
	// paneChosen says the operator picked the pane (o) since the run
	// started: when it ends, that pane and its position are kept.
	paneChosen bool
	command    string
	finished   int
	counts     map[orchestrator.Class]int
	// summary is the finished run's line, computed from its results
	// (orchestrator.Summary, or report.Total after a probe: probed).
	summary string
	probed  bool
	results []orchestrator.HostResult
	groups  []orchestrator.Group // results folded, once per run
	log     []runLog

	// noCommands, when set, is why the command prompt is off (presenter
	// mode); notice is the last such refusal, shown until the next key.
	// openFlagged opens the first flagged host's GPUs once a probe has
	// found one.
	noCommands  string
	notice      string
	openFlagged bool
	// killHost cuts a simulated host off (gpulab demo; nil elsewhere).
	killHost func(name string) error
	now      func() time.Time
}

func newFleetView(runner FleetRunner, st Styles) *fleetView {
	ti := textinput.New()
	ti.Prompt = "$ "
	ti.Placeholder = "command to run on every host (enter runs, esc cancels)"
	ti.CharLimit = 4096
	v := &fleetView{runner: runner, runTab: runTab[fleetItem]{styles: st}, input: ti, counts: map[orchestrator.Class]int{}, now: time.Now,
		bar:  progress.New(progress.WithSolidFill("#6BD48A"), progress.WithoutPercentage()),
		keys: DefaultFleetKeys()}
	for _, h := range runner.Hosts() {
		v.rows = append(v.rows, hostRow{FleetHost: h})
	}
	return v
}

func (v *fleetView) Init() tea.Cmd   { return nil }
func (v *fleetView) Title() string   { return "Fleet" }
func (v *fleetView) Capturing() bool { return v.typing }

func (v *fleetView) Status() string {
	if v.running {
		return fmt.Sprintf("running %d/%d", v.finished, len(v.rows))
	}
	return fmt.Sprintf("%d hosts", len(v.rows))
}

// Brief is the fleet in a few words, for the header of the other tabs:
// how many hosts, how many the last probe flagged, whether a run goes on.
func (v *fleetView) Brief() string {
	b := text.Plural(len(v.rows), "host", "hosts")
	n := 0
	for _, r := range v.rows {
		if len(r.flags) > 0 {
			n++
		}
	}
	if n > 0 {
		b += fmt.Sprintf(", %d flagged", n)
	}
	if v.running {
		b += ", running"
	}
	return b
}

func (v *fleetView) ShortHelp() []key.Binding {
	if v.typing {
		esc := key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel"))
		if v.running { // enter runs nothing until the run ends; esc closes the field, it does not cancel the run
			esc.SetHelp("esc", "close the field")
			return []key.Binding{esc}
		}
		return []key.Binding{key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "run")), esc}
	}
	if v.hostView != nil {
		return append(v.hostView.keysNow(v.keys.Up, v.keys.Down, v.keys.Page), v.keys.Back)
	}
	var lead, keys []key.Binding
	switch {
	case v.running:
		// c first of all: a narrow status bar drops hints from the end,
		// and during a long run, when pgdn is offered, it dropped c.
		lead = []key.Binding{v.keys.Cancel}
		keys = append(moves(v.keys.Up, v.keys.Down, v.cursor, len(v.rows)), v.keys.Pane)
	case len(v.rows) == 0:
		return nil
	case v.noCommands != "":
		keys = append(moves(v.keys.Up, v.keys.Down, v.cursor, len(v.rows)), v.keys.Pane)
	default:
		keys = []key.Binding{v.keys.Command, v.keys.Probe, v.keys.Pane}
	}
	if v.rows[v.cursor].probe != nil && v.rows[v.cursor].probe.Snapshot != nil {
		keys = append(keys, v.keys.Open) // enter opens only a probed host
	}
	// First: the status bar drops hints from the end. Page down not at
	// the output's end, where it does nothing; < and > only for lines
	// wider than the pane.
	lines := v.outputLines()
	first := v.scroll.sideKeys(v.keys.Scroll, lines, v.width)
	if v.scroll.more(true, len(lines), v.paneHeight()) {
		first = append([]key.Binding{v.keys.Scroll.PageDown}, first...)
	}
	return append(append(lead, first...), keys...)
}

func (v *fleetView) FullHelp() [][]key.Binding {
	k := v.keys
	if v.noCommands != "" { // presenter mode: no command prompt; p steps the walkthrough, page up/down scroll the pane first
		return [][]key.Binding{{k.Up, k.Down, k.Home, k.End}, {k.Cancel, k.Pane, k.Open, k.Back}, {k.Scroll.Left, k.Scroll.Right}}
	}
	// The actions first: a narrow help panel puts the columns that do
	// not fit beside them on rows below.
	s := k.Scroll
	keys := [][]key.Binding{{k.Command, k.Probe, k.Cancel, k.Pane, k.Open, k.Back}, {k.Up, k.Down, k.PageUp, k.PageDown, k.Home, k.End},
		{s.PageUp, s.PageDown, s.Top, s.Bottom, s.Left, s.Right}}
	if v.killHost != nil {
		keys[0] = append(keys[0], k.Kill)
	}
	return keys
}

func (v *fleetView) SetSize(w, h int) {
	v.width, v.height = w, h
	v.input.Width = max(10, w-4)
	v.bar.Width = max(10, min(40, w/4))
	if v.hostView != nil { // drawn again for the new width, where the reader was
		old := v.hostView
		v.openHost()
		v.hostView.keepPlace(old)
	}
	v.clamp()
}

// paneHeight is the output pane's: a third of the view, and what the host
// table does not need of the rest.
func (v *fleetView) paneHeight() int {
	return max(3, v.height/3, v.height-3-max(1, len(v.rows)))
}
func (v *fleetView) tableHeight() int { return max(1, v.height-3-v.paneHeight()) }

func (v *fleetView) clamp() {
	v.cursor, v.offset = follow(v.cursor, v.offset, len(v.rows), v.tableHeight())
}

func (v *fleetView) Update(msg tea.Msg) (Component, tea.Cmd) {
	switch msg := msg.(type) {
	case streamMsg[fleetItem]:
		if !v.stream.current(msg) {
			return v, nil
		}
		var probed tea.Cmd // a probe run's end, told to the other views
		for _, it := range msg.items {
			switch {
			case it.event != nil:
				v.apply(*it.event)
			case it.done != nil:
				v.finish(*it.done)
				if it.done.probes != nil {
					probed = v.probedCmd(it.done.probes)
				}
			}
		}
		if msg.closed {
			return v, probed
		}
		return v, tea.Batch(v.stream.wait(), probed)
	case tea.KeyMsg:
		if v.typing {
			return v.updateInput(msg)
		}
		if v.hostView != nil {
			if key.Matches(msg, v.keys.Back) || key.Matches(msg, v.keys.Open) {
				v.hostView = nil
				return v, nil
			}
			v.hostView.update(msg, v.keys.Up, v.keys.Down, v.keys.Page)
			return v, nil
		}
		if v.scroll.handle(msg, v.keys.Scroll, v.outputLines(), v.width, v.paneHeight()) {
			return v, nil
		}
		return v, v.handleKey(msg)
	case tea.MouseMsg:
		if v.hostView != nil {
			v.hostView.update(msg, v.keys.Up, v.keys.Down, v.keys.Page)
		} else {
			v.scroll.handle(msg, v.keys.Scroll, v.outputLines(), v.width, v.paneHeight())
		}
	}
	return v, nil
}

func (v *fleetView) handleKey(km tea.KeyMsg) tea.Cmd {
	k := v.keys
	v.notice = ""
	cursor, pane := v.cursor, v.pane
	defer func() {
		if v.pane != pane || v.pane == paneHost && v.cursor != cursor {
			// Another text: from its top; while a run goes, from its
			// end, following what arrives, as a pane chosen before the
			// run does.
			v.scroll.home()
			v.scroll.follow = v.running
		}
		if v.pane != pane { // another kind of text (the log, the folded output) starts at its left edge
			v.scroll.col = 0
		}
		v.paneChosen = v.paneChosen || v.running && v.pane != pane
	}()
	switch {
	case key.Matches(km, k.Up):
		v.cursor--
	case key.Matches(km, k.Down):
		v.cursor++
	case key.Matches(km, k.PageUp):
		v.cursor -= v.tableHeight()
	case key.Matches(km, k.PageDown):
		v.cursor += v.tableHeight()
	case key.Matches(km, k.Home):
		v.cursor = 0
	case key.Matches(km, k.End):
		v.cursor = len(v.rows) - 1
	case key.Matches(km, k.Pane):
		v.pane = (v.pane + 1) % 3
	case key.Matches(km, k.Cancel):
		if v.running {
			v.stream.stop()
		}
	case key.Matches(km, k.Command) && v.noCommands != "":
		v.notice = v.noCommands
	case key.Matches(km, k.Command):
		// Also while a run goes: a command typed right away must land in
		// the field, not run key by key as shortcuts (q, K). Enter waits
		// for the run to end.
		if len(v.rows) > 0 {
			// Empty each time, the last command in the placeholder (↑
			// brings it back): typing after it ran "seq 1 40seq 1 9".
			v.typing = true
			if v.lastCommand != "" {
				v.input.Placeholder = "(↑ edits it) " + v.lastCommand // the hint first: a long command is cut, not the hint
			}
			v.input.SetValue("")
			return v.input.Focus()
		}
	case key.Matches(km, k.Probe):
		if !v.running && len(v.rows) > 0 {
			return v.start("", true)
		}
	case key.Matches(km, k.Open):
		v.openHost()
	case key.Matches(km, k.Kill) && v.killHost != nil && len(v.rows) > 0:
		name := v.rows[v.cursor].Name
		if err := v.killHost(name); err != nil {
			v.notice = err.Error()
		} else {
			v.notice = name + " is cut off (a simulated power loss): its commands end lost, and it refuses new connections until the demo restarts"
			if lipgloss.Width(v.notice) > v.width {
				v.notice = name + " cut off (simulated power loss) until the demo restarts"
			}
		}
	}
	v.clamp()
	return nil
}

// openHost opens the GPUs of the host under the cursor, if it was probed.
func (v *fleetView) openHost() {
	if len(v.rows) == 0 || v.rows[v.cursor].probe == nil || v.rows[v.cursor].probe.Snapshot == nil {
		return
	}
	r := v.rows[v.cursor]
	text := v.mask.apply(renderHost(r.probe.Snapshot, v.simulated || r.Simulated, v.styles, v.width))
	v.hostView = newTextPage(strings.Split(text, "\n"), v.width, v.height)
}

// present starts the probe ("probe", with start) and, with open, opens
// the first flagged host's GPUs as soon as the probe has flagged one;
// without, the host list is shown, its GPUs closed.
func (v *fleetView) present(run string, open, start bool) tea.Cmd {
	v.openFlagged, v.hostView, v.typing = open, nil, false
	v.cursor, v.offset = 0, 0
	v.input.Blur()
	if open && !v.running {
		v.openFirstFlagged()
	}
	if start && run == "probe" && !v.running && len(v.rows) > 0 {
		return v.start("", true)
	}
	return nil
}

func (v *fleetView) openFirstFlagged() {
	for i, r := range v.rows {
		if len(r.flags) > 0 {
			v.cursor, v.openFlagged = i, false
			v.clamp()
			v.openHost()
			return
		}
	}
}

// runGoing is what enter in the command field says while a run goes.
const runGoing = "a run is going: c cancels it (esc first)"

func (v *fleetView) updateInput(km tea.KeyMsg) (Component, tea.Cmd) {
	switch km.Type {
	case tea.KeyEsc:
		v.typing, v.notice = false, ""
		v.input.Blur()
		return v, nil
	case tea.KeyEnter:
		cmd := strings.TrimSpace(v.input.Value())
		if v.running && cmd != "" { // one run at a time: the text stays for when it ends
			v.notice = runGoing
			return v, nil
		}
		v.typing, v.notice = false, ""
		v.input.Blur()
		if cmd == "" {
			return v, nil
		}
		v.lastCommand = cmd
		return v, v.start(cmd, false)
	case tea.KeyUp:
		if v.input.Value() == "" && v.lastCommand != "" {
			v.input.SetValue(v.lastCommand)
			v.input.CursorEnd()
			return v, nil
		}
	}
	var c tea.Cmd
	v.input, c = v.input.Update(km)
	return v, c
}

// anySimulated says whether a connection showed a host to be simulated:
// the header then says SIMULATED.
func (v *fleetView) anySimulated() bool {
	for _, r := range v.rows {
		if r.Simulated {
			return true
		}
	}
	return false
}

// Running is how many hosts the run in flight works on (0: none).
func (v *fleetView) Running() int {
	if !v.running {
		return 0
	}
	return max(1, len(v.rows)-v.finished)
}

// StopRun cancels the run in flight (its remote commands are stopped).
func (v *fleetView) StopRun(bool) {
	if v.running {
		v.stream.stop()
	}
}

// start launches a run (a command, or the probe) in the background and
// returns the command that waits for its first events.
func (v *fleetView) start(command string, probe bool) tea.Cmd {
	if probe {
		command = "gpulab probe"
	}
	v.running, v.probing, v.command, v.finished, v.results, v.groups = true, probe, command, 0, nil, nil
	v.paneChosen, v.summary, v.probed = false, "", false
	v.scroll.home()
	v.scroll.follow = true // a running host's output is followed as it comes, as tail -f does
	v.counts = map[orchestrator.Class]int{}
	for i := range v.rows {
		v.rows[i] = hostRow{FleetHost: v.rows[i].FleetHost}
	}
	v.log = append(v.log, runLog{command: command, hosts: v.nodeSet(), started: v.now()})
	runner := v.runner
	return v.stream.start(v.base, 256, func(ctx context.Context, ch chan<- fleetItem) {
		defer close(ch)
		events := make(chan orchestrator.Event, 256)
		forwarded := make(chan struct{})
		go func() { // the runner closes events when it is done
			for ev := range events {
				ch <- fleetItem{event: &ev}
			}
			close(forwarded)
		}()
		var done fleetDone
		if probe {
			done.probes = runner.Probe(ctx, events)
		} else {
			done.results = runner.Run(ctx, command, events)
		}
		<-forwarded
		ch <- fleetItem{done: &done}
	})
}

func (v *fleetView) nodeSet() string {
	names := make([]string, len(v.rows))
	for i, r := range v.rows {
		names[i] = r.Name
	}
	return inventory.FoldNames(names)
}

func (v *fleetView) apply(ev orchestrator.Event) {
	if ev.Index < 0 || ev.Index >= len(v.rows) {
		return
	}
	r := &v.rows[ev.Index]
	switch ev.Kind {
	case orchestrator.HostConnecting:
		r.state, r.started = stateConnecting, ev.Time
	case orchestrator.HostConnected:
		r.state, r.connect = stateRunning, ev.Time.Sub(r.started)
		r.Simulated = r.Simulated || ev.Simulated
	case orchestrator.StepOutput:
		r.live = append(r.live, ev.Output...)
		if len(r.live) > liveTail {
			r.live = append([]byte(nil), r.live[len(r.live)-liveTail:]...)
		}
	case orchestrator.HostDone:
		if ev.Done != nil {
			r.live = nil
			r.state, r.class, r.total, r.result = stateDone, ev.Done.Class, ev.Done.Total, ev.Done
			r.connect = ev.Done.Connect
			r.Simulated = r.Simulated || ev.Done.Simulated
			v.counts[ev.Done.Class]++
			v.finished++
		}
	}
}

func (v *fleetView) finish(msg fleetDone) {
	results := msg.results
	if msg.probes != nil {
		results = v.probeResults(msg.probes)
	}
	v.running, v.results = false, results
	v.groups = orchestrator.Fold(results, 0)
	v.stream.stop()
	// The counts of the finished run are its results', counted by the
	// functions the command line counts with: a probe's by what the
	// probe saw (report.Total), a command's by how each host ended.
	v.counts = map[orchestrator.Class]int{}
	for _, r := range results {
		v.counts[r.Class]++
	}
	v.summary, v.probed = orchestrator.Summary(results), msg.probes != nil
	if msg.probes != nil {
		names := make([]string, len(v.rows))
		snaps := make([]*report.Snapshot, len(v.rows))
		classes := make([]string, len(v.rows))
		for i, r := range v.rows {
			names[i], classes[i] = r.Name, r.class.String()
			if r.probe != nil {
				snaps[i] = r.probe.Snapshot
			}
		}
		v.summary = report.Total(names, snaps, classes)
	}
	if len(v.log) > 0 {
		v.log[len(v.log)-1].summary = v.summary
	}
	// The results, from their top, folded when there are several; but a
	// pane the operator chose during the run stays, where they are in it
	// (the folded pane had nothing to show until now: from its top).
	switch {
	case !v.paneChosen:
		v.scroll.home()
		if v.pane == paneHost && len(results) > 1 {
			v.pane = paneFolded
		}
	case v.pane == paneFolded:
		v.scroll.home()
	}
	if v.openFlagged {
		v.openFirstFlagged()
	}
}

// probeResults keeps each host's snapshot and turns the probe run into
// results whose "output" is the host's hardware line, so that identical
// hardware folds and the odd hosts stand out.
func (v *fleetView) probeResults(probes []app.ProbeOutcome) []orchestrator.HostResult {
	out := make([]orchestrator.HostResult, len(v.rows))
	for i := range v.rows {
		r := &v.rows[i]
		hr := orchestrator.HostResult{Host: r.Name, Class: r.class, Connect: r.connect, Total: r.total}
		if i < len(probes) {
			p := probes[i]
			r.probe = &p
			switch {
			case p.Snapshot != nil:
				r.flags = report.Flags(p.Snapshot) // the phrases gpulab probe flags a host with
				line := report.Hardware(p.Snapshot) + "\n"
				hr.Steps = []orchestrator.Result{{Step: "probe", Stdout: []byte(line), Class: hr.Class}}
				if !p.Snapshot.NVML.Available && hr.Class == orchestrator.OK {
					hr.Class = orchestrator.Exit
					hr.Steps[0].Class = orchestrator.Exit
				}
			case p.Err != "":
				hr.Err = p.Err
			}
		}
		r.class = hr.Class
		r.result = &hr
		out[i] = hr
	}
	return out
}

func (v *fleetView) View() string {
	if v.hostView != nil {
		return v.hostView.view(v.styles)
	}
	st := v.styles
	lines := []string{v.headline(), st.TableHeader.Render(v.rowText("HOST", "ADDRESS", "STATE", "CONNECT", "TIME", "OUTPUT"))}
	n := v.tableHeight()
	for i := v.offset; i < len(v.rows) && i < v.offset+n; i++ {
		lines = append(lines, v.row(i))
	}
	for len(lines) < n+2 {
		lines = append(lines, "")
	}
	title := map[pane]string{paneHost: " output of " + v.selectedName() + " ", paneFolded: " folded output ", paneLog: " command log "}[v.pane]
	if len(v.rows) > n { // the table shows some of the hosts: the rule says which
		title = fmt.Sprintf(" hosts %d-%d of %d (↑/↓) ─%s", v.offset+1, min(len(v.rows), v.offset+n), len(v.rows), title)
	}
	lines = append(lines, st.Rule.Render("──"+title+strings.Repeat("─", max(0, v.width-lipgloss.Width(title)-2))))
	lines = append(lines, v.scroll.render(v.outputLines(), v.width, v.paneHeight(), st)...)
	return strings.Join(lines, "\n")
}

func (v *fleetView) selectedName() string {
	if len(v.rows) == 0 {
		return "-"
	}
	return v.rows[v.cursor].Name
}

func (v *fleetView) headline() string {
	st := v.styles
	if v.typing && v.running && v.notice == runGoing { // the field gives way to it: it pads to its width
		note := st.Error.Render(runGoing)
		return text.Clip(v.input.View(), max(10, v.width-lipgloss.Width(note)-2)) + "  " + note
	}
	if v.typing {
		return v.input.View()
	}
	if v.notice != "" {
		return st.Error.Render(v.notice)
	}
	if len(v.rows) == 0 {
		return st.Hint.Render("No hosts: pass --inventory FILE, or -H names from ~/.ssh/config.")
	}
	if v.command == "" {
		probe := v.keys.Probe.Help().Key // P in presenter mode
		line := fmt.Sprintf("%d hosts: %s. Press : to run a command on all of them, %s to probe their GPUs.", len(v.rows), v.nodeSet(), probe)
		if lipgloss.Width(line) > v.width {
			line = fmt.Sprintf("%d hosts: %s. : runs a command on all, %s probes GPUs.", len(v.rows), v.nodeSet(), probe)
		}
		return st.Hint.Render(line)
	}
	pct := float64(v.finished) / float64(len(v.rows))
	state := "done"
	if v.running {
		state = "running"
	}
	var parts []string
	if _, done, ok := strings.Cut(v.summary, ": "); ok && !v.running {
		// The finished run's line, as the command line counts it.
		parts = append(parts, done)
	} else {
		for c := orchestrator.OK; c <= orchestrator.Error; c++ {
			if n := v.counts[c]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, c))
			}
		}
	}
	var flagged []string
	for _, r := range v.rows {
		if len(r.flags) > 0 {
			flagged = append(flagged, r.Name)
		}
	}
	if len(flagged) > 0 && !v.probed {
		parts = append(parts, st.Error.Render(fmt.Sprintf("%d flagged: %s", len(flagged), inventory.FoldNames(flagged))))
	}
	return fmt.Sprintf("%s %s %s %d/%d  %s", st.CardLabel.Render("$ "+v.command), state, v.bar.ViewAs(pct), v.finished, len(v.rows), strings.Join(parts, ", "))
}

var stateNames = map[hostState]string{stateIdle: "-", stateConnecting: "connecting", stateRunning: "running"}

// narrowFleet is the width under which the host table leaves the ADDRESS
// column out, so that OUTPUT keeps room to be read.
const narrowFleet = 120

func (v *fleetView) rowText(cells ...string) string {
	widths := []int{14, 22, 16, 8, 8}
	if v.width < narrowFleet {
		widths = []int{14, 0, 13, 7, 7}
	}
	var b strings.Builder
	b.WriteString("  ")
	for i, c := range cells[:len(cells)-1] {
		if widths[i] > 0 {
			b.WriteString(cell(c, widths[i]) + " ")
		}
	}
	rest := max(4, v.width-lipgloss.Width(b.String()))
	b.WriteString(cell(cells[len(cells)-1], rest))
	return b.String()
}

func (v *fleetView) row(i int) string {
	r := v.rows[i]
	state := stateNames[r.state]
	out := ""
	if r.state == stateDone {
		state = r.class.String()
		if r.result != nil && len(r.result.Steps) > 0 {
			s := r.result.Steps[0]
			out = termLine(firstLine(string(s.Stdout)))
			if out == "" {
				out = termLine(firstLine(string(s.Stderr)))
			}
		}
		if out == "" && r.result != nil {
			out = termLine(r.result.Err)
		}
	} else if len(r.live) > 0 {
		out = termLine(lastLine(string(r.live))) // what a host sends mid-run is escaped too
	} else if r.Err != "" {
		state, out = orchestrator.Error.String(), r.Err // it cannot be reached: never run
	}
	if len(r.flags) > 0 {
		state, out = state+" FLAGGED", "⚑ "+strings.Join(r.flags, " · ")
	}
	// A row drawn in one style carries its badge as plain text: a styled
	// badge inside would end the row's style.
	plain := i == v.cursor || r.state == stateDone && r.class != orchestrator.OK || r.Err != "" || len(r.flags) > 0
	line := v.rowText(r.Name+hostBadge(v.styles, v.simulated || r.Simulated, plain), r.Address, state, dur(r.connect), dur(r.total), out)
	switch {
	case i == v.cursor:
		return v.styles.TableCursor.Render("▶ " + strings.TrimPrefix(line, "  "))
	case plain:
		return v.styles.Error.Render(line)
	}
	return line
}

func dur(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	if d < time.Second {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	s = strings.TrimRight(s, "\r\n")
	if i := strings.LastIndexAny(s, "\r\n"); i >= 0 {
		s = s[i+1:]
	}
	return s
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimLeft(s, "\n"), "\n")
	return s
}

// outputLines are the output pane's lines as it shows them: host names
// masked before the pane cuts them to its width.
func (v *fleetView) outputLines() []string { return v.mask.lines(v.paneLines()) }

// canScroll says whether a page down (down) or up moves what the Fleet
// shows: the host's page when it is open, else the output pane.
func (v *fleetView) canScroll(down bool) bool {
	if v.typing {
		return false
	}
	if v.hostView != nil {
		return v.hostView.canScroll(down)
	}
	return v.scroll.more(down, len(v.outputLines()), v.paneHeight())
}

func (v *fleetView) paneLines() []string {
	switch v.pane {
	case paneLog:
		return v.logLines()
	case paneFolded:
		return v.foldedLines()
	}
	return v.hostLines()
}

// logLines are the command log, the newest first.
func (v *fleetView) logLines() []string {
	if len(v.log) == 0 {
		return []string{v.styles.Hint.Render("nothing ran yet")}
	}
	var out []string
	for i := len(v.log) - 1; i >= 0; i-- {
		l := v.log[i]
		sum := l.summary
		if sum == "" {
			sum = "running"
		}
		out = append(out, fmt.Sprintf("%s  %s  on %s  → %s", l.started.Format("15:04:05"), l.command, l.hosts, sum))
	}
	return out
}

// foldedLines are the run's folded output: what the probe flagged, then
// each group under its head, the others as their difference from the
// first.
func (v *fleetView) foldedLines() []string {
	st := v.styles
	if v.results == nil {
		return []string{st.Hint.Render("folded output appears when the run ends")}
	}
	var out []string
	flagged := map[string]bool{}
	for _, r := range v.rows { // what the probe flagged first: a narrow table cuts it
		flagged[r.Name] = len(r.flags) > 0
		if len(r.flags) > 0 {
			out = append(out, wrap(st.Error.Render("⚑ "+r.Name+": ")+strings.Join(r.flags, " · "), v.width-2)...)
		}
	}
	groups := v.groups
	for gi, g := range groups {
		for _, l := range groupHead(g, flaggedClass(g, flagged), max(20, v.width-2)) {
			out = append(out, st.CardLabel.Render(l))
		}
		body := g.Stdout + g.Stderr
		if gi > 0 && groups[0].Class == orchestrator.OK && body != "" {
			body = orchestrator.Diff(groups[0], g)
		}
		for _, e := range g.Errors {
			body += e + "\n"
			break
		}
		if v.truncated(g.Hosts) {
			body += "[output cut at the limit: the rest was not kept; the host view (enter) says how much came]\n"
		}
		for _, l := range strings.Split(strings.TrimRight(body, "\n"), "\n") {
			if l != "" {
				out = append(out, "  "+termLine(l))
			}
		}
	}
	return out
}

// flaggedClass is a group's class and how many of its hosts the probe
// flagged: its findings are listed above, and "ok" alone read as healthy.
func flaggedClass(g orchestrator.Group, flagged map[string]bool) string {
	class := render.GroupClass(g)
	n := 0
	for _, h := range g.Hosts {
		if flagged[h] {
			n++
		}
	}
	switch {
	case n > 0 && n == len(g.Hosts):
		class += ", FLAGGED"
	case n > 0:
		class += fmt.Sprintf(", %d flagged", n)
	}
	return class
}

// hostLines are the selected host's output: live while it runs, then its
// result, its errors and what was cut.
func (v *fleetView) hostLines() []string {
	st := v.styles
	if len(v.rows) == 0 {
		return nil
	}
	r := v.rows[v.cursor]
	if r.result == nil && len(r.live) > 0 {
		return append([]string{st.Hint.Render("running; its output so far:")}, termLines(string(r.live))...)
	}
	if r.result == nil {
		return []string{st.Hint.Render("no output yet")}
	}
	var out []string
	if r.result.Err != "" {
		out = append(out, st.Error.Render(termLine(r.result.Err)))
	}
	for _, s := range r.result.Steps {
		out = append(out, termLines(string(s.Stdout))...)
		if len(s.Stderr) > 0 {
			errs := termLines(string(s.Stderr))
			out = append(out, st.CardMuted.Render("stderr: ")+errs[0])
			out = append(out, errs[1:]...)
		}
		if s.Truncated {
			out = append(out, st.Error.Render(fmt.Sprintf("[output cut: %d bytes of stdout and %d of stderr came, the first %d and %d were kept]",
				s.StdoutBytes, s.StderrBytes, len(s.Stdout), len(s.Stderr))))
		}
	}
	return out
}

// truncated says whether a command's output was cut on any of hosts.
// It looks at the cut hosts only, usually none: a group of a thousand
// hosts was looked up in the rows one by one on every frame.
func (v *fleetView) truncated(hosts []string) bool {
	var cut map[string]bool
	for _, r := range v.rows {
		if r.result == nil {
			continue
		}
		for _, s := range r.result.Steps {
			if s.Truncated {
				if cut == nil {
					cut = map[string]bool{}
				}
				cut[r.Name] = true
			}
		}
	}
	return cut != nil && slices.ContainsFunc(hosts, func(h string) bool { return cut[h] })
}

// groupHead is a folded group's head, "dgx[01-04] (4 hosts): ok" as
// gpulab exec prints it (render.GroupHead); a node set
// too long for the width (hosts failing here and there among hundreds)
// goes last, after the count and class, and wraps after its commas.
func groupHead(g orchestrator.Group, class string, width int) []string {
	head := render.GroupHead(g, class).String()
	if lipgloss.Width(head) <= width {
		return []string{head}
	}
	lines := strings.Split(ansi.Wrap(fmt.Sprintf("%s, %s: %s", text.Plural(len(g.Hosts), "host", "hosts"), class, g.NodeSet), width-2, ","), "\n")
	for i := 1; i < len(lines); i++ {
		lines[i] = "  " + lines[i]
	}
	return lines
}

// termLines are a host's output as lines a terminal would show, each
// through termLine.
func termLines(s string) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = termLine(l)
	}
	return lines
}

// termLine is one line of a host's output as the workbench may draw it:
// what a terminal shows after a carriage return (the text after the last
// one: a progress bar's final state), every other control character,
// escape sequences included, escaped (internal/visible): a host's output
// never moves the cursor, clears the screen or retitles the operator's
// terminal. Then it is made uniform: tabs expanded to 8-column stops of
// the text as shown, and emoji a terminal would count otherwise taken
// apart, so that the Fleet's columns are measured on what is drawn.
func termLine(l string) string {
	l = strings.TrimSuffix(l, "\r")
	if i := strings.LastIndexByte(l, '\r'); i >= 0 {
		l = l[i+1:]
	}
	return uniform(visible.Text(l))
}

// probedCmd tells the other views what the probe run found.
func (v *fleetView) probedCmd(outcomes []app.ProbeOutcome) tea.Cmd {
	msg := FleetProbedMsg{Hosts: make([]string, len(v.rows)), Outcomes: outcomes}
	for i, r := range v.rows {
		msg.Hosts[i] = r.Name
	}
	return func() tea.Msg { return msg }
}

// presenting gives the probe to P: in presenter mode p steps the
// walkthrough back.
func (v *fleetView) presenting() { yieldP(&v.keys.Probe) }
