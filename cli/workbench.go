package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"github.com/spf13/cobra"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/tui"
)

// EnvFirstFrameExit, when set, makes the workbench quit right after drawing
// its first frame; bench/startup.sh uses it to time start-up.
const EnvFirstFrameExit = "GPULAB_EXIT_AFTER_FIRST_FRAME"

// errNeedsTerminal is the workbench's answer off a terminal.
var errNeedsTerminal = usageErr("the workbench needs a terminal; for text use `gpulab map` or `gpulab matrix` (--json for scripts)")

// workbenchOptions is plain gpulab: the workbench, on the hosts -H, -F
// and --known-hosts name.
type workbenchOptions struct {
	*options
	ssh sshFlags
}

// Validate refuses what the workbench does not take.
func (wb *workbenchOptions) Validate(cmd *cobra.Command) error {
	if wb.json {
		return usageErr("--json applies to a command (gpulab map --json, gpulab matrix --json, ...); the workbench itself draws on a terminal")
	}
	if cmd.Flags().Changed("hosts") && strings.TrimSpace(wb.ssh.hosts) == "" {
		return usageErr("-H is empty: which hosts? (e.g. -H 'gpu[01-08]', -H @a100, -H '*')")
	}
	return nil
}

// runWorkbench opens the workbench on the inventory's hosts or, when there
// is no inventory at all (no --inventory, no $GPULAB_INVENTORY, no
// ~/.config/gpulab/inventory.toml), on a simulated fleet, as gpulab demo.
// A --inventory or $GPULAB_INVENTORY that names no file is a configuration
// error (loadInventory's), not "no inventory": no demo then.
//
// -H opens it on the hosts it selects, inventory hosts or not (names
// ~/.ssh/config or -F knows, addresses): no inventory is needed then.
func runWorkbench(cmd *cobra.Command, o *options, wf *sshFlags) error {
	if !o.env.IsTerminal {
		return errNeedsTerminal
	}
	kube, err := wf.viaKube()
	if err != nil {
		return err
	}
	if !kube && wf.hosts == "" && o.inventory == "" && o.getenv(inventory.EnvInventory) == "" {
		if _, err := inventory.Locate(o.getenv); errors.Is(err, inventory.ErrNotFound) {
			return runDemo(cmd, o, demoFlags{hosts: defaultDemoHosts})
		}
	}
	// The workbench's lifetime: SIGTERM, SIGHUP (the terminal went away)
	// or an outside SIGINT stop the runs in flight, their cleanup runs, and
	// the workbench quits once it has.
	life, stopLife := signalContext()
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
	// resultsGone: results is a temporary directory, gone on quit.
	resultsGone bool
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
func (w *workbench) fleet(o *options, inv *inventory.Inventory) (*inventory.Inventory, *app.Fleet, error) {
	if w.ssh != nil && w.ssh.kube.via == "kube" {
		f := *w.ssh
		if f.hosts == "" && f.kube.selector == "" {
			f.hosts = "*"
		}
		r, err := o.kubeRunner(&f)
		if err != nil {
			return nil, nil, err
		}
		w.ssh.kube.context, w.ssh.kube.namespace = f.kube.context, f.kube.namespace // for a record's Reproduce
		return r.Inv, r, nil
	}
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
			if life.Err() != nil { // a signal while the demo's fleet started
				return errInterrupted
			}
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
	o.terminalColours()
	opts := tui.Options{Catalog: c, Inventory: inv, Runbooks: rbs, Labs: ls, Version: Version, Styles: tui.DefaultStyles(), Results: results, ResultsGone: w.resultsGone, Context: life,
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
	// A signal ended it (its runs stopped and cleaned up): say so as
	// every other command does, so that a script or a supervisor never
	// reads a killed workbench as a clean quit.
	if life.Err() != nil {
		return errInterrupted
	}
	return nil
}

// terminalColours sets the colours for the terminal the workbench draws
// on, asked of it here (its background: ESC ] 11 ; ?), before Bubble Tea
// takes it over; none with --no-color or NO_COLOR. No command but the
// workbench asks the terminal anything: see internal/termquiet.
func (o *options) terminalColours() {
	lipgloss.SetDefaultRenderer(lipgloss.NewRenderer(o.env.Stdout))
	if o.noColor || o.getenv("NO_COLOR") != "" {
		lipgloss.SetColorProfile(termenv.Ascii)
		lipgloss.SetHasDarkBackground(true) // no colours: nothing to ask
	} else {
		lipgloss.HasDarkBackground()
	}
}

// fleetOptions sets the workbench's runners on runner r's hosts, a lab's
// cluster found by kube (nil: the inventory's [[kube]] table of its hosts,
// app.Fleet.Cluster), the files a lab run read (reproduce) and the demo's fleet
// (nil elsewhere); the returned function closes their keys and
// connections.
func (o *options) fleetOptions(opts *tui.Options, r *app.Fleet, inv *inventory.Inventory, results string, reproduce []string, kube func([]orchestrator.Target) (*cluster.Client, string), demo *demoFlags) func() {
	closeFleet := r.Pool() // the terminal is the workbench's; the second command on a host pays no handshake
	w := &app.Workbench{Fleet: r, Results: results, Prober: app.EmbeddedProber(inv.Simulated), Reproduce: reproduce, Kube: kube, Getenv: o.getenv, By: whoAmI(o.getenv)}
	if demo != nil {
		w.Demo = &app.Demo{Seed: demo.seed, Hosts: demo.hosts}
	}
	opts.Fleet, opts.RunbookRunner, opts.LabRunner = w, w, w
	return closeFleet
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
