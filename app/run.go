package app

import (
	"context"
	"fmt"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/labs"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/runbooks"
)

// The runs the command line and the workbench both start, put together
// once: what differs between them (how progress is shown, who answers a
// guided step) is what they pass in.

// ExecPlan is exec's plan: command, once on every host.
func (f *Fleet) ExecPlan(command string) orchestrator.Plan {
	return orchestrator.Plan{Targets: f.Targets, Steps: []orchestrator.Step{{Name: "exec", Command: command}}}
}

// RunRunbook runs rb on targets (the fleet's, or those the workbench's
// run setup chose): runbooks.Execute, the runbook's one lifecycle.
func (f *Fleet) RunRunbook(ctx context.Context, targets []orchestrator.Target, rb runbooks.Runbook, o runbooks.RunOptions) runbooks.Outcome {
	if o.ExpectArgs == nil { // a probe step judges against the inventory's expect
		o.ExpectArgs = func(host string) []string { return ExpectArgs(f.Inv, host) }
	}
	if o.Prober == nil { // a probe step pushes the probe gpulab carries
		o.Prober = EmbeddedProber(f.Simulated)
	}
	return runbooks.Execute(ctx, f.Engine, targets, rb, o)
}

// LabRun is one lab run on a fleet's hosts.
type LabRun struct {
	Lab     *labs.Lab
	Targets []orchestrator.Target
	Results string // where its record goes
	// Options are the run's own: parameters, fast-forward, the guide,
	// the probe, the Reproduce line, progress (OnEvent). The fleet sets
	// Simulated and the cluster.
	Options labs.RunOptions
	// Kube finds the cluster of the lab's hosts where the fleet's
	// inventory does not (the demo's simulated cluster); nil: the
	// inventory's (Fleet.Cluster, with Getenv), as kubectl would.
	Kube   func([]orchestrator.Target) (*cluster.Client, string)
	Getenv func(string) string
}

// RunLab runs a lab (labs.Execute, its one lifecycle) after finding the
// cluster its hosts belong to: what gpulab lab run and the Labs tab both
// do, so that neither can read a different cluster or say simulated
// where the other does not.
func (f *Fleet) RunLab(ctx context.Context, r LabRun) labs.Outcome {
	o := r.Options
	o.Simulated = f.Simulated
	if o.ExpectArgs == nil { // a probe step judges against the inventory's expect
		o.ExpectArgs = func(host string) []string { return ExpectArgs(f.Inv, host) }
	}
	switch {
	case r.Kube != nil:
		o.Cluster, o.ClusterProblem = r.Kube(r.Targets)
	case r.Getenv != nil:
		o.Cluster, o.ClusterProblem = f.Cluster(r.Getenv, r.Targets)
	}
	return labs.Execute(ctx, labs.RunSpec{Engine: f.Engine, Targets: r.Targets, Lab: r.Lab, Results: r.Results, Options: o})
}

// WritesHost says why l may not run on targets: a step of it needs the
// host's / writable and a target is a node whose pod mounts it read-only.
func WritesHost(l *labs.Lab, targets []orchestrator.Target) error {
	s := l.WritesHost()
	if s == nil {
		return nil
	}
	for _, t := range targets {
		if t.Kube != nil && !t.Kube.WritableHost() {
			return fmt.Errorf("lab %s: step %q needs the host's / writable (needs = [%q]); through Kubernetes the node pods mount it read-only: pass --writable-host to allow it", l.ID, s.ID, labs.NeedsWritableHost)
		}
	}
	return nil
}
