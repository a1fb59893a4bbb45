// Package text is the small text helpers every layer shares, each once:
// a count with its noun, and a cut to a width in terminal cells.
package text

import (
	"fmt"

	"github.com/charmbracelet/x/ansi"
)

// Plural is "1 host" or "3 hosts".
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Cut is s in at most w terminal cells, ending in … when it was cut:
// cut between two characters, never inside one (a byte cut split UTF-8),
// a wide character counting two, escape sequences none.
func Cut(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if ansi.StringWidth(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, "…")
}

// Clip is s in at most w terminal cells, cut with no mark: a field the
// edge of its box cuts (an input line, a nesting prefix).
func Clip(s string, w int) string {
	if w <= 0 {
		return ""
	}
	return ansi.Truncate(s, w, "")
}

// From is s without its first n terminal cells: a line scrolled sideways
// (a wide character cut in two is dropped whole).
func From(s string, n int) string {
	return ansi.TruncateLeft(s, n, "")
}

// Width is the terminal cells s takes: a wide character two, escape
// sequences none.
func Width(s string) int { return ansi.StringWidth(s) }
