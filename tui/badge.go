package tui

import (
	"strings"

	"github.com/gpulab/gpulab/render"
)

// hostBadge is what follows a host's name on a simulated fleet: " SIM",
// styled unless plain (a line drawn in one style of its own, which a
// styled badge would cut short); "" for real hosts.
func hostBadge(st Styles, simulated, plain bool) string {
	switch {
	case !simulated:
		return ""
	case plain:
		return " SIM"
	}
	return " " + st.Badge.Render("SIM")
}

// drawLine styles a result's line as render laid it out: its status by
// what it says, its summary muted, and the SIM badge after its hosts on a
// simulated fleet. The command line prints the same line plain.
func drawLine(st Styles, l render.Line, simulated bool) string {
	var b strings.Builder
	for _, s := range l {
		switch s.Kind {
		case render.Status:
			b.WriteString(statusStyle(s.Status, st).Render(s.Text))
		case render.Hosts:
			b.WriteString(s.Text + hostBadge(st, simulated, false))
		case render.Muted:
			b.WriteString(st.CardMuted.Render(s.Text))
		case render.Label:
			b.WriteString(st.CardLabel.Render(s.Text))
		default:
			b.WriteString(s.Text)
		}
	}
	return b.String()
}
