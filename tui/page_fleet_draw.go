package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/internal/visible"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/render"
)

// Drawing the Fleet page: the host table, the headline over it, and the
// pane under it (the output folded by host, one host's output, the
// command log).

func (v *fleetView) View() string {
	if v.hostView != nil {
		return v.hostView.view(v.styles)
	}
	if v.fence != nil {
		return v.fence.view(v.styles)
	}
	st := v.styles
	lines := []string{v.headline(), st.TableHeader.Render(v.rowText("HOST", "ADDRESS", "STATE", "CONNECT", "TIME", "OUTPUT"))}
	n := v.tableHeight()
	for i := v.offset; i < len(v.rows) && i < v.offset+n; i++ {
		lines = append(lines, v.row(i))
	}
	for len(lines) < n+2 {
		lines = append(lines, "")
	}
	title := map[pane]string{paneHost: " output of " + v.selectedName() + " ", paneFolded: " folded output ", paneLog: " command log "}[v.pane]
	if len(v.rows) > n { // the table shows some of the hosts: the rule says which
		title = fmt.Sprintf(" hosts %d-%d of %d (↑/↓) ─%s", v.offset+1, min(len(v.rows), v.offset+n), len(v.rows), title)
	}
	lines = append(lines, st.Rule.Render("──"+title+strings.Repeat("─", max(0, v.width-lipgloss.Width(title)-2))))
	lines = append(lines, v.scroll.render(v.outputLines(), v.width, v.paneHeight(), st)...)
	return strings.Join(lines, "\n")
}

func (v *fleetView) selectedName() string {
	if len(v.rows) == 0 {
		return "-"
	}
	return v.rows[v.cursor].Name
}

func (v *fleetView) headline() string {
	st := v.styles
	if v.typing && v.running && v.notice == runGoing { // the field gives way to it: it pads to its width
		note := st.Error.Render(runGoing)
		return text.Clip(v.input.View(), max(10, v.width-lipgloss.Width(note)-2)) + "  " + note
	}
	if v.typing {
		return v.input.View()
	}
	if v.notice != "" {
		return st.Error.Render(v.notice)
	}
	if len(v.rows) == 0 {
		return st.Hint.Render("No hosts: pass --inventory FILE, or -H names from ~/.ssh/config.")
	}
	if v.command == "" {
		probe := v.keys.Probe.Help().Key // P in presenter mode
		line := fmt.Sprintf("%d hosts: %s. Press : to run a command on all of them, %s to probe their GPUs.", len(v.rows), v.nodeSet(), probe)
		if lipgloss.Width(line) > v.width {
			line = fmt.Sprintf("%d hosts: %s. : runs a command on all, %s probes GPUs.", len(v.rows), v.nodeSet(), probe)
		}
		return st.Hint.Render(line)
	}
	pct := float64(v.finished) / float64(len(v.rows))
	state := "done"
	if v.running {
		state = "running"
	}
	var parts []string
	if _, done, ok := strings.Cut(v.summary, ": "); ok && !v.running {
		// The finished run's line, as the command line counts it.
		parts = append(parts, done)
	} else {
		for c := orchestrator.OK; c <= orchestrator.Error; c++ {
			if n := v.counts[c]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, c))
			}
		}
	}
	var flagged []string
	for _, r := range v.rows {
		if len(r.flags) > 0 {
			flagged = append(flagged, r.Name)
		}
	}
	if len(flagged) > 0 && !v.probed {
		parts = append(parts, st.Error.Render(fmt.Sprintf("%d flagged: %s", len(flagged), inventory.FoldNames(flagged))))
	}
	return fmt.Sprintf("%s %s %s %d/%d  %s", st.CardLabel.Render("$ "+v.command), state, v.bar.ViewAs(pct), v.finished, len(v.rows), strings.Join(parts, ", "))
}

var stateNames = map[hostState]string{stateIdle: "-", stateConnecting: "connecting", stateRunning: "running"}

// narrowFleet is the width under which the host table leaves the ADDRESS
// column out, so that OUTPUT keeps room to be read.
const narrowFleet = 120

func (v *fleetView) rowText(cells ...string) string {
	widths := []int{14, 22, 16, 8, 8}
	if v.width < narrowFleet {
		widths = []int{14, 0, 13, 7, 7}
	}
	var b strings.Builder
	b.WriteString("  ")
	for i, c := range cells[:len(cells)-1] {
		if widths[i] > 0 {
			b.WriteString(cell(c, widths[i]) + " ")
		}
	}
	rest := max(4, v.width-lipgloss.Width(b.String()))
	b.WriteString(cell(cells[len(cells)-1], rest))
	return b.String()
}

func (v *fleetView) row(i int) string {
	r := v.rows[i]
	state := stateNames[r.state]
	out := ""
	if r.state == stateDone {
		state = r.class.String()
		if r.result != nil && len(r.result.Steps) > 0 {
			s := r.result.Steps[0]
			out = termLine(firstLine(string(s.Stdout)))
			if out == "" {
				out = termLine(firstLine(string(s.Stderr)))
			}
		}
		if out == "" && r.result != nil {
			out = termLine(r.result.Err)
		}
	} else if len(r.live) > 0 {
		out = termLine(lastLine(string(r.live))) // what a host sends mid-run is escaped too
	} else if r.Err != "" {
		state, out = orchestrator.Error.String(), r.Err // it cannot be reached: never run
	}
	if len(r.flags) > 0 {
		state, out = state+" FLAGGED", "⚑ "+strings.Join(r.flags, " · ")
	}
	if n, ok := v.nodes[r.Name]; ok && n.Drained {
		state += " DRAIN"
		if out == "" {
			out = "slurm " + n.State + ": " + termLine(n.Reason)
		}
	}
	// A row drawn in one style carries its badge as plain text: a styled
	// badge inside would end the row's style.
	plain := i == v.cursor || r.state == stateDone && r.class != orchestrator.OK || r.Err != "" || len(r.flags) > 0
	line := v.rowText(r.Name+hostBadge(v.styles, v.simulated || r.Simulated, plain), r.Address, state, dur(r.connect), dur(r.total), out)
	switch {
	case i == v.cursor:
		return v.styles.TableCursor.Render("▶ " + strings.TrimPrefix(line, "  "))
	case plain:
		return v.styles.Error.Render(line)
	}
	return line
}

func dur(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	if d < time.Second {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	s = strings.TrimRight(s, "\r\n")
	if i := strings.LastIndexAny(s, "\r\n"); i >= 0 {
		s = s[i+1:]
	}
	return s
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimLeft(s, "\n"), "\n")
	return s
}

// outputLines are the output pane's lines as it shows them: host names
// masked before the pane cuts them to its width.
func (v *fleetView) outputLines() []string { return v.mask.lines(v.paneLines()) }

// canScroll says whether a page down (down) or up moves what the Fleet
// shows: the host's page when it is open, else the output pane.
func (v *fleetView) canScroll(down bool) bool {
	if v.typing {
		return false
	}
	if v.hostView != nil {
		return v.hostView.canScroll(down)
	}
	return v.scroll.more(down, len(v.outputLines()), v.paneHeight())
}

func (v *fleetView) paneLines() []string {
	switch v.pane {
	case paneLog:
		return v.logLines()
	case paneFolded:
		return v.foldedLines()
	}
	return v.hostLines()
}

// logLines are the command log, the newest first.
func (v *fleetView) logLines() []string {
	if len(v.log) == 0 {
		return []string{v.styles.Hint.Render("nothing ran yet")}
	}
	var out []string
	for i := len(v.log) - 1; i >= 0; i-- {
		l := v.log[i]
		sum := l.summary
		if sum == "" {
			sum = "running"
		}
		out = append(out, fmt.Sprintf("%s  %s  on %s  → %s", l.started.Format("15:04:05"), l.command, l.hosts, sum))
	}
	return out
}

// foldedLines are the run's folded output: what the probe flagged, then
// each group under its head, the others as their difference from the
// first.
func (v *fleetView) foldedLines() []string {
	st := v.styles
	if v.results == nil {
		return []string{st.Hint.Render("folded output appears when the run ends")}
	}
	var out []string
	flagged := map[string]bool{}
	for _, r := range v.rows { // what the probe flagged first: a narrow table cuts it
		flagged[r.Name] = len(r.flags) > 0
		if len(r.flags) > 0 {
			out = append(out, wrap(st.Error.Render("⚑ "+r.Name+": ")+strings.Join(r.flags, " · "), v.width-2)...)
		}
	}
	groups := v.groups
	for gi, g := range groups {
		for _, l := range groupHead(g, flaggedClass(g, flagged), max(20, v.width-2)) {
			out = append(out, st.CardLabel.Render(l))
		}
		body := g.Stdout + g.Stderr
		if gi > 0 && groups[0].Class == orchestrator.OK && body != "" {
			body = orchestrator.Diff(groups[0], g)
		}
		for _, e := range g.Errors {
			body += e + "\n"
			break
		}
		if v.truncated(g.Hosts) {
			body += "[output cut at the limit: the rest was not kept; the host view (enter) says how much came]\n"
		}
		for _, l := range strings.Split(strings.TrimRight(body, "\n"), "\n") {
			if l != "" {
				out = append(out, "  "+termLine(l))
			}
		}
	}
	return out
}

// flaggedClass is a group's class and how many of its hosts the probe
// flagged: its findings are listed above, and "ok" alone read as healthy.
func flaggedClass(g orchestrator.Group, flagged map[string]bool) string {
	class := render.GroupClass(g)
	n := 0
	for _, h := range g.Hosts {
		if flagged[h] {
			n++
		}
	}
	switch {
	case n > 0 && n == len(g.Hosts):
		class += ", FLAGGED"
	case n > 0:
		class += fmt.Sprintf(", %d flagged", n)
	}
	return class
}

// hostLines are the selected host's output: live while it runs, then its
// result, its errors and what was cut.
func (v *fleetView) hostLines() []string {
	st := v.styles
	if len(v.rows) == 0 {
		return nil
	}
	r := v.rows[v.cursor]
	var head []string
	if n, ok := v.nodes[r.Name]; ok {
		line := "slurm: " + n.State
		if n.Reason != "" {
			line += ", " + termLine(n.Reason)
		}
		head = append(head, st.CardMuted.Render(line))
	}
	return append(head, v.hostOutput(r)...)
}

// hostOutput is what the last run printed on r.
func (v *fleetView) hostOutput(r hostRow) []string {
	st := v.styles
	if r.result == nil && len(r.live) > 0 {
		return append([]string{st.Hint.Render("running; its output so far:")}, termLines(string(r.live))...)
	}
	if r.result == nil {
		return []string{st.Hint.Render("no output yet")}
	}
	var out []string
	if r.result.Err != "" {
		out = append(out, st.Error.Render(termLine(r.result.Err)))
	}
	for _, s := range r.result.Steps {
		out = append(out, termLines(string(s.Stdout))...)
		if len(s.Stderr) > 0 {
			errs := termLines(string(s.Stderr))
			out = append(out, st.CardMuted.Render("stderr: ")+errs[0])
			out = append(out, errs[1:]...)
		}
		if s.Truncated {
			out = append(out, st.Error.Render(fmt.Sprintf("[output cut: %d bytes of stdout and %d of stderr came, the first %d and %d were kept]",
				s.StdoutBytes, s.StderrBytes, len(s.Stdout), len(s.Stderr))))
		}
	}
	return out
}

// truncated says whether a command's output was cut on any of hosts.
// It looks at the cut hosts only, usually none: a group of a thousand
// hosts was looked up in the rows one by one on every frame.
func (v *fleetView) truncated(hosts []string) bool {
	var cut map[string]bool
	for _, r := range v.rows {
		if r.result == nil {
			continue
		}
		for _, s := range r.result.Steps {
			if s.Truncated {
				if cut == nil {
					cut = map[string]bool{}
				}
				cut[r.Name] = true
			}
		}
	}
	return cut != nil && slices.ContainsFunc(hosts, func(h string) bool { return cut[h] })
}

// groupHead is a folded group's head, "dgx[01-04] (4 hosts): ok" as
// gpulab exec prints it (render.GroupHead); a node set
// too long for the width (hosts failing here and there among hundreds)
// goes last, after the count and class, and wraps after its commas.
func groupHead(g orchestrator.Group, class string, width int) []string {
	head := render.GroupHead(g, class).String()
	if lipgloss.Width(head) <= width {
		return []string{head}
	}
	lines := strings.Split(ansi.Wrap(fmt.Sprintf("%s, %s: %s", text.Plural(len(g.Hosts), "host", "hosts"), class, g.NodeSet), width-2, ","), "\n")
	for i := 1; i < len(lines); i++ {
		lines[i] = "  " + lines[i]
	}
	return lines
}

// termLines are a host's output as lines a terminal would show, each
// through termLine.
func termLines(s string) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = termLine(l)
	}
	return lines
}

// termLine is one line of a host's output as the workbench may draw it:
// what a terminal shows after a carriage return (the text after the last
// one: a progress bar's final state), every other control character,
// escape sequences included, escaped (internal/visible): a host's output
// never moves the cursor, clears the screen or retitles the operator's
// terminal. Then it is made uniform: tabs expanded to 8-column stops of
// the text as shown, and emoji a terminal would count otherwise taken
// apart, so that the Fleet's columns are measured on what is drawn.
func termLine(l string) string {
	l = strings.TrimSuffix(l, "\r")
	if i := strings.LastIndexByte(l, '\r'); i >= 0 {
		l = l[i+1:]
	}
	return uniform(visible.Text(l))
}
