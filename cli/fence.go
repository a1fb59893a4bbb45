package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/fence"
	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/render"
	"github.com/gpulab/gpulab/runbooks"
)

// fenceOptions are fence's and release's flags.
type fenceOptions struct {
	*options
	ssh          sshFlags
	reason       string
	apply        bool
	taint        string
	drain        bool
	drainTimeout time.Duration
	runbook      string
	force        bool
	slurm        bool // --slurm: only the Slurm cluster, where a Kubernetes one has the hosts too
	kubernetes   bool // --kubernetes: only the Kubernetes cluster, where the Slurm one has the hosts too
	bugReport    bool
	release      bool // the release command

	rb       runbooks.Runbook
	runbooks []runbooks.Runbook
	// wouldDrain is what --drain would do with each node's pods, for the
	// plan.
	wouldDrain []fence.NodeDrain
	request    fence.Request
}

const fenceLong = `gpulab fence takes a sick node out of service, the operating loop's last
step (metrics, then assertions, then actions): it shows what it will do
first, and does it only with --apply.

In Kubernetes (the cluster the hosts are nodes of: --via kube, or the
inventory's [[kube]] table whose nodes they are, or --context) it cordons
the node and adds a taint (gpulab.io/fenced=REASON:NoSchedule; --taint
chooses another key or NoExecute), with annotations naming the fence
record, who, when and why. With --drain it then evicts the node's pods
through the eviction API: a PodDisruptionBudget is respected (a blocked
eviction is tried again until --drain-timeout and reported, never
forced), DaemonSet and static pods are left, and so are the pods kubectl
drain refuses by default: one no controller would make again, one with an
emptyDir volume. The plan lists what the drain would do with each pod.

In Slurm (the inventory's [slurm] table: login = the host scontrol runs
on, nodes = which hosts are its nodes) it drains the node with scontrol
update State=DRAIN and a reason gpulab owns: "gpulab: REASON (record ID)".
A node drained or down for a reason another tool or person set (NHC's
"NHC: ...", slurmctld's "Not responding") is refused, saying who set it.

A host that is a node of both (Slurm and Kubernetes on the same
machines) is fenced in both, under one record, each node's plan saying
which; --slurm or --kubernetes fences in that one only.

Before acting it gathers the evidence (the health runbook, or --runbook,
on the hosts to fence: the checks with their facts, each step's output,
the probe's snapshot, the kernel log) into a fence record under the
results directory ($GPULAB_RESULTS/fence/ID), beside the lab records: what
a colleague or a vendor's ticket needs. A host that cannot be reached is
recorded as such and fenced all the same.

A node another actor cordoned is fenced too, its cordon left as it is
(gpulab's release will not uncordon it); a node gpulab fenced already is
left unchanged, and said so. Two gpulab processes fencing one node: one
wins, the other says who fenced it.

Exit status: 0 when every node was (or would be) fenced or was already,
1 when a node was refused, not read, changed since the plan, could not be
written, or not drained as asked (pods its drain could not evict), 4 when
the record could not be written, 2 for usage errors, 130 after Ctrl-C.`

func newFenceCmd(o *options) *cobra.Command {
	fo := &fenceOptions{options: o}
	cmd := &cobra.Command{
		Use:   "fence -H EXPR --reason TEXT [--apply]",
		Short: "Fence a sick node (cordon and taint; --drain) with its evidence; dry run unless --apply",
		Long:  fenceLong,
		Example: `  gpulab fence -H gpu07 --reason "XID 79: GPU fell off the bus"        # the plan only
  gpulab fence -H gpu07 --reason "XID 79: GPU fell off the bus" --apply --drain
  gpulab fence --via kube -H gpu07 --reason "row remap pending" --apply --json
  gpulab fence list`,
		Args: exactArgs(0, "no arguments (the hosts are -H)"),
		RunE: fo.runE,
	}
	fo.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&fo.reason, "reason", "", "why the node is fenced, in words (required; kept whole in the record and the annotations, cut to a label value in the taint)")
	fl.StringVar(&fo.taint, "taint", fence.TaintKey+":NoSchedule", "the taint's `KEY:EFFECT` (EFFECT NoSchedule; NoExecute makes the kubelet evict at once every pod that does not tolerate it, DaemonSet pods included, with no disruption budget asked: --drain is the gentle way); its value is the reason")
	fl.BoolVar(&fo.drain, "drain", false, "after fencing, evict the node's pods through the eviction API (PodDisruptionBudgets respected; DaemonSet and static pods left)")
	fl.BoolVar(&fo.bugReport, "bug-report", false, "also keep each host's nvidia-bug-report.sh log in the record (run as root with sudo -n; minutes a host; up to 128 MiB each), for the vendor's ticket")
	fl.DurationVar(&fo.drainTimeout, "drain-timeout", 2*time.Minute, "how long a drain tries an eviction a disruption budget refuses, and waits for evicted pods")
	cmd.AddCommand(newFenceListCmd(o))
	return cmd
}

func newReleaseCmd(o *options) *cobra.Command {
	fo := &fenceOptions{options: o, release: true}
	cmd := &cobra.Command{
		Use:   "release -H EXPR [--apply]",
		Short: "Release nodes gpulab fenced, after their checks pass again; dry run unless --apply",
		Long: `gpulab release undoes what gpulab fence did, and only that: its own taint,
its own cordon (not one another actor made before it), its annotations, as
the node's annotations record them. A node another actor fenced is refused,
saying who (the node's managedFields name kubectl-cordon, NVSentinel...).

Before releasing, it runs the fence's runbook again on the nodes (the one
its record names; --runbook chooses another): a node is released only when
every check that failed or warned when it was fenced passes now and none
fails; where this machine has no record of the fence, only when every
check passes. --force releases without the checks, and the record says
so. The release is added to each node's fence record.

Exit status: 0 when every node was (or would be) released or was not
fenced, 1 when a node was refused, held (its checks do not pass) or not
read, 4 when the record could not be written, 2 for usage errors, 130
after Ctrl-C.`,
		Example: `  gpulab release -H gpu07             # the plan: what would be undone
  gpulab release -H gpu07 --apply     # check again, then release`,
		Args: exactArgs(0, "no arguments (the hosts are -H)"),
		RunE: fo.runE,
	}
	fo.register(cmd)
	cmd.Flags().BoolVar(&fo.force, "force", false, "release without running the checks again (recorded)")
	return cmd
}

// runE completes the options and runs, stopped by Ctrl-C.
func (fo *fenceOptions) runE(c *cobra.Command, _ []string) error {
	if err := fo.Complete(); err != nil {
		return err
	}
	ctx, stop := interruptible(c.ErrOrStderr())
	defer stop()
	return fo.Run(ctx, c, c.OutOrStdout(), c.ErrOrStderr())
}

func (fo *fenceOptions) register(cmd *cobra.Command) {
	fo.ssh.register(cmd)
	fo.ssh.registerKube()
	fl := cmd.Flags()
	fl.BoolVar(&fo.apply, "apply", false, "act: without it, only the plan is shown (nothing is changed, no host is reached)")
	fl.StringVar(&fo.runbook, "runbook", "health", "the runbook `ID` that gathers the evidence (and checks again before a release)")
	fl.BoolVar(&fo.slurm, "slurm", false, "act only in the inventory's Slurm cluster ([slurm]: scontrol on its login host), where a Kubernetes cluster has the hosts too")
	fl.BoolVar(&fo.kubernetes, "kubernetes", false, "act only in the Kubernetes cluster, where the hosts are nodes of the inventory's Slurm cluster too")
	cmd.MarkFlagsMutuallyExclusive("slurm", "kubernetes")
}

// Complete checks the flags and finds the runbook.
func (fo *fenceOptions) Complete() error {
	if err := fo.ssh.check(); err != nil {
		return err
	}
	rbs, err := fo.loadRunbooks()
	if err != nil {
		return err
	}
	rb, ok := runbooks.Find(rbs, fo.runbook)
	if !ok {
		return noSuch("runbook", fo.runbook, rbs, func(r runbooks.Runbook) string { return r.ID })
	}
	fo.rb, fo.runbooks = rb, rbs
	fo.request = fence.Request{By: whoAmI(fo.getenv), At: app.Now()}
	if fo.release {
		return nil
	}
	return fo.completeFence()
}

func (fo *fenceOptions) completeFence() error {
	r := strings.TrimSpace(fo.reason)
	if err := fence.CheckReason(r); err != nil {
		return usageErr("--reason: %v", err)
	}
	key, effect, ok := strings.Cut(fo.taint, ":")
	if !ok || key == "" || (effect != string(corev1.TaintEffectNoSchedule) && effect != string(corev1.TaintEffectNoExecute)) {
		return usageErr("--taint %q: want KEY:NoSchedule or KEY:NoExecute", fo.taint)
	}
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return usageErr("--taint %q: the key %s", fo.taint, strings.Join(errs, "; "))
	}
	fo.request.Reason, fo.request.TaintKey, fo.request.Effect = r, key, corev1.TaintEffect(effect)
	return nil
}

// findRunbook is the loaded runbook id (a release checks again with its
// fence's).
func (fo *fenceOptions) findRunbook(id string) (runbooks.Runbook, bool) {
	return runbooks.Find(fo.runbooks, id)
}

// whoAmI is the local user@host an action is taken by.
func whoAmI(getenv func(string) string) string {
	name := getenv("USER")
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	return name + "@" + host
}

// Run plans, shows the plan, and with --apply acts.
func (fo *fenceOptions) Run(ctx context.Context, c *cobra.Command, stdout, stderr io.Writer) error {
	fleet, err := fo.newRunner(&fo.ssh)
	if err != nil {
		return err
	}
	defer fleet.Keys.Close()
	spec, err := fo.target(c, fleet)
	if err != nil {
		return err
	}
	spec.Request, spec.Results, spec.Runbook, spec.Force, spec.Simulated = fo.request, fo.resultsDir(), fo.rb, fo.force, fleet.Simulated
	spec.Runbooks, spec.RunbookGiven, spec.BugReport = fo.findRunbook, c.Flags().Changed("runbook"), fo.bugReport
	if spec.Kube == nil && c.Flags().Changed("taint") {
		return usageErr("--taint is Kubernetes': in Slurm the fence is a drain, its reason gpulab's")
	}
	if fo.drain {
		if spec.Kube == nil {
			return usageErr("--drain is Kubernetes': a Slurm drain already lets running jobs finish and starts no new one")
		}
		spec.Drain = &fence.DrainOptions{Timeout: fo.drainTimeout}
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Minute) // each read has its own bound too
	defer cancel()
	var plans []fence.Plan
	if fo.release {
		plans = fleet.PlanRelease(pctx, spec)
	} else {
		plans = fleet.PlanFence(pctx, spec)
	}
	if !fo.apply {
		if spec.Drain != nil {
			fo.wouldDrain = wouldDrain(pctx, spec, plans)
		}
		return fo.printPlan(stdout, stderr, spec.Target(), plans)
	}
	var done app.Fenced
	if fo.release {
		done = fleet.Release(ctx, spec, plans)
	} else {
		done = fleet.Fence(ctx, spec, plans)
	}
	err = fo.printDone(stdout, stderr, spec.Target(), done)
	if ctx.Err() != nil { // stopped: what was done is printed and recorded, the record says it was stopped
		return errInterrupted
	}
	return err
}

// target is where the fleet's hosts are fenced: the Kubernetes cluster
// they are nodes of (cluster), and the inventory's Slurm cluster, by
// scontrol on its login host, for the hosts that are its nodes: each
// that has them, or the one --slurm or --kubernetes names.
func (fo *fenceOptions) target(c *cobra.Command, fleet *app.Fleet) (app.FenceSpec, error) {
	sl := fleet.Inv.Slurm
	outside := ""
	if i := slices.IndexFunc(fleet.Names(), func(h string) bool { return !sl.IsNode(h) }); i >= 0 {
		outside = fleet.Names()[i]
	}
	allSlurm := sl != nil && outside == ""
	anySlurm := sl != nil && slices.ContainsFunc(fleet.Names(), sl.IsNode)
	if fo.slurm { // the hosts Slurm has; any other is refused, saying so
		if !anySlurm {
			return app.FenceSpec{}, usageErr("--slurm: no host of -H %q is a node of the inventory's Slurm cluster ([slurm] nodes = %q)", fo.ssh.hosts, slurmNodesOf(sl))
		}
		s, err := fo.slurmTarget(fleet)
		s.SlurmHas = sl.IsNode
		return s, err
	}
	// A Kubernetes cluster must have the hosts Slurm does not.
	kube, kubeHas, err := fo.cluster(c, fleet, !allSlurm || fo.kubernetes, outside)
	if err != nil {
		return app.FenceSpec{}, err
	}
	spec := app.FenceSpec{Kube: kube, KubeHas: kubeHas}
	if anySlurm && !fo.kubernetes {
		s, err := fo.slurmTarget(fleet)
		if err != nil {
			return app.FenceSpec{}, err
		}
		spec.Scontrol, spec.SlurmLogin, spec.SlurmHas = s.Scontrol, s.SlurmLogin, sl.IsNode
	}
	return spec, nil
}

func slurmNodesOf(s *inventory.Slurm) string {
	if s == nil {
		return "no [slurm] table"
	}
	return s.Nodes
}

func (fo *fenceOptions) slurmTarget(fleet *app.Fleet) (app.FenceSpec, error) {
	run, done, err := fleet.Scontrol(fleet.Inv.Slurm.Login)
	if err != nil {
		return app.FenceSpec{}, configErr(err)
	}
	fo.cleanups = append(fo.cleanups, done)
	return app.FenceSpec{Scontrol: run, SlurmLogin: fleet.Inv.Slurm.Login}, nil
}

// cluster is the Kubernetes cluster the fleet's hosts are nodes of:
// --via kube's, or the inventory's [[kube]] table whose nodes they are
// (or --context names), or --context or --kubeconfig as kubectl reads
// them; nil when none is named and mustKube does not say it must be, and
// an error when nothing has them. has says which hosts are its nodes,
// where its [[kube]] table says (nil: every one).
func (fo *fenceOptions) cluster(c *cobra.Command, fleet *app.Fleet, mustKube bool, outside string) (client *cluster.Client, has func(string) bool, err error) {
	src := cluster.Source{Kubeconfig: fo.ssh.kube.kubeconfig, Context: fo.ssh.kube.context, Getenv: fo.getenv}
	if fo.ssh.kube.via != "kube" {
		s, k, err := app.KubeSource(fleet.Inv, src, c.Flags().Changed("kubeconfig"), fleet.Names(), fo.getenv("HOME"))
		if err != nil {
			return nil, nil, configErr(err)
		}
		named := k != nil || src.Context != "" || c.Flags().Changed("kubeconfig")
		switch {
		case !named && !mustKube:
			return nil, nil, nil // the Slurm cluster's
		case !named && fo.kubernetes:
			return nil, nil, usageErr("--kubernetes: no [[kube]] table of the inventory has -H %q as its nodes: name the cluster with --context (or reach the nodes with --via kube)", fo.ssh.hosts)
		case !named && fleet.Inv.Slurm != nil:
			return nil, nil, usageErr("%s: no [[kube]] table of the inventory has it as a node, and it is not a node of its Slurm cluster ([slurm] nodes = %q): name the cluster with --context (or reach the nodes with --via kube)", outside, fleet.Inv.Slurm.Nodes)
		case !named:
			return nil, nil, usageErr("-H %q: no [[kube]] table of the inventory has these hosts as its nodes, and it has no [slurm] table: name the cluster with --context (or reach the nodes with --via kube)", fo.ssh.hosts)
		}
		src, has = s, app.KubeHas(k)
	}
	client, err = src.Connect()
	if err != nil {
		return nil, nil, configErr(err)
	}
	return client, has, nil
}

// fenceReport is fence's and release's --json.
type fenceReport struct {
	Action  string            `json:"action"` // fence or release
	DryRun  bool              `json:"dry_run"`
	Target  string            `json:"target"`
	Reason  string            `json:"reason,omitempty"`
	Plan    []fence.Plan      `json:"plan"`
	Results []fence.Result    `json:"results,omitempty"`
	Drain   []fence.NodeDrain `json:"drain,omitempty"`
	Held    map[string]string `json:"held,omitempty"`
	Record  string            `json:"record,omitempty"` // its directory
	// Records are every record a release wrote to (its nodes' fences').
	Records []string `json:"records,omitempty"`
	Problem string   `json:"record_problem,omitempty"`
}

func (fo *fenceOptions) action() string {
	if fo.release {
		return "release"
	}
	return "fence"
}

func (fo *fenceOptions) printPlan(stdout, stderr io.Writer, ctxName string, plans []fence.Plan) error {
	refused, unread := 0, 0
	for _, p := range plans {
		switch {
		case p.Error != "":
			unread++
		case p.Refused != "":
			refused++
		}
	}
	if fo.json {
		if err := writeJSON(stdout, fenceReport{Action: fo.action(), DryRun: true, Target: ctxName, Reason: fo.request.Reason, Plan: plans, Drain: fo.wouldDrain}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "%s plan for %s (dry run: nothing is changed; --apply acts):\n\n", fo.action(), ctxName)
		for _, l := range render.FencePlans(plans) {
			fmt.Fprintln(stdout, l)
		}
		for _, d := range fo.wouldDrain {
			printDrain(stdout, "--drain would, on "+d.Node, d)
		}
		fo.printWhatApplyDoes(stdout, plans)
	}
	changes := 0
	for _, p := range plans {
		if p.Acts() {
			changes++
		}
	}
	one, many := "node", "nodes"
	if render.MixedIn(plans, func(p fence.Plan) string { return p.In }) {
		one, many = "plan", "plans" // a node of Kubernetes and of Slurm has one in each
	}
	fmt.Fprintf(stderr, "%s plan: %s to change, %s unchanged, %s refused, %s not read\n", fo.action(), text.Plural(changes, one, many),
		text.Plural(len(plans)-changes-refused-unread, one, many), text.Plural(refused, one, many), text.Plural(unread, one, many))
	if refused+unread > 0 {
		return errSilentFailure
	}
	return nil
}

// wouldDrain is what a drain would do with the pods of each node plans
// change, as they are now.
func wouldDrain(ctx context.Context, spec app.FenceSpec, plans []fence.Plan) []fence.NodeDrain {
	var out []fence.NodeDrain
	var kube []fence.Plan
	for _, p := range plans {
		if p.In == fence.InKubernetes {
			kube = append(kube, p)
		}
	}
	for _, n := range app.Changing(kube) {
		pods, err := fence.WouldDrain(ctx, spec.Kube.Kube, n)
		d := fence.NodeDrain{Node: n, Pods: pods}
		if err != nil {
			d.Error = err.Error()
		}
		out = append(out, d)
	}
	return out
}

func (fo *fenceOptions) printWhatApplyDoes(w io.Writer, plans []fence.Plan) {
	nodes := app.Changing(plans)
	if len(nodes) == 0 {
		return
	}
	hosts := strings.Join(nodes, ", ")
	switch {
	case fo.release && fo.force:
		fmt.Fprintf(w, "\nwith --apply: released at once (--force: the checks are not run again; the record says so)\n")
	case fo.release:
		fmt.Fprintf(w, "\nwith --apply: first runbook %s again on %s; a node is released only where the checks that failed at its fence pass now\n", fo.rb.ID, hosts)
	default:
		bug := ""
		if fo.bugReport {
			bug = " and nvidia-bug-report.sh's log"
		}
		fmt.Fprintf(w, "\nwith --apply: first the evidence (runbook %s on %s%s), kept in a record under %s, then the changes above", fo.rb.ID, hosts, bug, fo.resultsDir()+"/fence/")
		if fo.drain {
			fmt.Fprintf(w, ", then a drain (up to %s)", fo.drainTimeout)
		}
		fmt.Fprintln(w)
	}
}
