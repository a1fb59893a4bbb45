package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"github.com/spf13/cobra"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/labs"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/probes/remote"
	"github.com/gpulab/gpulab/runbooks"
	"github.com/gpulab/gpulab/tui"
)

// EnvFirstFrameExit, when set, makes the workbench quit right after drawing
// its first frame; bench/startup.sh uses it to time start-up.
const EnvFirstFrameExit = "GPULAB_EXIT_AFTER_FIRST_FRAME"

// errNeedsTerminal is the workbench's answer off a terminal.
var errNeedsTerminal = usageErr("the workbench needs a terminal; for text use `gpulab map` or `gpulab matrix` (--json for scripts)")

// runWorkbench opens the workbench on the inventory's hosts or, when there
// is no inventory at all (no --inventory, no $GPULAB_INVENTORY, no
// ~/.config/gpulab/inventory.toml), on a simulated fleet, as gpulab demo.
// A --inventory or $GPULAB_INVENTORY that names no file is a configuration
// error (loadInventory's), not "no inventory": no demo then.
//
// -H opens it on the hosts it selects, inventory hosts or not (names
// ~/.ssh/config or -F knows, addresses): no inventory is needed then.
func runWorkbench(cmd *cobra.Command, o *options, wf *sshFlags) error {
	if cmd.Flags().Changed("hosts") && strings.TrimSpace(wf.hosts) == "" {
		return usageErr("-H is empty: which hosts? (e.g. -H 'gpu[01-08]', -H @a100, -H '*')")
	}
	if !o.env.IsTerminal {
		return errNeedsTerminal
	}
	if wf.hosts == "" && o.inventory == "" && o.getenv(inventory.EnvInventory) == "" {
		if _, err := inventory.Locate(o.getenv); errors.Is(err, inventory.ErrNotFound) {
			return runDemo(cmd, o, demoFlags{hosts: defaultDemoHosts})
		}
	}
	// The workbench's lifetime: SIGTERM, SIGHUP (the terminal went away)
	// or an outside SIGINT stop the runs in flight, their cleanup runs, and
	// the workbench quits once it has.
	life, stopLife := signal.NotifyContext(context.Background(), stopSignals...)
	defer stopLife()
	return openWorkbench(cmd, o, life, &workbench{ssh: wf})
}

// workbench is what a demo adds to the workbench: the hosts are
// simulated, a presenter's walkthrough, masked names, and where lab
// records go ("" for the usual results directory).
type workbench struct {
	simulated bool
	present   []tui.PresentStep
	mask      bool
	results   string
	// kill cuts a simulated host off (Fleet's K in the demo).
	kill func(name string) error
	// simFleet is the demo's fleet process (the status bar says when it
	// stopped; R starts it again).
	simFleet tui.SimFleet
	// hosts, when set, is called once the workbench's files are loaded
	// and before the inventory is: a demo's fleet starts meanwhile.
	hosts func() error
	// cluster, when set, is the demo's simulated cluster for the Cluster
	// tab and the labs' cluster steps (set by hosts).
	cluster func(ctx context.Context) (*cluster.Client, error)
	// ssh is the workbench's -H, -F and --known-hosts (nil: every
	// inventory host, as the inventory says to reach it).
	ssh *sshFlags
	// demo is the demo's fleet (nil elsewhere): its inventory is
	// temporary, so a lab record's Reproduce names the fleet instead.
	demo *demoFlags
}

// fleet returns the inventory the workbench shows and the runner for its
// hosts: with -H, the hosts it selects (ad-hoc ones too); else every
// inventory host (no runner when there is none).
func (w *workbench) fleet(o *options, inv *inventory.Inventory) (*inventory.Inventory, *runner, error) {
	sel := sshFlags{hosts: "*"}
	if w.ssh != nil {
		sel.sshConfig, sel.knownHosts = w.ssh.sshConfig, w.ssh.knownHosts
		if w.ssh.hosts != "" {
			hs, err := inv.Select(w.ssh.hosts)
			if err != nil {
				return nil, nil, usageErr("-H: %v", err)
			}
			if len(hs) == 0 {
				return nil, nil, usageErr("-H %q selects no host", w.ssh.hosts)
			}
			inv = inv.Only(hs)
		}
	}
	if len(inv.Hosts) == 0 {
		return inv, nil, nil
	}
	r, err := o.runnerOn(inv, &sel)
	return inv, r, err
}

// openWorkbench runs the workbench on the inventory until it quits or
// life ends (then it stops its runs, waits for their cleanup and quits).
func openWorkbench(cmd *cobra.Command, o *options, life context.Context, w *workbench) error {
	c, err := o.loadCatalog()
	if err != nil {
		return err
	}
	rbs, err := o.loadRunbooks()
	if err != nil {
		return err
	}
	ls, err := o.loadLabs()
	if err != nil {
		return err
	}
	if w.hosts != nil {
		if err := w.hosts(); err != nil {
			return err
		}
	}
	inv, err := o.loadInventory(false)
	if err != nil {
		return err
	}
	inv, r, err := w.fleet(o, inv)
	if err != nil {
		return err
	}
	results := w.results
	if results == "" {
		results = o.resultsDir()
	}
	// Colours for the terminal the workbench draws on, asked of it here
	// (its background: ESC ] 11 ; ?), before Bubble Tea takes it over.
	// No command but the workbench asks the terminal anything: see
	// internal/termquiet.
	lipgloss.SetDefaultRenderer(lipgloss.NewRenderer(o.env.Stdout))
	if o.noColor || o.getenv("NO_COLOR") != "" {
		lipgloss.SetColorProfile(termenv.Ascii)
		lipgloss.SetHasDarkBackground(true) // no colours: nothing to ask
	} else {
		lipgloss.HasDarkBackground()
	}
	opts := tui.Options{Catalog: c, Inventory: inv, Runbooks: rbs, Labs: ls, Version: Version, Styles: tui.DefaultStyles(), Results: results, Context: life,
		Simulated: w.simulated || inv.Simulated, Present: w.present, Mask: w.mask, KillHost: w.kill, SimFleet: w.simFleet}
	if len(w.present) > 0 {
		opts.Styles = tui.PresenterStyles()
	}
	// Nothing writes on the terminal behind Bubble Tea's back, from
	// here (the clusters' credential plugins run from now on) to the end.
	errLog, restoreStderr := o.quietStderr()
	defer restoreStderr()
	clusters, stopClusters := workbenchClusters(o, life, w, inv)
	defer stopClusters()
	opts.Clusters = clusters
	if r != nil {
		sel := sshFlags{}
		if w.ssh != nil {
			sel = *w.ssh
		}
		closeFleet := o.fleetOptions(&opts, r, inv, results, o.reproduce(inv.File, &sel, nil), w.labKube(life), w.demo)
		defer closeFleet()
	}
	var model tea.Model = tui.New(opts)
	if o.getenv(EnvFirstFrameExit) != "" {
		model = tui.QuitAfterFirstFrame(model)
	}
	// The terminal itself: the workbench draws with escape sequences, and
	// the mouse wheel scrolls its panes (shift+drag still selects text in
	// most terminals).
	p := tea.NewProgram(model, tea.WithAltScreen(), tea.WithMouseCellMotion(), tea.WithInput(cmd.InOrStdin()),
		tea.WithOutput(o.env.Stdout), tea.WithoutSignalHandler())
	if _, err := p.Run(); err != nil {
		if errors.Is(err, tea.ErrProgramPanic) && errLog != nil {
			return fmt.Errorf("workbench: %w (its stack is in %s)", err, errLog.path)
		}
		return fmt.Errorf("workbench: %w", err)
	}
	return nil
}

// fleetOptions sets the workbench's runners on runner r's hosts, a lab's
// cluster found by kube (nil: the inventory's [[kube]] table of its hosts,
// labCluster), the files a lab run read (reproduce) and the demo's fleet
// (nil elsewhere); the returned function closes their keys and
// connections.
func (o *options) fleetOptions(opts *tui.Options, r *runner, inv *inventory.Inventory, results string, reproduce []string, kube func([]orchestrator.Target) (*cluster.Client, string), demo *demoFlags) func() {
	r.keys.Passphrase = nil      // the terminal belongs to the workbench: encrypted keys go through ssh-agent
	r.engine.StreamOutput = true // the Fleet tab shows a running command's output as it comes
	// Connections stay open between the workbench's runs (keepalive,
	// closed after 10 minutes unused and on quit): the second command
	// on the same hosts pays no handshake.
	r.engine.Pool = &orchestrator.Pool{Dialer: r.engine.Dialer}
	opts.Fleet = fleetRunner{r: r}
	opts.RunbookRunner = fleetRunner{r: r}
	probe, _ := probeFlags{}.prober(false, inv.Simulated) // the embedded probe: no flags to refuse
	if kube == nil {
		kube = func(ts []orchestrator.Target) (*cluster.Client, string) { return o.labCluster(r, ts) }
	}
	opts.LabRunner = fleetRunner{r: r, results: results, probe: probe, reproduce: reproduce, kube: kube, demo: demo}
	return func() { r.engine.Pool.Close(); r.keys.Close() }
}

// labKube is the cluster of a lab's hosts in the demo: its simulated
// cluster, whose nodes they are; nil elsewhere (the inventory says).
func (w *workbench) labKube(life context.Context) func([]orchestrator.Target) (*cluster.Client, string) {
	if w.cluster == nil {
		return nil
	}
	return func([]orchestrator.Target) (*cluster.Client, string) {
		c, err := w.cluster(life)
		if err != nil {
			return nil, "the simulated cluster: " + err.Error()
		}
		return c, ""
	}
}

// quietStderr points the process's stderr at a log (stderrLog) until the
// returned function is called, when the workbench's stderr is the
// process's; that function restores it and names the log if anything
// was written there. The log is nil when stderr is left as it is.
func (o *options) quietStderr() (*stderrLog, func()) {
	if f, ok := o.env.Stderr.(*os.File); !ok || f.Fd() != 2 {
		return nil, func() {}
	}
	l, err := openStderrLog(o.getenv)
	if err != nil {
		return nil, func() {}
	}
	if err := l.divert(); err != nil {
		l.close()
		return nil, func() {}
	}
	return l, func() {
		l.restore()
		if l.close() {
			fmt.Fprintf(o.env.Stderr, "gpulab: what was written to stderr while the workbench ran (a credential plugin's messages, a panic's stack) is in %s\n", l.path)
		}
	}
}

func newVersionCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print gpulab's version",
		Example: "  gpulab version --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := struct {
				Version string `json:"version"`
				Go      string `json:"go"`
				OS      string `json:"os"`
				Arch    string `json:"arch"`
				Module  string `json:"module,omitempty"`
			}{Version: Version, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
			if bi, ok := debug.ReadBuildInfo(); ok {
				info.Module = bi.Main.Path
			}
			if o.json {
				return writeJSON(cmd.OutOrStdout(), info)
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "gpulab %s (%s, %s/%s)\n", info.Version, info.Go, info.OS, info.Arch)
			return err
		},
	}
}

// fleetRunner lets the workbench's Fleet view run commands on the
// inventory's hosts.
type fleetRunner struct {
	r       *runner
	results string         // where lab records go
	probe   *remote.Prober // installed by lab runs
	// reproduce are the files a lab run read (options.reproduce), for
	// its record; the parameters are added per run.
	reproduce []string
	// kube finds the cluster a lab's hosts belong to (labCluster).
	kube func([]orchestrator.Target) (*cluster.Client, string)
	// demo is the demo's fleet, nil elsewhere (see reproduceFor).
	demo *demoFlags
}

// Hosts are the selected hosts, in selection order, with the error of
// those that could not be resolved, so that no host vanishes from the
// workbench's counts.
func (f fleetRunner) Hosts() []tui.FleetHost {
	hs := make([]tui.FleetHost, 0, len(f.r.targets))
	for _, t := range f.r.targets {
		hs = append(hs, tui.FleetHost{Name: t.Name, Address: t.HostPort(), Err: t.Unresolved})
	}
	return hs
}

// Run runs command on every host: one result each, in order (a host that
// could not be resolved ends at once with its error).
func (f fleetRunner) Run(ctx context.Context, command string, events chan<- orchestrator.Event) []orchestrator.HostResult {
	plan := orchestrator.Plan{Targets: f.r.targets, Steps: []orchestrator.Step{{Name: "exec", Command: command}}}
	return f.r.engine.Run(ctx, plan, events)
}

// chosen are the targets of the chosen host indices, in their order.
func (f fleetRunner) chosen(hosts []int) []orchestrator.Target {
	var targets []orchestrator.Target
	for _, h := range hosts {
		if h >= 0 && h < len(f.r.targets) {
			targets = append(targets, f.r.targets[h])
		}
	}
	return targets
}

func (f fleetRunner) Probe(ctx context.Context, events chan<- orchestrator.Event) []tui.ProbeOutcome {
	results, err := runRemoteProbes(ctx, f.r, probeFlags{}, events)
	out := make([]tui.ProbeOutcome, len(f.r.targets))
	for i := range out {
		switch {
		case err != nil:
			out[i].Err = err.Error()
		case i < len(results):
			out[i] = tui.ProbeOutcome{Snapshot: results[i].Snapshot, Err: results[i].Error}
		}
	}
	return out
}

func (f fleetRunner) RunRunbook(ctx context.Context, rb runbooks.Runbook, hosts []int, params map[string]string, done chan<- tui.RunbookHost) {
	defer close(done)
	runbooks.Execute(ctx, f.r.engine, f.chosen(hosts), rb, runbooks.RunOptions{Params: params, OnHost: func(i int, r runbooks.HostRun) {
		done <- tui.RunbookHost{Index: i, Run: r}
	}})
}

// reproduceFor is what a lab record's Reproduce line gives: the files
// the run read and its parameters; in the demo, whose inventory goes with
// it, the fleet to bring back first: gpulab sim serve with the demo's
// seed and hosts (the same fleet) and the inventory it writes, or, for a
// lab that reads the demo's simulated cluster (which sim serve does not
// serve), gpulab demo again, in whose Labs tab the lab runs.
func (f fleetRunner) reproduceFor(l *labs.Lab, params map[string]string) (repro, fleet []string) {
	if f.demo == nil {
		return append(slices.Clip(f.reproduce), setArgs(params)...), nil
	}
	seed, hosts := fmt.Sprint(f.demo.seed), fmt.Sprint(f.demo.hosts)
	if l.ReadsCluster() {
		return nil, []string{"gpulab", "demo", "--seed", seed, "--hosts", hosts}
	}
	const inv = "sim-inventory.toml"
	return append([]string{"--inventory", inv}, setArgs(params)...), []string{"gpulab", "sim", "serve", "--seed", seed, "--hosts", hosts, "--inventory-out", inv}
}

// setArgs are params as --set name=value arguments, by name.
func setArgs(params map[string]string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(params)) {
		out = append(out, "--set", k+"="+params[k])
	}
	return out
}

func (f fleetRunner) RunLab(ctx context.Context, l *labs.Lab, hosts []int, o tui.LabRunOptions, events chan<- tui.LabUpdate) {
	defer close(events)
	targets := f.chosen(hosts)
	var kube *cluster.Client
	var kubeProblem string
	if f.kube != nil {
		kube, kubeProblem = f.kube(targets)
	}
	repro, fleet := f.reproduceFor(l, o.Params)
	out := labs.Execute(ctx, labs.RunSpec{Engine: f.r.engine, Targets: targets, Lab: l, Results: f.results,
		Options: labs.RunOptions{Simulated: f.r.simulated, Params: o.Params, Solve: o.Solve, Guide: o.Guide, Probe: f.probe, Abandon: o.Abandon,
			Reproduce: repro, ReproduceFleet: fleet,
			Cluster: kube, ClusterProblem: kubeProblem,
			OnEvent: func(ev labs.Event) {
				e := ev
				if e.Step != nil {
					s := *e.Step
					e.Step = &s
				}
				events <- tui.LabUpdate{Event: &e}
			}}})
	u := tui.LabUpdate{Record: out.Record, Dir: out.Dir}
	if out.WriteErr != nil {
		u.Err = "the lab ran, but " + out.WriteErr.Error()
	}
	events <- u
}
