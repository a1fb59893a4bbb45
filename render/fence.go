package render

import (
	"fmt"
	"strings"

	"github.com/gpulab/gpulab/fence"
	"github.com/gpulab/gpulab/internal/visible"
)

// FencePlans are the plans as fence and release print them and the
// workbench's confirmation shows them: for each node, each change (or
// why nothing changes), then what is left as it is. Where the plans act
// in more than one scheduler (a host that is a node of Kubernetes and of
// Slurm), each node says which: "dgx03 (slurm)".
func FencePlans(plans []fence.Plan) []string {
	mixed := MixedIn(plans, func(p fence.Plan) string { return p.In })
	var out []string
	for _, p := range plans {
		out = append(out, fencePlan(p, mixed)...)
	}
	return out
}

// FenceResults are the outcomes as FencePlans shows the plans.
func FenceResults(results []fence.Result, release bool) []string {
	mixed := MixedIn(results, func(r fence.Result) string { return r.In })
	var out []string
	for _, r := range results {
		out = append(out, fenceResult(r, release, mixed)...)
	}
	return out
}

// MixedIn says whether list holds more than one scheduler (in reads an
// item's: fence.Plan.In), where the outputs name each item's.
func MixedIn[T any](list []T, in func(T) string) bool {
	for _, x := range list {
		if in(x) != in(list[0]) {
			return true
		}
	}
	return false
}

// nodeIn is the node as a plan's line names it.
func nodeIn(p fence.Plan, mixed bool) string {
	if mixed {
		return visible.String(p.Node + " (" + p.In + ")")
	}
	return visible.String(p.Node)
}

func fencePlan(p fence.Plan, mixed bool) []string {
	node := nodeIn(p, mixed)
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

// fenceResult is one node's outcome: "gpu07: fenced (cordon, taint,
// annotate)", or the outcome and why.
func fenceResult(r fence.Result, release, mixed bool) []string {
	node := nodeIn(r.Plan, mixed)
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
