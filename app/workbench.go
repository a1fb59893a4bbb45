package app

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/labs"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/probes/remote"
	"github.com/gpulab/gpulab/probes/report"
	"github.com/gpulab/gpulab/runbooks"
)

// Workbench is what the workbench's tabs run through, on a fleet's hosts:
// the Fleet's commands and probe, the Runbooks' and the Labs' runs.
type Workbench struct {
	Fleet   *Fleet
	Results string         // where lab records go
	Prober  *remote.Prober // the probe the Fleet's p and lab runs install
	// Reproduce are the files a lab run read, for its record's Reproduce
	// line; the parameters are added per run.
	Reproduce []string
	// Kube finds the cluster a lab's hosts belong to (nil: none), or
	// says why there is none; nil: the inventory's [[kube]] table whose
	// nodes they are (Fleet.Cluster, with Getenv).
	Kube func([]orchestrator.Target) (*cluster.Client, string)
	// Getenv gives $HOME and kubectl's variables (nil: no cluster
	// unless Kube finds one).
	Getenv func(string) string
	// Demo is the demo's fleet, nil elsewhere (see ReproduceFor).
	Demo *Demo
	// By is who the workbench's actions (a fence) are taken by:
	// user@host.
	By string
}

// Demo is the simulated fleet gpulab demo serves: its seed and size
// bring the same fleet back.
type Demo struct {
	Seed  int64
	Hosts int
}

// FleetHost is a host as the workbench lists it.
type FleetHost struct {
	Name, Address string
	// Err says why the host cannot be reached at all (its name did not
	// resolve): it is listed, counted and shown with this, never run.
	Err string
	// Simulated: the host is one of gpulab's simulated hosts, as a
	// connection to it showed (its SSH handshake says so), whatever
	// route reached it (an ssh_config, -H): it carries a SIM badge.
	Simulated bool
}

// ProbeOutcome is one host's probe run: a snapshot, or why there is none.
type ProbeOutcome struct {
	Snapshot *report.Snapshot
	Err      string
}

// RunbookHost is one host's finished run; Index is its position in the
// hosts passed to RunRunbook.
type RunbookHost struct {
	Index int
	Run   runbooks.HostRun
}

// LabRunOptions say how a lab runs from the workbench.
type LabRunOptions struct {
	Params map[string]string
	Solve  bool // the lab's demo fast-forward
	// Guide, when set, is asked before each step (labs.RunOptions.Guide).
	Guide func(context.Context, labs.GuideStep) labs.GuideAnswer
	// Abandon is the context cleanup runs on once the run's own context
	// ends; cancelling it abandons cleanup (labs.RunOptions.Abandon).
	Abandon context.Context
}

// LabUpdate is a lab run's progress (Event), a guided run's question
// (Guide), or its end (Record).
type LabUpdate struct {
	Event  *labs.Event
	Guide  *GuideRequest
	Record *labs.Record // the run's last update: the run is over once it comes
	Dir    string       // where the record was written
	Err    string       // the record could not be written
}

// GuideRequest is a guided run waiting for the operator at a step; Answer
// lets it go on.
type GuideRequest struct {
	Step  labs.GuideStep
	reply chan labs.GuideAnswer
}

// Answer gives the run its answer; it never blocks (the run takes it
// when it can, or has stopped).
func (g *GuideRequest) Answer(a labs.GuideAnswer) {
	select {
	case g.reply <- a:
	default:
	}
}

// GuideOver asks a guided run's questions as updates on ch; the answer
// comes back through GuideRequest.Answer. A run whose context ends while
// it waits stops.
func GuideOver(ch chan<- LabUpdate) func(context.Context, labs.GuideStep) labs.GuideAnswer {
	return func(ctx context.Context, g labs.GuideStep) labs.GuideAnswer {
		req := &GuideRequest{Step: g, reply: make(chan labs.GuideAnswer, 1)}
		select {
		case ch <- LabUpdate{Guide: req}:
		case <-ctx.Done():
			return labs.GuideStop
		}
		select {
		case a := <-req.reply:
			return a
		case <-ctx.Done():
			return labs.GuideStop
		}
	}
}

// Hosts are the selected hosts, in selection order, with the error of
// those that could not be resolved, so that no host vanishes from the
// workbench's counts.
func (w *Workbench) Hosts() []FleetHost {
	hs := make([]FleetHost, 0, len(w.Fleet.Targets))
	for _, t := range w.Fleet.Targets {
		hs = append(hs, FleetHost{Name: t.Name, Address: t.HostPort(), Err: t.Unresolved})
	}
	return hs
}

// Run runs command on every host (Fleet.Exec).
func (w *Workbench) Run(ctx context.Context, command string, events chan<- orchestrator.Event) []orchestrator.HostResult {
	return w.Fleet.Exec(ctx, command, events)
}

// FleetWindow is how long the Fleet's probe samples each host's GPUs:
// long enough for a rate (ten samples), short enough to wait for.
const FleetWindow = time.Second

// Probe pushes and runs the probe on every host: one outcome each, in
// order.
func (w *Workbench) Probe(ctx context.Context, events chan<- orchestrator.Event) []ProbeOutcome {
	// A LocalError comes with every host's result all the same, each
	// host's error its own (this machine's problem where it met it).
	results, _ := w.Fleet.Probe(ctx, ProbeOptions{Prober: w.Prober, Window: FleetWindow}, events)
	out := make([]ProbeOutcome, len(w.Fleet.Targets))
	for i := range out {
		if i < len(results) {
			out[i] = ProbeOutcome{Snapshot: results[i].Snapshot, Err: results[i].Error}
		}
	}
	return out
}

// RunRunbook runs rb on the chosen hosts, sending each host's run on done
// as soon as it is complete, then closing done.
func (w *Workbench) RunRunbook(ctx context.Context, rb runbooks.Runbook, hosts []int, params map[string]string, done chan<- RunbookHost) {
	defer close(done)
	w.Fleet.RunRunbook(ctx, w.Fleet.Chosen(hosts), rb, runbooks.RunOptions{Params: params, OnHost: func(i int, r runbooks.HostRun) {
		done <- RunbookHost{Index: i, Run: r}
	}})
}

// RunLab runs l on the chosen hosts: the run's events on events as they
// happen, then one update with the finished record (and where it was
// written); then events is closed.
func (w *Workbench) RunLab(ctx context.Context, l *labs.Lab, hosts []int, o LabRunOptions, events chan<- LabUpdate) {
	defer close(events)
	if err := WritesHost(l, w.Fleet.Chosen(hosts)); err != nil {
		events <- LabUpdate{Err: err.Error()}
		return
	}
	repro, fleet := w.ReproduceFor(l, o.Params)
	out := w.Fleet.RunLab(ctx, LabRun{Lab: l, Targets: w.Fleet.Chosen(hosts), Results: w.Results, Kube: w.Kube, Getenv: w.Getenv,
		Options: labs.RunOptions{Params: o.Params, Solve: o.Solve, Guide: o.Guide, Probe: w.Prober, Abandon: o.Abandon,
			Reproduce: repro, ReproduceFleet: fleet,
			OnEvent: func(ev labs.Event) {
				e := ev
				if e.Step != nil {
					s := *e.Step
					e.Step = &s
				}
				events <- LabUpdate{Event: &e}
			}}})
	u := LabUpdate{Record: out.Record, Dir: out.Dir}
	if out.WriteErr != nil {
		u.Err = "the lab ran, but " + out.WriteErr.Error()
	}
	events <- u
}

// ReproduceFor is what a lab record's Reproduce line gives: the files
// the run read and its parameters; in the demo, whose inventory goes with
// it, the fleet to bring back first: gpulab sim serve with the demo's
// seed and hosts (the same fleet) and the inventory it writes, or, for a
// lab that reads the demo's simulated cluster (which sim serve does not
// serve), gpulab demo again, in whose Labs tab the lab runs.
func (w *Workbench) ReproduceFor(l *labs.Lab, params map[string]string) (repro, fleet []string) {
	if w.Demo == nil {
		return append(slices.Clip(w.Reproduce), SetArgs(params)...), nil
	}
	seed, hosts := fmt.Sprint(w.Demo.Seed), fmt.Sprint(w.Demo.Hosts)
	if l.ReadsCluster() {
		return nil, []string{"gpulab", "demo", "--seed", seed, "--hosts", hosts}
	}
	const inv = "sim-inventory.toml"
	return append([]string{"--inventory", inv}, SetArgs(params)...), []string{"gpulab", "sim", "serve", "--seed", seed, "--hosts", hosts, "--inventory-out", inv}
}

// SetArgs are params as --set name=value arguments, by name.
func SetArgs(params map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(params)) {
		out = append(out, "--set", k+"="+params[k])
	}
	return out
}
