package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/gpulab/gpulab/internal/text"
)

// The layout helpers every page shares: cut, pad and wrap to cells,
// windows over a list, a tab's key hints. They live here, not in the page
// that first needed them, so that no page reaches into another
// (TestPagesShareOnlyTheKit).

// cell pads or cuts s to width columns.
func cell(s string, width int) string {
	if lipgloss.Width(s) > width {
		s = text.Cut(s, width) // a wide character cut leaves a column: padded below
	}
	return pad(s, width)
}

func clipLines(lines []string, n int) []string {
	if len(lines) > n {
		return lines[:n]
	}
	return lines
}

// planeAbbrev shortens a plane ID to four letters for narrow tables.
func planeAbbrev(id string) string {
	switch {
	case id == "control":
		return "ctrl"
	case len(id) > 4:
		return id[:4]
	}
	return id
}

// hanging wraps s to width, its later lines indented by indent.
func hanging(s string, width, indent int) []string {
	lines := wrap(s, width)
	if len(lines) == 1 {
		return lines
	}
	rest := strings.Join(lines[1:], " ")
	out := []string{lines[0]}
	for _, l := range wrap(rest, max(10, width-indent)) {
		out = append(out, strings.Repeat(" ", indent)+l)
	}
	return out
}

// listScrolls says whether km is one of the keys that move the list's
// pane (home and end move the cursor instead).
func listScrolls(km tea.KeyMsg, k ScrollKeys) bool {
	return key.Matches(km, k.PageUp) || key.Matches(km, k.PageDown) || key.Matches(km, k.Left) || key.Matches(km, k.Right)
}

// follow is the first row shown of a list of rows, n at a time, that
// keeps the cursor in view, moving no further than it must; the cursor
// is clamped to the list.
func follow(cursor, offset, rows, n int) (int, int) {
	cursor = max(0, min(cursor, rows-1))
	if cursor < offset {
		offset = cursor
	}
	if cursor >= offset+n {
		offset = cursor - n + 1
	}
	return cursor, max(0, min(offset, rows-n))
}

// cursorWindow shows room lines of body around line at (the cursor's),
// the last of them saying what is above and below when not all fit.
func cursorWindow(body []string, at, room int, st Styles) []string {
	if len(body) <= room {
		return body
	}
	n := max(1, room-1)
	top := min(max(0, at-n/2), len(body)-n)
	out := append(make([]string, 0, room), body[top:top+n]...)
	if room > 1 {
		above, below := top, len(body)-top-n
		marker := fmt.Sprintf("↑ %d above · ↓ %d below · ↑/↓ move", above, below)
		switch {
		case above == 0:
			marker = fmt.Sprintf("↓ %d more below · ↑/↓ move", below)
		case below == 0:
			marker = fmt.Sprintf("↑ %d above · ↑/↓ move", above)
		}
		out = append(out, st.Hint.Render(marker))
	}
	return out
}

// fit pads or cuts s to exactly width columns and height lines, so that a
// view can never push the status bar off screen. Every line of every
// frame passes here: each is made uniform first (no tab, no character a
// terminal counts wider or narrower than lipgloss does), so that what is
// measured is what the terminal draws.
func fit(s string, width, height int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > height {
		lines = lines[:height]
	}
	for i, l := range lines {
		l = uniform(l)
		if w := lipgloss.Width(l); w > width {
			l = text.Cut(l, width)
			w = lipgloss.Width(l)
			lines[i] = l + strings.Repeat(" ", max(0, width-w))
		} else {
			lines[i] = l + strings.Repeat(" ", width-w)
		}
	}
	for len(lines) < height {
		lines = append(lines, strings.Repeat(" ", width))
	}
	return strings.Join(lines, "\n")
}

// bar draws a share in width cells: what is used (█), what is left of
// what may be used (░), and what exists but may not be (×: capacity the
// device plugin does not offer, unhealthy GPUs). Figures past the total,
// or below zero, are clamped: they come from hosts and API servers.
func bar(alloc, allocatable, capacity int64, width int) string {
	total := max(capacity, allocatable, 1)
	cells := func(n int64) int { return int((min(max(n, 0), total)*int64(width) + total/2) / total) }
	a := cells(alloc)
	f := max(0, cells(allocatable)-a)
	return "[" + strings.Repeat("█", a) + strings.Repeat("░", f) + strings.Repeat("×", max(0, width-a-f)) + "]"
}
