// Package tui is gpulab's terminal workbench: a root model that routes to one
// component per view (Map, Matrix, Fleet, Runbooks, Labs, Results, Cluster)
// and draws the header with tabs, the status bar and the help around it.
//
// Views are pure: they draw from their state and the size SetSize gave them.
// The package opens no connections, and reads files only off the UI
// goroutine, in commands (tea.Cmd) whose results come back as messages:
// the Results tab's records (labs.ListRecords, labs.ReadMarkdown). Its
// other data arrives through Options.
package tui

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/internal/visible"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/labs"
	"github.com/gpulab/gpulab/landscape"
	"github.com/gpulab/gpulab/runbooks"
)

// Options is what the workbench shows.
type Options struct {
	Catalog   *landscape.Catalog
	Inventory *inventory.Inventory
	// Fleet runs commands on the inventory's hosts; nil shows a hint.
	Fleet FleetRunner
	// Runbooks are listed in the Runbooks tab; Runner runs them (nil: the
	// tab lists them and says how to run them).
	Runbooks      []runbooks.Runbook
	RunbookRunner RunbookRunner
	// Labs are listed in the Labs tab; LabRunner runs them (nil: no hosts).
	Labs      []*labs.Lab
	LabRunner LabRunner
	// Results is the results directory the Results tab reads.
	Results string
	// ResultsGone says the records go with the workbench (the demo's,
	// in its temporary directory): the tab says so, and how to keep them.
	ResultsGone bool
	// Version is shown in the header.
	Version string
	Styles  Styles
	// Context is the workbench's lifetime (nil: Background): every run
	// descends from it, and when it ends (SIGTERM, SIGHUP) the workbench
	// stops its runs, waits for their cleanup and quits.
	Context context.Context
	// Simulated says the hosts are a simulated fleet: the header carries a
	// SIMULATED badge and every host a SIM one.
	Simulated bool
	// Present, when not empty, is a presenter's walkthrough: n and p step
	// through it, a caption says what to look at, and the keys that run
	// arbitrary commands (the Fleet's :) are disabled.
	Present []PresentStep
	// KillHost, when set (gpulab demo, not presenting), cuts a simulated
	// host off mid-run: Fleet's K.
	KillHost func(name string) error
	// Mask hides the hosts' names and addresses wherever they are drawn:
	// the i-th host reads host-i, an address reads "masked".
	Mask bool
	// Clusters are the Kubernetes contexts the Cluster tab follows, the
	// first shown first; none: the tab says how to name them.
	Clusters []ClusterSource
	// SimFleet, when set (gpulab demo), is the simulated fleet's own
	// process: the status bar says when it stopped, R starts it again.
	SimFleet SimFleet
}

// Model is the root model. It implements tea.Model.
type Model struct {
	views    []Component
	active   int
	keys     GlobalKeys
	help     help.Model
	showHelp bool
	// helpAt is the help panel's position: on a short terminal it scrolls.
	helpAt   scroller
	styles   Styles
	width    int
	height   int
	version  string
	lifetime context.Context
	// simulated draws the SIMULATED badge; present is the walkthrough (nil
	// outside presenter mode); mask hides host names and addresses (nil:
	// nothing hidden).
	simulated bool
	present   *presenter
	mask      *masker
	// quitting counts the quit requests made while runs were in flight:
	// 1 stops the runs and waits for their cleanup, 2 abandons cleanup,
	// 3 quits at once.
	quitting int
	// sim is the demo's simulated fleet (nil: none).
	sim *simFleetState
	// askQuit is the key (q, ctrl+c) that asked to quit while a run was
	// going: the status bar asks, either quit key again quits, any other
	// key stays ("": not asking). A q typed for a command never meant
	// to stop a run an hour in.
	askQuit string
}

// The runbook and the lab the cursor starts on when the fleet is
// simulated: both run on simulated DGX A100 hosts alone.
const (
	simulatedRunbook = "topology"
	simulatedLab     = "topology-sanity"
)

// runHolder is a view that may have a run in flight: the workbench asks it
// before quitting.
type runHolder interface {
	// Running is how many hosts its run in flight works on (0: none).
	Running() int
	// StopRun cancels the run; cleanup goes on unless abandon.
	StopRun(abandon bool)
}

// lifetimeEndedMsg says the workbench's context ended (SIGTERM, SIGHUP).
type lifetimeEndedMsg struct{}

// New builds the workbench on the Map.
func New(opts Options) Model {
	st := opts.Styles
	inv := opts.Inventory
	if inv == nil {
		inv = inventory.Empty()
	}
	h := help.New()
	h.ShowAll = true
	base := opts.Context
	if base == nil {
		base = context.Background()
	}
	var mask *masker
	if opts.Mask {
		mask = newMasker(maskedHosts(opts, inv))
	}
	var fleet Component = newHintView("Fleet", fleetHint(inv), st)
	if opts.Fleet != nil {
		fv := newFleetView(opts.Fleet, st)
		fv.base, fv.simulated, fv.mask = base, opts.Simulated, mask
		if len(opts.Present) == 0 {
			fv.killHost = opts.KillHost
			fv.fencer, _ = opts.Fleet.(Fencer) // the workbench's; presenter mode acts on nothing
		}
		if len(opts.Present) > 0 {
			fv.noCommands = "presenter mode: running commands is off (gpulab demo without --present allows it)"
		}
		fleet = fv
	}
	rbv := newRunbooksView(opts.RunbookRunner, inv, opts.Runbooks, st)
	rbv.base, rbv.simulated, rbv.mask = base, opts.Simulated, mask
	if len(opts.Present) == 0 {
		rbv.fencer, _ = opts.RunbookRunner.(Fencer) // the workbench's; presenter mode acts on nothing
	}
	lv := newLabsView(opts.LabRunner, inv, opts.Labs, st)
	lv.base, lv.simulated, lv.mask = base, opts.Simulated, mask
	if opts.Simulated || len(opts.Clusters) == 0 {
		// The first enter runs what works on the hosts alone (and shows
		// the simulated fleet's sick one), not a runbook that reads a
		// cluster none is configured for (the first, cluster-overview)
		// or a lab that needs a vLLM server (exclusive-baseline).
		rbv.selectID(simulatedRunbook)
		lv.selectID(simulatedLab)
	}
	rv := newResultsView(opts.Results, st)
	rv.gone = opts.ResultsGone
	rv.mask = mask
	cv := clusterTab(opts, inv, st, mask)
	m := Model{
		keys:      DefaultGlobalKeys(),
		help:      h,
		styles:    st,
		version:   opts.Version,
		lifetime:  base,
		simulated: opts.Simulated,
		mask:      mask,
		sim:       newSimFleetState(opts.SimFleet),
		views: []Component{
			newMapView(opts.Catalog, st),
			newMatrixView(opts.Catalog, st),
			fleet,
			rbv,
			lv,
			rv,
			cv,
		},
	}
	if len(opts.Present) > 0 {
		m.presenting(opts.Present, st)
	}
	m.SetSize(80, 24)
	return m
}

// presenting starts the walkthrough: help in the presenter's styles, and
// every tab's own p on P, since p steps back.
func (m *Model) presenting(steps []PresentStep, st Styles) {
	m.present = newPresenter(steps)
	// The help panel's own greys would wash out on a projector.
	m.help.Styles.FullKey, m.help.Styles.FullDesc, m.help.Styles.FullSeparator = st.StatusKey, st.Status, st.Status
	m.help.Styles.ShortKey, m.help.Styles.ShortDesc, m.help.Styles.ShortSeparator = st.StatusKey, st.Status, st.Status
	m.help.Styles.Ellipsis = st.Status
	for _, v := range m.views {
		if pv, ok := v.(interface{ presenting() }); ok {
			pv.presenting()
		}
	}
}

// maskedHosts are the hosts whose names and addresses a mask hides: the
// fleet's, in its order, then the inventory's others.
func maskedHosts(opts Options, inv *inventory.Inventory) []app.FleetHost {
	var hs []app.FleetHost
	for _, r := range []hostLister{opts.Fleet, opts.RunbookRunner, opts.LabRunner} {
		if r != nil {
			hs = append(hs, r.Hosts()...)
		}
	}
	for _, h := range inv.Hosts {
		hs = append(hs, app.FleetHost{Name: h.Name, Address: h.Address})
	}
	return hs
}

func fleetHint(inv *inventory.Inventory) string {
	switch {
	case len(inv.Hosts) == 0 && inv.File != "":
		return "No hosts in " + visible.String(inv.File) + ": add [[host]] tables to it (see inventory.toml), or open gpulab -H EXPR on hosts ~/.ssh/config knows."
	case len(inv.Hosts) == 0:
		return "No hosts: pass --inventory FILE (see inventory.toml) to list your fleet, or gpulab -H EXPR for hosts ~/.ssh/config knows."
	}
	return "Inventory " + inv.File + ": " + inventory.FoldNames(inventory.Names(inv.Hosts)) + "."
}

func clusterHint(inv *inventory.Inventory) string {
	if len(inv.Kube) == 0 {
		return "No Kubernetes context in the inventory ([[kube]] tables name kubeconfig and context)."
	}
	names := make([]string, len(inv.Kube))
	for i, k := range inv.Kube {
		names[i] = k.Name
	}
	return "Kubernetes contexts in the inventory: " + strings.Join(names, ", ") + ": not connected (the workbench connects to them when gpulab opens it)."
}

// Init implements tea.Model.
func (m Model) Init() tea.Cmd {
	cmds := make([]tea.Cmd, 0, len(m.views)+1)
	for _, v := range m.views {
		cmds = append(cmds, v.Init())
	}
	if done := m.lifetime.Done(); done != nil {
		cmds = append(cmds, func() tea.Msg { <-done; return lifetimeEndedMsg{} })
	}
	cmds = append(cmds, m.sim.watch())
	return tea.Batch(cmds...)
}

// clusterTab is the Cluster tab: its clusters, and F and R on a node
// that is a Fleet host (not in presenter mode, which acts on nothing); a
// hint where there is no cluster.
func clusterTab(opts Options, inv *inventory.Inventory, st Styles, mask *masker) Component {
	if len(opts.Clusters) == 0 {
		return newHintView("Cluster", clusterHint(inv), st)
	}
	c := newClusterView(opts.Clusters, st)
	c.mask = mask
	if f, ok := opts.Fleet.(Fencer); ok && len(opts.Present) == 0 {
		hosts := opts.Fleet.Hosts
		c.fencer = f
		c.hostIndex = func(node string) (int, bool) { // a host is the node of its name, as the reconciliation takes it
			i := slices.IndexFunc(hosts(), func(h app.FleetHost) bool { return h.Name == node })
			return i, i >= 0
		}
	}
	return c
}

// running is how many hosts the views' runs in flight work on.
func (m Model) running() int {
	n := 0
	for _, v := range m.views {
		if r, ok := v.(runHolder); ok {
			n += r.Running()
		}
	}
	return n
}

// quit is a request to quit: at once when nothing runs; otherwise the first
// stops the runs and waits for their cleanup, the second abandons cleanup
// (the record lists what was left), the third quits at once.
func (m *Model) quit() tea.Cmd {
	if m.running() == 0 || m.quitting >= 2 {
		return tea.Quit
	}
	m.quitting++
	for _, v := range m.views {
		if r, ok := v.(runHolder); ok {
			r.StopRun(m.quitting == 2)
		}
	}
	return nil
}

// Update implements tea.Model.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.SetSize(msg.Width, msg.Height)
		return m, nil
	case tea.KeyMsg:
		// Keys typed faster than the terminal is read arrive as one message
		// ("fff"); outside a text field each is a command of its own.
		if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 && !msg.Paste && !m.views[m.active].Capturing() {
			var cmds []tea.Cmd
			var next tea.Model = m
			for i, r := range msg.Runes {
				k := msg
				k.Runes = []rune{r}
				var cmd tea.Cmd
				next, cmd = next.Update(k)
				cmds = append(cmds, cmd)
				if nm := next.(Model); nm.views[nm.active].Capturing() {
					// The rest is text for the field this key opened.
					if rest := msg.Runes[i+1:]; len(rest) > 0 {
						k.Runes = rest
						next, cmd = next.Update(k)
						cmds = append(cmds, cmd)
					}
					break
				}
			}
			return next, tea.Batch(cmds...)
		}
		if cmd, handled := m.handleKey(msg); handled {
			return m, cmd
		}
		return m.updateActive(msg)
	}
	if _, ok := msg.(lifetimeEndedMsg); ok {
		return m, m.quit()
	}
	if cmd, ok := m.sim.update(m.lifetime, msg); ok {
		return m, cmd
	}
	if _, ok := msg.(tea.MouseMsg); ok { // the wheel scrolls what is shown
		if m.showHelp && m.quitting == 0 {
			m.scrollHelp(msg)
		}
		if m.showHelp || m.quitting > 0 {
			return m, nil
		}
		return m.updateActive(msg)
	}
	// Other messages (results of a view's commands) go to every view: a
	// run started in the Fleet goes on while another tab is shown.
	var cmds []tea.Cmd
	for i, v := range m.views {
		nv, cmd := v.Update(msg)
		m.views[i] = nv
		cmds = append(cmds, cmd)
	}
	if m.quitting > 0 && m.running() == 0 {
		return m, tea.Quit // the runs' cleanup is done
	}
	return m, tea.Batch(cmds...)
}

// requestQuit is a quit key: it quits (m.quit) at once when nothing runs
// or cleanup is already under way; while a run goes, it first asks.
func (m *Model) requestQuit(k tea.KeyMsg) tea.Cmd {
	if m.quitting > 0 || m.running() == 0 {
		return m.quit()
	}
	m.askQuit = k.String()
	return nil
}

func (m *Model) handleKey(msg tea.KeyMsg) (tea.Cmd, bool) {
	if m.askQuit != "" {
		m.askQuit = ""
		if key.Matches(msg, m.keys.Quit) {
			return m.quit(), true
		}
		return nil, true // any other key stays, and does nothing else
	}
	if msg.Type == tea.KeyCtrlC || m.quitting > 0 && key.Matches(msg, m.keys.Quit) {
		return m.requestQuit(msg), true
	}
	if m.quitting > 0 {
		return nil, true // while cleanup runs, only quitting again is heard
	}
	if m.views[m.active].Capturing() {
		return nil, false
	}
	if m.present != nil {
		if cmd, ok := m.handlePresentKey(msg); ok {
			return cmd, true
		}
	}
	if cmd, ok := m.sim.key(m.lifetime, msg); ok {
		return cmd, true
	}
	switch {
	case key.Matches(msg, m.keys.Quit):
		return m.requestQuit(msg), true
	case key.Matches(msg, m.keys.Help):
		m.showHelp = !m.showHelp
		m.helpAt.home()
		return nil, true
	case m.showHelp && msg.Type == tea.KeyEsc:
		m.showHelp = false
		return nil, true
	case m.showHelp && m.scrollHelp(msg):
		return nil, true
	case key.Matches(msg, m.keys.NextTab):
		m.selectTab(m.active + 1)
		return nil, true
	case key.Matches(msg, m.keys.PrevTab):
		m.selectTab(m.active - 1)
		return nil, true
	case key.Matches(msg, m.keys.GoTab):
		m.selectTab(int(msg.Runes[0] - '1'))
		return nil, true
	}
	return nil, false
}

func (m *Model) selectTab(i int) {
	n := len(m.views)
	m.active = ((i % n) + n) % n
	m.showHelp = false
}

func (m Model) updateActive(msg tea.Msg) (tea.Model, tea.Cmd) {
	v, cmd := m.views[m.active].Update(msg)
	m.views[m.active] = v
	return m, cmd
}

// SetSize lays the workbench out for a terminal of the given size.
func (m *Model) SetSize(width, height int) {
	m.width, m.height = max(width, 20), max(height, 6)
	m.help.Width = m.width - 4 // the help panel's padding
	for _, v := range m.views {
		v.SetSize(m.width, m.bodyHeight())
	}
}

// bodyHeight is what is left for a view: header and status take a line
// each, a presenter's caption one more with its spacing around it.
func (m Model) bodyHeight() int {
	if m.present != nil {
		return max(1, m.height-3-2*m.styles.Spacing)
	}
	return m.height - 2
}

// Active returns the title of the active view.
func (m Model) Active() string { return m.views[m.active].Title() }

// View implements tea.Model.
func (m Model) View() string {
	body := m.views[m.active].View()
	if m.showHelp {
		body = m.helpPage().view(m.styles)
	}
	if m.quitting > 0 {
		body = m.quittingView()
	}
	// Masking comes before fitting: a name a line is cut in would
	// otherwise be left half shown.
	parts := []string{m.fit(m.header(), 1)}
	if m.present != nil {
		for range m.styles.Spacing {
			parts = append(parts, m.fit("", 1))
		}
		caption := m.present.caption(m.width)
		if p := m.present; p.at >= 0 && p.steps[p.at].Tab != m.views[m.active].Title() {
			caption = p.offStep(m.views[m.active].Title())
		}
		parts = append(parts, m.fit(m.styles.Caption.Render(" "+caption+" "), 1))
		for range m.styles.Spacing {
			parts = append(parts, m.fit("", 1))
		}
	}
	parts = append(parts, m.fit(body, m.bodyHeight()), m.fit(m.statusBar(), 1))
	return lipgloss.JoinVertical(lipgloss.Left, parts...)
}

// fit masks s (when names are hidden) and fits it to the width and height.
func (m Model) fit(s string, height int) string {
	return fit(m.mask.apply(s), m.width, height)
}

// quittingView says what the workbench waits for before it quits.
func (m Model) quittingView() string {
	st := m.styles
	n := m.running()
	lines := []string{"", st.CardTitle.Render(fmt.Sprintf("Cleaning up on %s before gpulab quits", text.Plural(n, "host", "hosts")))}
	if m.quitting == 1 {
		lines = append(lines, "", "The runs were stopped; a lab's cleanup commands are running on its hosts, so that",
			"nothing it started is left behind, and a fence under way ends what it was doing. The records will say so.",
			"", st.Hint.Render("q or ctrl+c again: abandon cleanup (the record lists what was left on each host)"))
	} else {
		lines = append(lines, "", "Cleanup was abandoned: the runs are writing what was left on each host into their records.",
			"", st.Hint.Render("q or ctrl+c again: quit now"))
	}
	return strings.Join(lines, "\n")
}

// simulatedHosts is a view that learns which hosts are simulated as it
// connects to them (the Fleet).
type simulatedHosts interface{ anySimulated() bool }

// anySimulated says whether the hosts are a simulated fleet, as the
// options said or a connection showed.
func (m Model) anySimulated() bool {
	for _, v := range m.views {
		if s, ok := v.(simulatedHosts); ok && s.anySimulated() {
			return true
		}
	}
	return m.simulated
}

func (m Model) header() string {
	brand := m.styles.Brand.Render("gpulab")
	if m.anySimulated() {
		brand += " " + m.styles.Badge.Render(" SIMULATED ")
	}
	parts := []string{brand, " "}
	for i, v := range m.views {
		label := v.Title()
		if i == m.active {
			parts = append(parts, m.styles.ActiveTab.Render("["+label+"]"))
		} else {
			parts = append(parts, m.styles.Tab.Render(" "+label+" "))
		}
	}
	line := strings.Join(parts, "")
	if w := lipgloss.Width(line); w > m.width {
		// Narrow terminal: number the tabs instead of naming them all.
		line = brand + " " + m.styles.ActiveTab.Render("["+m.views[m.active].Title()+"]") +
			m.styles.Tab.Render(" "+strconv.Itoa(m.active+1)+"/"+strconv.Itoa(len(m.views))+" tab: next")
	}
	if m.version != "" {
		ver := m.styles.Status.Render(m.version)
		if gap := m.width - lipgloss.Width(line) - lipgloss.Width(ver); gap > 1 {
			line += strings.Repeat(" ", gap) + ver
		}
	}
	return line
}

func (m Model) statusBar() string {
	if m.askQuit != "" {
		// Either quit key quits the second time, whichever asked.
		return m.styles.Error.Render("a run is going: q or ctrl+c again quits (cleanup runs), any other key stays")
	}
	if down := m.sim.status(); down != "" {
		// Above what the view says: every host of the fleet is down.
		return m.styles.Error.Render(down)
	}
	v := m.views[m.active]
	left := m.styles.Status.Render(v.Status())
	keys := append(v.ShortHelp(), m.keys.Help, m.keys.Quit)
	// Where the fleet is, from every other tab, first of the hints (the
	// first screen is the Map, and nothing else there says that hosts
	// wait in tab 3): "3 Fleet: 4 hosts, 1 flagged".
	for i, fv := range m.views {
		if f, ok := fv.(*fleetView); ok && i != m.active {
			keys = append([]key.Binding{key.NewBinding(key.WithKeys(strconv.Itoa(i+1)), key.WithHelp(strconv.Itoa(i+1), f.Title()+": "+f.Brief()))}, keys...)
		}
	}
	if p := m.present; p != nil { // offered where they step: not n at the last step, not p before the first
		var step []key.Binding
		if p.at < len(p.steps)-1 {
			step = append(step, p.keys.Next)
		}
		if p.at > 0 {
			step = append(step, p.keys.Prev)
		}
		keys = append(step, keys...)
	}
	hints := make([]string, len(keys))
	for i, b := range keys {
		h := b.Help()
		hints[i] = m.styles.StatusKey.Render(h.Key) + " " + m.styles.Status.Render(h.Desc)
	}
	// Drop the view's hints from the end until they fit; help and quit stay.
	for len(hints) > 2 && lipgloss.Width(left)+2+lipgloss.Width(strings.Join(hints, "  ")) > m.width {
		hints = append(hints[:len(hints)-3], hints[len(hints)-2:]...)
	}
	right := strings.Join(hints, "  ")
	gap := max(2, m.width-lipgloss.Width(left)-lipgloss.Width(right))
	return left + strings.Repeat(" ", gap) + right
}

// helpPage is the help panel as a page in the body's room: on a short
// terminal it scrolls (arrows, page up/down, home/end, the wheel).
func (m Model) helpPage() *textPage {
	p := newTextPage(strings.Split(m.helpView(), "\n"), m.width, m.bodyHeight())
	p.s = m.helpAt
	return p
}

// scrollHelp moves the help panel for a scroll key or a wheel turn; it
// reports whether msg was one.
func (m *Model) scrollHelp(msg tea.Msg) bool {
	p := m.helpPage()
	mk := DefaultMoveKeys()
	if !p.update(msg, mk.Up, mk.Down, pageKeys()) {
		return false
	}
	m.helpAt = p.s
	return true
}

// helpBindings are the view's groups of keys and the global ones.
func (m Model) helpBindings() (view, global [][]key.Binding) {
	k := m.keys
	global = [][]key.Binding{{k.NextTab, k.PrevTab, k.GoTab}, {k.Help, k.Quit}}
	if m.present != nil {
		p := m.present.keys
		global = append([][]key.Binding{{p.Next, p.Prev, p.Down, p.Up}}, global...)
	}
	return m.views[m.active].FullHelp(), global
}

func (m Model) helpView() string {
	view, global := m.helpBindings()
	parts := []string{m.styles.CardTitle.Render("Keys: " + m.views[m.active].Title()), ""}
	if len(view) > 0 {
		parts = append(parts, m.helpColumns(view), "")
	}
	parts = append(parts, m.styles.CardTitle.Render("Everywhere"), "", m.helpColumns(global), "")
	for _, h := range []string{"esc or ? closes help. Every view has a command-line twin: gpulab --help.",
		"While a run goes, q and ctrl+c ask first: either again quits."} {
		for _, l := range wrap(h, m.help.Width) {
			parts = append(parts, m.styles.Hint.Render(l))
		}
	}
	return m.styles.HelpPanel.Render(lipgloss.JoinVertical(lipgloss.Left, parts...))
}

// helpColumns lays groups of keys out as columns, as many side by side as
// the panel's width holds and the others in rows below: a narrow terminal
// gets more rows, never a column dropped for a "…" (the help model's own
// way).
func (m Model) helpColumns(groups [][]key.Binding) string {
	h := m.help
	h.Width = 0 // each row is made to fit here
	sep := lipgloss.Width(h.FullSeparator)
	var rows []string
	var row [][]key.Binding
	used := 0
	for _, g := range groups {
		w := lipgloss.Width(h.FullHelpView([][]key.Binding{g}))
		if w == 0 {
			continue // nothing enabled
		}
		if len(row) > 0 && used+sep+w > m.help.Width {
			rows, row, used = append(rows, h.FullHelpView(row)), nil, 0
		}
		if len(row) > 0 {
			used += sep
		}
		row, used = append(row, g), used+w
	}
	if len(row) > 0 {
		rows = append(rows, h.FullHelpView(row))
	}
	return strings.Join(rows, "\n\n")
}
