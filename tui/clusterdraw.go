package tui

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/gpulab/gpulab/cluster"
)

// Drawing the Cluster tab. View draws only the rows on screen, from what
// refresh computed: a cluster of thousands of nodes costs no more than a
// screenful.

// barWidth is the cells of a bar between its brackets.
const barWidth = 16

// View implements Component.
func (v *clusterView) View() string {
	st := v.styles
	if len(v.sources) == 0 {
		return strings.Join([]string{st.CardTitle.Render("Cluster"), "",
			st.Hint.Render("No Kubernetes context in the inventory ([[kube]] tables name kubeconfig and context).")}, "\n")
	}
	lines := []string{v.titleLine(), v.statusLine(), ""}
	lines = append(lines, v.nodeLines()...)
	lines = append(lines, "")
	lines = append(lines, v.waitLines()...)
	lines = append(lines, v.whyLines()...)
	lines = append(lines, v.quotaLines()...)
	lines = append(lines, v.reconcileLine())
	return strings.Join(lines, "\n")
}

func (v *clusterView) titleLine() string {
	st := v.styles
	src := v.sources[v.current]
	line := st.CardTitle.Render("Cluster") + " " + st.CardLabel.Render("context "+src.Name)
	if src.Simulated {
		line += " " + st.Badge.Render(" SIMULATED ")
	}
	if len(v.sources) > 1 {
		line += st.CardMuted.Render(fmt.Sprintf("  (%d of %d: c for the next)", v.current+1, len(v.sources)))
	}
	if src.Live != nil {
		line += st.CardMuted.Render(fmt.Sprintf("  %d GPU nodes · %d pods · %d waiting", len(v.nodes), v.pods, len(v.waiting)))
	}
	return line
}

// statusLine is the connection: an error is drawn as one, the tab goes on
// showing what the server said last.
func (v *clusterView) statusLine() string {
	st := v.styles
	src := v.sources[v.current]
	switch {
	case src.Live == nil:
		return st.Error.Render("not connected: " + src.Err)
	case v.status.State == cluster.Lost:
		return st.Error.Render(v.status.String())
	case v.status.State == cluster.Waiting:
		return st.Hint.Render(v.status.String())
	}
	line := st.CardMuted.Render(v.status.String())
	if src.Simulated {
		line = st.CardMuted.Render("simulated API server (a client-go fake fed by the fleet): synced")
	}
	if v.status.Warning != "" {
		line += "  " + st.Error.Render("warning: "+v.status.Warning)
	}
	return line
}

func (v *clusterView) nameWidth() int {
	w := 4
	for _, n := range v.nodes {
		w = max(w, len(n.Name))
	}
	return min(w, 28)
}

func (v *clusterView) resWidth() int {
	w := 8
	for _, r := range v.rows {
		w = max(w, len(r.res))
	}
	return min(w, 26)
}

func (v *clusterView) nodeLines() []string {
	st := v.styles
	nw, rw := v.nameWidth(), v.resWidth()
	lines := []string{st.CardLabel.Render(fmt.Sprintf("GPU nodes (%d)", len(v.nodes))),
		st.TableHeader.Render(fmt.Sprintf("  %-*s %-9s %-*s %-*s %-14s %s", nw, "NODE", "STATUS", rw, "RESOURCE", barWidth+2, "ALLOCATED", "ALLOC/ABLE/CAP", "USED"))}
	n := v.nodeHeight()
	if len(v.rows) == 0 {
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
		name, status = n.Name, "Ready"
		if !n.Ready {
			status = "NotReady"
		}
		if n.Unschedulable {
			status = "Cordoned"
		}
	}
	alloc, able, capa := n.Allocated[r.res], n.Allocatable[r.res], n.Capacity[r.res]
	used := v.usedCell(n.Name, r)
	text := fmt.Sprintf("%-*s %-9s %-*s %s %-14s %s", nw, clipText(name, nw), status, rw, clipText(r.res, rw), bar(alloc, able, capa), fmt.Sprintf("%d/%d/%d", alloc, able, capa), used)
	return v.cursorLine(text, v.focus == focusNodes && i == v.nodeCursor)
}

// cursorLine marks the selected row with ▶ (so that it shows without
// colour) and its style.
func (v *clusterView) cursorLine(text string, selected bool) string {
	if selected {
		return v.styles.TableCursor.Render("▶ " + text)
	}
	return v.styles.TableRow.Render("  " + text)
}

// bar draws allocated (█), free allocatable (░) and capacity the device
// plugin does not offer (×, unhealthy GPUs) in barWidth cells.
func bar(alloc, allocatable, capacity int64) string {
	total := max(capacity, allocatable, 1)
	cells := func(n int64) int { return int((min(max(n, 0), total)*barWidth + total/2) / total) }
	a := cells(alloc)
	f := max(0, cells(allocatable)-a)
	return "[" + strings.Repeat("█", a) + strings.Repeat("░", f) + strings.Repeat("×", max(0, barWidth-a-f)) + "]"
}

func clipText(s string, w int) string {
	if len(s) <= w {
		return s
	}
	return s[:max(0, w-1)] + "…"
}

func (v *clusterView) waitLines() []string {
	st := v.styles
	lines := []string{st.CardLabel.Render(fmt.Sprintf("Waiting (%d): pods the scheduler has not placed, and workloads with no pod", len(v.waiting)))}
	if len(v.waiting) == 0 {
		return append(lines, st.Hint.Render("  nothing waits"))
	}
	nw := 8
	for _, it := range v.waiting {
		nw = max(nw, len(it.ns)+1+len(it.name))
	}
	nw = min(nw, 44)
	for i := v.waitOffset; i < len(v.waiting) && i < v.waitOffset+v.waitHeight(); i++ {
		it := v.waiting[i]
		text := fmt.Sprintf("%-*s %-4s %-18s %s", nw, clipText(it.ns+"/"+it.name, nw), it.kind, it.asks, it.reason)
		lines = append(lines, v.cursorLine(text, v.focus == focusWaiting && i == v.waitCursor))
	}
	return lines
}

// whyLines is the selected waiting item's paragraph and evidence, masked
// before it is wrapped (so that no host name is split where the mask
// cannot see it), at most maxWhyLines.
func (v *clusterView) whyLines() []string {
	if len(v.waiting) == 0 {
		return nil
	}
	st := v.styles
	it := v.waiting[v.waitCursor]
	title := " why: " + it.ns + "/" + it.name + " "
	lines := []string{st.Rule.Render("──" + title + strings.Repeat("─", max(0, v.width-len([]rune(title))-2)))}
	w := max(20, v.width-4)
	for _, l := range wrap(v.mask.apply(it.why), w) {
		lines = append(lines, "  "+st.CardText.Render(l))
	}
	for _, e := range it.evidence {
		for _, l := range wrap(v.mask.apply(e), w-2) {
			lines = append(lines, "    "+st.CardMuted.Render(l))
		}
	}
	if n := v.maxWhy(); len(lines) > n && n > 1 { // cut, and said to be
		return append(lines[:n-1], st.Hint.Render(fmt.Sprintf("    … %d more lines of evidence", len(lines)-n+1)))
	}
	return clipLines(lines, v.maxWhy())
}

// maxWhy is the why's lines: fewer on a short terminal, so that the
// nodes keep three rows.
func (v *clusterView) maxWhy() int {
	if v.height < 30 {
		return maxWhyLines - 3
	}
	return maxWhyLines
}

func (v *clusterView) quotaLines() []string {
	st := v.styles
	lines := []string{st.CardLabel.Render(fmt.Sprintf("Quotas (%d GPU limits)", len(v.quotas)))}
	if len(v.quotas) == 0 {
		return append(lines, st.Hint.Render("  no ResourceQuota limits a GPU resource"))
	}
	for i, q := range v.quotas {
		if i == maxQuotaRows {
			break
		}
		used := cmp.Or(q.usedText, "?")
		full := ""
		if q.full {
			full = "  FULL"
		}
		lines = append(lines, st.TableRow.Render(fmt.Sprintf("  %-28s %-26s %s %s/%s used%s", clipText(q.ns+"/"+q.name, 28), q.res, bar(q.used, q.hard, q.hard), used, q.hardText, full)))
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
