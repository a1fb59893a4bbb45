package tui

import (
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
)

// hintView is a view that has nothing to show yet but says so, and what
// would fill it.
type hintView struct {
	title, hint   string
	styles        Styles
	width, height int
}

func newHintView(title, hint string, st Styles) *hintView {
	return &hintView{title: title, hint: hint, styles: st}
}

func (v *hintView) Init() tea.Cmd                       { return nil }
func (v *hintView) Update(tea.Msg) (Component, tea.Cmd) { return v, nil }
func (v *hintView) SetSize(w, h int)                    { v.width, v.height = w, h }
func (v *hintView) Title() string                       { return v.title }
func (v *hintView) Status() string                      { return v.title }
func (v *hintView) Capturing() bool                     { return false }
func (v *hintView) ShortHelp() []key.Binding            { return nil }
func (v *hintView) FullHelp() [][]key.Binding           { return nil }

func (v *hintView) View() string {
	text := lipgloss.NewStyle().Width(max(10, v.width-4)).Render(v.hint)
	return lipgloss.NewStyle().Padding(1, 2).Render(
		lipgloss.JoinVertical(lipgloss.Left, v.styles.CardTitle.Render(v.title), "", v.styles.Hint.Render(text)))
}
