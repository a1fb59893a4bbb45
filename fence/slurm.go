package fence

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/gpulab/gpulab/internal/clip"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/step/parse"
)

// SlurmPrefix begins the reason of every drain gpulab sets, as NHC's
// begin "NHC:": a drain whose reason does not begin so is another
// tool's (or a person's), and gpulab never touches it.
const SlurmPrefix = "gpulab: "

// OpDrain and OpUndrain are Slurm's changes.
const (
	OpDrain   Op = "drain"
	OpUndrain Op = "undrain"
)

// SlurmReason is the drain reason gpulab sets for req:
// "gpulab: XID 79 (record 20261206-021400-gpu07)".
func SlurmReason(req Request) string {
	return SlurmPrefix + req.Reason + " (record " + req.Record + ")"
}

var slurmRecord = regexp.MustCompile(`\(record ([^()\s]+)\)$`)

// ReadSlurmFence is gpulab's drain on n, or nil: a reason that begins
// with SlurmPrefix and ends with the record that gpulab writes.
func ReadSlurmFence(n parse.SlurmNode) *Fence {
	rest, ok := strings.CutPrefix(n.Reason, SlurmPrefix)
	if !ok {
		return nil
	}
	m := slurmRecord.FindStringSubmatch(rest)
	if m == nil { // "gpulab: " without its record: a person's words, not gpulab's drain
		return nil
	}
	f := &Fence{Reason: strings.TrimSpace(strings.TrimSuffix(rest, m[0])), Record: m[1], By: n.ReasonBy, At: n.ReasonAt, Cordoned: true}
	if !n.Drained() {
		f.Drift = append(f.Drift, "its DRAIN flag cleared since, not by gpulab (state "+n.StateString()+")")
	}
	return f
}

// slurmOther says who else drained n or set it down, or "".
func slurmOther(n parse.SlurmNode) string {
	if n.Reason == "" && !n.Drained() {
		return ""
	}
	who := n.ReasonBy
	if who == "" {
		who = "an actor scontrol does not name"
	}
	at := ""
	if !n.ReasonAt.IsZero() {
		at = " at " + n.ReasonAt.Format(time.RFC3339)
	}
	return fmt.Sprintf("%s by %s%s: %q", n.StateString(), clip.Cut(who, 64), at, clip.Cut(n.Reason, clip.Quoted))
}

// PlanSlurmFence plans draining node n for req.
func PlanSlurmFence(n parse.SlurmNode, req Request) Plan {
	p := Plan{Node: n.Name, verb: "fence", Fence: ReadSlurmFence(n), record: req.Record}
	switch f := p.Fence; {
	case f != nil && !n.Drained():
		// gpulab's reason on a node whose drain was cleared (or set
		// down with gpulab's words): drain it again, under this record.
		p.Left = append(p.Left, fmt.Sprintf("gpulab's earlier reason (record %s) is replaced: its drain was cleared since (state %s)", f.Record, n.StateString()))
		p.Fence = nil
		p.command, p.Changes = drainCommand(n, req)
	case f != nil:
		p.Unchanged = fmt.Sprintf("already drained by gpulab: record %s, by %s at %s: %s", f.Record, f.By, f.At.Format(time.RFC3339), f.Reason)
	case slurmOther(n) != "":
		p.Refused = slurmOther(n) + "; gpulab does not touch a drain or a down state whose reason another tool or person owns"
	default:
		p.command, p.Changes = drainCommand(n, req)
	}
	return p
}

// drainCommand is the scontrol line that drains n for req, and the
// change as a person reads it: the command itself, the record's ID
// said in words (the plan is shown before the record exists).
func drainCommand(n parse.SlurmNode, req Request) (string, []Change) {
	cmd := "scontrol update NodeName=" + orchestrator.Quote(n.Name) + " State=DRAIN Reason=" + orchestrator.Quote(SlurmReason(req))
	shown := "scontrol update NodeName=" + orchestrator.Quote(n.Name) + " State=DRAIN Reason=" +
		orchestrator.Quote(SlurmPrefix+req.Reason+" (record ID)") + " (ID: the fence record's; no new job starts here, running jobs go on)"
	return cmd, []Change{{OpDrain, shown}}
}

// PlanSlurmRelease plans undraining node n: only a drain gpulab set.
// UNDRAIN clears the drain and nothing else: a node that is also DOWN
// stays down (RESUME would clear that too).
func PlanSlurmRelease(n parse.SlurmNode) Plan {
	p := Plan{Node: n.Name, verb: "release", Fence: ReadSlurmFence(n)}
	switch {
	case p.Fence == nil && slurmOther(n) != "":
		p.Refused = "not drained by gpulab: " + slurmOther(n) + "; gpulab releases only its own drains"
	case p.Fence == nil || !n.Drained():
		p.Unchanged = "not drained: nothing to release"
	default:
		p.command = "scontrol update NodeName=" + orchestrator.Quote(n.Name) + " State=UNDRAIN"
		p.Changes = []Change{{OpUndrain, "scontrol update NodeName=" + n.Name + " State=UNDRAIN (its reason cleared with it)"}}
		if n.State == "DOWN" {
			p.Left = append(p.Left, "DOWN: undrained, it stays down until Slurm or a person resumes it")
		}
	}
	return p
}

// Scontrol runs a command line on the Slurm login host and returns what
// it printed; its error carries the exit status and what it printed on
// standard error.
type Scontrol func(ctx context.Context, command string) (string, error)

// ReadSlurm reads each named node (scontrol show node NAME: the text
// every Slurm version prints) and plans for it with plan.
func ReadSlurm(ctx context.Context, run Scontrol, names []string, plan func(parse.SlurmNode) Plan) []Plan {
	out := make([]Plan, 0, len(names))
	for _, name := range names {
		n, err := readSlurmNode(ctx, run, name)
		if err != nil {
			out = append(out, Plan{Node: name, Error: err.Error()})
			continue
		}
		out = append(out, plan(n))
	}
	for i := range out {
		out[i].In = InSlurm
	}
	return out
}

func readSlurmNode(ctx context.Context, run Scontrol, name string) (parse.SlurmNode, error) {
	out, err := run(ctx, "scontrol show node "+orchestrator.Quote(name))
	if err != nil {
		return parse.SlurmNode{}, fmt.Errorf("scontrol show node %s: %v", name, err)
	}
	nodes, err := parse.ParseScontrolShowNode(out)
	if err != nil || len(nodes) != 1 || nodes[0].Name != name {
		return parse.SlurmNode{}, fmt.Errorf("scontrol show node %s: not one node of that name in its answer (%v)", name, err)
	}
	return nodes[0], nil
}

// ApplySlurm carries out each plan. Slurm has no version to write from:
// the node is read again just before (a node changed since the plan is
// not touched, and the result says how), and once after, to see the
// drain is gpulab's: two processes draining one node at once both write,
// the last reason stays, and the one whose reason is gone says so.
func ApplySlurm(ctx context.Context, run Scontrol, plans []Plan, replan func(parse.SlurmNode) Plan) []Result {
	out := make([]Result, 0, len(plans))
	for _, p := range plans {
		out = append(out, applySlurmOne(ctx, run, p, replan))
	}
	return out
}

func applySlurmOne(ctx context.Context, run Scontrol, p Plan, replan func(parse.SlurmNode) Plan) Result {
	switch {
	case p.Error != "":
		return Result{Plan: p, Outcome: Failed, Detail: p.Error}
	case p.Refused != "":
		return Result{Plan: p, Outcome: Refused, Detail: p.Refused}
	case p.command == "":
		return Result{Plan: p, Outcome: Unchanged, Detail: p.Unchanged}
	}
	n, err := readSlurmNode(ctx, run, p.Node)
	if err != nil {
		return Result{Plan: p, Outcome: Failed, Detail: err.Error()}
	}
	cur := replan(n)
	if cur.command == "" || !sameOps(cur, p) {
		return Result{Plan: p, Outcome: Changed, Detail: changedSince(p, cur)}
	}
	if _, err := run(ctx, cur.command); err != nil {
		return Result{Plan: p, Outcome: Failed, Detail: err.Error()}
	}
	if n, err = readSlurmNode(ctx, run, p.Node); err != nil {
		return Result{Plan: p, Outcome: Failed, Detail: "written, but not read back: " + err.Error()}
	}
	after := ReadSlurmFence(n)
	switch {
	case p.verb == "fence" && (after == nil || after.Record != cur.record):
		return Result{Plan: p, Outcome: Changed, Detail: "drained meanwhile by another: " + slurmOther(n)}
	case p.verb == "release" && after != nil && n.Drained():
		return Result{Plan: p, Outcome: Failed, Detail: "still drained after UNDRAIN: " + slurmOther(n)}
	}
	return Result{Plan: p, Outcome: Done}
}

func sameOps(a, b Plan) bool {
	if len(a.Changes) != len(b.Changes) {
		return false
	}
	for i := range a.Changes {
		if a.Changes[i].Op != b.Changes[i].Op {
			return false
		}
	}
	return true
}
