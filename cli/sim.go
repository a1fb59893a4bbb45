package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpulab/gpulab/internal/fileio"
	"github.com/gpulab/gpulab/sim"
)

func newSimCmd(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "A simulated DGX A100 fleet over real SSH, for demos and tests (no hardware)",
		Long: `gpulab sim runs a SIMULATED fleet of DGX A100 hosts in this process. Every
host is a real SSH server on its own 127.0.0.1 port with its own host key;
commands run in a POSIX shell interpreter written in Go over the host's own
private directory; nvidia-smi, dcgmi, lspci, numactl, dmesg, kubectl and the
other GPU tools answer from recorded real outputs, with one sick host whose
faults (an NVLink down, ECC errors and a pending row remap, Xid 79 and 48, an
odd MIG layout) show in every tool the same way. Nothing a user types runs on
this machine: the only real process is gpulab's own simulator probe, started
only when its sha256 is that of the build this gpulab embeds.`,
	}
	cmd.AddCommand(newSimServeCmd(o))
	return cmd
}

// simServeOptions are gpulab sim serve's flags: the fleet's config and
// where its inventory goes.
type simServeOptions struct {
	*options
	cfg    sim.Config
	out    string
	faults string
}

func newSimServeCmd(o *options) *cobra.Command {
	so := &simServeOptions{options: o}
	c := &cobra.Command{
		Use:   "serve (FILE | --inventory-out FILE) [--hosts N] [--seed S] [--latency D] [--drop HOST] [--hang HOST]",
		Short: "Keep a simulated fleet up until Ctrl-C, and write its inventory",
		Long: `Starts the simulated fleet, writes FILE (an inventory with "simulated = true")
and beside it FILE.key (the client key), FILE.known_hosts (every host's key)
and FILE.ssh_config (for OpenSSH: ssh -F FILE.ssh_config dgx01), then prints
one line that says ready and names FILE, and serves until interrupted. FILE
is --inventory-out FILE or the one argument (both only if they agree).

--seed picks which host is sick and which GPUs its faults hit, so a demo is
repeatable. --faults FILE gives the hosts it names faults of your choosing
instead of the seed's, in the JSON that gpulab probe --mock-faults takes
(host name to faults; the knobs are listed in docs/checks/README.md): a
PCIe link at Gen2, a throttle storm, a recovery action, a hung NVML call,
a VBIOS that differs, an NVLink fabric not completed, a port down. The
hosts it does not name keep the seed's faults; name one with {} to make it
healthy. --drop makes a host refuse connections, --hang makes one accept
them and never answer, --latency delays every packet every host sends.

FILE's directory must be yours and closed to other users (not writable by
them, nor any directory above it without the sticky bit): its ssh_config
decides what runs as you. Another is refused before a host starts.`,
		Example: `  mkdir -m 700 ~/sim
  gpulab sim serve --inventory-out ~/sim/inventory.toml &
  gpulab sim serve --hosts 8 --seed 3 ~/sim/inventory.toml &   # FILE as the argument
  gpulab sim serve --faults faults.json ~/sim/inventory.toml &  # {"dgx02": {"pcie_gen": {"5": 2}, "utilization": {"5": 95}}}
  gpulab exec --inventory ~/sim/inventory.toml -H @dgx -- nvidia-smi -L
  gpulab runbook run health --inventory ~/sim/inventory.toml -H @dgx
  ssh -F ~/sim/inventory.toml.ssh_config dgx01 nvidia-smi topo -m`,
		Args: simServeArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := so.Validate(args); err != nil {
				return err
			}
			return so.Run(cmd)
		},
	}
	fl := c.Flags()
	fl.IntVar(&so.cfg.Hosts, "hosts", 4, fmt.Sprintf("how many hosts (1 to %d)", sim.MaxHosts))
	fl.Int64Var(&so.cfg.Seed, "seed", 0, "picks the sick host and its faults (same seed, same fleet)")
	fl.DurationVar(&so.cfg.Latency, "latency", 0, "delay added before every packet each host sends")
	fl.StringArrayVar(&so.cfg.Drop, "drop", nil, "`HOST` refuses connections (repeatable)")
	fl.StringArrayVar(&so.cfg.Hang, "hang", nil, "`HOST` accepts connections and never answers (repeatable)")
	fl.StringArrayVar(&so.cfg.Stall, "stall", nil, "`HOST` logs in, and every command it is given hangs, silent, until it is stopped, as a hung nvidia-smi does (repeatable)")
	fl.StringArrayVar(&so.cfg.Die, "die", nil, "`HOST` logs in, and each connection is cut as a command starts on it, as a power cut would (repeatable)")
	fl.StringArrayVar(&so.cfg.Deny, "deny", nil, "`HOST` accepts no key: every login fails (repeatable)")
	fl.StringVar(&so.faults, "faults", "", "give hosts these simulated faults: a JSON `FILE` of host name to faults (as gpulab probe --mock-faults)")
	fl.StringVar(&so.out, "inventory-out", "", "write the fleet's inventory to `FILE` (and FILE.key, FILE.known_hosts, FILE.ssh_config)")
	return c
}

// Validate takes FILE from the argument or --inventory-out, checks the
// fleet's size and latency, and refuses a directory other users can write
// (the inventory's ssh_config decides what runs as the operator) before a
// host starts.
func (so *simServeOptions) Validate(args []string) error {
	if err := inventoryOut(&so.out, args); err != nil {
		return err
	}
	if so.out == "" {
		return usageErr("sim serve: --inventory-out FILE (or FILE as the argument) is required: where to write the fleet's inventory")
	}
	// sim.Start takes 0 hosts for its default; here the flag's
	// default is 4, and an explicit 0 is a mistake.
	if so.cfg.Hosts < 1 || so.cfg.Hosts > sim.MaxHosts {
		return usageErr("sim serve: --hosts %d: between 1 and %d", so.cfg.Hosts, sim.MaxHosts)
	}
	if so.cfg.Latency < 0 || so.cfg.Latency > time.Minute {
		return usageErr("sim serve: --latency %v: between 0 and 1m", so.cfg.Latency)
	}
	names := make([]string, so.cfg.Hosts)
	for i := range names {
		names[i] = sim.HostName(i, so.cfg.Hosts)
	}
	faults, err := parseHostFaults("sim serve: --faults", so.faults, names, fmt.Sprintf("the fleet's hosts (%s to %s)", names[0], names[len(names)-1]))
	if err != nil {
		return err
	}
	so.cfg.Faults = faults
	// Before a host starts: the directory must be one that no
	// other user can write (its ssh_config decides what runs as
	// the operator).
	if err := fileio.CheckTrustedDir(filepath.Dir(so.out)); err != nil {
		return &exitError{code: ExitUsage, err: fmt.Errorf("sim serve: --inventory-out %s: %w", so.out, err)}
	}
	return nil
}

// Run starts the fleet in its child process, writes the inventory, says
// ready, and serves until a stop signal.
func (so *simServeOptions) Run(cmd *cobra.Command) error {
	ctx, stop := signalContext()
	defer stop()
	// The fleet runs in a child process under hard limits (see
	// sim.Spawn): a simulated command that runs it into one ends
	// that process, and it is started again.
	f, err := sim.Spawn(ctx, so.cfg)
	if err != nil {
		return usageErr("%v", err)
	}
	defer f.Close()
	files, err := f.WriteInventory(so.out)
	if err != nil {
		return &exitError{code: ExitFailed, err: fmt.Errorf("sim serve: write the inventory: %w", err)}
	}
	if err := printReady(cmd, so.options, f, files); err != nil {
		return err
	}
	return serveUntilDone(ctx, cmd.ErrOrStderr(), f)
}

// simServeArgs takes one FILE at most, the inventory to write.
func simServeArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 1 {
		return usageErr("sim serve: one FILE, the inventory to write, got %d arguments (%s)", len(args), strings.Join(args, " "))
	}
	return nil
}

// inventoryOut takes sim serve's FILE argument as --inventory-out: both
// may be given only when they name the same file.
func inventoryOut(out *string, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if *out != "" {
		a, errA := filepath.Abs(args[0])
		b, errB := filepath.Abs(*out)
		if errA != nil || errB != nil || a != b {
			return usageErr("sim serve: FILE %s and --inventory-out %s name different files: give one of them", args[0], *out)
		}
	}
	*out = args[0]
	return nil
}

// serveUntilDone serves until ctx ends. When the fleet's process stops,
// it says why and starts it again (same ports, same keys: the inventory
// holds), at most once a minute.
func serveUntilDone(ctx context.Context, stderr io.Writer, f *sim.Child) error {
	var restarted time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-f.Stopped():
		}
		if ctx.Err() != nil {
			return nil
		}
		why := f.Err()
		// Once a minute at most: a fleet that stops again sooner waits out
		// the minute (connections wait in the hosts' listen queues).
		wait := time.Duration(0)
		if !restarted.IsZero() {
			wait = max(0, time.Minute-time.Since(restarted))
		}
		fmt.Fprintf(stderr, "gpulab sim serve: %v; starting it again in %s (same hosts, ports and keys; their files are fresh)\n", why, wait.Round(time.Second))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		if err := f.Restart(ctx); err != nil {
			return &exitError{code: ExitFailed, err: fmt.Errorf("sim serve: the simulated fleet did not start again: %w", err)}
		}
		restarted = time.Now()
	}
}

func printReady(cmd *cobra.Command, o *options, f interface{ Hosts() []sim.Host }, files sim.Files) error {
	w := cmd.OutOrStdout()
	hosts := f.Hosts()
	if o.json {
		return json.NewEncoder(w).Encode(map[string]any{"ready": true, "simulated": true, "files": files, "hosts": hosts})
	}
	fmt.Fprintf(w, "ready: %d SIMULATED DGX A100 hosts (%s to %s) on 127.0.0.1; inventory %s\n", len(hosts), hosts[0].Name, hosts[len(hosts)-1].Name, files.Inventory)
	return nil
}
