package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/fence"
	"github.com/gpulab/gpulab/runbooks"
)

// FenceAction is a fence (or release) the workbench planned and shows
// for confirmation: what it would do, node by node, and where.
type FenceAction struct {
	Release bool
	Target  string
	Plans   []fence.Plan
	spec    FenceSpec
	fleet   *Fleet
}

// Changes says how many of the action's plans change a node (a host
// fenced in Kubernetes and in Slurm has a plan in each).
func (a *FenceAction) Changes() int {
	n := 0
	for _, p := range a.Plans {
		if p.Acts() {
			n++
		}
	}
	return n
}

// PlanFence plans fencing (release: releasing) the workbench's hosts at
// indices hosts, for reason: in the inventory's Slurm cluster when they
// are its nodes, and in the Kubernetes cluster whose nodes they are
// (the demo's, or the inventory's [[kube]] table's): in each that has
// them. Nothing is changed; ApplyFence carries it out.
func (w *Workbench) PlanFence(ctx context.Context, hosts []int, reason string, release bool) (*FenceAction, error) {
	targets := w.Fleet.Chosen(hosts)
	if len(targets) == 0 {
		return nil, errors.New("no host chosen")
	}
	if err := fence.CheckReason(reason); err != nil && !release {
		return nil, fmt.Errorf("the reason: %w", err)
	}
	sub := *w.Fleet
	sub.Targets = targets
	spec, err := w.fenceTarget(&sub)
	if err != nil {
		return nil, err
	}
	rb, err := runbooks.Load(nil)
	if err != nil {
		return nil, err
	}
	spec.Runbook, _ = runbooks.Find(rb, "health")
	spec.Runbooks = func(id string) (runbooks.Runbook, bool) { return runbooks.Find(rb, id) }
	spec.Results, spec.Simulated = w.Results, sub.Simulated
	spec.Request = fence.Request{Reason: reason, By: w.By, At: Now()}
	a := &FenceAction{Release: release, Target: spec.Target(), spec: spec, fleet: &sub}
	if release {
		a.Plans = sub.PlanRelease(ctx, spec)
	} else {
		a.Plans = sub.PlanFence(ctx, spec)
	}
	return a, nil
}

// fenceTarget is where f's hosts are fenced: the inventory's Slurm
// cluster for those that are its nodes, and the Kubernetes cluster whose
// nodes they are (Workbench.Kube's, as a lab's; or the inventory's
// [[kube]] table's). A host in neither gets a plan that says so.
func (w *Workbench) fenceTarget(f *Fleet) (FenceSpec, error) {
	var spec FenceSpec
	if sl := f.Inv.Slurm; sl != nil && slices.ContainsFunc(f.Names(), sl.IsNode) {
		run, _, err := f.Scontrol(sl.Login) // the workbench's pool: its connection stays for the next
		if err != nil {
			return FenceSpec{}, err
		}
		spec.Scontrol, spec.SlurmLogin, spec.SlurmHas = run, sl.Login, sl.IsNode
	}
	var c *cluster.Client
	why := ""
	switch {
	case w.Kube != nil:
		c, why = w.Kube(f.Targets)
	case w.Getenv != nil:
		c, why = f.Cluster(w.Getenv, f.Targets)
		if _, k, err := KubeSource(f.Inv, cluster.Source{Getenv: w.Getenv}, false, f.Names(), w.Getenv("HOME")); err == nil {
			spec.KubeHas = KubeHas(k) // the hosts its [[kube]] table names
		}
	}
	switch {
	case c != nil:
		spec.Kube = c
	case why != "": // a cluster has them and cannot be reached: no half fence
		return FenceSpec{}, errors.New(why)
	case spec.Scontrol != nil:
	default:
		return FenceSpec{}, fmt.Errorf("%s: not a node of the inventory's [slurm] cluster nor of a [[kube]] context: nothing to fence it in", f.Names()[0])
	}
	return spec, nil
}

// ApplyFence carries out a planned action (the plan the person saw):
// evidence first, then the changes, the record kept (Fleet.Fence,
// Fleet.Release).
func (w *Workbench) ApplyFence(ctx context.Context, a *FenceAction) Fenced {
	a.spec.Request.At = Now()
	if a.Release {
		return a.fleet.Release(ctx, a.spec, a.Plans)
	}
	return a.fleet.Fence(ctx, a.spec, a.Plans)
}

// NodeState is what the cluster says of a host as a node, for the
// Fleet: Slurm's state and, where drained or down, the reason with who
// set it and when.
type NodeState struct {
	State  string // IDLE+DRAIN
	Reason string // `"NHC: check_fs_mount" by root at 2026-12-06T02:14:00Z`
	// Drained: no new work goes to the node (DRAIN).
	Drained bool
}

// NodeStates reads the state of the workbench's hosts that are nodes of
// the inventory's Slurm cluster (scontrol on its login host); nil with
// no error when the inventory has no [slurm] table.
func (w *Workbench) NodeStates(ctx context.Context) (map[string]NodeState, error) {
	f := w.Fleet
	if f.Inv == nil || f.Inv.Slurm == nil {
		return nil, nil
	}
	nodes, err := f.slurmNodes(ctx)
	if err != nil {
		return nil, err
	}
	states := map[string]NodeState{}
	for _, n := range nodes {
		s := NodeState{State: n.StateString(), Drained: n.Drained()}
		if n.Reason != "" {
			s.Reason = fmt.Sprintf("%q by %s", n.Reason, cmp.Or(n.ReasonBy, "?"))
			if !n.ReasonAt.IsZero() {
				s.Reason += " at " + n.ReasonAt.Format(time.RFC3339)
			}
		}
		states[n.Name] = s
	}
	return states, nil
}
