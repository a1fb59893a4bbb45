package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
)

// GlobalKeys are the bindings the root model handles on every view.
type GlobalKeys struct {
	NextTab key.Binding
	PrevTab key.Binding
	GoTab   key.Binding
	Help    key.Binding
	Quit    key.Binding
}

// DefaultGlobalKeys returns the root bindings.
func DefaultGlobalKeys() GlobalKeys {
	return GlobalKeys{
		NextTab: key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next view")),
		PrevTab: key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous view")),
		GoTab:   key.NewBinding(key.WithKeys("1", "2", "3", "4", "5", "6", "7"), key.WithHelp("1-7", "go to view")),
		Help:    key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:    key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
	}
}

// MoveKeys are the selection movements shared by the Map and the Matrix.
type MoveKeys struct {
	Up, Down, Left, Right key.Binding
	PageUp, PageDown      key.Binding
	Home, End             key.Binding
	Open, Back            key.Binding
}

// Moves moves a list's cursor as km says, up, down, home or end, kept on
// one of its n rows (0 for none), and reports whether km was one of them:
// written as a case of a view's key switch, one list moves as every other
// does.
func (k MoveKeys) Moves(km tea.KeyMsg, cur *int, n int) bool {
	c := *cur
	switch {
	case key.Matches(km, k.Up):
		c--
	case key.Matches(km, k.Down):
		c++
	case key.Matches(km, k.Home):
		c = 0
	case key.Matches(km, k.End):
		c = n - 1
	default:
		return false
	}
	*cur = max(0, min(c, n-1))
	return true
}

// DefaultMoveKeys returns arrows plus vi keys.
func DefaultMoveKeys() MoveKeys {
	return MoveKeys{
		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		Left:     key.NewBinding(key.WithKeys("left", "h"), key.WithHelp("←/h", "left")),
		Right:    key.NewBinding(key.WithKeys("right", "l"), key.WithHelp("→/l", "right")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "ctrl+u"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "ctrl+d"), key.WithHelp("pgdn", "page down")),
		Home:     key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g/home", "first")),
		End:      key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G/end", "last")),
		Open:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "open card")),
		Back:     key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
	}
}

// moveHint stands for the four arrows in the status bar.
var moveHint = key.NewBinding(key.WithKeys("up", "down", "left", "right"), key.WithHelp("←↑↓→", "move"))

// MatrixKeys are the Matrix view's own bindings.
type MatrixKeys struct {
	MoveKeys
	Sort   key.Binding
	Plane  key.Binding
	Level  key.Binding
	Search key.Binding
	Clear  key.Binding
}

// moves are the up and down keys that move a cursor at i of n rows: no
// up on the first row, no down on the last (a status bar offers no key
// that does nothing).
func moves(up, down key.Binding, i, n int) []key.Binding {
	var keys []key.Binding
	if i > 0 {
		keys = append(keys, up)
	}
	if i < n-1 {
		keys = append(keys, down)
	}
	return keys
}

// DefaultMatrixKeys returns the Matrix bindings.
func DefaultMatrixKeys() MatrixKeys {
	return MatrixKeys{
		MoveKeys: DefaultMoveKeys(),
		Sort:     key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "sort by column")),
		Plane:    key.NewBinding(key.WithKeys("p", "P"), key.WithHelp("p", "filter plane")),
		Level:    key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "filter column's level")),
		Search:   key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "search")),
		Clear:    key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "clear filters")),
	}
}

// The tabs' key maps, built here and nowhere else; each tab's help lists
// its own (ShortHelp, FullHelp). Within a tab a key means one thing where
// the tab handles it: in Runbooks and Labs, h chooses hosts (the lists
// move with the arrows and j/k; h and l do not move them there).

// runTabKeys are what the run tabs, Runbooks and Labs, share: enter
// runs, h chooses hosts, p sets parameters.
type runTabKeys struct {
	MoveKeys
	Run, Hosts, Params key.Binding
}

func defaultRunTabKeys() runTabKeys {
	return runTabKeys{
		MoveKeys: DefaultMoveKeys(),
		Run:      key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "run")),
		Hosts:    key.NewBinding(key.WithKeys("h", "H"), key.WithHelp("h", "choose hosts")),
		Params:   key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "set parameters")),
	}
}

type labKeys struct {
	runTabKeys
	Guided, Solve, Skip key.Binding
	// Scroll moves a run's criteria and steps.
	Scroll ScrollKeys
}

type runbookKeys struct {
	runTabKeys
	Evidence key.Binding
	// Scroll moves the evidence pane (home and end move the cursor).
	Scroll ScrollKeys
}

type fleetKeys struct {
	MoveKeys
	Command, Cancel, Pane, Probe, Kill key.Binding
	// Scroll moves the output pane; Page moves a host's page.
	Scroll, Page ScrollKeys
}

type clusterKeys struct {
	MoveKeys
	Focus, Context key.Binding
	// WhyUp and WhyDown scroll the selected item's why and evidence (the
	// mouse wheel too).
	WhyUp, WhyDown key.Binding
}

type resultsKeys struct {
	MoveKeys
	Refresh, Baseline, Compare key.Binding
	// Page moves an open record or comparison.
	Page ScrollKeys
}

// DefaultFleetKeys are the Fleet tab's keys. The output pane holds the
// long text: page up/down, home and end scroll it; the host list pages
// with ctrl+u/d and ends with g/G.
func DefaultFleetKeys() fleetKeys {
	k := fleetKeys{
		MoveKeys: DefaultMoveKeys(),
		Command:  key.NewBinding(key.WithKeys(":", "x"), key.WithHelp(":", "run a command")),
		Cancel:   key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "cancel the run")),
		Pane:     key.NewBinding(key.WithKeys("o"), key.WithHelp("o", "output: host/folded/log")),
		Probe:    key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "probe GPUs (NVML)")),
		Kill:     key.NewBinding(key.WithKeys("K"), key.WithHelp("K", "cut the host off (simulated power loss)")),
		Scroll:   DefaultScrollKeys(),
		Page:     pageKeys(),
	}
	k.Open = key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "host's GPUs"))
	k.PageUp = key.NewBinding(key.WithKeys("ctrl+u"), key.WithHelp("ctrl+u", "hosts page up"))
	k.PageDown = key.NewBinding(key.WithKeys("ctrl+d"), key.WithHelp("ctrl+d", "hosts page down"))
	k.Home = key.NewBinding(key.WithKeys("g"), key.WithHelp("g", "first host"))
	k.End = key.NewBinding(key.WithKeys("G"), key.WithHelp("G", "last host"))
	return k
}

// DefaultRunbookKeys are the Runbooks tab's keys: enter runs, e opens the
// evidence (page up/down scroll it), h chooses hosts, p sets parameters.
func DefaultRunbookKeys() runbookKeys {
	side := DefaultScrollKeys()
	return runbookKeys{
		runTabKeys: defaultRunTabKeys(),
		Evidence:   key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "evidence")),
		Scroll: ScrollKeys{PageUp: key.NewBinding(key.WithKeys("pgup"), key.WithHelp("pgup", "evidence up")),
			PageDown: key.NewBinding(key.WithKeys("pgdown"), key.WithHelp("pgdn", "more evidence")),
			Left:     side.Left, Right: side.Right},
	}
}

// DefaultLabKeys are the Labs tab's keys: enter runs, t runs step by
// step (where s skips a step, as gpulab lab run --step takes it), f
// fast-forwards, h chooses hosts, p sets parameters. No key means two
// things: s was once both skip and parameters.
func DefaultLabKeys() labKeys {
	k := labKeys{
		runTabKeys: defaultRunTabKeys(),
		Guided:     key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "run step by step")),
		Solve:      key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "fast-forward (solve)")),
		Skip:       key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "skip the step")),
		Scroll:     DefaultScrollKeys(),
	}
	k.Scroll.PageDown.SetHelp("pgdn", "more")
	return k
}

// DefaultResultsKeys are the Results tab's keys: enter opens a record, b
// marks the baseline, c compares with it, r reloads.
func DefaultResultsKeys() resultsKeys {
	k := resultsKeys{
		MoveKeys: DefaultMoveKeys(),
		Refresh:  key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "reload")),
		Baseline: key.NewBinding(key.WithKeys("b"), key.WithHelp("b", "mark baseline")),
		Compare:  key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "compare with baseline")),
		Page:     pageKeys(),
	}
	k.Open.SetHelp("enter", "open record")
	return k
}

// DefaultClusterKeys are the Cluster tab's keys: ←/→ between the nodes
// and what waits, c the next context, [ and ] scroll the why.
func DefaultClusterKeys() clusterKeys {
	return clusterKeys{
		MoveKeys: DefaultMoveKeys(),
		Focus:    key.NewBinding(key.WithKeys("left", "right", "h", "l"), key.WithHelp("←/→", "nodes / waiting")),
		Context:  key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "next context")),
		WhyUp:    key.NewBinding(key.WithKeys("["), key.WithHelp("[/]", "scroll the why")),
		WhyDown:  key.NewBinding(key.WithKeys("]"), key.WithHelp("]", "scroll the why")),
	}
}

// yieldP gives a binding on p to P, keeping what its help says: in
// presenter mode p steps the walkthrough back, and a tab's own p (probe,
// set parameters, filter plane) would otherwise never be heard while its
// help still offered it.
func yieldP(b *key.Binding) {
	*b = key.NewBinding(key.WithKeys("P"), key.WithHelp("P", b.Help().Desc))
}
