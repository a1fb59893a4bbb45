package tui

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/internal/visible"
	"github.com/gpulab/gpulab/render"
)

// Drawing the Cluster tab. View draws only the rows on screen, from what
// refresh computed: a cluster of thousands of nodes costs no more than a
// screenful. Whatever the cluster says (names, reasons, messages, errors)
// is escaped (visible.String) before it is measured or drawn: the waiting
// list's and quotas' texts when they are computed, the rest here.

// barWidth is the cells of a bar between its brackets; narrowBar on a
// terminal under narrowCluster columns, so that the figures after it keep
// their room.
const (
	barWidth      = 16
	narrowBar     = 8
	narrowCluster = 100
)

func (v *clusterView) barCells() int {
	if v.width < narrowCluster {
		return narrowBar
	}
	return barWidth
}

// View implements Component.
func (v *clusterView) View() string {
	st := v.styles
	if len(v.sources) == 0 {
		return strings.Join([]string{st.CardTitle.Render("Cluster"), "",
			st.Hint.Render("No Kubernetes context in the inventory ([[kube]] tables name kubeconfig and context).")}, "\n")
	}
	if v.fence != nil {
		return v.fence.view(st)
	}
	lines := []string{v.titleLine(), v.statusLine(), v.warningLine()}
	lines = append(lines, v.fenceLines()...)
	lines = append(lines, v.nodeLines()...)
	lines = append(lines, "")
	lines = append(lines, v.waitLines()...)
	lines = append(lines, v.whyLines()...)
	lines = append(lines, v.quotaLines()...)
	lines = append(lines, v.reconcileLines()...)
	return strings.Join(lines, "\n")
}

func (v *clusterView) titleLine() string {
	st := v.styles
	src := v.sources[v.current]
	line := st.CardTitle.Render("Cluster") + " " + st.CardLabel.Render("context "+visible.String(src.Name))
	if src.Simulated {
		line += " " + st.Badge.Render(" SIMULATED ")
	}
	if len(v.sources) > 1 {
		line += st.CardMuted.Render(fmt.Sprintf("  (%d of %d: c for the next)", v.current+1, len(v.sources)))
	}
	if src.Live != nil {
		line += st.CardMuted.Render(fmt.Sprintf("  %s GPU nodes · %s pods · %s waiting", v.count("nodes", len(v.nodes)), v.count("pods", v.pods), v.count("pods", len(v.waiting))))
	}
	return line
}

// count is n, or "?" when it counts what the server refuses to list
// (kind) or has not listed yet: zero would be a false fact.
func (v *clusterView) count(kind string, n int) string {
	if !v.status.Knows(kind) {
		return "?"
	}
	return fmt.Sprint(n)
}

// unknownLine is the line that stands for a list the server refuses
// (kind), or that is not listed yet; "" when it is known.
func (v *clusterView) unknownLine(kind, what string) string {
	switch {
	case v.status.Denies(kind):
		return v.styles.Error.Render("  unknown: the server refuses to list " + kind + " (" + what + ")")
	case !v.status.Knows(kind):
		return v.styles.Hint.Render("  unknown: " + kind + " not listed yet")
	}
	return ""
}

// statusLine is the connection: an error is drawn as one, the tab goes on
// showing what the server said last.
func (v *clusterView) statusLine() string {
	st := v.styles
	src := v.sources[v.current]
	switch {
	case src.Live == nil:
		return st.Error.Render("not connected: " + visible.String(src.Err))
	case v.status.State == cluster.Lost || v.status.State == cluster.Refused:
		return st.Error.Render(visible.String(v.status.String()))
	case v.status.State == cluster.Waiting || v.status.State == cluster.Reconnecting:
		return st.Hint.Render(visible.String(v.status.String()))
	case src.Simulated:
		return st.CardMuted.Render("simulated API server (a client-go fake fed by the fleet): synced")
	}
	return st.CardMuted.Render(visible.String(v.status.String()))
}

// warningLine is what the server refuses to list and what that leaves
// unknown, in every state, on a line of its own (a lost server's status
// line is long); "" when nothing is refused.
func (v *clusterView) warningLine() string {
	if v.sources[v.current].Live == nil || v.status.Warning == "" {
		return v.healthLine()
	}
	return v.styles.Error.Render(visible.String(v.status.Warning))
}

// healthLine names the nodes the cluster calls unhealthy (their STATUS
// ends in "!") and the first signal: who says it.
func (v *clusterView) healthLine() string {
	var sick []string
	first := ""
	for _, n := range v.nodes {
		if len(n.Health) > 0 {
			sick = append(sick, v.mask.apply(visible.String(n.Name)))
			if first == "" {
				first = visible.String(n.Health[0].Source + ": " + n.Health[0].Signal)
			}
		}
	}
	if len(sick) == 0 {
		return ""
	}
	return v.styles.Error.Render(fmt.Sprintf("! GPUs unhealthy by the cluster's word: %s (%s; gpulab cluster nodes lists all)", strings.Join(sick, ", "), first))
}

func (v *clusterView) nameWidth() int {
	w := 4
	for _, n := range v.nodes { // as drawn: a masked name (host-1) is longer than dgx01
		w = max(w, lipgloss.Width(v.mask.apply(visible.String(n.Name))))
	}
	return min(w, 28)
}

func (v *clusterView) resWidth() int {
	w := 8
	for _, r := range v.rows {
		w = max(w, lipgloss.Width(visible.String(r.res)))
	}
	return min(w, 26)
}

func (v *clusterView) nodeLines() []string {
	st := v.styles
	nw, rw := v.nameWidth(), v.resWidth()
	lines := []string{st.CardLabel.Render(fmt.Sprintf("GPU nodes (%s)", v.count("nodes", len(v.nodes)))) +
		v.shownRows(v.nodeOffset, v.nodeHeight(), len(v.rows), focusNodes),
		st.TableHeader.Render(fmt.Sprintf("  %-*s %-*s %-*s %-*s %-14s %s", nw, "NODE", v.statusWidth(), "STATUS", rw, "RESOURCE", v.barCells()+2, "ALLOCATED", "ALLOC/ABLE/CAP", "USED"))}
	n := v.nodeHeight()
	if u := v.unknownLine("nodes", "GPU nodes unknown"); u != "" && len(v.rows) == 0 {
		lines = append(lines, u)
	} else if len(v.rows) == 0 {
		lines = append(lines, st.Hint.Render("  no node has a GPU resource"))
	}
	for i := v.nodeOffset; i < len(v.rows) && i < v.nodeOffset+n; i++ {
		lines = append(lines, v.nodeLine(i, nw, rw))
	}
	for len(lines) < n+2 {
		lines = append(lines, "")
	}
	return lines
}

func (v *clusterView) nodeLine(i, nw, rw int) string {
	r := v.rows[i]
	n := v.nodes[r.node]
	name, status := "", ""
	if r.first {
		name, status = visible.String(n.Name), render.NodeStatusHealth(n)
	}
	alloc, able, capa := n.Allocated[r.res], n.Allocatable[r.res], n.Capacity[r.res]
	used := v.usedCell(n.Name, r)
	bw := v.barCells()
	allocBar, figures := bar(alloc, able, capa, bw), fmt.Sprintf("%d/%d/%d", alloc, able, capa)
	if !v.status.Knows("pods") { // what pods hold is unknown, not none
		allocBar, figures = "["+cell("? pods unknown", bw)+"]", fmt.Sprintf("?/%d/%d", able, capa)
	}
	text := fmt.Sprintf("%s %s %s %s %-14s %s", cell(name, nw), cell(status, v.statusWidth()), cell(visible.String(r.res), rw), allocBar, figures, used)
	return v.cursorLine(text, v.focus == focusNodes && i == v.nodeCursor)
}

// shownRows says which rows of a list a screen shows when it cannot show
// them all, and how to reach the others: nothing is hidden silently.
func (v *clusterView) shownRows(offset, shown, total int, list clusterFocus) string {
	if total <= shown {
		return ""
	}
	keys := "↑/↓"
	if v.focus != list {
		keys = "←/→ then ↑/↓"
	}
	return v.styles.Hint.Render(fmt.Sprintf("  rows %d-%d of %d · %s", offset+1, min(total, offset+shown), total, keys))
}

// statusWidth is the STATUS column: as wide as its widest cell.
func (v *clusterView) statusWidth() int {
	w := len("STATUS")
	for _, n := range v.nodes {
		w = max(w, len(render.NodeStatusHealth(n)))
	}
	return w
}

// cursorLine marks the selected row with ▶ (so that it shows without
// colour) and its style.
func (v *clusterView) cursorLine(text string, selected bool) string {
	if selected {
		return v.styles.TableCursor.Render("▶ " + text)
	}
	return v.styles.TableRow.Render("  " + text)
}

func (v *clusterView) waitLines() []string {
	st := v.styles
	head := st.CardLabel.Render(fmt.Sprintf("Waiting (%s)", v.count("pods", len(v.waiting))))
	if more := v.shownRows(v.waitOffset, v.waitHeight(), len(v.waiting), focusWaiting); more != "" {
		head += more
	} else {
		head += st.CardLabel.Render(": pods the scheduler has not placed, and workloads with no pod")
	}
	lines := []string{head}
	if u := v.unknownLine("pods", "what waits unknown"); u != "" && len(v.waiting) == 0 {
		return append(lines, u)
	}
	if len(v.waiting) == 0 {
		return append(lines, st.Hint.Render("  nothing waits"))
	}
	nw := 8
	for _, it := range v.waiting {
		nw = max(nw, lipgloss.Width(it.ns+"/"+it.name))
	}
	nw = min(nw, 44)
	for i := v.waitOffset; i < len(v.waiting) && i < v.waitOffset+v.waitHeight(); i++ {
		it := v.waiting[i]
		text := fmt.Sprintf("%s %-4s %s %s", cell(it.ns+"/"+it.name, nw), it.kind, cell(it.asks, 18), it.reason)
		lines = append(lines, v.cursorLine(text, v.focus == focusWaiting && i == v.waitCursor))
	}
	return lines
}

// whyLines is the selected waiting item's paragraph and evidence, masked
// before it is wrapped (so that no host name is split where the mask
// cannot see it), in maxWhy lines: what does not fit scrolls ([ and ], the
// wheel), its last line saying how much is above and below.
func (v *clusterView) whyLines() []string {
	if len(v.waiting) == 0 {
		return nil
	}
	st := v.styles
	it := v.waiting[v.waitCursor]
	title := " why: " + it.ns + "/" + it.name + " "
	lines := []string{st.Rule.Render("──" + title + strings.Repeat("─", max(0, v.width-len([]rune(title))-2)))}
	body, n := v.whyBody(), v.maxWhy()-1
	if n < 1 {
		return clipLines(lines, v.maxWhy())
	}
	if len(body) <= n {
		return append(lines, body...)
	}
	top := v.why.position(len(body), n)
	shown := room(len(body), n)
	lines = append(lines, body[top:top+shown]...)
	return append(lines, st.Hint.Render("    "+whyMarker(top, len(body)-top-shown)))
}

// whyMarker says how much of the why is above and below, and the keys.
func whyMarker(above, below int) string {
	switch {
	case above == 0:
		return fmt.Sprintf("↓ %s of why and evidence · ] (or the wheel)", text.Plural(below, "more line", "more lines"))
	case below == 0:
		return fmt.Sprintf("↑ %s above · [ · end of the evidence", text.Plural(above, "line", "lines"))
	}
	return fmt.Sprintf("↑ %d above · ↓ %d more below · [ / ]", above, below)
}

// whyBody is the selected item's why and evidence, wrapped; the pane
// starts at its top again when the selection moves to another item.
func (v *clusterView) whyBody() []string {
	if len(v.waiting) == 0 {
		return nil
	}
	st := v.styles
	it := v.waiting[v.waitCursor]
	if it.key != v.whyOf {
		v.why.home()
		v.whyOf = it.key
	}
	w := max(20, v.width-4)
	var lines []string
	for _, l := range wrap(v.mask.apply(it.why), w) {
		lines = append(lines, "  "+st.CardText.Render(l))
	}
	for _, e := range it.evidence {
		for _, l := range wrap(v.mask.apply(e), w-2) {
			lines = append(lines, "    "+st.CardMuted.Render(l))
		}
	}
	return lines
}

// maxWhy is the why's lines: fewer on a short terminal, so that the
// nodes keep three rows.
func (v *clusterView) maxWhy() int {
	most := maxWhyLines
	if v.height < 30 {
		most = maxWhyLines - 3
	}
	// What the rest takes with the nodes at three rows: on a short
	// terminal the why gives way, so that the quotas and the
	// reconciliation stay on screen (at 60x16 they were cut off).
	rest := 3 + 2 + min(3, max(len(v.rows), 1)) + 1 + 1 + v.waitHeight() + 1 + v.quotaHeight() + len(v.reconcileLines())
	return max(3, min(most, v.height-rest)) // its rule, a line, and what is below
}

func (v *clusterView) quotaLines() []string {
	st := v.styles
	lines := []string{st.CardLabel.Render(fmt.Sprintf("Quotas (%s GPU limits)", v.count("resourcequotas", len(v.quotas))))}
	if u := v.unknownLine("resourcequotas", "quotas unknown"); u != "" && len(v.quotas) == 0 {
		return append(lines, u)
	}
	if len(v.quotas) == 0 {
		return append(lines, st.Hint.Render("  no ResourceQuota limits a GPU resource"))
	}
	qw, rw := 8, 8 // columns as wide as the rows shown need, at most 28 and 26
	for _, q := range v.quotas[:min(len(v.quotas), maxQuotaRows)] {
		qw, rw = max(qw, lipgloss.Width(q.ns+"/"+q.name)), max(rw, lipgloss.Width(q.res))
	}
	qw, rw = min(qw, 28), min(rw, 26)
	for i, q := range v.quotas {
		if i == maxQuotaRows {
			break
		}
		used := cmp.Or(q.usedText, "?")
		full := ""
		if q.full {
			full = "  FULL"
		}
		lines = append(lines, st.TableRow.Render(fmt.Sprintf("  %s %s %s %s/%s used%s", cell(q.ns+"/"+q.name, qw), cell(q.res, rw), bar(q.used, q.hard, q.hard, v.barCells()), used, q.hardText, full)))
	}
	return lines
}

// usedCell is what the reconciliation says of a node's row: of the
// devices pods hold there, how many are busy and how many idle (whole
// GPUs on the GPU row, MIG slices of every profile on the first MIG row);
// "—" before a probe run.
func (v *clusterView) usedCell(node string, r nodeRow) string {
	nu, ok := v.use[node]
	switch {
	case v.rec == nil || !ok:
		return "—"
	case !nu.Probed:
		return "not probed"
	case !strings.HasPrefix(r.res, "nvidia.com/mig-"):
		return fmt.Sprintf("%d busy, %d idle", nu.Usage.Busy.GPUs, nu.Usage.Idle.GPUs)
	case v.firstMIGRow(r) && v.width < narrowCluster: // the row's resource says they are slices
		return fmt.Sprintf("%d busy, %d idle", nu.Usage.Busy.MIGSlices, nu.Usage.Idle.MIGSlices)
	case v.firstMIGRow(r):
		return fmt.Sprintf("%d busy, %d idle slices", nu.Usage.Busy.MIGSlices, nu.Usage.Idle.MIGSlices)
	}
	return ""
}

// firstMIGRow reports whether r is its node's first MIG row.
func (v *clusterView) firstMIGRow(r nodeRow) bool {
	for _, o := range v.rows {
		if o.node == r.node && strings.HasPrefix(o.res, "nvidia.com/mig-") {
			return o == r
		}
	}
	return false
}

// reconcileLine is the reconciliation of what pods hold with what runs
// on the GPUs: not read until the Fleet has probed the hosts.
func (v *clusterView) reconcileLine() string {
	st := v.styles
	label := st.CardLabel.Render("Reconciliation") + " "
	if v.status.Denies("pods") || v.status.Denies("nodes") {
		return label + st.Error.Render("unknown: the server refuses to list nodes or pods")
	}
	if !v.status.Knows("pods") || !v.status.Knows("nodes") {
		return label + st.Hint.Render("unknown: nodes or pods not listed yet")
	}
	if v.rec == nil {
		return label + st.Hint.Render("not read yet: probe the hosts (Fleet, p) to join what pods hold with what runs on the GPUs")
	}
	t := v.rec.Totals
	u := t.Usage
	line := fmt.Sprintf("%d of %d nodes probed · pods hold %d GPUs: %d busy, %d idle, %d starting, %d unknown · %d processes with no allocation",
		t.Probed, t.Nodes, u.Allocated.GPUs, u.Busy.GPUs, u.Idle.GPUs, u.Starting.GPUs, u.Unknown.GPUs, t.Unallocated)
	if t.StrandedMIG > 0 {
		line += fmt.Sprintf(" · %d MIG slices stranded", t.StrandedMIG)
	}
	return label + st.CardMuted.Render(line)
}

// reconcileLines is the reconciliation line wrapped to the tab's width,
// its own lines indented under the label; not read yet, it has a short
// form for a narrow terminal.
func (v *clusterView) reconcileLines() []string {
	line := v.reconcileLine()
	if v.rec == nil && lipgloss.Width(line) > v.width {
		line = v.styles.CardLabel.Render("Reconciliation") + " " + v.styles.Hint.Render("not read yet: probe the hosts first (Fleet, p)")
	}
	return hanging(line, max(v.width-1, 20), 2)
}
