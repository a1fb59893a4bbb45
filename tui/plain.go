package tui

import (
	tea "github.com/charmbracelet/bubbletea"

	"github.com/gpulab/gpulab/landscape"
)

// PlainCard draws a project's full card as plain text, the same content the
// Map shows, for `gpulab catalog show`.
func PlainCard(c *landscape.Catalog, p landscape.Project, width int) string {
	return cardRenderer{cat: c, styles: Styles{}}.full(p, max(width, 40))
}

// QuitAfterFirstFrame wraps a model so that the program quits as soon as it
// has drawn at the terminal's real size; start-up benchmarks use it.
func QuitAfterFirstFrame(m tea.Model) tea.Model { return firstFrame{m} }

type firstFrame struct{ tea.Model }

func (f firstFrame) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m, cmd := f.Model.Update(msg)
	if _, ok := msg.(tea.WindowSizeMsg); ok {
		return firstFrame{m}, tea.Batch(cmd, tea.Quit)
	}
	return firstFrame{m}, cmd
}
