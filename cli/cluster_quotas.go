package cli

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/internal/visible"
	"github.com/gpulab/gpulab/render"
)

func newClusterQuotasCmd(o *options, cf *clusterFlags) *cobra.Command {
	c := &cobra.Command{
		Use:   "quotas [-n NAMESPACE | -A]",
		Short: "ResourceQuotas: each limited resource's hard limit and use, GPU resources first",
		Long: `Lists the namespace's ResourceQuotas (every namespace's with -A): for each
resource a quota limits, its hard limit and what the namespace uses, GPU
resources (requests.nvidia.com/gpu, MIG profiles ...) first, FULL where
nothing more is admitted. Then the ClusterQueues of Kueue when the cluster
serves them: nominal quota and use of each resource.

Exit status 0; a full quota is a fact, not a failure (gpulab cluster pending
says who waits for it).`,
		Example: "  gpulab cluster quotas -A\n  gpulab cluster quotas -n ml-team --json | jq '.quotas[].resources[] | select(.full)'",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			return cf.runQuotas(c, o)
		},
	}
	c.Flags().BoolVarP(&cf.all, "all-namespaces", "A", false, "every namespace")
	return c
}

type quotasReport struct {
	Context       string                 `json:"context"`
	Simulated     bool                   `json:"simulated,omitempty"`
	Namespace     string                 `json:"namespace"` // "" for all
	Unreadable    []string               `json:"unreadable"`
	Quotas        []cluster.Quota        `json:"quotas"`
	ClusterQueues []cluster.ClusterQueue `json:"cluster_queues"`
}

func printQuotas(c *cobra.Command, r quotasReport) error {
	w := c.OutOrStdout()
	if len(r.Quotas) == 0 {
		where := "any namespace"
		if r.Namespace != "" {
			where = "namespace " + r.Namespace
		}
		fmt.Fprintf(w, "no ResourceQuota in %s of %s\n", visible.String(where), visible.String(r.Context))
	}
	quotas := render.NewTable("NAMESPACE", "QUOTA", "RESOURCE", "USED", "HARD", "")
	for _, q := range r.Quotas {
		for i, res := range q.Resources {
			ns, name := visible.String(q.Namespace), visible.String(q.Name)
			if i > 0 {
				ns, name = "", ""
			}
			full := ""
			if res.Full {
				full = "FULL"
			}
			quotas.Add(ns, name, visible.String(res.Name), cmp.Or(res.Used, "(not counted)"), res.Hard, full)
		}
	}
	if len(quotas.Rows) > 0 {
		if err := quotas.WriteText(w); err != nil {
			return err
		}
	}
	if len(r.ClusterQueues) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	queues := render.NewTable("CLUSTERQUEUE", "COHORT", "RESOURCE", "USED", "NOMINAL", "PENDING", "ADMITTED")
	for _, cq := range r.ClusterQueues {
		first := true
		for _, res := range slices.Sorted(maps.Keys(cq.Nominal)) {
			name, cohort := visible.String(cq.Name), visible.String(cq.Cohort)
			pend, adm := fmt.Sprint(cq.Pending), fmt.Sprint(cq.Admitted)
			if !first {
				name, cohort, pend, adm = "", "", "", ""
			}
			first = false
			queues.Add(name, cohort, visible.String(res), fmt.Sprint(cq.Used[res]), fmt.Sprint(cq.Nominal[res]), pend, adm)
		}
	}
	return queues.WriteText(w)
}

func newClusterFragmentationCmd(o *options, cf *clusterFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "fragmentation [-n NAMESPACE]",
		Short: "For each GPU request shape: nodes that fit it, free units in total, the fragmentation rate",
		Long: `For each GPU request shape the pending pods ask (N units of one resource on
one node: 4 nvidia.com/gpu, 1 nvidia.com/mig-1g.5gb), and for the reference
shapes 1, 2, 4 and 8 whole GPUs and one slice of each MIG profile when no
pod waits for that resource: how many nodes the shape's pods may use (ready,
not cordoned, their taints tolerated and labels selected, as the scheduler
judges it; a pod with no toleration or selector for a reference shape) could place
it, how many units are free in total and on the best node, how many pods of
that shape fit at once, and the fragmentation rate, the share of free units
that shape cannot use (free units left on each node after packing whole
requests, over all free units; the rate the labs compute), and
its state: fits (a node has room), fragmented (enough free in all, on no
one node) or short (not enough free in the whole cluster). -n keeps the
pending shapes of one namespace. Free units on nodes a shape's pods may not
use are listed apart, with why, never counted as placeable. Pods of one
shape that may use different nodes (one selects a zone, one tolerates a
taint) are a row each, its pods named ("4 nvidia.com/gpu for ml/train-a
+2"; --json lists them all): a row never says fits for a pod that fits
nowhere.

Exit status 1 when a pending shape fits no node although enough units are
free in total (fragmentation is what holds it), else 0.`,
		Example: "  gpulab cluster fragmentation\n  gpulab cluster fragmentation --context prod --json | jq '.shapes[] | select(.pending > 0)'",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			return cf.runFragmentation(c, o)
		},
	}
}

func printShapes(c *cobra.Command, ctxName string, shapes []cluster.Shape) error {
	w := c.OutOrStdout()
	if len(shapes) == 0 {
		fmt.Fprintf(w, "no GPU nodes in %s (no node has a GPU resource)\n", visible.String(ctxName))
		return nil
	}
	t := render.NewTable("SHAPE", "PENDING", "NODES THAT FIT", "FREE", "BEST NODE", "PLACEABLE", "FRAGMENTATION", "STATE")
	label := shapeLabels(shapes)
	for i, s := range shapes {
		pending := fmt.Sprint(s.Pending)
		if s.Pending == 0 {
			pending = "-"
		}
		t.Add(label[i], pending, fmt.Sprintf("%d of %d", s.NodesThatFit, s.Nodes),
			fmt.Sprint(s.Free), fmt.Sprint(s.Largest), fmt.Sprint(s.Placeable), fmt.Sprintf("%.0f%%", 100*s.Rate), s.State)
	}
	if err := t.WriteText(w); err != nil {
		return err
	}
	// Capacity a shape's pods may not use is shown apart, never as free.
	var apart []string
	for i, s := range shapes {
		if s.Excluded != "" {
			apart = append(apart, fmt.Sprintf("  %s: %d free on nodes its pods may not use: %s", label[i], s.FreeExcluded, visible.String(s.Excluded)))
		}
	}
	if len(apart) > 0 {
		fmt.Fprintf(w, "\nNot counted above (FREE and PLACEABLE are what the scheduler could give a pod of the shape):\n%s\n", strings.Join(apart, "\n"))
	}
	return nil
}

// shapeLabels name each shape: "4 nvidia.com/gpu"; when pods of one
// resource and count may use different nodes (a row each), with its pods:
// "4 nvidia.com/gpu for ml/train-a +2".
func shapeLabels(shapes []cluster.Shape) []string {
	rows := map[string]int{}
	key := func(s cluster.Shape) string { return fmt.Sprintf("%d %s", s.Count, visible.String(s.Resource)) }
	for _, s := range shapes {
		rows[key(s)]++
	}
	out := make([]string, len(shapes))
	for i, s := range shapes {
		out[i] = key(s)
		if rows[out[i]] > 1 && len(s.Pods) > 0 {
			out[i] += " for " + visible.String(s.Pods[0])
			if len(s.Pods) > 1 {
				out[i] += fmt.Sprintf(" +%d", len(s.Pods)-1)
			}
		}
	}
	return out
}

// runQuotas is gpulab cluster quotas.
func (cf *clusterFlags) runQuotas(c *cobra.Command, o *options) error {
	objs, ctxName, ns, err := readObjects(c, o, &cf.src, cf.ns, cf.all)
	if err != nil {
		return err
	}
	r := quotasReport{Context: ctxName, Simulated: o.simulatedCtx, Namespace: ns, Quotas: objs.Quotas(ns), ClusterQueues: objs.Queues.ClusterQueues, Unreadable: unreadable(objs)}
	if r.ClusterQueues == nil {
		r.ClusterQueues = []cluster.ClusterQueue{}
	}
	if o.json {
		return writeJSON(c.OutOrStdout(), r)
	}
	return printQuotas(c, r)
}

// runFragmentation is gpulab cluster fragmentation.
func (cf *clusterFlags) runFragmentation(c *cobra.Command, o *options) error {
	objs, ctxName, scope, err := readObjects(c, o, &cf.src, cf.ns, cf.ns == "")
	if err != nil {
		return err
	}
	shapes := objs.Fragmentation(scope)
	if o.json {
		err = writeJSON(c.OutOrStdout(), struct {
			Context   string          `json:"context"`
			Simulated bool            `json:"simulated,omitempty"`
			Shapes    []cluster.Shape `json:"shapes"`
		}{ctxName, o.simulatedCtx, shapes})
	} else {
		err = printShapes(c, ctxName, shapes)
	}
	if err != nil {
		return err
	}
	for _, s := range shapes {
		if s.Pending > 0 && s.State == "fragmented" {
			return errSilentFailure
		}
	}
	return nil
}
