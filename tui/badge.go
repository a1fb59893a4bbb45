package tui

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
