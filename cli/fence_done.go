package cli

import (
	"context"
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
	if slices.ContainsFunc(done.Results, func(r fence.Result) bool { return r.In != done.Results[0].In }) {
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
	src   cluster.Source
	slurm bool
}

func newFenceListCmd(o *options) *cobra.Command {
	lo := &fenceListOptions{options: o, src: cluster.Source{Getenv: o.getenv}}
	cmd := &cobra.Command{
		Use:   "list [--context NAME | --slurm]",
		Short: "The nodes gpulab fenced: since when, why, by whom, their record, and drift",
		Long: `Lists every node of the cluster that carries a gpulab fence (its
gpulab.io/fence-record annotation): since when, why, by whom, the record
(under the results directory when this machine made it), and drift: a
fenced node someone uncordoned, or whose taint was removed, by hand.

With --slurm, the inventory's Slurm cluster instead: the nodes whose
drain reason gpulab set ("gpulab: ..."), read with scontrol on its login
host; drift is a gpulab reason on a node no longer drained.

Exit status: 0, also when a node drifted (the DRIFT column says it); 1
when the cluster could not be read; 2 when none is named (no kubeconfig,
no [slurm] table).`,
		Example: "  gpulab fence list\n  gpulab fence list --context prod --json | jq -r '.[] | select(.drift) | .node'",
		Args:    exactArgs(0, "no arguments"),
		RunE:    lo.Run,
	}
	cmd.Flags().StringVar(&lo.src.Kubeconfig, "kubeconfig", "", "the kubeconfig `FILE` to use (default: $KUBECONFIG, then ~/.kube/config)")
	cmd.Flags().BoolVar(&lo.slurm, "slurm", false, "the inventory's Slurm cluster ([slurm]) instead of a Kubernetes one")
	cmd.Flags().StringVar(&lo.src.Context, "context", "", "the kubeconfig context `NAME` (or the inventory's [[kube]] name) to use (default: the current context)")
	return cmd
}

// Run lists the fenced nodes of the cluster the flags name.
func (lo *fenceListOptions) Run(c *cobra.Command, _ []string) error {
	if lo.slurm {
		return lo.listSlurmFences(c)
	}
	client, err := lo.connect(c, &lo.src)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Context(), time.Minute)
	defer cancel()
	list, err := fence.List(ctx, client.Kube)
	if err != nil {
		return &exitError{code: ExitFailed, err: fmt.Errorf("context %s: %w", client.Context, err)}
	}
	return printFenced(c.OutOrStdout(), lo.options, "context "+client.Context, list)
}

func (o *options) listSlurmFences(c *cobra.Command) error {
	inv, err := o.loadInventory(true)
	if err != nil {
		return err
	}
	if inv.Slurm == nil {
		return usageErr("--slurm: %s has no [slurm] table (login = the host scontrol runs on)", inv.File)
	}
	ctx, cancel := context.WithTimeout(c.Context(), 2*time.Minute)
	defer cancel()
	list, err := app.SlurmFences(ctx, inv, o.reach(&sshFlags{}))
	if err != nil {
		return &exitError{code: ExitFailed, err: err}
	}
	return printFenced(c.OutOrStdout(), o, "slurm on "+inv.Slurm.Login, list)
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
	t := render.NewTable("NODE", "SINCE", "BY", "REASON", "RECORD", "DRIFT")
	for _, f := range list {
		rec := f.Record
		if dir := filepath.Join(o.resultsDir(), "fence", f.Record); fence.ValidID(f.Record) && fileio.CheckRegular(filepath.Join(dir, "record.md")) == nil {
			rec = filepath.Join(dir, "record.md")
		}
		since := "-" // the annotation is missing or not a time
		if !f.At.IsZero() {
			since = f.At.UTC().Format(time.RFC3339)
		}
		t.Rows = append(t.Rows, []string{visible.String(f.Node), since, visible.String(f.By), visible.String(f.Reason),
			visible.String(rec), visible.String(strings.Join(f.Drift, "; "))})
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
