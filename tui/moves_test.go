package tui

import (
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// One list's cursor moves as every other's: by one, to either end, never
// off the list (an empty one keeps it at 0), and only for a move key.
func TestMovesKeepsTheCursorOnTheList(t *testing.T) {
	k := DefaultMoveKeys()
	press := func(s string) tea.KeyMsg {
		switch s {
		case "up", "down", "home", "end":
			return tea.KeyMsg{Type: map[string]tea.KeyType{"up": tea.KeyUp, "down": tea.KeyDown, "home": tea.KeyHome, "end": tea.KeyEnd}[s]}
		}
		return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)}
	}
	for _, tc := range []struct {
		key     string
		cur, n  int
		want    int
		isAMove bool
	}{
		{"down", 0, 3, 1, true}, {"j", 2, 3, 2, true}, {"up", 0, 3, 0, true}, {"k", 2, 3, 1, true},
		{"home", 2, 3, 0, true}, {"end", 0, 3, 2, true}, {"down", 0, 0, 0, true}, {"end", 0, 0, 0, true},
		{"down", 7, 3, 2, true}, {"x", 1, 3, 1, false},
	} {
		cur := tc.cur
		if got := k.Moves(press(tc.key), &cur, tc.n); got != tc.isAMove || cur != tc.want {
			t.Errorf("%s at %d of %d: cursor %d (move %v), want %d (move %v)", tc.key, tc.cur, tc.n, cur, got, tc.want, tc.isAMove)
		}
	}
}
