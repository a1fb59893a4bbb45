package tui

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/internal/visible"
	"github.com/gpulab/gpulab/render"
)

// LiveCluster is a cluster the Cluster tab follows (app.LiveCluster):
// cluster.Live is one.
type LiveCluster = app.LiveCluster

// ClusterSource is one cluster (a kubeconfig context) the Cluster tab can
// show (app.ClusterSource; app.Clusters starts them).
type ClusterSource = app.ClusterSource

// clusterComputedMsg is source's cluster computed again for a reason of
// the tab's own (a probe run to reconcile with), not a change.
type clusterComputedMsg struct {
	source int
	data   clusterData
}

// clusterChangedMsg is source's cluster after a change, computed off the
// workbench's loop; open is false once the source has stopped.
type clusterChangedMsg struct {
	source int
	data   clusterData
	open   bool
}

// clusterData is what the tab draws of one cluster, computed from a
// snapshot (GPU nodes, what waits and why, quotas): at 1,000 nodes and
// 20,000 pods it takes tens of milliseconds, so it is computed in a
// command, never in Update or View.
type clusterData struct {
	status  cluster.LiveStatus
	nodes   []cluster.GPUNode
	rows    []nodeRow
	waiting []waitItem
	quotas  []quotaRow
	pods    int
	// rec is the reconciliation of what pods hold with the Fleet's latest
	// probe run, and use its nodes' side; nil before a probe run.
	rec *cluster.Reconciliation
	use map[string]cluster.NodeUse
	// fences are the nodes gpulab fenced (page_cluster_fence.go).
	fences []fencedNode
}

// clusterFocus is the list the cursor moves in.
type clusterFocus int

const (
	focusWaiting clusterFocus = iota
	focusNodes
)

// nodeRow is one GPU resource of one node: a node with MIG slices has a
// row per profile.
type nodeRow struct {
	node  int // index in nodes
	res   string
	first bool // the node's first row: its name and status are drawn
}

// waitItem is one entry of the waiting list: a pod the scheduler has not
// placed, or a workload with no pod (cluster.Blocked). Its texts are the
// cluster's, escaped (visible.String): a name or an event's message may
// hold control characters that would act on the terminal.
type waitItem struct {
	key            string // namespace/kind/name as the cluster says them: the selection follows it
	ns, name, kind string
	asks           string // "8 nvidia.com/gpu"; "" for a workload with no pod
	reason         string
	why            string
	evidence       []string
}

// quotaRow is one GPU resource of one ResourceQuota; its texts escaped.
type quotaRow struct {
	ns, name, res      string
	used, hard         int64
	usedText, hardText string // as the quota says them ("" used: not counted yet)
	full               bool
}

// clusterView is the Cluster tab: the GPU nodes with capacity,
// allocatable and allocated bars, what waits (pending pods and refused
// Jobs) with the selected one's why and evidence, the quotas, and the
// reconciliation of allocated with used. It follows its cluster live;
// everything it draws is computed when a change arrives, so View draws
// only the rows on screen.
type clusterView struct {
	sources []ClusterSource
	current int
	styles  Styles
	keys    clusterKeys
	mask    *masker

	// What the current source showed at its last change.
	clusterData
	// probes is the Fleet's latest probe run (FleetProbedMsg), which
	// every computation reconciles the cluster with.
	probes *nodeProbes

	focus      clusterFocus
	nodeCursor int
	nodeOffset int
	waitCursor int
	waitOffset int
	// chosen says the operator has moved a list's cursor: from then on
	// the selection stays on its item as the list changes; before, it
	// stays on the list's first row (what arrives first is a matter of
	// timing, not a choice).
	nodeChosen, waitChosen bool
	// why is where the selected item's why pane is scrolled to, for the
	// item whyOf (another item's why starts at its top).
	why   scroller
	whyOf string

	// fencer fences and releases the selected node (F, R) when it is a
	// host of the Fleet: hostIndex finds it; fence is the dialog open,
	// notice why F did nothing.
	fencer    Fencer
	hostIndex func(node string) (int, bool)
	fence     *fenceDialog
	notice    string

	width, height int
}

func newClusterView(sources []ClusterSource, st Styles) *clusterView {
	v := &clusterView{sources: sources, styles: st, probes: &nodeProbes{}, keys: DefaultClusterKeys()}
	v.refresh()
	return v
}

func (v *clusterView) Title() string   { return "Cluster" }
func (v *clusterView) Capturing() bool { return v.fence != nil }
func (v *clusterView) SetSize(w, h int) {
	v.width, v.height = w, h
	v.scroll()
	if v.fence != nil {
		v.fence.width, v.fence.height = w, h
		v.fence.draw()
	}
}
func (v *clusterView) ShortHelp() []key.Binding {
	if v.fence != nil {
		return v.fence.keys()
	}
	cur, n := v.waitCursor, len(v.waiting)
	if v.focus == focusNodes {
		cur, n = v.nodeCursor, len(v.rows)
	}
	keys := append(moves(v.keys.Up, v.keys.Down, cur, n), v.keys.Focus)
	if len(v.sources) > 1 { // c with one context does nothing
		keys = append(keys, v.keys.Context)
	}
	if len(v.whyBody()) > v.maxWhy()-1 {
		keys = append(keys, v.keys.WhyDown)
	}
	if v.canFence() {
		keys = append(keys, fenceKey, releaseKey)
	}
	return keys
}
func (v *clusterView) FullHelp() [][]key.Binding {
	k := v.keys
	second := []key.Binding{k.Focus, k.WhyUp}
	if len(v.sources) > 1 {
		second = append(second, k.Context)
	}
	if v.fencer != nil {
		second = append(second, fenceKey, releaseKey)
	}
	return [][]key.Binding{{k.Up, k.Down, k.PageUp, k.PageDown, k.Home, k.End}, second}
}

// Status implements Component: the context, its state and counts.
func (v *clusterView) Status() string {
	if len(v.sources) == 0 {
		return "no cluster"
	}
	if v.notice != "" {
		return v.notice
	}
	src := v.sources[v.current]
	if src.Live == nil {
		return visible.String(src.Name) + ": not connected"
	}
	return fmt.Sprintf("%s: %s, %s GPU nodes, %s waiting", visible.String(src.Name), v.status.State, v.count("nodes", len(v.nodes)), v.count("pods", len(v.waiting)))
}

// Init implements Component: it waits for each source's changes.
func (v *clusterView) Init() tea.Cmd {
	var cmds []tea.Cmd
	for i := range v.sources {
		cmds = append(cmds, v.wait(i))
	}
	return tea.Batch(cmds...)
}

// wait is a command that returns at the source's next change.
func (v *clusterView) wait(i int) tea.Cmd {
	l := v.sources[i].Live
	if l == nil {
		return nil
	}
	ch, probes := l.Changes(), v.probes
	return func() tea.Msg {
		_, open := <-ch
		return clusterChangedMsg{source: i, data: computeCluster(l, probes.get()), open: open}
	}
}

// recompute computes the current source again, off the loop.
func (v *clusterView) recompute() tea.Cmd {
	if len(v.sources) == 0 || v.sources[v.current].Live == nil {
		return nil
	}
	i, l, probes := v.current, v.sources[v.current].Live, v.probes
	return func() tea.Msg { return clusterComputedMsg{source: i, data: computeCluster(l, probes.get())} }
}

// Update implements Component.
func (v *clusterView) Update(msg tea.Msg) (Component, tea.Cmd) {
	if cmd, handled := v.updateFence(msg); handled {
		return v, cmd
	}
	switch msg := msg.(type) {
	case clusterChangedMsg:
		if msg.source == v.current {
			v.show(msg.data)
		}
		if !msg.open {
			return v, nil
		}
		return v, v.wait(msg.source)
	case clusterComputedMsg:
		if msg.source == v.current {
			v.show(msg.data)
		}
	case FleetProbedMsg:
		v.probes.set(msg)
		return v, v.recompute()
	case tea.KeyMsg:
		if !v.scrollWhy(msg) {
			v.handleKey(msg)
		}
	case tea.MouseMsg:
		v.scrollWhy(msg)
	}
	return v, nil
}

// scrollWhy moves the why pane for [ and ] or the wheel; it reports
// whether msg was one of those.
func (v *clusterView) scrollWhy(msg tea.Msg) bool {
	lines, height := v.whyBody(), v.maxWhy()-1
	// No sideways keys: the why is wrapped to the pane's width.
	keys := ScrollKeys{PageUp: v.keys.WhyUp, PageDown: v.keys.WhyDown}
	return v.why.handle(msg, keys, lines, v.width, height)
}

func (v *clusterView) handleKey(km tea.KeyMsg) {
	k := v.keys
	cur, chosen := &v.waitCursor, &v.waitChosen
	if v.focus == focusNodes {
		cur, chosen = &v.nodeCursor, &v.nodeChosen
	}
	if key.Matches(km, k.Up, k.Down, k.PageUp, k.PageDown, k.Home, k.End) {
		*chosen = true
	}
	switch {
	case key.Matches(km, k.Up):
		*cur--
	case key.Matches(km, k.Down):
		*cur++
	case key.Matches(km, k.PageUp):
		*cur -= v.nodeHeight()
	case key.Matches(km, k.PageDown):
		*cur += v.nodeHeight()
	case key.Matches(km, k.Home):
		*cur = 0
	case key.Matches(km, k.End):
		*cur = 1 << 30
	case key.Matches(km, k.Focus):
		v.focus = 1 - v.focus
	case key.Matches(km, k.Context) && len(v.sources) > 1:
		v.current = (v.current + 1) % len(v.sources)
		v.nodeCursor, v.waitCursor = 0, 0
		v.nodeChosen, v.waitChosen = false, false
		v.refresh()
	}
	v.scroll()
}

// show replaces what the tab shows with d, the selections the operator
// made kept on the same waiting item and node row (by key, not by place:
// a pod deleted above the selected one does not move the selection to
// another). A list whose cursor was never moved keeps its first row.
func (v *clusterView) show(d clusterData) {
	waitKey, nodeKey := "", ""
	if v.waitChosen && v.waitCursor < len(v.waiting) {
		waitKey = v.waiting[v.waitCursor].key
	}
	if v.nodeChosen && v.nodeCursor < len(v.rows) {
		nodeKey = v.rowKey(v.rows[v.nodeCursor])
	}
	v.clusterData = d
	if i := slices.IndexFunc(v.waiting, func(it waitItem) bool { return it.key == waitKey }); i >= 0 {
		v.waitCursor = i
	}
	if i := slices.IndexFunc(v.rows, func(r nodeRow) bool { return v.rowKey(r) == nodeKey }); i >= 0 {
		v.nodeCursor = i
	}
	v.scroll()
}

// rowKey is r by its node's name and resource, which stay when nodes
// come and go.
func (v *clusterView) rowKey(r nodeRow) string {
	return v.nodes[r.node].Name + "\x00" + r.res
}

// refresh recomputes what the tab shows from the current source, on the
// spot: when the tab starts and when it switches context.
func (v *clusterView) refresh() {
	v.clusterData = clusterData{}
	if len(v.sources) > 0 && v.sources[v.current].Live != nil {
		v.clusterData = computeCluster(v.sources[v.current].Live, v.probes.get())
	}
	v.scroll()
}

// computeCluster is what the tab draws of l now, reconciled with probes
// (by node name) when there are any.
func computeCluster(l LiveCluster, probes map[string]cluster.NodeProbe) clusterData {
	d := clusterData{status: l.Status()}
	o := l.Snapshot()
	d.pods = len(o.Pods)
	d.nodes = o.GPUNodes()
	for i, n := range d.nodes {
		for k, res := range render.NodeResources(n) {
			d.rows = append(d.rows, nodeRow{node: i, res: res, first: k == 0})
		}
	}
	d.waiting = waitItems(o)
	d.quotas = quotaRows(o.Quotas(""))
	d.fences = fencedNodes(o)
	if probes != nil {
		d.reconcile(o, probes)
	}
	return d
}

// reconcile joins the GPU nodes with the probe run: a node is probed when
// a Fleet host has its name; hosts that are no node are left out.
func (d *clusterData) reconcile(o *cluster.Objects, probes map[string]cluster.NodeProbe) {
	byNode := map[string]cluster.NodeProbe{}
	for _, n := range d.nodes {
		np, ok := probes[n.Name]
		if !ok {
			np = cluster.NodeProbe{Err: "no Fleet host of this name"}
		}
		byNode[n.Name] = np
	}
	r := cluster.Reconcile(o, byNode)
	d.rec, d.use = &r, map[string]cluster.NodeUse{}
	for _, nu := range r.Nodes {
		d.use[nu.Node] = nu
	}
}

// waitItems are the pending pods, then the workloads with no pod (a
// quota refused them, Kueue holds them).
func waitItems(o *cluster.Objects) []waitItem {
	var out []waitItem
	for _, p := range o.Pending("") {
		out = append(out, waitItem{ns: p.Namespace, name: p.Name, kind: "Pod", asks: resourceList(p.GPUs),
			reason: p.Reason, why: p.Why, evidence: p.Evidence}.escaped())
	}
	for _, b := range o.Blocked("") {
		it := waitItem{ns: b.Namespace, name: b.Name, kind: b.Kind, reason: "held by " + b.By, why: b.Why, evidence: b.Evidence}
		if b.Count > 1 {
			it.reason += fmt.Sprintf(" (×%d)", b.Count)
		}
		out = append(out, it.escaped())
	}
	return out
}

// escaped is it with every text escaped, each as one line (a message's
// line break would break the layout as well).
func (it waitItem) escaped() waitItem {
	it.key = it.ns + "/" + it.kind + "/" + it.name
	it.ns, it.name, it.kind, it.asks = visible.String(it.ns), visible.String(it.name), visible.String(it.kind), visible.String(it.asks)
	it.reason, it.why = visible.String(it.reason), visible.String(it.why)
	ev := make([]string, len(it.evidence))
	for i, e := range it.evidence {
		ev[i] = visible.String(e)
	}
	it.evidence = ev
	return it
}

func resourceList(m map[string]int64) string {
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d %s", m[r], r))
	}
	return strings.Join(parts, ", ")
}

// quotaRows are the quotas' GPU resources.
func quotaRows(qs []cluster.Quota) []quotaRow {
	var out []quotaRow
	for _, q := range qs {
		for _, r := range q.Resources {
			if !r.GPU {
				continue
			}
			row := quotaRow{ns: visible.String(q.Namespace), name: visible.String(q.Name), res: visible.String(r.Name),
				hardText: visible.String(r.Hard), usedText: visible.String(r.Used), full: r.Full}
			// GPU quotas count devices: whole numbers ("16"); the
			// text is drawn as the quota says it.
			row.hard, _ = strconv.ParseInt(r.Hard, 10, 64)
			row.used, _ = strconv.ParseInt(r.Used, 10, 64)
			out = append(out, row)
		}
	}
	return out
}

// The sections' heights: what waits and the quotas take what they need
// up to a cap, the why its paragraph; the nodes take the rest.
const (
	maxWaitRows  = 5
	maxQuotaRows = 3
	maxWhyLines  = 8
)

func (v *clusterView) waitHeight() int  { return min(max(len(v.waiting), 1), maxWaitRows) }
func (v *clusterView) quotaHeight() int { return min(max(len(v.quotas), 1), maxQuotaRows) }

// nodeHeight is the node rows on screen: the body less the title and
// status lines and a blank, the nodes' two header lines and a blank, the
// waiting list with its header, the why, the quotas with their header
// and the reconciliation line; no more than there are rows.
func (v *clusterView) nodeHeight() int {
	fixed := 3 + len(v.fenceLines()) + 3 + 1 + v.waitHeight() + len(v.whyLines()) + 1 + v.quotaHeight() + len(v.reconcileLines())
	return min(max(len(v.rows), 1), max(3, v.height-fixed))
}

// scroll keeps the cursors in range and on screen. The cursors come in
// range first: the panes' heights depend on what the wait cursor is on.
func (v *clusterView) scroll() {
	v.nodeCursor = max(0, min(v.nodeCursor, len(v.rows)-1))
	v.waitCursor = max(0, min(v.waitCursor, len(v.waiting)-1))
	v.nodeCursor, v.nodeOffset = follow(v.nodeCursor, v.nodeOffset, len(v.rows), v.nodeHeight())
	v.waitCursor, v.waitOffset = follow(v.waitCursor, v.waitOffset, len(v.waiting), v.waitHeight())
}

// nodeProbes holds the latest probe run as the reconciliation takes it,
// by node: a host is the node of its name. Commands read it when they
// compute, so a change computed after a probe run sees that run.
type nodeProbes struct {
	p atomic.Pointer[map[string]cluster.NodeProbe]
}

func (n *nodeProbes) set(msg FleetProbedMsg) {
	m := map[string]cluster.NodeProbe{}
	for i, h := range msg.Hosts {
		np := cluster.NodeProbe{Host: h, Err: "not probed"}
		if i < len(msg.Outcomes) {
			o := msg.Outcomes[i]
			np.Snapshot, np.Err = o.Snapshot, o.Err
			if o.Snapshot != nil && !o.Snapshot.NVML.Available {
				np.Snapshot, np.Err = nil, "host "+h+" has no NVML"
			}
		}
		m[h] = np
	}
	n.p.Store(&m)
}

// get is the latest run's probes, nil before any.
func (n *nodeProbes) get() map[string]cluster.NodeProbe {
	if p := n.p.Load(); p != nil {
		return *p
	}
	return nil
}
