package tui

import (
	"strings"

	"github.com/charmbracelet/glamour"
	"github.com/charmbracelet/glamour/ansi"
	"github.com/charmbracelet/glamour/styles"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// markdownStyle is the glamour style that matches the terminal: plain
// text under NO_COLOR or a colourless profile, else dark or light by the
// background lipgloss found when the workbench started (it is asked once,
// before Bubble Tea owns the terminal).
func markdownStyle() glamour.TermRendererOption {
	switch {
	case lipgloss.ColorProfile() == termenv.Ascii:
		return glamour.WithStyles(plainMarkdown())
	case lipgloss.HasDarkBackground():
		return glamour.WithStandardStyle(styles.DarkStyle)
	}
	return glamour.WithStandardStyle(styles.LightStyle)
}

// plainMarkdown is glamour's notty style without the Markdown left in it:
// no ** around strong text, no # before headings (the top two are in
// capitals instead), as a document reads without colour.
func plainMarkdown() ansi.StyleConfig {
	c := styles.NoTTYStyleConfig
	upper := true
	c.Strong.BlockPrefix, c.Strong.BlockSuffix = "", ""
	c.Emph.BlockPrefix, c.Emph.BlockSuffix = "", ""
	c.H1.Prefix, c.H1.Upper = "", &upper
	c.H2.Prefix, c.H2.Upper = "", &upper
	c.H3.Prefix = "▸ "
	return c
}

// renderMarkdown draws a Markdown document (a lab record) formatted for a
// width: headings, lists, emphasis and tables as a terminal shows them.
// Should glamour fail, the text is shown wrapped as it is.
func renderMarkdown(md string, width int) []string {
	if len(md) > maxRendered { // rendering is on the UI's loop: a huge record is shown as it is
		return plainLines(md, width)
	}
	r, err := glamour.NewTermRenderer(markdownStyle(),
		glamour.WithColorProfile(lipgloss.ColorProfile()), glamour.WithWordWrap(max(20, width-4)))
	if err == nil {
		var out string
		if out, err = r.Render(md); err == nil {
			return strings.Split(strings.Trim(out, "\n"), "\n")
		}
	}
	return plainLines(md, width)
}

// maxRendered is the largest record glamour renders (a record of 8 hosts
// is some 20 KiB).
const maxRendered = 1 << 20

// plainLines is text wrapped to width, as it is.
func plainLines(text string, width int) []string {
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		lines = append(lines, wrap(l, width)...)
	}
	return lines
}
