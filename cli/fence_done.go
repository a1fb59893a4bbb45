package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/fence"
	"github.com/gpulab/gpulab/internal/fileio"
	"github.com/gpulab/gpulab/internal/visible"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/render"
)

// printDone prints what fence or release did, node by node, the record,
// and the summary on stderr; its error is the exit status.
func (fo *fenceOptions) printDone(stdout, stderr io.Writer, ctxName string, done app.Fenced) error {
	rep := fenceReport{Action: fo.action(), Target: ctxName, Reason: fo.request.Reason, Plan: planOf(done.Results), Results: done.Results, Held: done.Held}
	for _, r := range done.Records {
		rep.Records = append(rep.Records, r.Dir())
	}
	if done.Record != nil {
		rep.Record = done.Record.Dir()
		if !fo.release {
			rep.Drain = done.Record.Drain
		}
	}
	if done.SaveErr != nil {
		rep.Problem = done.SaveErr.Error()
	}
	count := map[fence.Outcome]int{}
	held := 0
	for _, r := range done.Results {
		count[r.Outcome]++
		if r.Held {
			held++
		}
	}
	blocked := 0
	for _, r := range done.Results {
		if r.NotDrained != "" {
			blocked++
		}
	}
	for _, d := range rep.Drain {
		if d.Error != "" {
			blocked++ // the drain did not run: its pods were not listed
		}
		for _, p := range d.Pods {
			if p.Outcome != fence.Evicted && p.Outcome != fence.Left {
				blocked++
			}
		}
	}
	if fo.json {
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
	} else {
		printResults(stdout, fo.action(), rep)
	}
	fmt.Fprintf(stderr, "%s: ", fo.action())
	if render.MixedIn(done.Results, func(r fence.Result) string { return r.In }) {
		fmt.Fprintf(stderr, "%d plans (a node of both clusters has one in each): ", len(done.Results))
	}
	fmt.Fprintf(stderr, "%d done, %d unchanged, ", count[fence.Done], count[fence.Unchanged])
	if held > 0 {
		fmt.Fprintf(stderr, "%d held (their checks do not pass yet), ", held)
	}
	fmt.Fprintf(stderr, "%d refused, %d changed since the plan, %d failed", count[fence.Refused]-held, count[fence.Changed], count[fence.Failed])
	if blocked > 0 {
		fmt.Fprintf(stderr, "; %d not drained", blocked)
	}
	fmt.Fprintln(stderr)
	switch {
	case done.SaveErr != nil:
		return &exitError{code: ExitNotSaved, err: fmt.Errorf("the record: %w", done.SaveErr)}
	case count[fence.Refused]+count[fence.Changed]+count[fence.Failed]+blocked > 0:
		return errSilentFailure
	}
	return nil
}

func planOf(results []fence.Result) []fence.Plan {
	out := make([]fence.Plan, len(results))
	for i, r := range results {
		out[i] = r.Plan
	}
	return out
}

func printResults(w io.Writer, action string, rep fenceReport) {
	for _, l := range render.FenceResults(rep.Results, action == "release") {
		fmt.Fprintln(w, l)
	}
	for _, d := range rep.Drain {
		printDrain(w, "drain of "+d.Node, d)
	}
	switch {
	case len(rep.Records) > 1:
		fmt.Fprintln(w, "\nrecords:")
		for _, r := range rep.Records {
			fmt.Fprintf(w, "  %s\n", filepath.Join(r, "record.md"))
		}
	case rep.Record != "":
		fmt.Fprintf(w, "\nrecord: %s\n", filepath.Join(rep.Record, "record.md"))
	}
}

// newFenceListCmd is gpulab fence list: what gpulab fenced in a cluster.
// fenceListOptions are fence list's flags.
type fenceListOptions struct {
	*options
	src        cluster.Source
	slurm      bool
	kubernetes bool
}

func newFenceListCmd(o *options) *cobra.Command {
	lo := &fenceListOptions{options: o, src: cluster.Source{Getenv: o.getenv}}
	cmd := &cobra.Command{
		Use:   "list [--context NAME] [--slurm | --kubernetes]",
		Short: "The nodes gpulab fenced: since when, why, by whom, their record, and drift",
		Long: `Lists every node that carries a gpulab fence, in the Kubernetes clusters
(--context's; else the inventory's [[kube]] tables', where gpulab fence
acts; else the kubeconfig's current context) and in the inventory's Slurm
cluster ([slurm]), each that there is: since when, why, by whom, the
record (under the results directory when this machine made it), and
drift. In Kubernetes a fence is the node's gpulab.io/fence-record
annotation, and drift a fenced node someone uncordoned, or whose taint was
removed, by hand; in Slurm it is a drain reason gpulab set ("gpulab:
..."), read with scontrol on the login host, and drift a gpulab reason on
a node no longer drained. --slurm or --kubernetes lists that one only.

Exit status: 0, also when a node drifted (the DRIFT column says it); 1
when a cluster could not be read (what the other holds is listed); 2 when
none is named (no kubeconfig, no [slurm] table).`,
		Example: "  gpulab fence list\n  gpulab fence list --context prod --json | jq -r '.[] | select(.drift) | .node'",
		Args:    exactArgs(0, "no arguments"),
		RunE:    lo.Run,
	}
	cmd.Flags().StringVar(&lo.src.Kubeconfig, "kubeconfig", "", "the kubeconfig `FILE` to use (default: $KUBECONFIG, then ~/.kube/config)")
	cmd.Flags().BoolVar(&lo.slurm, "slurm", false, "only the inventory's Slurm cluster ([slurm])")
	cmd.Flags().BoolVar(&lo.kubernetes, "kubernetes", false, "only the Kubernetes cluster")
	cmd.MarkFlagsMutuallyExclusive("slurm", "kubernetes")
	cmd.Flags().StringVar(&lo.src.Context, "context", "", "the kubeconfig context `NAME` (or the inventory's [[kube]] name) to use (default: the current context)")
	return cmd
}

// Run lists the fenced nodes of the clusters the flags and the
// inventory name: what each that could be read holds, and an error
// (exit 1) for one that could not.
func (lo *fenceListOptions) Run(c *cobra.Command, _ []string) error {
	inv, err := lo.loadInventory(lo.slurm)
	if err != nil {
		return err
	}
	if lo.slurm && inv.Slurm == nil {
		return usageErr("--slurm: %s has no [slurm] table (login = the host scontrol runs on)", inv.File)
	}
	var clients []*cluster.Client
	var failed []string
	if !lo.slurm {
		clients, failed, err = lo.kubeClusters(c, inv)
		switch {
		case err != nil && (lo.kubernetes || inv.Slurm == nil):
			return err
		case err != nil: // no Kubernetes cluster named: the Slurm one alone
			fmt.Fprintln(c.ErrOrStderr(), "gpulab: no Kubernetes cluster named (a kubeconfig context, a [[kube]] table): the Slurm cluster only")
		}
	}
	var list []fence.Fenced
	var where []string
	for _, client := range clients {
		ctx, cancel := context.WithTimeout(c.Context(), time.Minute)
		l, err := fence.List(ctx, client.Kube)
		cancel()
		where, list = append(where, "context "+client.Context), append(list, l...)
		if err != nil {
			failed = append(failed, fmt.Sprintf("context %s: %v", client.Context, err))
		}
	}
	if inv.Slurm != nil && !lo.kubernetes {
		ctx, cancel := context.WithTimeout(c.Context(), 2*time.Minute)
		l, err := app.SlurmFences(ctx, inv, lo.reach(&sshFlags{}))
		cancel()
		where, list = append(where, "slurm on "+inv.Slurm.Login), append(list, l...)
		if err != nil {
			failed = append(failed, err.Error())
		}
	}
	if len(where) == 0 { // every cluster named failed to load
		return &exitError{code: ExitFailed, err: errors.New(strings.Join(failed, "; "))}
	}
	if err := printFenced(c.OutOrStdout(), lo.options, strings.Join(where, " and "), list); err != nil {
		return err
	}
	if len(failed) > 0 {
		return &exitError{code: ExitFailed, err: errors.New(strings.Join(failed, "; "))}
	}
	return nil
}

// kubeClusters are the Kubernetes clusters fence list reads: the one
// --context or --kubeconfig names, else the inventory's [[kube]] tables
// (where gpulab fence acts), else the kubeconfig's current context.
// A table whose kubeconfig cannot be loaded is one of failed.
func (lo *fenceListOptions) kubeClusters(c *cobra.Command, inv *inventory.Inventory) (out []*cluster.Client, failed []string, err error) {
	if lo.src.Context != "" || c.Flags().Changed("kubeconfig") || len(inv.Kube) == 0 {
		client, err := lo.connect(c, &lo.src)
		if err != nil {
			return nil, nil, err
		}
		return []*cluster.Client{client}, nil, nil
	}
	for _, k := range inv.Kube {
		src := lo.src
		src.Context = k.Name
		client, err := lo.connect(c, &src)
		if err != nil {
			failed = append(failed, fmt.Sprintf("[[kube]] %s: %v", k.Name, err))
			continue
		}
		out = append(out, client)
	}
	return out, failed, nil
}

func printFenced(w io.Writer, o *options, ctxName string, list []fence.Fenced) error {
	if list == nil {
		list = []fence.Fenced{}
	}
	if o.json {
		return writeJSON(w, list)
	}
	if len(list) == 0 {
		fmt.Fprintf(w, "no node of %s is fenced by gpulab\n", ctxName)
		return nil
	}
	mixed := render.MixedIn(list, func(f fence.Fenced) string { return f.In })
	heads := []string{"NODE", "SINCE", "BY", "REASON", "RECORD", "DRIFT"}
	if mixed {
		heads = slices.Insert(heads, 1, "IN")
	}
	t := render.NewTable(heads...)
	for _, f := range list {
		rec := f.Record
		if dir := filepath.Join(o.resultsDir(), "fence", f.Record); fence.ValidID(f.Record) && fileio.CheckRegular(filepath.Join(dir, "record.md")) == nil {
			rec = filepath.Join(dir, "record.md")
		}
		since := "-" // the annotation is missing or not a time
		if !f.At.IsZero() {
			since = f.At.UTC().Format(time.RFC3339)
		}
		row := []string{visible.String(f.Node), since, visible.String(f.By), visible.String(f.Reason),
			visible.String(rec), visible.String(strings.Join(f.Drift, "; "))}
		if mixed {
			row = slices.Insert(row, 1, f.In)
		}
		t.Rows = append(t.Rows, row)
	}
	return t.WriteText(w)
}

// printDrain prints a drain (or what one would do), pod by pod.
func printDrain(w io.Writer, head string, d fence.NodeDrain) {
	fmt.Fprintf(w, "%s:\n", visible.String(head))
	switch {
	case d.Error != "":
		fmt.Fprintf(w, "  %s\n", visible.String(d.Error))
	case len(d.Pods) == 0:
		fmt.Fprintln(w, "  no pod on the node")
	}
	for _, p := range d.Pods {
		line := "  " + p.Namespace + "/" + p.Name
		if p.Outcome != "" {
			line += ": " + string(p.Outcome)
		}
		if p.Why != "" {
			line += ": " + p.Why
		}
		fmt.Fprintln(w, visible.String(line))
	}
}
