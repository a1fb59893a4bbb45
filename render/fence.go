package render

import (
	"fmt"
	"strings"

	"github.com/gpulab/gpulab/fence"
	"github.com/gpulab/gpulab/internal/visible"
)

// FencePlan is one node's plan as fence and release print it and the
// workbench's confirmation shows it: the node, then each change (or why
// nothing changes), then what is left as it is.
func FencePlan(p fence.Plan) []string {
	node := visible.String(p.Node)
	var out []string
	switch {
	case p.Error != "":
		out = append(out, node+": not read: "+visible.String(p.Error))
	case p.Refused != "":
		out = append(out, node+": refused: "+visible.String(p.Refused))
	case len(p.Changes) == 0:
		out = append(out, node+": unchanged: "+visible.String(p.Unchanged))
	default:
		out = append(out, node+":")
		for _, c := range p.Changes {
			out = append(out, fmt.Sprintf("  %-10s %s", c.Op, visible.String(c.What)))
		}
	}
	for _, l := range p.Left {
		out = append(out, fmt.Sprintf("  %-10s %s", "left", visible.String(l)))
	}
	return out
}

// FenceResult is one node's outcome: "gpu07: fenced (cordon, taint,
// annotate)", or the outcome and why.
func FenceResult(r fence.Result, release bool) []string {
	node := visible.String(r.Node)
	var out []string
	if r.Outcome == fence.Done {
		var ops []string
		for _, c := range r.Changes {
			ops = append(ops, string(c.Op))
		}
		done := "fenced"
		if release {
			done = "released"
		}
		out = append(out, fmt.Sprintf("%s: %s (%s)", node, done, strings.Join(ops, ", ")))
	} else {
		out = append(out, fmt.Sprintf("%s: %s: %s", node, r.Outcome, visible.String(r.Detail)))
	}
	for _, l := range r.Left {
		out = append(out, "  left: "+visible.String(l))
	}
	if r.NotDrained != "" {
		out = append(out, "  "+visible.String(r.NotDrained))
	}
	return out
}
