package tui

import (
	"github.com/charmbracelet/bubbles/help"
	tea "github.com/charmbracelet/bubbletea"
)

// Component is one view of the workbench. The root model routes messages to
// the active component and draws the header, status bar and help around it.
type Component interface {
	help.KeyMap
	// Init returns the view's first command, if any.
	Init() tea.Cmd
	// Update handles a message for this view.
	Update(tea.Msg) (Component, tea.Cmd)
	// View draws the view in exactly the size given by SetSize.
	View() string
	// SetSize sets the body size the view may draw in.
	SetSize(width, height int)
	// Title is the tab's name.
	Title() string
	// Status is a short line for the status bar.
	Status() string
	// Capturing reports whether the view is taking text input, so that
	// global keys such as q are passed to it.
	Capturing() bool
}

// recordsChangedMsg says a run has written, or finished writing, a lab
// record: a page that lists the records reads them again. The page whose
// run it was sends it; no page reads another's messages.
type recordsChangedMsg struct{}

func recordsChanged() tea.Msg { return recordsChangedMsg{} }
