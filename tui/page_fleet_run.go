package tui

import (
	"context"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/probes/report"
	"github.com/gpulab/gpulab/render"
)

// The Fleet page's runs: a command or the probe started on the selected
// hosts, its events applied to the rows as they come, and its end.

// start launches a run (a command, or the probe) in the background and
// returns the command that waits for its first events.
func (v *fleetView) start(command string, probe bool) tea.Cmd {
	if probe {
		command = "gpulab probe"
	}
	v.running, v.probing, v.command, v.finished, v.results, v.groups = true, probe, command, 0, nil, nil
	v.paneChosen, v.summary, v.probed = false, "", false
	v.scroll.home()
	v.scroll.follow = true // a running host's output is followed as it comes, as tail -f does
	v.counts = map[orchestrator.Class]int{}
	for i := range v.rows {
		v.rows[i] = hostRow{FleetHost: v.rows[i].FleetHost}
	}
	v.log = append(v.log, runLog{command: command, hosts: v.nodeSet(), started: v.now()})
	runner := v.runner
	return v.stream.start(v.base, 256, func(ctx context.Context, ch chan<- fleetItem) {
		defer close(ch)
		events := make(chan orchestrator.Event, 256)
		forwarded := make(chan struct{})
		go func() { // the runner closes events when it is done
			for ev := range events {
				ch <- fleetItem{event: &ev}
			}
			close(forwarded)
		}()
		var done fleetDone
		if probe {
			done.probes = runner.Probe(ctx, events)
		} else {
			done.results = runner.Run(ctx, command, events)
		}
		<-forwarded
		ch <- fleetItem{done: &done}
	})
}

func (v *fleetView) nodeSet() string {
	names := make([]string, len(v.rows))
	for i, r := range v.rows {
		names[i] = r.Name
	}
	return inventory.FoldNames(names)
}

func (v *fleetView) apply(ev orchestrator.Event) {
	if ev.Index < 0 || ev.Index >= len(v.rows) {
		return
	}
	r := &v.rows[ev.Index]
	switch ev.Kind {
	case orchestrator.HostConnecting:
		r.state, r.started = stateConnecting, ev.Time
	case orchestrator.HostConnected:
		r.state, r.connect = stateRunning, ev.Time.Sub(r.started)
		r.Simulated = r.Simulated || ev.Simulated
	case orchestrator.StepOutput:
		r.live = append(r.live, ev.Output...)
		if len(r.live) > liveTail {
			r.live = append([]byte(nil), r.live[len(r.live)-liveTail:]...)
		}
	case orchestrator.HostDone:
		if ev.Done != nil {
			r.live = nil
			r.state, r.class, r.total, r.result = stateDone, ev.Done.Class, ev.Done.Total, ev.Done
			r.connect = ev.Done.Connect
			r.Simulated = r.Simulated || ev.Done.Simulated
			v.counts[ev.Done.Class]++
			v.finished++
		}
	}
}

func (v *fleetView) finish(msg fleetDone) {
	results := msg.results
	if msg.probes != nil {
		results = v.probeResults(msg.probes)
	}
	v.running, v.results = false, results
	v.groups = orchestrator.Fold(results, 0)
	v.stream.stop()
	// The counts of the finished run are its results', counted by the
	// functions the command line counts with: a probe's by what the
	// probe saw (render.ProbeTotal), a command's by how each host ended.
	v.counts = map[orchestrator.Class]int{}
	for _, r := range results {
		v.counts[r.Class]++
	}
	v.summary, v.probed = orchestrator.Summary(results), msg.probes != nil
	if msg.probes != nil {
		names := make([]string, len(v.rows))
		snaps := make([]*report.Snapshot, len(v.rows))
		classes := make([]string, len(v.rows))
		for i, r := range v.rows {
			names[i], classes[i] = r.Name, r.class.String()
			if r.probe != nil {
				snaps[i] = r.probe.Snapshot
			}
		}
		v.summary = render.ProbeTotal(names, snaps, classes)
		// A host off the fleet's most common driver, VBIOS, mode... is
		// flagged with it in its row, beside what its own probe found.
		drift := render.DriftFlags(render.FleetDrift(names, snaps, classes))
		for i := range v.rows {
			v.rows[i].flags = append(v.rows[i].flags, drift[v.rows[i].Name]...)
		}
	}
	if len(v.log) > 0 {
		v.log[len(v.log)-1].summary = v.summary
	}
	// The results, from their top, folded when there are several; but a
	// pane the operator chose during the run stays, where they are in it
	// (the folded pane had nothing to show until now: from its top).
	switch {
	case !v.paneChosen:
		v.scroll.home()
		if v.pane == paneHost && len(results) > 1 {
			v.pane = paneFolded
		}
	case v.pane == paneFolded:
		v.scroll.home()
	}
	if v.openFlagged {
		v.openFirstFlagged()
	}
}

// probeResults keeps each host's snapshot and turns the probe run into
// results whose "output" is the host's hardware line, so that identical
// hardware folds and the odd hosts stand out.
func (v *fleetView) probeResults(probes []app.ProbeOutcome) []orchestrator.HostResult {
	out := make([]orchestrator.HostResult, len(v.rows))
	for i := range v.rows {
		r := &v.rows[i]
		hr := orchestrator.HostResult{Host: r.Name, Class: r.class, Connect: r.connect, Total: r.total}
		if i < len(probes) {
			p := probes[i]
			r.probe = &p
			switch {
			case p.Snapshot != nil:
				r.flags = report.Flags(p.Snapshot) // the phrases gpulab probe flags a host with
				line := report.Hardware(p.Snapshot) + "\n"
				hr.Steps = []orchestrator.Result{{Step: "probe", Stdout: []byte(line), Class: hr.Class}}
				if !p.Snapshot.NVML.Available && hr.Class == orchestrator.OK {
					// The probe said so with its exit status, as gpulab probe
					// --json reports it (the head read "exit (status 0)").
					hr.Class = orchestrator.Exit
					hr.Steps[0].Class, hr.Steps[0].ExitCode = orchestrator.Exit, report.ExitNoNVML
				}
			case p.Err != "":
				hr.Err = p.Err
			}
		}
		r.class = hr.Class
		r.result = &hr
		out[i] = hr
	}
	return out
}

// probedCmd tells the other views what the probe run found.
func (v *fleetView) probedCmd(outcomes []app.ProbeOutcome) tea.Cmd {
	msg := FleetProbedMsg{Hosts: make([]string, len(v.rows)), Outcomes: outcomes}
	for i, r := range v.rows {
		msg.Hosts[i] = r.Name
	}
	return func() tea.Msg { return msg }
}
