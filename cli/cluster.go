package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/internal/visible"
)

func newClusterCmd(o *options) *cobra.Command {
	var src cluster.Source
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Read a Kubernetes cluster's GPU side with client-go (the control plane)",
		Long: `gpulab cluster reads a Kubernetes cluster through its API server, with
client-go, finding it as kubectl does: --kubeconfig FILE, else $KUBECONFIG,
else ~/.kube/config; --context NAME, else the current context. Read-only
access is enough.`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&src.Kubeconfig, "kubeconfig", "", "the kubeconfig `FILE` to use (default: $KUBECONFIG, then ~/.kube/config)")
	pf.StringVar(&src.Context, "context", "", "the kubeconfig context `NAME` to use (default: the current context)")
	var ns string
	var all bool
	pf.StringVarP(&ns, "namespace", "n", "", "the `NAMESPACE` for pending and why (default: the context's)")
	cmd.AddCommand(newClusterPendingCmd(o, &src, &ns, &all), newClusterWhyCmd(o, &src, &ns))
	cmd.AddCommand(newClusterReconcileCmd(o, &src))
	cmd.AddCommand(&cobra.Command{
		Use:   "nodes",
		Short: "GPU nodes: capacity, allocatable and allocated of every GPU resource",
		Long: `Lists the nodes that have a GPU resource (nvidia.com/gpu, nvidia.com/mig-*,
nvidia.com/gpu.shared, HAMi's gpumem and gpucores, or any extended resource
with a GPU-like name): what each has, what the scheduler may give, what the
non-terminated pods bound to it request, and what is left.`,
		Example: "  gpulab cluster nodes\n  gpulab cluster nodes --context prod --json | jq '.[] | select(.allocated[\"nvidia.com/gpu\"] == 0)'",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			client, err := src.Connect()
			if err != nil {
				return configErr(err)
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
			return printGPUNodes(c, ctxName, nodes)
		},
	})
	return cmd
}

func printGPUNodes(c *cobra.Command, ctxName string, nodes []cluster.GPUNode) error {
	w := c.OutOrStdout()
	if len(nodes) == 0 {
		fmt.Fprintf(w, "no GPU nodes in %s (no node has a GPU resource)\n", visible.String(ctxName))
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTATUS\tRESOURCE\tALLOCATED\tALLOCATABLE\tFREE\tTAINTS")
	for _, n := range nodes {
		status := "Ready"
		if !n.Ready {
			status = "NotReady"
		}
		if n.Unschedulable {
			status += ",SchedulingDisabled"
		}
		res := make([]string, 0, len(n.Allocatable))
		for r := range n.Allocatable {
			res = append(res, r)
		}
		slices.Sort(res)
		for i, r := range res {
			name, taints := visible.String(n.Name), strings.Join(n.Taints, ",")
			if i > 0 {
				name, status, taints = "", "", ""
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\n", name, status, visible.String(r), n.Allocated[r], n.Allocatable[r], n.Free(r), visible.String(taints))
		}
	}
	return tw.Flush()
}

func newClusterPendingCmd(o *options, src *cluster.Source, ns *string, all *bool) *cobra.Command {
	c := &cobra.Command{
		Use:   "pending [-n NAMESPACE | -A]",
		Short: "Pods waiting for a node, each with why in one paragraph",
		Long: `Lists the pods the scheduler has not placed, each with its latest
FailedScheduling event in parts and one paragraph: what it asks for, what the
scheduler said, and whether the GPUs it wants are free on one node, free but
spread over several (fragmentation), or not free in the whole cluster.
Exit status 1 when a pod waits.`,
		Example: "  gpulab cluster pending -A\n  gpulab cluster pending -n ml-team --json | jq -r '.[].why'",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			pending, err := readPending(c, src, *ns, *all)
			if err != nil {
				return err
			}
			return printPending(c, o, pending)
		},
	}
	c.Flags().BoolVarP(all, "all-namespaces", "A", false, "every namespace")
	return c
}

func newClusterWhyCmd(o *options, src *cluster.Source, ns *string) *cobra.Command {
	return &cobra.Command{
		Use:     "why POD [-n NAMESPACE]",
		Short:   "Why one pod waits for a node, in one paragraph with its evidence",
		Example: "  gpulab cluster why train-0 -n ml-team",
		Args:    exactArgs(1, "a pod's name"),
		RunE: func(c *cobra.Command, args []string) error {
			pending, err := readPending(c, src, *ns, false)
			if err != nil {
				return err
			}
			for _, p := range pending {
				if p.Name == args[0] {
					return printPending(c, o, []cluster.PendingPod{p})
				}
			}
			return &exitError{code: ExitFailed, err: fmt.Errorf("no pending pod %q in namespace %q (it may be placed, or named otherwise: gpulab cluster pending)", args[0], *ns)}
		},
	}
}

func readPending(c *cobra.Command, src *cluster.Source, ns string, all bool) ([]cluster.PendingPod, error) {
	client, err := src.Connect()
	if err != nil {
		return nil, configErr(err)
	}
	ctxName, defNS := client.Context, client.Namespace
	switch {
	case all:
		ns = ""
	case ns == "":
		ns = defNS
	}
	ctx, cancel := context.WithTimeout(c.Context(), 2*time.Minute)
	defer cancel()
	pending, err := cluster.Pending(ctx, client, ns)
	if err != nil {
		return nil, &exitError{code: ExitFailed, err: fmt.Errorf("cluster %s: %w", ctxName, err)}
	}
	return pending, nil
}

func printPending(c *cobra.Command, o *options, pending []cluster.PendingPod) error {
	w := c.OutOrStdout()
	if o.json {
		if pending == nil {
			pending = []cluster.PendingPod{}
		}
		if err := writeJSON(w, pending); err != nil {
			return err
		}
	} else {
		if len(pending) == 0 {
			fmt.Fprintln(w, "no pod waits for a node")
		}
		for i, p := range pending {
			if i > 0 {
				fmt.Fprintln(w)
			}
			fmt.Fprintln(w, visible.String(p.Why))
		}
	}
	if len(pending) > 0 {
		return errSilentFailure
	}
	return nil
}
