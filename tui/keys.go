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
