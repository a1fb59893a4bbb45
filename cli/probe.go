package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/internal/fileio"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/probes/bundle"
	"github.com/gpulab/gpulab/probes/remote"
	"github.com/gpulab/gpulab/probes/report"
	"github.com/gpulab/gpulab/render"
)

// maxProbeWindow is the longest sampling window gpulab probe asks for
// (the probe's own limit).
const maxProbeWindow = 10 * time.Minute

type probeFlags struct {
	mock    string
	keep    bool
	kmsg    bool
	xidWait time.Duration
	window  time.Duration
	binary  string
	local   bool
	// faults are each host's --mock-faults JSON, by host name (none for
	// a healthy simulated machine).
	faults map[string]string
}

// probeOptions are gpulab probe's flags, bound by newProbeCmd; Validate
// and Run are its steps (it takes no argument to complete).
type probeOptions struct {
	*options
	ssh        sshFlags
	pf         probeFlags
	faultsFile string
	noFold     bool
	output     string
}

func newProbeCmd(o *options) *cobra.Command {
	po := &probeOptions{options: o}
	cmd := &cobra.Command{
		Use:   "probe (-H EXPR | --local) [--mock dgxa100 [--mock-faults FILE]]",
		Short: "Push the NVML probe to hosts, run it, and read one JSON snapshot per host",
		Long:  probeLong,
		Example: `  gpulab probe -H 'gpu[01-08]'
  gpulab probe -H @a100 --json | jq '.hosts[] | {host, outcome, gpus: [.snapshot.gpus[]?.name]}'
  gpulab probe -H gpu03 --kmsg --xid-wait 30s
  gpulab probe -H 'gpu[01-06]' --mock dgxa100 --mock-faults faults.json   # {"gpu04": {"nvlink_down": [[0,1]]}}
  gpulab probe --local --mock dgxa100`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := po.Validate(); err != nil {
				return err
			}
			ctx, stop := interruptible(cmd.ErrOrStderr())
			defer stop()
			return po.Run(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	po.ssh.register(cmd)
	po.ssh.registerKube()
	fl := cmd.Flags()
	fl.BoolVar(&po.pf.local, "local", false, "run the probe on this machine")
	fl.StringVar(&po.pf.mock, "mock", "", "probe a simulated machine instead of NVML: dgxa100")
	fl.BoolVar(&po.pf.keep, "keep", false, "leave the probe cached on the hosts (by sha256) after the run")
	fl.BoolVar(&po.pf.kmsg, "kmsg", false, "also read recent NVRM Xid lines from the kernel log")
	fl.DurationVar(&po.pf.xidWait, "xid-wait", 0, "listen for NVML Xid events this long")
	fl.DurationVar(&po.pf.window, "window", 2*time.Second, "sample the GPUs this long for rates: clock events, PCIe generation under load, PCIe replays (0: one reading, rates unknown)")
	fl.StringVar(&po.pf.binary, "probe-binary", "", "push this probe `FILE` instead of the embedded one")
	fl.StringVar(&po.faultsFile, "mock-faults", "", "with --mock, each host's simulated machine: a JSON `FILE` of host name to faults")
	fl.BoolVar(&po.noFold, "no-fold", false, "print every host's GPU table, and nothing folded")
	fl.StringVarP(&po.output, "output", "o", "", "`FORMAT`: text (the default), json (as --json), or health-events (NVSentinel HealthEvent JSON lines, docs/health-events.md)")
	return cmd
}

// Validate refuses a simulated machine gpulab does not have,
// --mock-faults without --mock and an output format it does not write.
func (po *probeOptions) Validate() error {
	switch po.output {
	case "", "text":
		if po.output == "text" && po.json {
			return usageErr("--json and --output text: give one of them")
		}
	case "json":
		po.json = true
	case "health-events":
		if po.json {
			return usageErr("--json and --output health-events: give one of them")
		}
	default:
		return usageErr("--output %q: text, json or health-events", po.output)
	}
	if po.pf.window < 0 || po.pf.window > maxProbeWindow {
		return usageErr("--window %v: between 0 (one reading) and %v", po.pf.window, maxProbeWindow)
	}
	if po.pf.mock != "" && po.pf.mock != "dgxa100" {
		return usageErr("--mock %q: the only simulated machine is dgxa100", po.pf.mock)
	}
	return checkMockFlags(po.pf, po.faultsFile)
}

// Run probes the hosts (or this machine), prints the snapshots on stdout
// (folded, per host, or --json) and the line that counts them on stderr,
// as exec does, and returns the exit status they give: 1 for a host
// flagged, without a snapshot or without NVML, or for hosts that do not
// agree (drift).
func (po *probeOptions) Run(ctx context.Context, stdout, stderr io.Writer) error {
	results, err := po.probeHosts(ctx, &po.ssh, po.pf, po.faultsFile)
	if err != nil {
		return err
	}
	total := probeTotal(results)
	switch {
	case po.output == "health-events":
		err = writeHealthEvents(stdout, results, time.Now())
	case po.json:
		markHardwareGroups(results)
		err = writeJSON(stdout, newProbeDocument(results, total))
	default:
		err = printProbes(stdout, results, !po.noFold)
		printDrift(stdout, probeDrift(results))
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(stderr, total)
	if ctx.Err() != nil {
		return errInterrupted
	}
	for _, r := range results {
		if r.Outcome != report.Healthy.String() {
			return errSilentFailure
		}
	}
	if len(probeDrift(results)) > 0 {
		return errSilentFailure // the hosts do not agree: the ones that differ are the finding
	}
	return nil
}

// probeDocument is probe --json: every host's result, in selection order,
// and the counts the summary line gives (by outcome: ok, flagged, failed).
type probeDocument struct {
	Hosts   []app.ProbeResult `json:"hosts"`
	Summary string            `json:"summary"`
	Counts  map[string]int    `json:"counts"`
	// Drift is what the hosts do not agree on (versions, modes), each
	// value with its hosts; [] when they agree.
	Drift     []render.Drift `json:"drift"`
	Simulated bool           `json:"simulated,omitempty"`
}

func newProbeDocument(results []app.ProbeResult, summary string) probeDocument {
	d := probeDocument{Hosts: results, Summary: summary, Counts: map[string]int{}, Drift: probeDrift(results)}
	if d.Hosts == nil {
		d.Hosts = []app.ProbeResult{}
	}
	if d.Drift == nil {
		d.Drift = []render.Drift{}
	}
	for _, o := range []report.Outcome{report.Healthy, report.Flagged, report.Failed} {
		d.Counts[o.String()] = 0
	}
	for _, r := range results {
		d.Counts[r.Outcome]++
		d.Simulated = d.Simulated || r.Simulated
	}
	return d
}

// probeLong is gpulab probe's --help.
const probeLong = `Push gpulab's NVML probe (a small binary; nothing is installed) to each host,
run it and read back one snapshot: every GPU with identity, PCIe link,
memory, utilisation, temperature, power, clocks, throttle reasons, ECC,
row remapping, MIG instances, NVLinks; the pairwise topology; NUMA and CPU
affinity; processes mapped to containers and pods; Xid errors decoded. A
field NVML refuses is listed in the snapshot's errors, never a failure.

The probe goes to the host's private cache directory under its sha256 and
is removed after the run; with --keep it stays there, and the next run,
finding the same sha256, sends no bytes. A host without the NVIDIA driver
answers with a clean report that says why.
--mock dgxa100 runs the probe against a simulated DGX A100 (go-nvml's mock),
marked "simulated": true; --mock-faults FILE gives each host's simulated
machine its faults (a JSON object of host name to faults: nvlink_down, ecc,
remap_pending, xids, mig, processes (a state of D or Z: stuck in the
driver, a zombie), utilization, pcie_gen, pcie_replays, throttle,
temperature_c, power_limit_w, recovery_action, nvml_hang, vbios, pstore, ib;
docs/checks/README.md); --local runs it on this machine.

After its snapshot the probe samples the GPUs for --window (2s; 0 for one
reading): clock-event reasons, utilisation and PCIe generation every 100ms,
the PCIe replay counter and the RDMA ports' error counters
(/sys/class/infiniband) at both ends. A slowdown, a link below its
generation under load and PCIe replays are findings as rates over those
samples, never from one reading. Every NVML call has a deadline: a GPU
whose call does not return is named hung, and the others are still read.
The inventory's expect = { gpus, ib_ports, ib_rate_gbps } goes to the
probe (--expect) for the GPU count and the InfiniBand ports' count and
rate (docs/checks/ib.md).

Hosts whose hardware reads the same (GPUs, memory, ECC and MIG modes, NUMA
nodes, NVLinks, topology, driver, findings) are printed once under their
node set, as exec folds outputs; every other group is a diff against the
largest (its rows marked "- " and "+ "), so a GPU missing, a link down or
another driver stands out. Each group ends with the range of what changes
by the second (utilisation, temperature, power, memory in use).
--no-fold prints every host's table instead, and nothing folded. Then what
the hosts of one GPU model do not agree on (drift): driver, CUDA, GPU
count, VBIOS, inforom, persistence, ECC mode, a MIG mode pending a reset,
each value with its hosts, the most common first: "VBIOS:
dgx[01-15] 92.00.45.00.05; dgx16 92.00.36.00.02". A line on stderr counts
the hosts ok, flagged and failed, names the others, and names the drift.

--json prints {"hosts": [...], "summary", "counts", "drift"}: one entry per selected
host, in selection order (the inventory's; hosts it does not list after
them, by name), each with its "class", how reaching it ended (ok, refused,
auth, lost, ...), and its "outcome", what the probe says of it as the
summary counts it: "ok", "flagged" (reached and read, something worth a
look) or "failed" (no snapshot, no NVML, or a run that did not end: a
probe cut short or lost is never evidence). "counts" counts the outcomes.

A host is flagged for what its snapshot shows worth a look: an NVLink
down, uncorrected ECC errors, a row remap pending or failed, a downtrained
PCIe link, an Xid. --json lists them under "flags", and under "findings"
in a shape other tools read: a stable check name, whether it is fatal, the
GPUs by index, UUID and bus id, the evidence and a recommended action
(none, check-app, reset-gpu, restart-vm, reboot, run-diagnostics,
contact-support, unknown; docs/probe.md maps them to NVSentinel's and
gpud's). --output health-events writes the findings as NVSentinel
HealthEvent JSON lines, one per finding and one healthy event per check
found clean (a check whose evidence is missing gives none), so that a site
that runs NVSentinel can feed them in (docs/health-events.md, schema
gpulab.health-events/v1). A host with no snapshot gives no event: the
summary on stderr names it.

Exit status: 0 when every host gave a snapshot with NVML available, none
is flagged and they agree; 1 when a host is flagged, gave no snapshot or
has no NVML, or the hosts drift; 2 for usage or configuration errors; 130
when interrupted.`

// writeHealthEvents writes every host's health events, one JSON object a
// line, hosts in selection order.
func writeHealthEvents(w io.Writer, results []app.ProbeResult, at time.Time) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, r := range results {
		for _, e := range report.HealthEvents(r.Host, r.Snapshot, at) {
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// probeHosts runs the probe on this machine (--local) or on the hosts -H
// selects, with each host's simulated faults (--mock-faults).
func (o *options) probeHosts(ctx context.Context, f *sshFlags, pf probeFlags, faultsFile string) ([]app.ProbeResult, error) {
	if pf.local {
		if f.hosts != "" {
			return nil, usageErr("--local and -H exclude each other")
		}
		r, err := runLocalProbe(ctx, pf)
		if err != nil {
			return nil, err
		}
		return []app.ProbeResult{r}, nil
	}
	r, err := o.newRunner(f)
	if err != nil {
		return nil, err
	}
	defer r.Keys.Close()
	if err := mockOnSimulated(r, pf, faultsFile); err != nil {
		return nil, err
	}
	if pf.faults, err = readHostFaults(faultsFile, r); err != nil {
		return nil, err
	}
	return o.probeFleet(ctx, r, pf)
}

func (pf probeFlags) args(host string) []string {
	var a []string
	if host != "" {
		a = append(a, "--host", host)
	}
	if pf.mock != "" {
		a = append(a, "--mock", pf.mock)
	}
	if pf.kmsg {
		a = append(a, "--kmsg")
	}
	if pf.xidWait > 0 {
		a = append(a, "--xid-wait", pf.xidWait.String())
	}
	return a
}

// localArgs are the probe's arguments on this machine: args, and the
// window that a fleet's run adds itself (app.ProbeOptions.Window).
func (pf probeFlags) localArgs(host string) []string {
	a := pf.args(host)
	if pf.window > 0 {
		a = append(a, "--window", pf.window.String())
	}
	return a
}

// hostArgs are the probe's arguments for one host: its name, and its
// simulated machine's faults.
func (pf probeFlags) hostArgs(host string) []string {
	a := []string{"--host", host}
	if f, ok := pf.faults[host]; ok {
		a = append(a, "--mock-faults", f)
	}
	return a
}

// prober is the probe a lab run installs on its hosts: nil with --no-probe.
//
// On a simulated fleet (simulated) the probe pushed is the simulator
// build, without --mock: the simulated host adds it with its own faults.
func (pf probeFlags) prober(none, simulated bool) (*remote.Prober, error) {
	switch {
	case simulated && pf.mock != "":
		return nil, usageErr("--mock: these hosts are a simulated fleet already (their probe simulates a DGX A100 with each host's faults)")
	case none && (pf.mock != "" || pf.binary != ""):
		return nil, usageErr("--no-probe excludes --mock and --probe-binary")
	case none:
		return nil, nil
	case pf.mock != "" && pf.mock != "dgxa100":
		return nil, usageErr("--mock %q: the only simulated machine is dgxa100", pf.mock)
	}
	p := app.EmbeddedProber(simulated || pf.mock != "")
	p.Args = pf.args("")
	if pf.binary != "" { // this file for every host, simulated or not
		p.Source, p.SimSource, p.AnyArch = pf.probeFor, nil, true
	}
	return p, nil
}

// probeFor returns the probe for an architecture, plain and gzipped:
// --probe-binary, or the embedded one.
func (pf probeFlags) probeFor(arch string) (data, gz []byte, err error) {
	if pf.binary != "" {
		data, err := fileio.ReadRegular(pf.binary, fileio.MaxProbe)
		if err != nil {
			return nil, nil, usageErr("--probe-binary: %v", err)
		}
		return data, orchestrator.Gzip(data), nil
	}
	return bundle.Probe(arch, pf.mock != "")
}

func runLocalProbe(ctx context.Context, pf probeFlags) (app.ProbeResult, error) {
	data, _, err := pf.probeFor(runtime.GOARCH)
	if err != nil {
		return app.ProbeResult{}, configErr(err)
	}
	dir, err := os.MkdirTemp("", "gpulab-probe-")
	if err != nil {
		return app.ProbeResult{}, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "nvmlprobe")
	if err := os.WriteFile(bin, data, 0o700); err != nil {
		return app.ProbeResult{}, err
	}
	host, _ := os.Hostname()
	c := exec.CommandContext(ctx, bin, pf.localArgs(host)...)
	c.Env = withoutBindNow(os.Environ())
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	err = c.Run()
	r := app.ReadSnapshot(app.ProbeResult{Host: host, ExitCode: c.ProcessState.ExitCode()}, out.Bytes(), errOut.String(), err)
	// --mock says so where a probe over SSH does: the host and the document
	r.Simulated = pf.mock != "" || (r.Snapshot != nil && r.Snapshot.Simulated)
	return r, nil
}

func withoutBindNow(env []string) []string {
	out := env[:0:0]
	for _, e := range env {
		if !strings.HasPrefix(e, "LD_BIND_NOW=") {
			out = append(out, e)
		}
	}
	return out
}

// printProbes prints one line per kind of host (its hardware in a
// phrase, under its node set), then the GPUs folded; or, without fold,
// every host's table alone (Run prints the line that counts them).
//
// Hosts without a snapshot fold by their class (auth, refused, ...), as
// exec folds them, each host's error under them (errors name addresses).
func printProbes(w io.Writer, results []app.ProbeResult, fold bool) error {
	if !fold {
		printProbeTables(w, results)
		return nil
	}
	groups := map[string][]string{}
	errs := map[string][]string{}
	var order []string
	for _, r := range results {
		key := report.Hardware(r.Snapshot)
		if r.Snapshot == nil {
			key = r.Class
			errs[key] = append(errs[key], fmt.Sprintf("  %s: %s", r.Host, r.Error))
		}
		if _, ok := groups[key]; !ok {
			order = append(order, key)
		}
		groups[key] = append(groups[key], r.Host)
	}
	sort.SliceStable(order, func(a, b int) bool { return len(groups[order[a]]) > len(groups[order[b]]) })
	for _, k := range order {
		fmt.Fprintf(w, "%s: %s\n", inventory.FoldNames(groups[k]), k)
		for _, e := range errs[k] {
			fmt.Fprintln(w, e)
		}
	}
	return printProbesFolded(w, results)
}

// probeColumns are the results' hosts, snapshots and classes, as
// render's one-place computations over a run take them.
func probeColumns(results []app.ProbeResult) (hosts []string, snaps []*report.Snapshot, classes []string) {
	hosts = make([]string, len(results))
	snaps = make([]*report.Snapshot, len(results))
	classes = make([]string, len(results))
	for i, r := range results {
		hosts[i], snaps[i], classes[i] = r.Host, r.Snapshot, r.Class
	}
	return hosts, snaps, classes
}

// probeDrift is what the hosts that answered do not agree on.
func probeDrift(results []app.ProbeResult) []render.Drift {
	return render.FleetDrift(probeColumns(results))
}

// printDrift prints what the hosts do not agree on, one attribute a line.
func printDrift(w io.Writer, drift []render.Drift) {
	if len(drift) == 0 {
		return
	}
	fmt.Fprintln(w, "\n---------------- drift: the hosts do not agree on")
	for _, d := range drift {
		fmt.Fprintln(w, d.String())
	}
}

// probeTotal counts the hosts: ok, flagged (what the probe found worth a
// look: report.Flags) and failed (no snapshot, or NVML not available),
// naming the flagged ones and the failed ones by why, then the drift:
// "4 hosts: 2 ok, 1 flagged (dgx01), 1 failed: 1 refused (dgx04)".
func probeTotal(results []app.ProbeResult) string {
	return render.ProbeTotal(probeColumns(results))
}

// printProbeTables prints each host's GPU table (--no-fold), or why it
// has none, then what it is flagged for that the table does not show
// (NVLinks down, Xids).
func printProbeTables(w io.Writer, results []app.ProbeResult) {
	for i, r := range results {
		if i > 0 {
			fmt.Fprintln(w)
		}
		s := r.Snapshot
		switch {
		case s == nil:
			fmt.Fprintf(w, "%s: %s: %s\n", r.Host, r.Class, r.Error)
			continue
		case !s.NVML.Available:
			fmt.Fprintf(w, "%s: %s\n", r.Host, report.Hardware(s))
			continue
		}
		host := r.Host
		if len(r.Flags) > 0 {
			host += " (flagged)"
		}
		fmt.Fprintf(w, "%s: %s\nprobe %s, %.1f ms, CUDA %s\n", host, report.Hardware(s), s.ProbeVersion, s.DurationMS, s.CUDADriverVersion)
		if len(s.GPUs) > 0 {
			render.GPUTable(s).WriteText(w)
		}
		for _, l := range report.NVLinksDown(s) {
			fmt.Fprintf(w, "  %s\n", l)
		}
		for _, x := range s.XIDs {
			fmt.Fprintf(w, "  %s\n", render.XID(x))
		}
		for _, l := range render.HostFindings(s) {
			fmt.Fprintf(w, "  %s\n", l)
		}
		for _, l := range []string{render.XIDHistoryUnread(s), render.FieldsNotGiven(s)} {
			if l != "" {
				fmt.Fprintf(w, "  %s\n", l)
			}
		}
	}
}

// probeFleet probes every host of r as pf says; a failure on every host
// for a reason on this machine is a configuration error.
func (o *options) probeFleet(ctx context.Context, r *app.Fleet, pf probeFlags) ([]app.ProbeResult, error) {
	prober, err := pf.prober(false, r.Simulated)
	if err != nil {
		return nil, err
	}
	prober.Keep = pf.keep
	m := o.startMeter("probe", r.Engine, len(r.Targets))
	results, err := r.Probe(ctx, app.ProbeOptions{Prober: prober, XidWait: pf.xidWait, Window: pf.window, HostArgs: pf.hostArgs}, nil)
	m.end()
	if le := (*app.LocalError)(nil); errors.As(err, &le) {
		return nil, configErr(le.Err)
	}
	return results, err
}
