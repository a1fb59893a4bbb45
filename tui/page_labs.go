package tui

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/internal/visible"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/labs"
	"github.com/gpulab/gpulab/render"
)

// LabRunner runs a lab on some of the fleet's hosts (indices into
// Hosts()): it sends the run's events on events as they happen, then one
// LabUpdate with the finished record (and where it was written), then
// closes events.
type LabRunner interface {
	Hosts() []app.FleetHost
	RunLab(ctx context.Context, l *labs.Lab, hosts []int, o app.LabRunOptions, events chan<- app.LabUpdate)
}

// labTickMsg redraws a run's timer each second.
type labTickMsg struct{ run int }

// labsView lists the labs (maturity, estimate) and runs one: the current
// phase, the timer against the estimate, the criteria checklist turning
// PASS/FAIL with values as metrics arrive, and a folded log of the steps.
type labsView struct {
	runTab[app.LabUpdate]
	runner LabRunner
	list   []*labs.Lab
	keys   labKeys
	now    func() time.Time
	setup  *runSetup
	names  []string // the hosts of the active run

	sel     int
	active  *labs.Lab
	started time.Time
	ended   time.Time
	abandon context.CancelFunc      // stops cleanup (quitting twice)
	phase   map[string]string       // host → current phase
	current map[string]string       // host → the step it runs now ("observe topo"), until it ends
	scores  map[string][]labs.Score // host → latest scores
	samples map[string]sampled      // host → the probe's samples so far
	solve   map[string]bool         // lab → run its fast-forward
	guided  bool
	pending *app.GuideRequest // the step a guided run waits at
	scroll  scroller          // a run's criteria and steps
	// listScroll is the list's, when the selected lab's criteria run
	// past the screen.
	listScroll scroller
	log        []logEntry
	rec        *labs.Record
	dir        string
	err        string
	// simulated puts a SIM badge on the hosts; mask hides host names
	// before the panes cut their lines to their width (nil: shown).
}

type sampled struct {
	n    int
	last labs.Sample
	// util and mem are each GPU's utilisation and memory used (percent of
	// its total) in the latest samples (sparkKeep at most), oldest first,
	// by GPU index.
	util, mem map[int][]float64
}

// sparkKeep is how many samples a host's sparklines keep.
const sparkKeep = 60

type logEntry struct {
	key   string // phase/step/outcome
	hosts []string
}

func newLabsView(runner LabRunner, inv *inventory.Inventory, list []*labs.Lab, st Styles) *labsView {
	v := &labsView{runner: runner, list: list, runTab: runTab[app.LabUpdate]{styles: st}, now: time.Now, setup: newRunSetup(inv, runner), solve: map[string]bool{}, keys: DefaultLabKeys()}
	return v
}

// Running is how many hosts the lab run in flight works on (0: none).
func (v *labsView) Running() int {
	if !v.running {
		return 0
	}
	return max(1, len(v.names))
}

// StopRun cancels the run in flight: its cleanup goes on, unless abandon.
func (v *labsView) StopRun(abandon bool) {
	if !v.running {
		return
	}
	v.stream.stop()
	if abandon && v.abandon != nil {
		v.abandon()
	}
}

func (v *labsView) Init() tea.Cmd   { return nil }
func (v *labsView) Title() string   { return "Labs" }
func (v *labsView) Capturing() bool { return v.setup.typing() }
func (v *labsView) SetSize(w, h int) {
	v.width, v.height = w, h
	v.setup.setWidth(w)
}

func (v *labsView) Status() string {
	if v.active == nil {
		return fmt.Sprintf("%d labs", len(v.list))
	}
	return v.active.ID + ": " + v.timer()
}

func (v *labsView) ShortHelp() []key.Binding {
	if v.setup.typing() { // a field is open: its keys, not the list's
		return fieldHelp()
	}
	var keys []key.Binding
	switch {
	case v.pending != nil:
		keys = []key.Binding{v.keys.Run, v.keys.Skip, v.keys.Back}
	case v.active != nil:
		keys = []key.Binding{v.keys.Back}
	default:
		return v.listHelp()
	}
	body := v.runBody()
	if len(body) > v.bodyHeight() {
		keys = append(keys, v.keys.Scroll.PageDown)
	}
	return append(keys, v.scroll.sideKeys(v.keys.Scroll, body, v.width)...)
}

// listHelp offers the keys that do something on the selected lab: no
// hosts, no run; no fast-forward or parameters, no key for them.
func (v *labsView) listHelp() []key.Binding {
	keys := moves(v.keys.Up, v.keys.Down, v.sel, len(v.list))
	lines := v.listLines()
	if len(lines) > v.height {
		keys = append(keys, v.keys.Scroll.PageDown)
	}
	if v.canRun() {
		keys = append(keys, v.keys.Run, v.keys.Guided)
	}
	if len(v.list) > 0 && v.list[v.sel].HasSolve() && v.canRun() { // fast-forward of a run that cannot start: nothing
		keys = append(keys, v.keys.Solve)
	}
	if v.setup.canChoose() {
		keys = append(keys, v.keys.Hosts)
	}
	if len(v.list) > 0 && len(v.list[v.sel].Params) > 0 {
		keys = append(keys, v.keys.Params)
	}
	// Last: the status bar drops hints from the end, and a long line of
	// the list (its parameters) matters less than the keys that run.
	return append(keys, v.listScroll.sideKeys(v.keys.Scroll, lines, v.width)...)
}

// canRun says whether enter runs the selected lab.
func (v *labsView) canRun() bool {
	return len(v.list) > 0 && v.runner != nil && v.setup.hostCount() > 0
}

func (v *labsView) FullHelp() [][]key.Binding {
	s := v.keys.Scroll
	return [][]key.Binding{{v.keys.Up, v.keys.Down, s.PageUp, s.PageDown, s.Left, s.Right},
		{v.keys.Run, v.keys.Guided, v.keys.Solve, v.keys.Hosts, v.keys.Params, v.keys.Back}}
}

func (v *labsView) Update(msg tea.Msg) (Component, tea.Cmd) {
	switch msg := msg.(type) {
	case streamMsg[app.LabUpdate]:
		if !v.stream.current(msg) {
			return v, nil
		}
		for _, u := range msg.items {
			v.apply(u)
			if u.Record != nil && v.running {
				// The record is the run's last word (cleanup is in it):
				// the run is over now, not when its channel's close
				// comes, a frame later on a busy machine.
				v.running, v.ended = false, v.now()
			}
		}
		if msg.closed {
			if v.running {
				v.running, v.ended = false, v.now()
			}
			return v, recordsChanged // the run's record is written
		}
		return v, v.stream.wait()
	case labTickMsg:
		if msg.run == v.stream.id && v.running {
			return v, v.tick()
		}
	case tea.KeyMsg:
		if v.setup.typing() {
			return v, v.setup.update(msg)
		}
		return v, v.handleKey(msg)
	case tea.MouseMsg:
		if v.active != nil {
			v.scroll.handle(msg, v.keys.Scroll, v.runBody(), v.width, v.bodyHeight())
		} else {
			v.listScroll.handle(msg, v.keys.Scroll, v.listLines(), v.width, v.height)
		}
	}
	return v, nil
}

func (v *labsView) apply(u app.LabUpdate) {
	switch {
	case u.Guide != nil:
		v.pending = u.Guide
	case u.Record != nil:
		v.rec, v.dir, v.err, v.pending = u.Record, u.Dir, u.Err, nil
		for _, h := range u.Record.Hosts {
			v.scores[h.Host] = h.Scores
		}
	case u.Err != "": // the run did not start
		v.err = u.Err
	case u.Event != nil:
		ev := u.Event
		switch ev.Kind {
		case labs.StepStarted:
			v.phase[ev.Host] = ev.Phase
			if ev.Step != nil {
				v.current[ev.Host] = ev.Phase + " " + ev.Step.ID
			}
		case labs.StepFinished:
			delete(v.current, ev.Host)
			s := ev.Step
			out := s.Outcome()
			k := ev.Phase + " " + s.ID + ": " + out
			for i := range v.log {
				if v.log[i].key == k {
					v.log[i].hosts = append(v.log[i].hosts, ev.Host)
					return
				}
			}
			v.log = append(v.log, logEntry{key: k, hosts: []string{ev.Host}})
		case labs.Sampled:
			if ev.Sample != nil {
				v.samples[ev.Host] = v.samples[ev.Host].add(*ev.Sample)
			}
		case labs.ScoresChanged, labs.HostFinished:
			v.scores[ev.Host] = ev.Scores
			if ev.Kind == labs.HostFinished {
				v.phase[ev.Host] = "done"
			}
		}
	}
}

// canScroll says whether a page down (down) or up moves what the tab
// shows: a run's criteria and steps, or the list.
func (v *labsView) canScroll(down bool) bool {
	switch {
	case v.setup.typing():
		return false
	case v.active != nil:
		return v.scroll.more(down, len(v.runBody()), v.bodyHeight())
	}
	return v.listScroll.more(down, len(v.listLines()), v.height)
}

func (v *labsView) handleKey(km tea.KeyMsg) tea.Cmd {
	k := v.keys
	if v.pending != nil {
		answer := labs.GuideAnswer(-1)
		switch {
		case key.Matches(km, k.Run):
			answer = labs.GuideRun
		case key.Matches(km, k.Skip):
			answer = labs.GuideSkip
		case key.Matches(km, k.Back):
			answer = labs.GuideStop
		}
		if answer >= 0 {
			v.pending.Answer(answer)
			v.pending = nil
			return nil
		}
		// The status bar offers the scroll keys here too: the step's
		// lines may be below the pane's end, or past its right edge.
		v.scroll.handle(km, k.Scroll, v.runBody(), v.width, v.bodyHeight())
		return nil
	}
	if v.active != nil {
		if v.scroll.handle(km, k.Scroll, v.runBody(), v.width, v.bodyHeight()) {
			return nil
		}
		if key.Matches(km, k.Back) {
			if v.running {
				v.stream.stop() // cleanup still runs; the record says interrupted
				return nil
			}
			v.active = nil
		}
		return nil
	}
	if listScrolls(km, k.Scroll) && v.listScroll.handle(km, k.Scroll, v.listLines(), v.width, v.height) {
		return nil
	}
	sel := v.sel
	defer func() {
		if v.sel != sel {
			v.listScroll.home()
		}
	}()
	switch {
	case k.Moves(km, &v.sel, len(v.list)):
	case key.Matches(km, k.Run), key.Matches(km, k.Guided):
		if v.canRun() {
			return v.start(v.list[v.sel], key.Matches(km, k.Guided))
		}
	case key.Matches(km, k.Solve):
		if len(v.list) > 0 && v.list[v.sel].HasSolve() {
			id := v.list[v.sel].ID
			v.solve[id] = !v.solve[id]
		}
	case key.Matches(km, k.Hosts):
		if v.setup.canChoose() {
			return v.setup.editHosts()
		}
	case key.Matches(km, k.Params):
		if len(v.list) > 0 && len(v.list[v.sel].Params) > 0 {
			return v.setup.editParams(v.list[v.sel].ID, v.list[v.sel].Params)
		}
	}
	return nil
}

// selectID puts the cursor on the lab called id, if it is listed.
func (v *labsView) selectID(id string) {
	for i, l := range v.list {
		if l.ID == id {
			v.sel = i
			return
		}
	}
}

// present runs the lab whose id is run on the chosen hosts (not step by
// step), unless a lab runs already.
func (v *labsView) present(run string, _, start bool) tea.Cmd {
	for i, l := range v.list {
		if l.ID != run {
			continue
		}
		v.sel = i
		v.scroll.home()
		switch {
		case v.running:
		case !start && v.active == nil && v.rec != nil && v.rec.Lab == run:
			v.active = l // the step's run, put away with esc: its record is kept
		case (start || v.active == nil) && v.runner != nil && v.setup.hostCount() > 0:
			return v.start(l, false)
		}
	}
	return nil
}

func (v *labsView) start(l *labs.Lab, guided bool) tea.Cmd {
	v.active, v.running, v.started, v.rec, v.dir, v.err, v.log = l, true, v.now(), nil, "", "", nil
	v.phase, v.scores, v.samples, v.guided, v.pending = map[string]string{}, map[string][]labs.Score{}, map[string]sampled{}, guided, nil
	v.current = map[string]string{}
	v.names = v.setup.names()
	v.scroll.home()
	o := app.LabRunOptions{Params: v.setup.values(l.ID, l.Params), Solve: v.solve[l.ID]}
	abandonCtx, abandon := context.WithCancel(context.WithoutCancel(v.base))
	v.abandon, o.Abandon = abandon, abandonCtx
	runner, hosts := v.runner, v.setup.indices()
	cmd := v.stream.start(v.base, 256, func(ctx context.Context, ch chan<- app.LabUpdate) {
		if guided {
			o.Guide = app.GuideOver(ch)
		}
		runner.RunLab(ctx, l, hosts, o, ch)
	})
	return tea.Batch(cmd, v.tick())
}

func (v *labsView) tick() tea.Cmd {
	run := v.stream.id
	return tea.Tick(time.Second, func(time.Time) tea.Msg { return labTickMsg{run: run} })
}

// timer is "elapsed of estimate" for the running (or finished) lab.
func (v *labsView) timer() string {
	end := v.now()
	if !v.running && !v.ended.IsZero() {
		end = v.ended
	}
	el := end.Sub(v.started).Round(time.Second)
	est := time.Duration(v.active.EstimateMinutes) * time.Minute
	s := fmt.Sprintf("%s of about %d min", el, v.active.EstimateMinutes)
	if !v.running && !v.ended.IsZero() {
		s = fmt.Sprintf("took %s (about %d min estimated)", el, v.active.EstimateMinutes)
	}
	if el > est {
		s += " (over the estimate)"
	}
	return s
}

func (v *labsView) View() string {
	if v.active == nil {
		return v.listView()
	}
	head := v.runHead()
	return strings.Join(append(head, v.scroll.render(v.runBody(), v.width, v.bodyHeight(), v.styles)...), "\n")
}

// bodyHeight is the room under a run's head lines.
func (v *labsView) bodyHeight() int { return max(1, v.height-len(v.runHead())) }

// runHead is a run's title and where it stands; they stay in view while
// the rest scrolls.
func (v *labsView) runHead() []string {
	st := v.styles
	l := v.active
	state := "running"
	switch {
	case v.rec != nil && v.rec.Interrupted:
		state = "interrupted: cleanup ran, the record is marked incomplete"
	case v.rec != nil && v.rec.NotRun != "":
		state = "NOT RUN: no step ran (" + v.rec.NotRun + ")"
	case v.rec != nil:
		state = v.rec.Verdict() // PASSED, FAILED, INCOMPLETE: as gpulab lab run says it
	case !v.running && v.err != "": // refused before any host (a lab that writes the host, on read-only nodes)
		state = "NOT RUN: " + v.err
	case !v.running:
		state = "ended"
	case v.pending != nil: // the step it waits at, not the phase the hosts left
		g := v.pending.Step
		state = fmt.Sprintf("waiting for you at step %d/%d (%s · %s)", g.N, g.Of, g.Phase, g.Step.ID)
	}
	if v.solve[l.ID] {
		state += " · fast-forward (solve)"
	}
	if v.guided {
		state += " · step by step"
	}
	title := st.CardTitle.Render(l.ID+": "+l.Name) + st.CardMuted.Render("  on "+inventory.FoldNames(v.names)) + hostBadge(st, v.simulated, false)
	// The verdict says why ("FAILED: nvlink-mesh (critical) FAIL on
	// gpu002"): at 80 columns it goes on more lines, never past the edge.
	return append(wrap(title, v.width-1), wrap(st.CardMuted.Render(v.timer()+" · "+v.phases())+"  "+st.CardLabel.Render(state), v.width-1)...)
}

// runBody is a run's samples, the step it waits at, its criteria (each
// whole: the measured value before the expression) and its steps, host
// names masked.
func (v *labsView) runBody() []string {
	st := v.styles
	var lines []string
	if line := v.sampleLine(); line != "" {
		lines = append(lines, wrap(st.CardMuted.Render(line), v.width-2)...)
		lines = append(lines, v.sparkLines()...)
	}
	lines = append(lines, v.guideLines()...)
	lines = append(lines, "", st.CardLabel.Render("Criteria"))
	for _, g := range v.checklist() {
		mark := map[labs.Status]string{"PASS": "✓", "FAIL": "✗", "WARN": "!", "UNKNOWN": "?", "SKIPPED": "-", labs.Pending: "…"}[g.Status]
		line := statusStyle(g.Status, st).Render(" "+mark) + " " + drawLine(st, render.Score(g), v.simulated && g.Status != labs.Pending)
		lines = append(lines, hanging(line, v.width-1, 11)...)
	}
	lines = append(lines, "", st.CardLabel.Render("Steps"))
	for _, e := range v.log {
		lines = append(lines, "  "+inventory.FoldNames(e.hosts)+hostBadge(st, v.simulated, false)+"  "+e.key)
	}
	lines = append(lines, v.runningSteps()...)
	if v.dir != "" {
		lines = append(lines, "")
		for _, l := range wrap("record: "+v.dir+"/record.md", max(20, v.width-2)) { // a path is long at 80 columns
			lines = append(lines, st.CardMuted.Render(l))
		}
	}
	if v.err != "" {
		lines = append(lines, st.Error.Render(v.err))
	}
	return v.mask.lines(lines)
}

// runningSteps are the steps hosts run now, hosts on the same step
// folded: the Steps list showed only the finished ones while a long step
// ran.
func (v *labsView) runningSteps() []string {
	byStep := map[string][]string{}
	for h, step := range v.current {
		byStep[step] = append(byStep[step], h)
	}
	var out []string
	for _, step := range slices.Sorted(maps.Keys(byStep)) {
		out = append(out, "  "+inventory.FoldNames(byStep[step])+hostBadge(v.styles, v.simulated, false)+"  "+step+": "+v.styles.Hint.Render("running…"))
	}
	return out
}

// guideLines are the step a guided run waits at: what it runs and
// measures, and the keys that answer.
func (v *labsView) guideLines() []string {
	g := v.pending
	if g == nil {
		return nil
	}
	st := v.styles
	title := g.Step.Step.Title
	if title == "" {
		title = g.Step.Step.ID
	}
	lines := []string{"", st.CardLabel.Render(fmt.Sprintf("Next: step %d/%d · %s · %s", g.Step.N, g.Step.Of, g.Step.Phase, g.Step.Step.ID)) + " " + title}
	lines = append(lines, wrap("  $ "+g.Step.Command, v.width-2)...)
	if len(g.Step.Measures) > 0 {
		what := "  measures " + strings.Join(g.Step.Measures, ", ")
		if len(g.Step.Criteria) > 0 {
			what += " for " + strings.Join(g.Step.Criteria, ", ")
		}
		lines = append(lines, st.CardMuted.Render(what))
	}
	return append(lines, st.Hint.Render("  enter runs it · s skips it · esc stops here (cleanup runs)"))
}

// sampleLine sums up the probe's samples: how many, and the latest on the
// busiest host (its busiest GPU's utilisation, memory in use).
func (v *labsView) sampleLine() string {
	total, hosts := 0, make([]string, 0, len(v.samples))
	for h, s := range v.samples {
		total += s.n
		hosts = append(hosts, h)
	}
	if total == 0 {
		return ""
	}
	sort.Strings(hosts)
	h := hosts[0]
	last := v.samples[h].last
	var util uint32
	var mem uint64
	for _, g := range last.GPUs {
		if g.UtilPct != nil {
			util = max(util, *g.UtilPct)
		}
		if g.MemUsedMiB != nil {
			mem += *g.MemUsedMiB
		}
	}
	return fmt.Sprintf("probe: %d samples on %s; latest on %s: busiest GPU %d%%, %.1f GiB in use", total, inventory.FoldNames(hosts), h, util, float64(mem)/1024)
}

// add counts a sample and keeps its GPUs' utilisation.
func (s sampled) add(smp labs.Sample) sampled {
	util := make(map[int][]float64, len(smp.GPUs))
	mem := make(map[int][]float64, len(smp.GPUs))
	keep := func(old []float64, v float64) []float64 {
		hist := append(append([]float64(nil), old...), v)
		return hist[max(0, len(hist)-sparkKeep):]
	}
	for _, g := range smp.GPUs {
		if g.UtilPct != nil {
			util[g.Index] = keep(s.util[g.Index], float64(*g.UtilPct))
		}
		if g.MemUsedMiB != nil && g.MemTotalMiB != nil && *g.MemTotalMiB > 0 {
			mem[g.Index] = keep(s.mem[g.Index], 100*float64(*g.MemUsedMiB)/float64(*g.MemTotalMiB))
		}
	}
	return sampled{n: s.n + 1, last: smp, util: util, mem: mem}
}

// sparkLines draw the probe's latest samples. With one host sampled, each
// GPU's utilisation and memory over them: "GPU0 ▁▃▇█ 97%  mem ▂▂▅▅ 81%".
// With several, a line per host, a short utilisation sparkline per GPU,
// so that an idle GPU in a busy run shows at a glance.
func (v *labsView) sparkLines() []string {
	hosts := make([]string, 0, len(v.samples))
	for h, s := range v.samples {
		if len(s.util) > 0 {
			hosts = append(hosts, h)
		}
	}
	if len(hosts) == 0 {
		return nil
	}
	sort.Strings(hosts)
	st := v.styles
	if len(hosts) > 1 {
		return v.hostSparks(hosts)
	}
	s := v.samples[hosts[0]]
	out := []string{st.CardMuted.Render("  " + visible.String(hosts[0]) + ", latest samples (▁ idle … █ busy):")}
	w := max(8, min(sparkKeep, (v.width-34)/2))
	for _, i := range sortedGPUs(s.util) {
		u := s.util[i]
		line := fmt.Sprintf("  GPU%-2d %s %3.0f%%", i, st.CardLabel.Render(sparkline(u, w)), u[len(u)-1])
		if m := s.mem[i]; len(m) > 0 {
			line += fmt.Sprintf("  mem %s %3.0f%%", st.CardLabel.Render(sparkline(m, w)), m[len(m)-1])
		}
		out = append(out, line)
	}
	return out
}

// hostSparks is a line per host, hosts whose lines read the same folded
// under their node set: its GPUs' utilisation, each a short sparkline of
// the latest samples; maxSparkHosts lines at most, the rest counted.
func (v *labsView) hostSparks(hosts []string) []string {
	st := v.styles
	gpus := 0
	for _, h := range hosts {
		gpus = max(gpus, len(v.samples[h].util))
	}
	w := max(3, min(12, (v.width-24)/max(1, gpus)-1))
	var order []string
	same := map[string][]string{}
	for _, h := range hosts {
		s := v.samples[h]
		parts := make([]string, 0, len(s.util))
		for _, i := range sortedGPUs(s.util) {
			parts = append(parts, sparkline(s.util[i], w))
		}
		line := strings.Join(parts, " ")
		if _, ok := same[line]; !ok {
			order = append(order, line)
		}
		same[line] = append(same[line], h)
	}
	out := []string{st.CardMuted.Render("  utilisation per GPU, latest samples (▁ idle … █ busy):")}
	for i, line := range order {
		if i == maxSparkHosts {
			out = append(out, st.Hint.Render(fmt.Sprintf("  … %d more hosts read otherwise", len(order)-i)))
			break
		}
		out = append(out, fmt.Sprintf("  %s %s", st.CardLabel.Render(line), visible.String(inventory.FoldNames(same[line]))))
	}
	return out
}

// maxSparkHosts is how many lines of hosts' sparklines a run shows.
const maxSparkHosts = 4

func sortedGPUs(m map[int][]float64) []int {
	gpus := make([]int, 0, len(m))
	for i := range m {
		gpus = append(gpus, i)
	}
	sort.Ints(gpus)
	return gpus
}

// phases says where the hosts are: "run: gpu[01-03] · done: gpu04".
func (v *labsView) phases() string {
	by := map[string][]string{}
	for h, p := range v.phase {
		by[p] = append(by[p], h)
	}
	var keys []string
	for p := range by {
		keys = append(keys, p)
	}
	sort.Strings(keys)
	var parts []string
	for _, p := range keys {
		parts = append(parts, p+": "+inventory.FoldNames(by[p]))
	}
	if len(parts) == 0 {
		return "connecting"
	}
	return strings.Join(parts, " · ")
}

// checklist folds the hosts' latest scores per criterion; before any score
// arrives every criterion is PENDING.
func (v *labsView) checklist() []labs.ScoreGroup {
	var hosts []labs.HostRecord
	for h, sc := range v.scores {
		hosts = append(hosts, labs.HostRecord{Host: h, Scores: sc})
	}
	sort.Slice(hosts, func(i, j int) bool { return inventory.CompareNames(hosts[i].Host, hosts[j].Host) < 0 })
	if len(hosts) == 0 {
		var out []labs.ScoreGroup
		for _, c := range v.active.Criteria {
			out = append(out, labs.ScoreGroup{Score: labs.Score{ID: c.ID, Impact: c.Impact, Status: labs.Pending, Summary: "waiting for its metrics"}, Hosts: "all"})
		}
		for _, c := range v.active.Counter {
			out = append(out, labs.ScoreGroup{Score: labs.Score{ID: c.ID, Impact: c.Impact, Counter: true, Status: labs.Pending, Summary: "waiting for its metrics"}, Hosts: "all"})
		}
		return out
	}
	return labs.FoldScores(hosts)
}

func (v *labsView) listView() string {
	return strings.Join(v.listScroll.render(v.listLines(), v.width, v.height, v.styles), "\n")
}

// listLines are the labs and the selected one's goal and criteria, host
// names masked.
func (v *labsView) listLines() []string {
	st := v.styles
	lines := v.setup.head(st, []string{st.CardTitle.Render("Labs") + st.CardMuted.Render("  scenario · criteria scored live · lab record"), ""},
		v.runner == nil || len(v.runner.Hosts()) == 0, "No hosts: pass --inventory FILE to run labs from here (or gpulab lab run ID -H EXPR).", v.paramsKey(), v.simulated)
	for i, l := range v.list {
		marker := "  "
		if i == v.sel {
			marker = "▶ "
		}
		row := marker + st.CardLabel.Render(fmt.Sprintf("%-20s", l.ID)) + st.CardMuted.Render(fmt.Sprintf(" %-17s %3d min  ", l.Maturity, l.EstimateMinutes))
		lines = append(lines, row+text.Cut(l.Name, max(0, v.width-lipgloss.Width(row)))) // whole under the list when selected
	}
	if v.sel < len(v.list) {
		l := v.list[v.sel]
		lines = append(lines, "")
		if lipgloss.Width(l.Name) > v.width-50 { // its row cut the name: here it is whole
			lines = append(lines, wrap(st.CardTitle.Render(l.Name), v.width-2)...)
		}
		// A lab file's texts are refused with a control character in them
		// (lab check); escaped here too, as anything read from a file.
		lines = append(lines, wrap(st.CardLabel.Render("Goal: ")+visible.Text(l.Goal), v.width-2)...)
		for _, c := range l.Criteria {
			lines = append(lines, hanging(st.CardMuted.Render("  ["+visible.String(c.Impact)+"] ")+visible.Text(c.Description), v.width-1, 4)...)
		}
		for _, c := range l.Counter {
			lines = append(lines, hanging(st.CardMuted.Render("  [counterexample] ")+visible.Text(c.Description), v.width-1, 4)...)
		}
		if len(l.Params) > 0 {
			lines = append(lines, "", v.setup.paramLine(st, l.ID, l.Params, v.keys.Params.Help().Key))
		}
		if l.HasSolve() {
			state := "off"
			if v.solve[l.ID] {
				state = "on: its demo fast-forward runs instead of the full steps"
			}
			lines = append(lines, st.CardMuted.Render("fast-forward (f): "+state))
		}
		if v.canRun() {
			lines = append(lines, st.Hint.Render("enter runs the lab · t runs it step by step"))
		}
	}
	return v.mask.lines(lines)
}

// paramsKey is the key that sets the selected item's parameters, "" when
// it has none (the guidance offers no key that does nothing).
func (v *labsView) paramsKey() string {
	if len(v.list) > 0 && len(v.list[v.sel].Params) > 0 {
		return v.keys.Params.Help().Key
	}
	return ""
}

// presenting gives setting parameters to P: in presenter mode p steps
// the walkthrough back.
func (v *labsView) presenting() { yieldP(&v.keys.Params) }
