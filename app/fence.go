package app

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/fence"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/runbooks"
	"github.com/gpulab/gpulab/step"
	"github.com/gpulab/gpulab/step/parse"
)

// FenceSpec is one fence (or release) of a fleet's hosts, nodes of a
// Kubernetes cluster.
type FenceSpec struct {
	// Kube is the cluster whose nodes are fenced; or, with Kube nil,
	// Scontrol runs scontrol on SlurmLogin.
	Kube       *cluster.Client
	Scontrol   fence.Scontrol
	SlurmLogin string
	// Request is the fence's reason, who and when, and the taint; its
	// Record is set when the record is made.
	Request fence.Request
	// Results is the directory the records go under (RESULTS/fence/ID).
	Results string
	// Runbook gathers the evidence before the action (and checks again
	// before a release).
	Runbook runbooks.Runbook
	// Drain, when set, evicts the fenced nodes' pods.
	Drain *fence.DrainOptions
	// Force releases without the checks passing (recorded).
	Force bool
	// Simulated: the hosts or the cluster are gpulab's simulation.
	Simulated bool
}

// Fenced is a fence or release carried out: its record (nil when there
// was nothing to do: no record is made for nothing) and each node's
// result, in the fleet's order.
type Fenced struct {
	Record  *fence.Record
	Results []fence.Result
	// Held are the nodes a release kept fenced, their checks not
	// passing yet, with why.
	Held map[string]string
	// SaveErr is the record's write failure: the action was taken (or
	// not) all the same, and this says the record is incomplete.
	SaveErr error
}

// Target is where the action is taken, as a record says it.
func (s FenceSpec) Target() string {
	if s.Kube == nil {
		return "slurm, scontrol on " + s.SlurmLogin
	}
	return "kubernetes context " + s.Kube.Context
}

// plan reads the nodes and plans their fence (req) or, with release,
// their release.
func (s FenceSpec) plan(ctx context.Context, names []string, req fence.Request, release bool) []fence.Plan {
	switch {
	case s.Kube == nil && release:
		return fence.ReadSlurm(ctx, s.Scontrol, names, fence.PlanSlurmRelease)
	case s.Kube == nil:
		return fence.ReadSlurm(ctx, s.Scontrol, names, func(n parse.SlurmNode) fence.Plan { return fence.PlanSlurmFence(n, req) })
	case release:
		return fence.Read(ctx, fence.Client(s.Kube.Kube), names, fence.PlanRelease)
	}
	return fence.Read(ctx, fence.Client(s.Kube.Kube), names, func(n *corev1.Node) fence.Plan { return fence.PlanFence(n, req) })
}

// apply carries out plans, made again for req (release: for a release).
func (s FenceSpec) apply(ctx context.Context, plans []fence.Plan, req fence.Request, release bool) []fence.Result {
	switch {
	case s.Kube == nil && release:
		return fence.ApplySlurm(ctx, s.Scontrol, plans, fence.PlanSlurmRelease)
	case s.Kube == nil:
		return fence.ApplySlurm(ctx, s.Scontrol, plans, func(n parse.SlurmNode) fence.Plan { return fence.PlanSlurmFence(n, req) })
	case release:
		return fence.Apply(ctx, fence.Client(s.Kube.Kube), plans, fence.PlanRelease)
	}
	return fence.Apply(ctx, fence.Client(s.Kube.Kube), plans, func(n *corev1.Node) fence.Plan { return fence.PlanFence(n, req) })
}

// PlanFence reads the fleet's nodes and plans their fence.
func (f *Fleet) PlanFence(ctx context.Context, s FenceSpec) []fence.Plan {
	return s.plan(ctx, f.Names(), s.Request, false)
}

// PlanRelease reads the fleet's nodes and plans their release.
func (f *Fleet) PlanRelease(ctx context.Context, s FenceSpec) []fence.Plan {
	return s.plan(ctx, f.Names(), s.Request, true)
}

// Fence carries out plans (PlanFence's, as shown to a person): where any
// node is to change, it makes the record, gathers the evidence on those
// hosts (a host that cannot be reached is evidence too), saves it, acts,
// drains when asked, and saves the record complete. A plan with nothing
// to change makes no record and changes nothing.
func (f *Fleet) Fence(ctx context.Context, s FenceSpec, plans []fence.Plan) Fenced {
	act := changing(plans)
	if len(act) == 0 {
		return Fenced{Results: s.apply(ctx, plans, s.Request, false)}
	}
	rec, err := fence.NewRecord(s.Results, act, s.Request.At)
	if err != nil { // no record, no action: the evidence must be kept
		return Fenced{Results: notDone(plans, "nothing done: "+err.Error()), SaveErr: err}
	}
	req := s.Request
	req.Record = rec.ID
	rec.Reason, rec.By, rec.At, rec.Target, rec.Simulated, rec.Plan = req.Reason, req.By, req.At, s.Target(), s.Simulated, plans
	out := Fenced{Record: rec}
	keep := func(err error) {
		if err != nil && out.SaveErr == nil {
			out.SaveErr = err
		}
	}
	keep(rec.Save())
	rec.Evidence = f.evidence(ctx, rec, "evidence", f.targetsNamed(act), s.Runbook)
	keep(rec.Save())
	out.Results = s.apply(ctx, plans, req, false)
	rec.Results = out.Results
	keep(rec.Save())
	if s.Drain != nil && s.Kube != nil {
		for _, r := range out.Results {
			if r.Outcome == fence.Done {
				pods, err := fence.Drain(ctx, s.Kube.Kube, r.Node, *s.Drain)
				d := fence.NodeDrain{Node: r.Node, Pods: pods}
				if err != nil {
					d.Error = err.Error()
				}
				rec.Drain = append(rec.Drain, d)
				keep(rec.Save())
			}
		}
	}
	rec.Complete = true
	keep(rec.Save())
	return out
}

// changing are the names of the nodes plans change.
func changing(plans []fence.Plan) []string {
	var out []string
	for _, p := range plans {
		if len(p.Changes) > 0 && p.Refused == "" {
			out = append(out, p.Node)
		}
	}
	return out
}

func notDone(plans []fence.Plan, why string) []fence.Result {
	out := make([]fence.Result, len(plans))
	for i, p := range plans {
		out[i] = fence.Result{Plan: p, Outcome: fence.Failed, Detail: why}
		if p.Refused != "" {
			out[i].Outcome, out[i].Detail = fence.Refused, p.Refused
		} else if len(p.Changes) == 0 {
			out[i].Outcome, out[i].Detail = fence.Unchanged, p.Unchanged
		}
	}
	return out
}

func (f *Fleet) targetsNamed(names []string) []orchestrator.Target {
	var out []orchestrator.Target
	for _, t := range f.Targets {
		if slices.Contains(names, t.Name) {
			out = append(out, t)
		}
	}
	return out
}

// evidence runs rb on targets and keeps what each host showed in rec,
// its steps' outputs under prefix/HOST/.
func (f *Fleet) evidence(ctx context.Context, rec *fence.Record, prefix string, targets []orchestrator.Target, rb runbooks.Runbook) []fence.HostEvidence {
	outcome := f.RunRunbook(ctx, targets, rb, runbooks.RunOptions{})
	ev := make([]fence.HostEvidence, 0, len(outcome.Runs))
	for _, run := range outcome.Runs {
		h := fence.HostEvidence{Host: run.Host, Via: via(run.Via), Runbook: rb.ID, Verdicts: run.Verdicts}
		if run.Unreached() {
			h.Error = fmt.Sprintf("%s: %s", run.Class, run.Err)
		}
		for _, st := range run.Steps {
			so := fence.StepOutput{ID: st.ID, Command: st.Command, ExitCode: st.ExitCode, Problem: st.Problem}
			if st.Output != "" {
				if err := rec.AddOutput(prefix, run.Host, &so, st.Output); err != nil {
					so.Problem = strings.TrimSpace(so.Problem + "; its output not kept: " + err.Error())
				}
			}
			h.Steps = append(h.Steps, so)
		}
		ev = append(ev, h)
	}
	return ev
}

func via(v orchestrator.Via) string {
	if v.Context != "" {
		return v.Transport + " (context " + v.Context + ")"
	}
	return v.Transport
}

// Release carries out plans (PlanRelease's): before it, the runbook
// runs again on the nodes to release, and a node is released only when
// every check that failed or warned at its fence passes now and none
// fails (or with Force, recorded). The release is added to the fence's
// record where this machine has it, or kept in a record of its own.
func (f *Fleet) Release(ctx context.Context, s FenceSpec, plans []fence.Plan) Fenced {
	act := changing(plans)
	if len(act) == 0 {
		return Fenced{Results: s.apply(ctx, plans, s.Request, true)}
	}
	rec := f.releaseRecord(s, plans)
	if rec == nil {
		return Fenced{Results: notDone(plans, "nothing done: no record could be made for the release"), SaveErr: fmt.Errorf("the release record in %s could not be made", s.Results)}
	}
	rel := fence.Release{By: s.Request.By, At: s.Request.At, Force: s.Force, Held: map[string]string{}, Plan: plans}
	if !s.Force {
		rel.Evidence = f.evidence(ctx, rec, fmt.Sprintf("release-%d", len(rec.Releases)+1), f.targetsNamed(act), s.Runbook)
		failing := map[string][]string{}
		for _, h := range rec.Evidence {
			failing[h.Host] = h.Failing()
		}
		for _, h := range rel.Evidence {
			if why := stillFailing(h, failing[h.Host]); why != "" {
				rel.Held[h.Host] = why
			}
		}
	}
	release := make([]fence.Plan, len(plans))
	for i, p := range plans {
		release[i] = p
		if why, held := rel.Held[p.Node]; held {
			release[i] = fence.Plan{Node: p.Node, Refused: "held: " + why, Fence: p.Fence}
		}
	}
	out := Fenced{Record: rec, Held: rel.Held}
	out.Results = s.apply(ctx, release, s.Request, true)
	rel.Results = out.Results
	rec.Releases = append(rec.Releases, rel)
	out.SaveErr = rec.Save()
	return out
}

// stillFailing says why h does not pass the release's checks: a check
// that failed or warned at the fence (was) that does not pass now, or
// any check that fails now; "" when it passes.
func stillFailing(h fence.HostEvidence, was []string) string {
	if h.Error != "" {
		return "not checked again: " + h.Error
	}
	var why []string
	for _, v := range h.Verdicts {
		switch {
		case slices.Contains(was, v.Check) && v.Status != step.Pass:
			why = append(why, fmt.Sprintf("%s %s (it did not pass at the fence): %s", v.Check, v.Status, v.Summary))
		case v.Status == step.Fail:
			why = append(why, fmt.Sprintf("%s FAIL: %s", v.Check, v.Summary))
		}
	}
	for _, c := range was {
		if !slices.ContainsFunc(h.Verdicts, func(v step.Verdict) bool { return v.Check == c }) {
			why = append(why, c+" not judged again")
		}
	}
	return strings.Join(why, "; ")
}

// releaseRecord is the fence record the plans' nodes name, where this
// machine has it (one record: a release of nodes fenced under several is
// kept in the first), or a new record for the release alone.
func (f *Fleet) releaseRecord(s FenceSpec, plans []fence.Plan) *fence.Record {
	for _, p := range plans {
		if p.Fence == nil || len(p.Changes) == 0 {
			continue
		}
		if rec, err := fence.OpenRecord(s.Results, p.Fence.Record); err == nil {
			return rec
		}
	}
	rec, err := fence.NewRecord(s.Results, changing(plans), s.Request.At)
	if err != nil {
		return nil
	}
	var ids []string
	for _, p := range plans {
		if p.Fence != nil {
			ids = append(ids, p.Fence.Record)
		}
	}
	rec.Reason = "release of " + strings.Join(slices.Compact(slices.Sorted(slices.Values(ids))), ", ") + " (the fence record is not on this machine)"
	rec.By, rec.At, rec.Target, rec.Simulated, rec.Complete = s.Request.By, s.Request.At, s.Target(), s.Simulated, true
	return rec
}

// Now is when an action is taken, to the second, in UTC (what the
// node's annotations and the record say).
func Now() time.Time { return time.Now().UTC().Truncate(time.Second) }

// Scontrol runs scontrol's command lines on login over the fleet's
// engine, one connection for each: the Slurm side of a fence. What it
// prints is bounded as any command's.
func (f *Fleet) Scontrol(login string) (fence.Scontrol, error) {
	h, ok := f.Inv.Host(login)
	if !ok {
		h = inventory.Host{Name: login, Address: login, Adhoc: true}
	}
	t, err := f.Resolver.Resolve(h)
	if err != nil {
		return nil, fmt.Errorf("the Slurm login host %s: %w", login, err)
	}
	return func(ctx context.Context, command string) (string, error) {
		var out orchestrator.Result
		res := f.Engine.ForEach(ctx, []orchestrator.Target{t}, nil, func(_ int, t orchestrator.Target, conn *orchestrator.Conn, hr *orchestrator.HostResult) {
			out = conn.Run(ctx, "scontrol", command, orchestrator.RunOptions{Timeout: time.Minute, Inactivity: time.Minute, MaxOutput: 16 << 20})
			hr.Class = out.Class
		})
		switch {
		case res[0].Class != orchestrator.OK && res[0].Err != "":
			return "", fmt.Errorf("on %s: %s", login, res[0].Err)
		case out.Class != orchestrator.OK || out.ExitCode != 0:
			return string(out.Stdout), fmt.Errorf("on %s: exit %d: %s", login, out.ExitCode, strings.TrimSpace(string(out.Stderr)+" "+out.Err))
		}
		return string(out.Stdout), nil
	}, nil
}

// SlurmState reads the inventory's Slurm cluster's nodes (SlurmNodes),
// for @slurm: host expressions.
func SlurmState(ctx context.Context, inv *inventory.Inventory, r Reach) ([]inventory.SlurmNode, error) {
	nodes, err := SlurmNodes(ctx, inv, r)
	if err != nil {
		return nil, err
	}
	out := make([]inventory.SlurmNode, len(nodes))
	for i, n := range nodes {
		out[i] = inventory.SlurmNode{Name: n.Name, Partitions: n.Partitions, States: append([]string{n.State}, n.Flags...), Features: n.Features}
	}
	return out, nil
}

// SlurmFences are the Slurm cluster's nodes gpulab drained (their reason
// begins "gpulab: "), with drift: a gpulab reason whose drain was
// cleared by hand.
func SlurmFences(ctx context.Context, inv *inventory.Inventory, r Reach) ([]fence.Fenced, error) {
	nodes, err := SlurmNodes(ctx, inv, r)
	if err != nil {
		return nil, err
	}
	var out []fence.Fenced
	for _, n := range nodes {
		if f := fence.ReadSlurmFence(n); f != nil {
			out = append(out, fence.Fenced{Node: n.Name, Fence: *f, Cordoned: n.Drained()})
		}
	}
	return out, nil
}

// SlurmNodes reads the inventory's Slurm cluster's nodes with scontrol
// on its login host (scontrol show node --json; the text where that
// Slurm has no --json).
func SlurmNodes(ctx context.Context, inv *inventory.Inventory, r Reach) ([]parse.SlurmNode, error) {
	login := inv.Slurm.Login
	h, ok := inv.Host(login)
	if !ok {
		h = inventory.Host{Name: login, Address: login, Adhoc: true}
	}
	f, err := NewFleet(inv, []inventory.Host{h}, r)
	if err != nil {
		return nil, err
	}
	defer f.Keys.Close()
	run, err := f.Scontrol(login)
	if err != nil {
		return nil, err
	}
	var nodes []parse.SlurmNode
	if out, jerr := run(ctx, "scontrol show node --json"); jerr == nil {
		nodes, err = parse.ParseSlurmNodesJSON(out)
	} else {
		out, terr := run(ctx, "scontrol show node")
		if terr != nil {
			return nil, fmt.Errorf("the Slurm cluster's nodes: %w", terr)
		}
		nodes, err = parse.ParseScontrolShowNode(out)
	}
	if err != nil && len(nodes) == 0 {
		return nil, fmt.Errorf("the Slurm cluster's nodes, as scontrol on %s says them: %w", login, err)
	}
	return nodes, nil
}
