package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/sim"
)

// reconcileOptions are gpulab cluster reconcile's flags beside the
// cluster group's.
type reconcileOptions struct {
	ssh        sshFlags
	pf         probeFlags
	faultsFile string
}

func newClusterReconcileCmd(o *options, cf *clusterFlags) *cobra.Command {
	ro := &reconcileOptions{}
	cmd := &cobra.Command{
		Use:   "reconcile -H EXPR [--context NAME] [--json]",
		Short: "GPUs allocated vs used: idle allocations, use without allocation, stranded MIG",
		Long: `gpulab cluster reconcile joins two views of the same GPUs. The API server
says which pod holds how many GPUs (nvidia.com/gpu, nvidia.com/mig-*, ...)
on which node; the NVML probe, pushed over SSH to the hosts -H selects,
says what runs on each GPU: processes, their memory, the GPU's utilisation,
and the pod each process belongs to (read from its cgroup). Joined by node:

  busy      a pod whose process runs on a GPU showing utilisation (or on
            a MIG instance)
  idle      a pod that holds GPUs and has no process on any GPU of its
            node, or only processes on GPUs at 0%: the money
  starting  bound, not yet running (phase Pending)
  used without allocation
            a process on a GPU that no pod of that node holds a GPU
            resource for: outside Kubernetes (a system.slice service, a
            user's shell), or in a pod that requested none
  stranded MIG
            MIG instances the node does not advertise (nvidia.com/mig-P,
            or nvidia.com/gpu with the single strategy) and nothing runs
            in, and GPUs in MIG mode with no instance

A GPU counts as busy (IN-USE) when a process is listed on it, its
utilisation is above 0%, or more than 256 MiB of its memory is used;
ALLOC-BUSY counts every GPU a busy pod holds (a pod holding 2 that runs on
1 is busy: --json lists the GPUs it uses). One probe is one sample: a pod
between steps can read 0%; run it again before acting.

The cluster: --context NAME names an inventory [[kube]] table (its
kubeconfig, context and nodes) or else a kubeconfig context; without it,
the [[kube]] table whose nodes include the hosts, else kubectl's rules
(--kubeconfig, $KUBECONFIG, ~/.kube/config). A host maps to the node of
its name, or of its address's short name (gpu01 for gpu01.example.net);
the output says which hosts map to no node and which GPU nodes were not
probed, and why (unreachable, no host selected).

--via kube needs no SSH and no inventory: the cluster's nodes are the
hosts (every node, or those -H and -l select), probed through its API
server with a pod on each (docs/kube-transport.md); -n names the pods'
namespace.

--context simulated, while no kubeconfig names a context so, is the
simulated fleet gpulab demo shows, started for the run: its 4 hosts on
127.0.0.1 (-H selects among them, every one without -H) and its cluster.

--mock dgxa100 runs the probe against a simulated DGX A100 (the output
says SIMULATED), and --mock-faults FILE gives each host's simulated
machine: a JSON object of host name to sim/spec.Faults, e.g.
{"gpu01": {"utilization": {"0": 87}, "processes": [{"gpu": 0, "pid": 4242,
"name": "python", "used_mib": 2048, "cgroup": "0::/system.slice/x.service"}]}}.

Exit status: 0 when every allocated GPU is busy (or starting) and nothing
runs without an allocation; 1 when a pod holds GPUs idle, a GPU is used
without an allocation, a host could not be probed, or the API server could
not be read; 2 for usage or configuration errors.`,
		Example: `  gpulab cluster reconcile -H @gpu-nodes
  gpulab cluster reconcile -H 'gpu[001-128]' --context prod --json | jq '.pods[] | select(.state == "idle")'
  gpulab cluster reconcile --via kube --context prod -n gpulab  # no SSH: every node, through the API server
  gpulab cluster reconcile -H gpu01 --mock dgxa100 --mock-faults faults.json
  gpulab cluster reconcile --context simulated     # the demo's fleet and cluster, no hardware`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			if err := ro.Validate(); err != nil {
				return err
			}
			ro.ssh.kube.namespace = cf.ns
			return ro.Run(c, o, &cf.src)
		},
	}
	ro.ssh.register(cmd)
	ro.ssh.registerVia()
	fl := cmd.Flags()
	fl.StringVar(&ro.pf.mock, "mock", "", "probe a simulated machine instead of NVML: dgxa100")
	fl.StringVar(&ro.faultsFile, "mock-faults", "", "with --mock, each host's simulated machine: a JSON `FILE` of host name to faults")
	fl.StringVar(&ro.pf.binary, "probe-binary", "", "push this probe `FILE` instead of the embedded one")
	return cmd
}

// reconcileOutput is what reconcile prints with --json.
type reconcileOutput struct {
	Context   string `json:"context"`
	Simulated bool   `json:"simulated,omitempty"`
	cluster.Reconciliation
	// Hosts are the hosts -H selected: the node each maps to, or why none,
	// and how its probe went.
	Hosts []reconcileHost `json:"hosts"`
}

type reconcileHost struct {
	Host     string `json:"host"`
	Node     string `json:"node,omitempty"`
	Unmapped string `json:"unmapped,omitempty"`
	Class    string `json:"class"`
	// Outcome is what the probe says of the host, as probe --json and
	// the summary on stderr count it: ok, flagged or failed.
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
}

// Validate checks the simulated machine's flags.
func (ro *reconcileOptions) Validate() error {
	if ro.pf.mock != "" && ro.pf.mock != "dgxa100" {
		return usageErr("--mock %q: the only simulated machine is dgxa100", ro.pf.mock)
	}
	return checkMockFlags(ro.pf, ro.faultsFile)
}

// Run reads the cluster src names, probes the hosts -H selects and joins
// the two. --context simulated, where no kubeconfig names that context,
// starts the demo's simulated fleet for the run and joins its cluster
// with its hosts.
func (ro *reconcileOptions) Run(c *cobra.Command, o *options, src *cluster.Source) error {
	ctx, stop := interruptible(c.ErrOrStderr())
	defer stop()
	if src.Context == sim.KubeContext {
		if has, err := src.HasContext(src.Context); err != nil {
			return configErr(err)
		} else if !has {
			return ro.runSimulated(ctx, c, o)
		}
	}
	if kube, err := ro.ssh.viaKube(); err != nil {
		return err
	} else if kube {
		return ro.runKube(ctx, c, o, src)
	}
	r, err := o.newRunner(&ro.ssh)
	if err != nil {
		return err
	}
	defer r.Keys.Close()
	if err := mockOnSimulated(r, ro.pf, ro.faultsFile); err != nil {
		return err
	}
	if ro.pf.faults, err = readHostFaults(ro.faultsFile, r); err != nil {
		return err
	}
	source, kube, err := app.KubeSource(r.Inv, *src, c.Flags().Changed("kubeconfig"), r.Names(), o.getenv("HOME"))
	if err != nil {
		return configErr(err)
	}
	client, err := source.Connect()
	if err != nil {
		return configErr(err)
	}
	return ro.join(ctx, c, o, r, kube, client)
}

// runKube is reconcile with no SSH inventory: the cluster's nodes are
// the hosts, probed through its API server (every node, or those -H and
// -l select).
func (ro *reconcileOptions) runKube(ctx context.Context, c *cobra.Command, o *options, src *cluster.Source) error {
	if ro.pf.mock != "" || ro.faultsFile != "" {
		return usageErr("--mock probes a simulated machine over SSH; --via kube probes the nodes' own NVML")
	}
	ro.ssh.kube.kubeconfig, ro.ssh.kube.context = src.Kubeconfig, src.Context
	if ro.ssh.hosts == "" && ro.ssh.kube.selector == "" && ro.ssh.user == "" {
		ro.ssh.hosts = "*"
	}
	r, err := o.newRunner(&ro.ssh)
	if err != nil {
		return err
	}
	client, err := src.Connect()
	if err != nil {
		return configErr(err)
	}
	return ro.join(ctx, c, o, r, nil, client)
}

// runSimulated is reconcile on the simulated fleet gpulab demo shows:
// started in a child process for this run (its hosts on loopback, as sim
// serve starts them), its cluster's pods joined with what the probe finds
// on its hosts, and stopped when the run ends. -H selects among its hosts,
// every one when not given.
func (ro *reconcileOptions) runSimulated(ctx context.Context, c *cobra.Command, o *options) error {
	if f := c.Flag("inventory"); f != nil && f.Changed {
		return usageErr("--context %s probes the simulated fleet it starts for the run, not the hosts of --inventory %s: give one of them", sim.KubeContext, o.inventory)
	}
	if ro.pf.mock != "" || ro.faultsFile != "" {
		return usageErr("--mock: with --context %s each host's probe simulates a DGX A100 already, with the faults the demo's fleet gives it; run without --mock", sim.KubeContext)
	}
	if c.Flags().Changed("hosts") && strings.TrimSpace(ro.ssh.hosts) == "" {
		return usageErr("-H '': which hosts? Without -H, every host of the simulated fleet")
	}
	if ro.ssh.hosts == "" {
		ro.ssh.hosts = "*"
	}
	dir, err := sim.PrivateDir("gpulab-reconcile-")
	if err != nil {
		return fmt.Errorf("the simulated fleet: %w", err)
	}
	defer os.RemoveAll(dir)
	// The directory holds the fleet's client key: removed also when a
	// second Ctrl-C ends gpulab at once, and when standard output closes
	// under it (| head), which would otherwise end it on SIGPIPE.
	defer onForcedExit(func() { os.RemoveAll(dir) })()
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)
	f, err := sim.Spawn(ctx, sim.Config{Hosts: defaultDemoHosts, Dir: dir})
	if ctx.Err() != nil {
		if f != nil {
			f.Close()
		}
		return errInterrupted
	}
	if err != nil {
		return &exitError{code: ExitFailed, err: fmt.Errorf("the simulated fleet: %w", err)}
	}
	defer f.Close()
	files, err := f.WriteInventory(filepath.Join(dir, "inventory.toml"))
	if err != nil {
		return &exitError{code: ExitFailed, err: fmt.Errorf("the simulated fleet: write its inventory: %w", err)}
	}
	inv, err := inventory.Load(files.Inventory)
	if err != nil {
		return &exitError{code: ExitFailed, err: fmt.Errorf("the simulated fleet's inventory: %w", err)}
	}
	r, err := o.runnerOn(inv, &ro.ssh)
	if err != nil {
		return err
	}
	defer r.Keys.Close()
	// -H selects among the fleet's hosts: a name it does not hold is
	// refused, never looked up (the inventory would take it as a host of
	// its own name, and dial it).
	var names []string
	for _, h := range f.Hosts() {
		names = append(names, h.Name)
	}
	for _, n := range r.Names() {
		if !slices.Contains(names, n) {
			return usageErr("-H %q selects %s, which is not a host of the simulated fleet (%s): --context simulated probes its hosts only", ro.ssh.hosts, n, inventory.FoldNames(names))
		}
	}
	client, err := f.KubeClient(ctx)
	if err != nil {
		return &exitError{code: ExitFailed, err: fmt.Errorf("the simulated cluster: %w", err)}
	}
	w := c.OutOrStdout()
	if o.json {
		w = c.ErrOrStderr()
	}
	fmt.Fprintf(w, "SIMULATED cluster: gpulab demo's %d simulated DGX A100 nodes and their hosts, started on 127.0.0.1 for this run (--context simulated names them while no kubeconfig does)\n", len(f.Hosts()))
	return ro.join(ctx, c, o, r, nil, client)
}

// join reads the cluster, probes r's hosts, joins the two and writes the
// result; the exit status says whether anything is wrong.
func (ro *reconcileOptions) join(ctx context.Context, c *cobra.Command, o *options, r *app.Fleet, kube *inventory.KubeContext, client *cluster.Client) error {
	pf := ro.pf
	readCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	objs, err := cluster.Read(readCtx, client, "", 0)
	cancel()
	switch {
	case ctx.Err() != nil: // a stop signal while the API server answered
		return errInterrupted
	case err != nil:
		return &exitError{code: ExitFailed, err: fmt.Errorf("cluster %s: %w", client.Context, err)}
	}
	results, err := o.probeFleet(ctx, r, pf)
	if err != nil {
		return err
	}
	out := reconcileOutput{Context: client.Context, Simulated: r.Simulated || pf.mock != ""}
	probes := mapHosts(r.Inv, kube, objs, results, &out)
	out.Reconciliation = cluster.Reconcile(objs, probes)
	w := c.OutOrStdout()
	if o.json {
		err = writeJSON(w, out)
	} else {
		err = printReconcile(w, out, pf.mock != "")
	}
	if err != nil {
		return err
	}
	// The probed hosts counted, on stderr as probe counts them: a host
	// the probe did not read is named there, whatever the output format.
	fmt.Fprintln(c.ErrOrStderr(), probeTotal(results))
	if ctx.Err() != nil {
		return errInterrupted
	}
	if out.Wrong() || slices.ContainsFunc(results, func(p app.ProbeResult) bool { return !p.OK() }) {
		return errSilentFailure
	}
	return nil
}

// mapHosts maps each probed host to the node it is (see the command's
// help) and returns the probes by node name, with a reason for every GPU
// node no selected host maps to; out.Hosts gets each host's mapping.
func mapHosts(inv *inventory.Inventory, kube *inventory.KubeContext, objs *cluster.Objects, results []app.ProbeResult, out *reconcileOutput) map[string]cluster.NodeProbe {
	nodes := map[string]bool{}
	for _, n := range objs.Nodes {
		nodes[n.Name] = true
	}
	probes := map[string]cluster.NodeProbe{}
	out.Hosts = []reconcileHost{}
	for _, res := range results {
		h := reconcileHost{Host: res.Host, Class: res.Class, Outcome: res.Outcome, Error: res.Error}
		node, why := nodeOf(inv, kube, nodes, res.Host)
		if prev, taken := probes[node]; why == "" && taken {
			why = fmt.Sprintf("node %s is already host %s's", node, prev.Host)
		}
		if why != "" {
			h.Unmapped = why
			out.Hosts = append(out.Hosts, h)
			continue
		}
		h.Node = node
		out.Hosts = append(out.Hosts, h)
		np := cluster.NodeProbe{Host: res.Host}
		switch {
		case res.OK():
			np.Snapshot = res.Snapshot
		case res.Snapshot != nil: // no NVML: no GPU seen is not "nothing runs"
			np.Err = fmt.Sprintf("host %s has no NVML: %s", res.Host, res.Error)
		default:
			np.Err = fmt.Sprintf("host %s %s: %s", res.Host, res.Class, res.Error)
		}
		probes[node] = np
	}
	for _, n := range objs.GPUNodes() {
		if _, ok := probes[n.Name]; !ok {
			probes[n.Name] = cluster.NodeProbe{Err: "no host selected by -H maps to it"}
		}
	}
	return probes
}

// nodeOf is the node a host is: the node of its name, or of its address's
// short name; why says why there is none.
func nodeOf(inv *inventory.Inventory, kube *inventory.KubeContext, nodes map[string]bool, host string) (node, why string) {
	if kube != nil && len(kube.NodeNames) > 0 && !slices.Contains(kube.NodeNames, host) {
		return "", fmt.Sprintf("not one of kube context %s's nodes (%s)", kube.Name, kube.Nodes)
	}
	candidates := []string{host}
	if h, ok := inv.Host(host); ok && h.Address != "" && net.ParseIP(h.Address) == nil {
		short, _, _ := strings.Cut(h.Address, ".")
		candidates = append(candidates, h.Address, short)
	}
	for _, c := range candidates {
		if nodes[c] {
			return c, ""
		}
	}
	return "", "no node named " + strings.Join(slices.Compact(candidates), " or ")
}
