package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/internal/visible"
	"github.com/gpulab/gpulab/render"
	"github.com/gpulab/gpulab/sim"
	"github.com/gpulab/gpulab/sim/dgx"
)

// clusterFlags are the cluster commands' options (kubectl's
// --kubeconfig, --context, -n), bound once on the group; all is pending's
// and quotas', wide is nodes'. Each command runs as a method on them.
type clusterFlags struct {
	src  cluster.Source
	ns   string
	all  bool
	wide bool
}

func newClusterCmd(o *options) *cobra.Command {
	cf := &clusterFlags{src: cluster.Source{Getenv: o.getenv}}
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Read a Kubernetes cluster's GPU side with client-go (the control plane)",
		Long: `gpulab cluster reads a Kubernetes cluster through its API server, with
client-go, finding it as kubectl does: --kubeconfig FILE, else $KUBECONFIG,
else ~/.kube/config; --context NAME, else the current context. Read-only
access is enough.`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&cf.src.Kubeconfig, "kubeconfig", "", "the kubeconfig `FILE` to use (default: $KUBECONFIG, then ~/.kube/config)")
	pf.StringVar(&cf.src.Context, "context", "", "the kubeconfig context `NAME` to use (default: the current context)")
	pf.StringVarP(&cf.ns, "namespace", "n", "", "the `NAMESPACE` for pending and why (default: the context's)")
	cmd.AddCommand(newClusterPendingCmd(o, cf), newClusterWhyCmd(o, cf), newClusterQuotasCmd(o, cf),
		newClusterFragmentationCmd(o, cf), newClusterReconcileCmd(o, cf))
	nodesCmd := &cobra.Command{
		Use:   "nodes [--wide]",
		Short: "GPU nodes: capacity, allocatable and allocated of every GPU resource",
		Long: `Lists the nodes that have a GPU resource (nvidia.com/gpu, nvidia.com/mig-*,
nvidia.com/gpu.shared, HAMi's gpumem and gpucores, or any extended resource
with a GPU-like name): what each has, what the scheduler may give, what the
non-terminated pods bound to it request, and what is left.

GPU HEALTH is what the cluster already says of each node's GPUs, and who
says it: node conditions (NVSentinel's Gpu* conditions, EKS's
AcceleratedHardwareReady, GKE's XidCriticalError, node-problem-detector's
and any other condition that reports a problem), taints under nvidia.com/
or gpulab.io/, IBM Autopilot's autopilot.ibm.com/gpuhealth label, and the
device plugin holding devices back (allocatable below capacity). Each
signal is listed under the table with when it changed.`,
		Example: "  gpulab cluster nodes\n  gpulab cluster nodes --context prod --json | jq '.[] | select(.allocated[\"nvidia.com/gpu\"] == 0)'",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			return cf.runNodes(c, o)
		},
	}
	nodesCmd.Flags().BoolVar(&cf.wide, "wide", false, "also each node's GPU product and MIG strategy (GPU feature discovery's labels), kubelet, runtime and OS")
	cmd.AddCommand(nodesCmd)
	return cmd
}

func printGPUNodes(c *cobra.Command, ctxName string, nodes []cluster.GPUNode, wide bool) error {
	w := c.OutOrStdout()
	if len(nodes) == 0 {
		fmt.Fprintf(w, "no GPU nodes in %s (no node has a GPU resource)\n", visible.String(ctxName))
		return nil
	}
	if err := render.NodeTable(nodes, wide).WriteText(w); err != nil {
		return err
	}
	if lines := render.NodeHealthLines(nodes); len(lines) > 0 {
		fmt.Fprintln(w, "\nGPU health, as the cluster states it:")
		for _, l := range lines {
			fmt.Fprintln(w, "  "+l)
		}
	}
	return nil
}

func newClusterPendingCmd(o *options, cf *clusterFlags) *cobra.Command {
	c := &cobra.Command{
		Use:   "pending [-n NAMESPACE | -A]",
		Short: "Pods waiting for a node, and workloads with no pod (quota, Kueue), each with why",
		Long: `Lists the pods the scheduler has not placed, each with one paragraph and
its evidence: what it asks for, what the scheduler said (its latest
FailedScheduling event, in parts), and what the nodes it may use (its
nodeSelector, affinity and tolerations against labels, taints and cordons,
as the scheduler filters them) offer: room on one, none large enough for it
ever, free units spread over several (fragmentation), or too few; the nodes
it may not use are named apart, with why; its scheduling gates, Kueue Workload and ClusterQueue
usage, Volcano PodGroup and DRA ResourceClaims when the cluster serves them;
its priority class; and whether its namespace's GPU quota is full.

Then the workloads that have no pod to wait: a Job whose pods a
ResourceQuota refuses (its FailedCreate event), or that Kueue has not
admitted. kubectl get pods shows nothing for those.

Exit status 1 when anything waits, 0 when nothing does.`,
		Example: "  gpulab cluster pending -A\n  gpulab cluster pending -n ml-team --json | jq -r '.pods[].why, .blocked[].why'",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			return cf.runPending(c, o)
		},
	}
	c.Flags().BoolVarP(&cf.all, "all-namespaces", "A", false, "every namespace")
	return c
}

// pendingReport is what pending and why print.
type pendingReport struct {
	Context string `json:"context"`
	// Simulated: the cluster is the simulated fleet's (--context simulated).
	Simulated bool `json:"simulated,omitempty"`
	// Namespace is the one looked in ("" for every namespace, -A), and
	// Elsewhere how many pods wait for a node in the others.
	Namespace string               `json:"namespace"`
	Elsewhere int                  `json:"elsewhere,omitempty"`
	Pods      []cluster.PendingPod `json:"pods"`
	Blocked   []cluster.Blocked    `json:"blocked"`
	// Unreadable is what RBAC kept gpulab from reading, and what is
	// unknown because of it.
	Unreadable []string `json:"unreadable"`
}

func unreadable(o *cluster.Objects) []string {
	if o.Unreadable == nil {
		return []string{}
	}
	return o.Unreadable
}

func newClusterWhyCmd(o *options, cf *clusterFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "why NAME [-n NAMESPACE]",
		Short: "Why one pod (or a Job with no pod) waits, in one paragraph with its evidence",
		Long: `Explains one waiting pod as pending does, or a workload (a Job) that has no
pod because a quota refused it or Kueue holds it. Exit status 1 when it
waits; 3 when nothing of that name waits in the namespace (it says so, and
names the namespaces where something of that name does wait).`,
		Example: "  gpulab cluster why train-0 -n ml-team\n  gpulab cluster why sweep -n ml-team --json",
		Args:    exactArgs(1, "a pod's or a Job's name"),
		RunE: func(c *cobra.Command, args []string) error {
			return cf.runWhy(c, o, args[0])
		},
	}
}

// connect loads the kubeconfig as kubectl does, or, when --context names
// a [[kube]] table of the inventory, that table's kubeconfig and context
// (as reconcile and the workbench read them).
func (o *options) connect(c *cobra.Command, src *cluster.Source) (*cluster.Client, error) {
	s := *src
	if s.Context == sim.KubeContext {
		if has, err := s.HasContext(s.Context); err != nil {
			return nil, configErr(err)
		} else if !has {
			return o.simulatedCluster(c)
		}
	}
	if s.Context != "" {
		inv, err := o.loadInventory(false)
		if err != nil {
			return nil, err
		}
		if s, _, err = app.KubeSource(inv, s, c.Flags().Changed("kubeconfig"), nil, o.getenv("HOME")); err != nil {
			return nil, configErr(err)
		}
	}
	client, err := s.Connect()
	if err != nil {
		return nil, configErr(err)
	}
	return client, nil
}

// readObjects connects and reads the cluster for namespace ns (the
// context's when empty, every one with all), returning the context's name
// and the namespace read. What RBAC kept it from reading is said on
// standard error.
func readObjects(c *cobra.Command, o *options, src *cluster.Source, ns string, all bool) (*cluster.Objects, string, string, error) {
	client, err := o.connect(c, src)
	if err != nil {
		return nil, "", "", err
	}
	switch {
	case all:
		ns = ""
	case ns == "":
		ns = client.Namespace
	}
	ctx, cancel := context.WithTimeout(c.Context(), 2*time.Minute)
	defer cancel()
	objs, err := cluster.Read(ctx, client, ns, cluster.Scheduling)
	if err != nil {
		return nil, client.Context, ns, &exitError{code: ExitFailed, err: fmt.Errorf("cluster %s: %w", client.Context, err)}
	}
	for _, u := range objs.Unreadable {
		fmt.Fprintf(c.ErrOrStderr(), "gpulab: cluster %s: not read: %s\n", visible.String(client.Context), visible.String(u))
	}
	return objs, client.Context, ns, nil
}

// notWaiting answers why for a name that does not wait in ns: exit 3,
// naming where something of that name waits when it does (the pods of
// every namespace were read).
func notWaiting(c *cobra.Command, o *options, objs *cluster.Objects, r pendingReport, name, ns string) error {
	var elsewhere []string
	for _, p := range objs.Pending("") {
		if p.Name == name {
			elsewhere = append(elsewhere, p.Namespace)
		}
	}
	msg := fmt.Sprintf("nothing named %q waits in namespace %q (it may be placed, or named otherwise: gpulab cluster pending)", name, ns)
	if len(elsewhere) > 0 {
		msg = fmt.Sprintf("nothing named %q waits in namespace %q; a pod of that name waits in %s (-n %s)", name, ns, strings.Join(elsewhere, ", "), elsewhere[0])
	}
	if o.json {
		if err := writeJSON(c.OutOrStdout(), r); err != nil {
			return err
		}
	}
	return &exitError{code: ExitUnknown, err: errors.New(msg)}
}

func printPending(c *cobra.Command, o *options, r pendingReport) error {
	w := c.OutOrStdout()
	if o.json {
		if err := writeJSON(w, r); err != nil {
			return err
		}
	} else {
		if len(r.Pods)+len(r.Blocked) == 0 {
			where := "in any namespace"
			if r.Namespace != "" {
				where = "in namespace " + visible.String(r.Namespace)
			}
			fmt.Fprintf(w, "no pod waits for a node %s, and no workload there is held by a quota or a queue\n", where)
		}
		if r.Elsewhere > 0 { // never a silent "none" where others wait
			fmt.Fprintf(w, "%s for a node in other namespaces (-A lists them, and the workloads quotas hold there)\n", text.Plural(r.Elsewhere, "pod waits", "pods wait"))
		}
		for i, p := range r.Pods {
			if i > 0 {
				fmt.Fprintln(w)
			}
			printWhy(w, p.Why, p.Evidence)
		}
		for i, b := range r.Blocked {
			if i > 0 || len(r.Pods) > 0 {
				fmt.Fprintln(w)
			}
			printWhy(w, b.Why, b.Evidence)
		}
	}
	if len(r.Pods)+len(r.Blocked) > 0 {
		return errSilentFailure
	}
	return nil
}

// maxEvidence is how much of one evidence line the text output shows.
const maxEvidence = 600

// printWhy prints a paragraph and its evidence, indented.
func printWhy(w io.Writer, why string, evidence []string) {
	fmt.Fprintln(w, visible.String(why))
	for _, e := range evidence {
		if len(e) > maxEvidence {
			cut := maxEvidence
			for cut > 0 && !utf8.RuneStart(e[cut]) {
				cut--
			}
			e = e[:cut] + "… (" + fmt.Sprint(len(e)-cut) + " more bytes: --json has it whole)"
		}
		fmt.Fprintln(w, "  - "+visible.String(e))
	}
}

// simulatedCluster is --context simulated where no kubeconfig names such
// a context: the cluster of the simulated fleet gpulab demo starts (its
// 4 DGX A100 nodes and seed 0's sick one), built in this process, said
// SIMULATED on the first line of the text output (on standard error
// with --json, whose output keeps its shape).
func (o *options) simulatedCluster(c *cobra.Command) (*cluster.Client, error) {
	names := make([]string, defaultDemoHosts)
	for i := range names {
		names[i] = sim.HostName(i, len(names))
	}
	_, faults := dgx.Plan(0, len(names))
	client, err := sim.MirrorCluster(c.Context(), dgx.NewCluster(names, faults), sim.KubeResync)
	if err != nil {
		return nil, &exitError{code: ExitFailed, err: fmt.Errorf("the simulated cluster: %w", err)}
	}
	w := c.OutOrStdout()
	if o.json {
		w = c.ErrOrStderr()
	}
	o.simulatedCtx = true
	fmt.Fprintf(w, "SIMULATED cluster: gpulab demo's %d simulated DGX A100 nodes, built in this process (no API server; --context simulated names it while no kubeconfig does)\n", len(names))
	return client, nil
}

// runNodes is gpulab cluster nodes.
func (cf *clusterFlags) runNodes(c *cobra.Command, o *options) error {
	if c.Flags().Changed("namespace") {
		return usageErr("-n does not apply to nodes: they belong to no namespace, and what they hold is counted over every namespace")
	}
	client, err := o.connect(c, &cf.src)
	if err != nil {
		return err
	}
	ctxName := client.Context
	ctx, cancel := context.WithTimeout(c.Context(), 2*time.Minute)
	defer cancel()
	nodes, err := cluster.Nodes(ctx, client)
	if err != nil {
		return &exitError{code: ExitFailed, err: fmt.Errorf("cluster %s: %w", ctxName, err)}
	}
	if o.json {
		if nodes == nil {
			nodes = []cluster.GPUNode{}
		}
		return writeJSON(c.OutOrStdout(), nodes)
	}
	return printGPUNodes(c, ctxName, nodes, cf.wide)
}

// runPending is gpulab cluster pending.
func (cf *clusterFlags) runPending(c *cobra.Command, o *options) error {
	objs, ctxName, ns, err := readObjects(c, o, &cf.src, cf.ns, cf.all)
	if err != nil {
		return err
	}
	r := pendingReport{Context: ctxName, Simulated: o.simulatedCtx, Namespace: ns, Pods: objs.Pending(ns), Blocked: objs.Blocked(ns), Unreadable: unreadable(objs)}
	if ns != "" {
		// The pods of every namespace were read (workloads only in ns).
		r.Elsewhere = len(objs.Pending("")) - len(r.Pods)
	}
	return printPending(c, o, r)
}

// runWhy is gpulab cluster why NAME.
func (cf *clusterFlags) runWhy(c *cobra.Command, o *options, name string) error {
	objs, ctxName, ns, err := readObjects(c, o, &cf.src, cf.ns, false)
	if err != nil {
		return err
	}
	r := pendingReport{Context: ctxName, Simulated: o.simulatedCtx, Pods: []cluster.PendingPod{}, Blocked: []cluster.Blocked{}, Unreadable: unreadable(objs)}
	for _, p := range objs.Pending(ns) {
		if p.Name == name {
			r.Pods = append(r.Pods, p)
		}
	}
	for _, b := range objs.Blocked(ns) {
		if b.Name == name {
			r.Blocked = append(r.Blocked, b)
		}
	}
	if len(r.Pods)+len(r.Blocked) == 0 {
		return notWaiting(c, o, objs, r, name, ns)
	}
	return printPending(c, o, r)
}
