package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/progress"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/orchestrator"
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
	// (orchestrator.Summary, or render.ProbeTotal after a probe: probed).
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
	// fencer fences and releases hosts (F, R); fence is the dialog open.
	fencer Fencer
	fence  *fenceDialog
	// nodes are the hosts' states as nodes of a cluster (Slurm's), read
	// when the view opens and after each fence or release.
	nodes map[string]app.NodeState
	now   func() time.Time
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

func (v *fleetView) Init() tea.Cmd {
	if v.fencer == nil {
		return nil
	}
	return loadNodeStates(v.runner)
}
func (v *fleetView) Title() string   { return "Fleet" }
func (v *fleetView) Capturing() bool { return v.typing || v.fence != nil }

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
	if v.fence != nil {
		return v.fence.keys()
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
	if v.fencer != nil {
		keys[0] = append(keys[0], fenceKey, releaseKey)
	}
	return keys
}

// openFence opens the fence (or release) dialog on the selected host,
// its reason what the probe flagged there.
func (v *fleetView) openFence(release bool) tea.Cmd {
	if v.running {
		v.notice = "a run goes on: fence or release when it ends"
		return nil
	}
	r := v.rows[v.cursor]
	d, cmd := newFenceDialog(v.fencer, []int{v.cursor}, r.Name, strings.Join(r.flags, "; "), release, v.width, v.height)
	v.fence = d
	return cmd
}

func (v *fleetView) SetSize(w, h int) {
	v.width, v.height = w, h
	if v.fence != nil {
		v.fence.width, v.fence.height = w, h
		if v.fence.page != nil {
			v.fence.draw()
		}
	}
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
	case nodeStatesMsg:
		if msg.err == nil {
			v.nodes = msg.states
		}
	case fencePlanned, fenceApplied:
		var cmd tea.Cmd
		if v.fence != nil {
			cmd, _ = v.fence.update(msg)
		}
		if _, applied := msg.(fenceApplied); applied { // by any tab's dialog: what the cluster says now
			return v, tea.Batch(cmd, loadNodeStates(v.runner))
		}
		return v, cmd
	case tea.KeyMsg:
		if v.typing {
			return v.updateInput(msg)
		}
		if v.fence != nil {
			cmd, closed := v.fence.update(msg)
			if closed { // what the cluster says now, changed or not
				v.fence = nil
				return v, tea.Batch(cmd, loadNodeStates(v.runner))
			}
			return v, cmd
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
	case (key.Matches(km, fenceKey) || key.Matches(km, releaseKey)) && v.fencer != nil && len(v.rows) > 0:
		return v.openFence(key.Matches(km, releaseKey))
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
		return v.fence.applying()
	}
	return max(1, len(v.rows)-v.finished)
}

// StopRun cancels the run in flight (its remote commands are stopped),
// or the fence under way.
func (v *fleetView) StopRun(bool) {
	if v.running {
		v.stream.stop()
	}
	v.fence.stop()
}

// presenting gives the probe to P: in presenter mode p steps the
// walkthrough back.
func (v *fleetView) presenting() { yieldP(&v.keys.Probe) }
