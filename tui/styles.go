package tui

import (
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/gpulab/gpulab/step"
)

// Styles holds every style the workbench draws with, so that views carry no
// colours of their own. Build it with DefaultStyles; NO_COLOR is handled by
// the colour profile (lipgloss draws plain text under termenv.Ascii), which is
// why every selection also has a text marker.
type Styles struct {
	App          lipgloss.Style
	Brand        lipgloss.Style
	Tab          lipgloss.Style
	ActiveTab    lipgloss.Style
	TabSep       lipgloss.Style
	Status       lipgloss.Style
	StatusKey    lipgloss.Style
	Hint         lipgloss.Style
	Error        lipgloss.Style
	PlaneTitle   map[string]lipgloss.Style
	PlaneText    lipgloss.Style
	Chip         lipgloss.Style
	ChipSelected lipgloss.Style
	CardTitle    lipgloss.Style
	CardLabel    lipgloss.Style
	CardText     lipgloss.Style
	CardMuted    lipgloss.Style
	Rule         lipgloss.Style
	TableHeader  lipgloss.Style
	TableRow     lipgloss.Style
	TableCursor  lipgloss.Style
	TableCell    lipgloss.Style
	FilterOn     lipgloss.Style
	HelpPanel    lipgloss.Style
	// Badge marks what is simulated (the header's SIMULATED, a host's
	// SIM); its text says it, so NO_COLOR keeps it.
	Badge lipgloss.Style
	// Caption is a presenter step's one line: what to look at.
	Caption lipgloss.Style
	// Spacing is the blank lines around a presenter's caption (0 outside
	// presenter mode).
	Spacing int
}

// DefaultStyles returns the workbench's styles: high-contrast, readable on
// dark and light terminals and on a projector.
func DefaultStyles() Styles {
	accent := lipgloss.AdaptiveColor{Light: "#5A3FC0", Dark: "#B7A6FF"}
	muted := lipgloss.AdaptiveColor{Light: "#5C5C5C", Dark: "#9E9E9E"}
	text := lipgloss.AdaptiveColor{Light: "#1A1A1A", Dark: "#EDEDED"}
	planes := map[string]lipgloss.TerminalColor{
		"control":  lipgloss.AdaptiveColor{Light: "#1F5FBF", Dark: "#5FA8FF"},
		"data":     lipgloss.AdaptiveColor{Light: "#1E7B34", Dark: "#6BD48A"},
		"workload": lipgloss.AdaptiveColor{Light: "#A4471C", Dark: "#FFA365"},
	}
	s := Styles{
		App:          lipgloss.NewStyle(),
		Brand:        lipgloss.NewStyle().Bold(true).Foreground(accent),
		Tab:          lipgloss.NewStyle().Foreground(muted),
		ActiveTab:    lipgloss.NewStyle().Bold(true).Underline(true).Foreground(text),
		TabSep:       lipgloss.NewStyle().Foreground(muted),
		Status:       lipgloss.NewStyle().Foreground(muted),
		StatusKey:    lipgloss.NewStyle().Bold(true).Foreground(accent),
		Hint:         lipgloss.NewStyle().Foreground(muted).Italic(true),
		Error:        lipgloss.NewStyle().Bold(true).Foreground(lipgloss.AdaptiveColor{Light: "#B00020", Dark: "#FF6B6B"}),
		PlaneTitle:   map[string]lipgloss.Style{},
		PlaneText:    lipgloss.NewStyle().Foreground(muted),
		Chip:         lipgloss.NewStyle().Foreground(text),
		ChipSelected: lipgloss.NewStyle().Bold(true).Reverse(true),
		CardTitle:    lipgloss.NewStyle().Bold(true).Foreground(accent),
		CardLabel:    lipgloss.NewStyle().Bold(true).Foreground(text),
		CardText:     lipgloss.NewStyle().Foreground(text),
		CardMuted:    lipgloss.NewStyle().Foreground(muted),
		Rule:         lipgloss.NewStyle().Foreground(muted),
		TableHeader:  lipgloss.NewStyle().Bold(true).Foreground(accent),
		TableRow:     lipgloss.NewStyle().Foreground(text),
		TableCursor:  lipgloss.NewStyle().Bold(true),
		TableCell:    lipgloss.NewStyle().Bold(true).Reverse(true),
		FilterOn:     lipgloss.NewStyle().Bold(true).Foreground(accent),
		HelpPanel:    lipgloss.NewStyle().Padding(1, 2),
		Badge:        lipgloss.NewStyle().Bold(true).Reverse(true).Foreground(lipgloss.AdaptiveColor{Light: "#8A4B00", Dark: "#FFC857"}),
		Caption:      lipgloss.NewStyle().Bold(true).Foreground(accent),
	}
	for id, c := range planes {
		s.PlaneTitle[id] = lipgloss.NewStyle().Bold(true).Foreground(c)
	}
	return s
}

// planeTitle returns the style for a plane's title, falling back to Brand
// for planes a user catalog added.
func (s Styles) planeTitle(id string) lipgloss.Style {
	if st, ok := s.PlaneTitle[id]; ok {
		return st
	}
	return s.Brand
}

// PresenterStyles returns the styles for a projector (gpulab demo
// --present): everything bold, text in black or white, no dim greys, no
// italics, and only saturated colours that survive a washed-out image.
// Selections keep their reverse video and text markers.
func PresenterStyles() Styles {
	text := lipgloss.AdaptiveColor{Light: "#000000", Dark: "#FFFFFF"}
	accent := lipgloss.AdaptiveColor{Light: "#0000C0", Dark: "#FFFF00"}
	bold := lipgloss.NewStyle().Bold(true)
	planes := map[string]lipgloss.TerminalColor{
		"control":  lipgloss.AdaptiveColor{Light: "#0000C0", Dark: "#00C8FF"},
		"data":     lipgloss.AdaptiveColor{Light: "#006400", Dark: "#00FF00"},
		"workload": lipgloss.AdaptiveColor{Light: "#A03000", Dark: "#FF8C00"},
	}
	s := Styles{
		App:          bold,
		Brand:        bold.Foreground(accent),
		Tab:          bold.Foreground(text),
		ActiveTab:    bold.Underline(true).Reverse(true),
		TabSep:       bold.Foreground(text),
		Status:       bold.Foreground(text),
		StatusKey:    bold.Foreground(accent),
		Hint:         bold.Foreground(text),
		Error:        bold.Foreground(lipgloss.AdaptiveColor{Light: "#C00000", Dark: "#FF3030"}),
		PlaneTitle:   map[string]lipgloss.Style{},
		PlaneText:    bold.Foreground(text),
		Chip:         bold.Foreground(text),
		ChipSelected: bold.Reverse(true),
		CardTitle:    bold.Foreground(accent),
		CardLabel:    bold.Foreground(text),
		CardText:     bold.Foreground(text),
		CardMuted:    bold.Foreground(text),
		Rule:         bold.Foreground(text),
		TableHeader:  bold.Underline(true).Foreground(accent),
		TableRow:     bold.Foreground(text),
		TableCursor:  bold.Reverse(true),
		TableCell:    bold.Reverse(true),
		FilterOn:     bold.Foreground(accent),
		HelpPanel:    bold.Padding(1, 2),
		Badge:        bold.Reverse(true).Foreground(lipgloss.AdaptiveColor{Light: "#A03000", Dark: "#FFFF00"}),
		Caption:      bold.Reverse(true).Foreground(accent),
		Spacing:      1,
	}
	for id, c := range planes {
		s.PlaneTitle[id] = bold.Foreground(c)
	}
	return s
}

func statusStyle(s step.Status, st Styles) lipgloss.Style {
	switch s {
	case step.Pass:
		return st.planeTitle("data")
	case step.Fail:
		return st.Error
	case step.Warn:
		return st.planeTitle("workload")
	}
	return st.CardMuted
}

func topoStyle(level string, st Styles) lipgloss.Style {
	switch {
	case strings.HasPrefix(level, "NV"):
		return st.planeTitle("data")
	case level == "PIX" || level == "PXB":
		return st.planeTitle("control")
	case level == "PHB" || level == "NODE":
		return st.planeTitle("workload")
	case level == "SYS" || level == "SOC":
		return st.Error
	}
	return st.CardMuted
}
