package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/spf13/cobra"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/sim"
	"github.com/gpulab/gpulab/sim/spec"
	"github.com/gpulab/gpulab/tui"
)

// defaultDemoHosts is the simulated fleet's size when nothing says
// otherwise: enough for one sick host to stand out among healthy ones.
const defaultDemoHosts = 4

// demoFlags are gpulab demo's flags.
type demoFlags struct {
	hosts   int
	seed    int64
	present bool
	mask    bool
}

func newDemoCmd(o *options) *cobra.Command {
	d := &demoFlags{hosts: defaultDemoHosts}
	c := &cobra.Command{
		Use:   "demo [--hosts N] [--seed S] [--present] [--mask]",
		Short: "The workbench on a SIMULATED DGX A100 fleet (no hardware, no inventory)",
		Long: `gpulab demo starts a SIMULATED fleet of DGX A100 hosts (as gpulab sim
serve does: real SSH servers on 127.0.0.1, GPU tools answering from
recorded outputs, one sick host) in a child process under hard limits, and
opens the workbench on it. A simulated command that runs the fleet into a
limit ends that process, not the workbench: the status bar says "the
simulated fleet stopped" and why, and R starts it again on the same ports
with the same keys. Plain
gpulab does the same when it finds no inventory. Every host and the header
say SIMULATED.

The fleet's keys, inventory and lab records live in one private temporary
directory, removed with the fleet when the workbench quits, on SIGTERM and
on SIGHUP ($GPULAB_RESULTS keeps the records elsewhere). A record's
Reproduce line therefore brings the same fleet back first (gpulab sim serve
--seed S --hosts N, or gpulab demo for a lab that reads the simulated
cluster): the same seed and hosts make the same fleet.

--present is a scripted walkthrough for a projector: n goes to the next
step, p back; page down and page up (a presenter's clicker) first scroll
the pane in view to its end or top, then step. Each step shows its tab,
starts what it shows (the probe, the topology runbook, the topology-sanity lab) and says
in one line what to look at, in bold high-contrast styles. Running arbitrary
commands (the Fleet's :) is off. --mask hides host names and addresses on
screen: dgx01 reads host-1, 127.0.0.1:PORT reads masked.`,
		Example: `  gpulab demo                    # 4 simulated hosts, the workbench on them
  gpulab demo --present --mask   # the walkthrough for a projector, names hidden
  gpulab demo --hosts 16 --seed 7`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := d.Validate(o); err != nil {
				return err
			}
			return runDemo(cmd, o, *d)
		},
	}
	fl := c.Flags()
	fl.IntVar(&d.hosts, "hosts", defaultDemoHosts, fmt.Sprintf("how many simulated hosts (1 to %d)", sim.MaxHosts))
	fl.Int64Var(&d.seed, "seed", 0, "picks the sick host and its faults (same seed, same fleet)")
	fl.BoolVar(&d.present, "present", false, "a scripted walkthrough for a projector: n next step, p back")
	fl.BoolVar(&d.mask, "mask", false, "hide host names and addresses on screen (dgx01 → host-1)")
	return c
}

// Validate refuses what the demo does not take: it is the workbench on
// its own fleet.
func (d *demoFlags) Validate(o *options) error {
	if o.json {
		return usageErr("demo: --json does not apply: the demo is the workbench, on a terminal (gpulab sim serve --json serves a fleet for scripts)")
	}
	if o.inventory != "" {
		return usageErr("demo: --inventory does not apply: the demo runs on its own simulated fleet (gpulab --inventory %s opens the workbench on your hosts)", o.inventory)
	}
	if d.hosts < 1 || d.hosts > sim.MaxHosts {
		return usageErr("demo: --hosts %d: between 1 and %d", d.hosts, sim.MaxHosts)
	}
	return nil
}

// runDemo starts the simulated fleet, opens the workbench on it, and
// closes the fleet and removes its directory however the workbench ends.
// The signals are caught before the fleet starts, so that none can leave
// it behind.
func runDemo(cmd *cobra.Command, o *options, d demoFlags) error {
	if !o.env.IsTerminal {
		return errNeedsTerminal
	}
	life, stopLife := signalContext()
	defer stopLife()
	dir, err := sim.PrivateDir("gpulab-demo-") // a crashed demo's is removed first
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer os.RemoveAll(dir)
	// The fleet starts (its hosts' keys, the probe's checksum) while the
	// workbench loads its catalog, runbooks and labs.
	type started struct {
		f   *sim.Child
		err error
	}
	starting := make(chan started, 1)
	go func() {
		// The fleet runs in a process of its own, under hard limits: what
		// a simulated command does can end that process, never this one
		// (the status bar says so; R starts it again).
		f, err := sim.Spawn(life, sim.Config{Hosts: d.hosts, Seed: d.seed, Dir: dir})
		starting <- started{f, err}
	}()
	fleet := sync.OnceValue(func() started { return <-starting })
	defer func() {
		if s := fleet(); s.f != nil {
			s.f.Close()
		}
	}()
	results := o.getenv("GPULAB_RESULTS")
	gone := results == ""
	if gone {
		results = filepath.Join(dir, "results")
	}
	w := &workbench{simulated: true, mask: d.mask, results: results, resultsGone: gone, demo: &d}
	w.hosts = func() error {
		s := fleet()
		if s.err != nil {
			return usageErr("demo: %v", s.err)
		}
		files, err := s.f.WriteInventory(filepath.Join(dir, "inventory.toml"))
		if err != nil {
			return fmt.Errorf("demo: write the fleet's inventory: %w", err)
		}
		o.inventory = files.Inventory
		w.kill = s.f.Kill
		w.simFleet = s.f
		w.cluster = demoCluster(life, s.f)
		if d.present {
			w.present = presentSteps(s.f.Hosts())
		}
		return nil
	}
	return openWorkbench(cmd, o, life, w)
}

// demoCluster is the demo's simulated cluster (a client-go fake the
// fleet feeds, context "simulated"), made once and served until life
// ends: the Cluster tab follows it and the labs' cluster steps read the
// same one, whose nodes are the demo's hosts.
func demoCluster(life context.Context, f interface {
	KubeClient(context.Context) (*cluster.Client, error)
}) func(context.Context) (*cluster.Client, error) {
	once := sync.OnceValues(func() (*cluster.Client, error) { return f.KubeClient(life) })
	return func(context.Context) (*cluster.Client, error) { return once() }
}

// presentSteps is the presenter's walkthrough of the demo fleet: the Map,
// the Matrix, the probe and the sick host up close, the topology runbook
// and its evidence, the topology-sanity lab scored live, and its record.
// The captions name what the fleet's plan broke, so that each says what
// the screen will show, in a line that fits 80 columns.
func presentSteps(hosts []sim.Host) []tui.PresentStep {
	sick, faults := sickHost(hosts)
	rest := "" // what the healthy hosts do, if there are any
	if len(hosts) > 1 {
		rest = fmt.Sprintf(", PASS on the other %d", len(hosts)-1)
	}
	pair := "a GPU pair"
	if len(faults.NVLinkDown) > 0 {
		pair = fmt.Sprintf("GPU%d–GPU%d", faults.NVLinkDown[0][0], faults.NVLinkDown[0][1])
	}
	upClose := sick + "'s GPUs: " + pair + " at SYS"
	gpus := slices.Sorted(maps.Keys(faults.ECC))
	for _, gpu := range gpus {
		if n := faults.ECC[gpu].VolatileUncorrected; n > 0 {
			upClose += fmt.Sprintf("; GPU%d: %d uncorrected ECC", gpu, n)
			if slices.Contains(faults.RemapPending, gpu) {
				upClose += ", remap pending"
			}
			break
		}
	}
	return []tui.PresentStep{
		{Tab: "Map", Caption: "Three planes: who gets GPUs, how a GPU is shared, what runs on it"},
		{Tab: "Matrix", Caption: "Each project on four axes: unit, isolation, fragmentation, governance"},
		{Tab: "Fleet", Run: "probe", Caption: fmt.Sprintf("%s is flagged: NVLink %s is down (SYS)", sick, pair)},
		{Tab: "Fleet", Open: true, Caption: upClose},
		{Tab: "Runbooks", Run: "topology", Caption: fmt.Sprintf("topology: FAIL on %s (%s at SYS)%s", sick, pair, rest)},
		{Tab: "Runbooks", Open: true, Caption: fmt.Sprintf("The evidence: nvidia-smi topo -m on %s, and what to check next", sick)},
		{Tab: "Labs", Run: "topology-sanity", Caption: fmt.Sprintf("topology-sanity, live: nvlink-mesh FAIL on %s%s", sick, rest)},
		{Tab: "Cluster", Open: true, Caption: "The cluster: why the 8-GPU job waits; GPUs allocated against used"},
		{Tab: "Results", Open: true, Caption: "The end: the lab record; b marks it the baseline, c compares later runs"},
	}
}

// sickHost is the sick host's name and its faults.
func sickHost(hosts []sim.Host) (string, spec.Faults) {
	for _, h := range hosts {
		if h.Sick {
			var f spec.Faults
			_ = json.Unmarshal([]byte(h.Faults), &f) // written by the fleet itself; empty when it has none
			return h.Name, f
		}
	}
	return "no host", spec.Faults{}
}
