package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/fence"
	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/internal/visible"
)

// The Cluster tab's part of the operating loop: the nodes gpulab fenced
// (their annotations: since when, by whom, why, the record, and drift),
// and F and R on the selected node, when it is a host of the Fleet,
// through the same dialog as the Fleet's.

// fencedNode is a node gpulab fenced, as its annotations say.
type fencedNode struct {
	node  string
	fence *fence.Fence
}

// fencedNodes are the nodes of o that carry a gpulab fence, by name.
func fencedNodes(o *cluster.Objects) []fencedNode {
	var out []fencedNode
	for _, n := range o.Nodes {
		if f := fence.ReadFence(n); f != nil {
			out = append(out, fencedNode{n.Name, f})
		}
	}
	slices.SortFunc(out, func(a, b fencedNode) int { return strings.Compare(a.node, b.node) })
	return out
}

// fenceLines is a line naming the nodes gpulab fenced, the first's
// fence whole, or none when there is none.
func (v *clusterView) fenceLines() []string {
	if len(v.fences) == 0 {
		return nil
	}
	var names []string
	for _, f := range v.fences {
		names = append(names, v.mask.apply(visible.String(f.node)))
	}
	f := v.fences[0].fence
	first := fmt.Sprintf("since %s by %s (record %s)", f.At.UTC().Format(time.RFC3339), visible.String(f.By), visible.String(f.Record))
	if len(f.Drift) > 0 {
		first += ", DRIFT: " + visible.String(strings.Join(f.Drift, "; "))
	}
	first += ": " + visible.String(f.Reason)
	line := "⛔ fenced by gpulab: " + names[0] + " " + first
	if len(names) > 1 {
		line = "⛔ fenced by gpulab: " + strings.Join(names, ", ") + " (" + names[0] + " " + first + ")"
	}
	return []string{v.styles.Error.Render(line)}
}

// selectedNode is the node under the cursor of the nodes' list, "" when
// the cursor is in the waiting list or there is no node.
func (v *clusterView) selectedNode() string {
	if v.focus != focusNodes || v.nodeCursor >= len(v.rows) {
		return ""
	}
	return v.nodes[v.rows[v.nodeCursor].node].Name
}

// canFence says whether F and R act here: a fencer, and a node under
// the cursor.
func (v *clusterView) canFence() bool { return v.fencer != nil && v.selectedNode() != "" }

// openFence opens the fence (or release) dialog on the selected node,
// when it is a host of the Fleet (the evidence is gathered on it); its
// reason what the cluster says of the node's GPUs.
func (v *clusterView) openFence(release bool) tea.Cmd {
	name := v.selectedNode()
	i, ok := v.hostIndex(name)
	if !ok {
		v.notice = fmt.Sprintf("%s is no host of the Fleet, whose evidence a fence gathers: gpulab fence --via kube -H %s --reason ... reaches it through the API server",
			visible.String(name), visible.String(name))
		return nil
	}
	reason := ""
	if n := v.nodes[v.rows[v.nodeCursor].node]; len(n.Health) > 0 {
		reason = text.Cut(visible.String(n.Health[0].String()), 400)
	}
	d, cmd := newFenceDialog(v.fencer, []int{i}, visible.String(name), reason, release, v.width, v.height)
	v.fence = d
	return cmd
}

// Running is the hosts a fence under way works on: a quit waits for it.
func (v *clusterView) Running() int { return v.fence.applying() }

// StopRun stops the fence under way; its outcome and record still come.
func (v *clusterView) StopRun(bool) { v.fence.stop() }

// updateFence hands the open dialog what is its; handled says msg was.
func (v *clusterView) updateFence(msg tea.Msg) (tea.Cmd, bool) {
	switch msg := msg.(type) {
	case fencePlanned, fenceApplied:
		if v.fence != nil {
			cmd, _ := v.fence.update(msg)
			return cmd, true
		}
	case tea.KeyMsg:
		if v.fence != nil {
			cmd, closed := v.fence.update(msg)
			if closed {
				v.fence = nil
			}
			return cmd, true
		}
		v.notice = ""
		if (key.Matches(msg, fenceKey) || key.Matches(msg, releaseKey)) && v.canFence() {
			return v.openFence(key.Matches(msg, releaseKey)), true
		}
	}
	return nil, false
}
