package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/probes/bundle"
	"github.com/gpulab/gpulab/probes/remote"
	"github.com/gpulab/gpulab/probes/report"
)

// ProbeResult is one host's probe run.
type ProbeResult struct {
	Host string `json:"host"`
	orchestrator.Via
	Class    string           `json:"class"`
	ExitCode int              `json:"exit_code"`
	Error    string           `json:"error,omitempty"`
	Pushed   int64            `json:"pushed_bytes"`
	Snapshot *report.Snapshot `json:"snapshot,omitempty"`
	// Simulated: the host is in a simulated fleet (gpulab sim).
	Simulated bool `json:"simulated,omitempty"`
	// HardwareGroup is the host's group when hosts are folded by what
	// their hardware reads (0: the largest group, as the text shows them
	// first), HardwareHosts that group's node set; absent without a
	// snapshot.
	HardwareGroup *int   `json:"hardware_group,omitempty"`
	HardwareHosts string `json:"hardware_hosts,omitempty"`
	// Flags are what the snapshot shows worth a look (report.Flags: an
	// NVLink down, uncorrected ECC errors, a row remap pending, an Xid):
	// a flagged host makes the probe exit 1.
	Flags []string `json:"flags,omitempty"`
	// Findings are the same in a shape other tools read (report.Finding:
	// a stable check name, fatal or not, the GPUs concerned by index, UUID
	// and bus id, the evidence and a recommended action).
	Findings []report.Finding `json:"findings,omitempty"`
	// Outcome is what the probe says of the host, as the summary line
	// counts it: "ok", "flagged" or "failed" (Outcome()). Class is how
	// reaching the host ended: a flagged host's class is "ok".
	Outcome string `json:"outcome"`
}

// OK: the probe ran to its end on the host and gave a snapshot in which
// NVML answered (flagged or not).
func (p ProbeResult) OK() bool {
	return report.OutcomeOf(p.Snapshot, p.Class) != report.Failed
}

// Finish sets the fields computed from the others (Outcome), once the
// result is final.
func (p *ProbeResult) Finish() {
	p.Outcome = report.OutcomeOf(p.Snapshot, p.Class).String()
}

// ReadSnapshot parses the probe's output into r.
func ReadSnapshot(r ProbeResult, stdout []byte, stderr string, runErr error) ProbeResult {
	r = readSnapshot(r, stdout, stderr, runErr)
	r.Finish()
	return r
}

func readSnapshot(r ProbeResult, stdout []byte, stderr string, runErr error) ProbeResult {
	s, err := remote.Decode(stdout)
	if err != nil {
		r.Class = "error"
		msg := strings.TrimSpace(stderr)
		if msg == "" && runErr != nil {
			msg = runErr.Error()
		}
		if r.ExitCode == report.ExitWatchdog {
			msg = "the probe's watchdog fired: NVML did not answer (" + msg + ")"
		}
		r.Error = fmt.Sprintf("no snapshot (exit %d): %s", r.ExitCode, msg)
		if strings.Contains(err.Error(), "newer") {
			r.Error = err.Error()
		}
		return r
	}
	// A report is evidence only from a probe that ended as it should: 0,
	// or the exit that says NVML is missing with a report that says so.
	// Printed and then exited otherwise (its watchdog, a crash, a kill),
	// it may be a report that stopped half-way or says what is not so.
	noNVML := !s.NVML.Available && (r.ExitCode == report.ExitNoNVML || r.ExitCode == report.ExitNVMLError)
	if r.ExitCode != report.ExitOK && !noNVML {
		r.Class = orchestrator.Exit.String()
		why := fmt.Sprintf("exited %d", r.ExitCode)
		if r.ExitCode < 0 {
			why = "did not exit (killed by a signal)"
		}
		r.Error = "the probe " + why + " after printing a report: a report from a probe that did not end cleanly is no evidence"
		if msg := strings.TrimSpace(stderr); msg != "" {
			r.Error += " (" + orchestrator.FirstLine(msg) + ")"
		}
		return r
	}
	r.Snapshot = s
	r.Class = "ok"
	r.Findings = report.Findings(s)
	for _, f := range r.Findings {
		r.Flags = append(r.Flags, f.Message)
	}
	if !s.NVML.Available {
		r.Class = "no-nvml"
		r.Error = s.NVML.Error
	}
	return r
}

// ProbeOptions say how a fleet is probed.
type ProbeOptions struct {
	// Prober installs the probe (remote.Prober: the embedded build, or
	// the simulator's on a simulated host).
	Prober *remote.Prober
	// XidWait is how long the probe waits for new Xid events, beyond
	// the minute every run may take.
	XidWait time.Duration
	// Window is how long the probe samples the GPUs for its rates
	// (clock events, PCIe generation under load, PCIe replays); 0 for
	// one reading, whose rates are then not known.
	Window time.Duration
	// HostArgs are the probe's arguments for one host (its name, its
	// simulated faults); nil: --host NAME.
	HostArgs func(host string) []string
}

// ExpectArgs are the probe's --expect for host, from the inventory's
// expect = { ... }; none when it says nothing.
func ExpectArgs(inv *inventory.Inventory, host string) []string {
	if inv == nil {
		return nil
	}
	h, ok := inv.Host(host)
	if !ok {
		return nil
	}
	e := report.Expect{GPUs: h.Expect.GPUs, IBPorts: h.Expect.IBPorts, IBRateGbps: h.Expect.IBRateGbps}
	if e.Arg() == "" {
		return nil
	}
	return []string{"--expect", e.Arg()}
}

// LocalError is a probe run in which no host gave a snapshot and the
// reason is on this machine (the probe could not be had or read: a
// remote.SourceError): the user's to fix here, not the hosts'. Probe
// returns it with every host's result all the same.
type LocalError struct{ Err error }

func (e *LocalError) Error() string { return e.Err.Error() }
func (e *LocalError) Unwrap() error { return e.Err }

// Probe pushes and runs the probe on every target, one result each, in
// order; progress goes to events when not nil (closed before returning).
func (f *Fleet) Probe(ctx context.Context, o ProbeOptions, events chan<- orchestrator.Event) ([]ProbeResult, error) {
	rn := f
	hostArgs := o.HostArgs
	if hostArgs == nil {
		hostArgs = func(host string) []string { return []string{"--host", host} }
	}
	var emit func(orchestrator.Event)
	if events != nil {
		defer close(events)
		emit = func(ev orchestrator.Event) { ev.Time = time.Now(); events <- ev }
	}
	results := make([]ProbeResult, len(rn.Targets))
	var mu sync.Mutex
	var localErr error
	prober := o.Prober
	hosts := rn.Engine.ForEach(ctx, rn.Targets, emit, func(i int, t orchestrator.Target, conn *orchestrator.Conn, hr *orchestrator.HostResult) {
		res := &results[i]
		res.Host, res.Via = t.Name, t.Via()
		fail := func(class orchestrator.Class, msg string) {
			hr.Class, hr.Err = class, msg
			res.Class, res.Error = class.String(), msg
		}
		in, class, err := prober.Install(ctx, conn, t.CommandTimeout)
		if err != nil {
			if se := (*remote.SourceError)(nil); errors.As(err, &se) {
				mu.Lock()
				localErr = se.Err
				mu.Unlock()
			}
			fail(class, err.Error())
			return
		}
		res.Pushed = in.Sent
		timeout := 60*time.Second + o.XidWait + o.Window
		args := hostArgs(t.Name)
		if o.Window > 0 {
			args = append(args, "--window", o.Window.String())
		}
		args = append(args, ExpectArgs(rn.Inv, t.Name)...)
		run := conn.Run(ctx, "probe", in.Line(prober, true, args...), orchestrator.RunOptions{Timeout: timeout, Inactivity: timeout, MaxOutput: 32 << 20})
		hr.Steps = append(hr.Steps, run)
		in.RemoveIfStopped(ctx, conn, run.Class)
		res.ExitCode = run.ExitCode
		*res = ReadSnapshot(*res, run.Stdout, string(run.Stderr), errors.New(run.Err))
		switch {
		case run.Class != orchestrator.OK && run.Class != orchestrator.Exit:
			// The probe did not end by itself (lost, cancelled, timed
			// out, killed, silent): what it printed is no evidence, even
			// where it decoded (a report cut short, or never finished).
			res.Snapshot, res.Flags = nil, nil
			fail(run.Class, run.Err)
		case remote.WrongHost(res.Snapshot, t.Name) != nil:
			msg := remote.WrongHost(res.Snapshot, t.Name).Error()
			res.Snapshot, res.Flags = nil, nil
			fail(orchestrator.Error, msg)
		case res.Snapshot == nil || !res.Snapshot.NVML.Available: // the probe saw no GPU: not an ok host
			hr.Class, hr.Err = orchestrator.Exit, res.Error
		}
	})
	for i, h := range hosts {
		if results[i].Host == "" { // never connected
			results[i] = ProbeResult{Host: h.Host, Via: h.Via, Class: h.Class.String(), Error: h.Err}
		}
	}
	for i := range results {
		results[i].Simulated = rn.Simulated || (results[i].Snapshot != nil && results[i].Snapshot.Simulated)
		results[i].Finish()
	}
	if localErr != nil && len(results) > 0 && allFailed(results) {
		return results, &LocalError{localErr}
	}
	return results, nil
}

func allFailed(rs []ProbeResult) bool {
	for _, r := range rs {
		if r.Snapshot != nil {
			return false
		}
	}
	return true
}

// EmbeddedProber installs the probe gpulab carries (probes/bundle) for
// each host's architecture: the simulator build when simulated (a
// simulated fleet, or --mock), else the one for real GPUs; a host that
// says it is simulated gets the simulator build however it was reached
// (an ssh_config, -H).
func EmbeddedProber(simulated bool) *remote.Prober {
	return &remote.Prober{
		Source:    func(arch string) ([]byte, []byte, error) { return bundle.Probe(arch, simulated) },
		SimSource: func(arch string) ([]byte, []byte, error) { return bundle.Probe(arch, true) },
	}
}
