package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpulab/gpulab/render"
	"github.com/gpulab/gpulab/runbooks"
	"github.com/gpulab/gpulab/step"
)

// findRunbook loads the runbooks and returns the one called id.
func (o *options) findRunbook(id string) (runbooks.Runbook, error) {
	rbs, err := o.loadRunbooks()
	if err != nil {
		return runbooks.Runbook{}, err
	}
	if rb, ok := runbooks.Find(rbs, id); ok {
		return rb, nil
	}
	return runbooks.Runbook{}, noSuch("runbook", id, rbs, func(r runbooks.Runbook) string { return r.ID })
}

func newRunbookCmd(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "runbook",
		Short: "Run topology and troubleshooting runbooks on many hosts and read the verdicts",
		Long: `A runbook runs the commands of the GPU triage sheet (nvidia-smi, topo -m,
numactl, dmesg, rdma, kubectl...) on each host, parses what they print, and
judges checks: PASS, FAIL, WARN, SKIPPED, or UNKNOWN when the evidence is
missing (never PASS). Each verdict carries its evidence and what to look at
next. Hosts with the same facts fold together.

Built-in runbooks are embedded; --runbooks DIR adds your own (TOML, same
schema as runbooks/builtin/*.toml).`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newRunbookListCmd(o), newRunbookShowCmd(o), newRunbookRunCmd(o))
	return cmd
}

func newRunbookListCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "List the runbooks",
		Example: "  gpulab runbook list\n  gpulab runbook list --json | jq -r '.[].id'",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			rbs, err := o.loadRunbooks()
			if err != nil {
				return err
			}
			return printList(c.OutOrStdout(), o.json, rbs, []string{"ID", "PLANE", "TITLE", "CHECKS"}, func(rb runbooks.Runbook) []string {
				return []string{rb.ID, rb.Plane, rb.Title, fmt.Sprint(len(rb.Checks))}
			})
		},
	}
}

func newRunbookShowCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:               "show ID",
		ValidArgsFunction: completeWith(o.runbookIDs, false),
		Short:             "Show a runbook's steps and checks",
		Example:           "  gpulab runbook show health",
		Args:              exactArgs(1, "a runbook id (gpulab runbook list)"),
		RunE: func(c *cobra.Command, args []string) error {
			return printShown(c.OutOrStdout(), o.json, func() (runbooks.Runbook, error) { return o.findRunbook(args[0]) }, printRunbook)
		},
	}
}

// printRunbook is runbook show's text: what the runbook is for, its
// parameters, steps and checks.
func printRunbook(w io.Writer, rb runbooks.Runbook) error {
	fmt.Fprintf(w, "%s: %s (%s plane)\n%s\n", rb.ID, rb.Title, rb.Plane, rb.Symptom)
	printParams(w, rb.Params)
	fmt.Fprintln(w, "\nSteps:")
	for _, s := range rb.Steps {
		extra := ""
		if len(s.Needs) > 0 {
			extra = " (needs " + strings.Join(s.Needs, ", ") + ")"
		}
		fmt.Fprintf(w, "  %-8s %s%s\n", s.ID, s.Command, extra)
	}
	fmt.Fprintln(w, "\nChecks:")
	for _, ch := range rb.Checks {
		fmt.Fprintf(w, "  %-14s %s (uses %s)\n", ch.ID, ch.Title, strings.Join(ch.Uses, ", "))
	}
	return nil
}

// runbookRunOptions are gpulab runbook run's flags and argument, bound
// by newRunbookRunCmd; Complete, Validate and Run are the command's three
// steps (kubectl's shape), each callable without cobra.
type runbookRunOptions struct {
	*options
	ssh          sshFlags
	yes          bool
	set          []string
	allowUnknown bool

	// Complete fills these in from the argument and --set.
	rb     runbooks.Runbook
	params map[string]string
}

func newRunbookRunCmd(o *options) *cobra.Command {
	ro := &runbookRunOptions{options: o}
	run := &cobra.Command{
		Use:               "run ID -H EXPR",
		ValidArgsFunction: completeWith(o.runbookIDs, false),
		Short:             "Run a runbook on hosts and print folded verdicts",
		Long: `Run a runbook on every selected host (one SSH connection each) and print each
check's verdicts with identical hosts folded.

UNKNOWN means a check could not be decided: its step did not run or gave no
evidence (a tool not installed, sudo refused, a timeout, a host that could
not be reached). It is never taken for a PASS, and its hint says how to get
the evidence.

A host that could not be reached (or whose name could not be resolved) is
listed with its class, its checks UNKNOWN, and counted in the summary line
on standard error; it is never left out. A run in which no check passed is
never a PASS (every check SKIPPED: nothing was checked).

Exit status: 0 when every check passed or warned, 1 when one failed or a
host was not reached, 3 when none failed but some are UNKNOWN (0 with
--allow-unknown) or every check was SKIPPED, 2 for usage errors, 130 after
Ctrl-C.`,
		Example: `  gpulab runbook run topology -H 'gpu[01-08]'
  gpulab runbook run nccl-slow -H @ib --set nccl_log=/scratch/job-4711/rank0.log
  gpulab runbook run health -H @a100 --json | jq '.hosts[] | {host, verdicts: [.verdicts[] | select(.status != "PASS")]}'`,
		Args: exactArgs(1, "a runbook id (gpulab runbook list)"),
		RunE: func(c *cobra.Command, args []string) error {
			if err := ro.Complete(args); err != nil {
				return err
			}
			if err := ro.Validate(); err != nil {
				return err
			}
			ctx, stop := interruptible(c.ErrOrStderr())
			defer stop()
			return ro.Run(ctx, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	ro.ssh.register(run)
	ro.ssh.registerKube()
	run.Flags().StringArrayVar(&ro.set, "set", nil, "give the runbook's parameter `name=value` (gpulab runbook show ID lists them); repeatable")
	run.Flags().BoolVar(&ro.yes, "yes", false, "confirm steps that change hosts (none of the built-ins do)")
	run.Flags().BoolVar(&ro.allowUnknown, "allow-unknown", false, "exit 0 when no check failed even if some are UNKNOWN (undecided for want of evidence)")
	return run
}

// Complete finds the runbook args name and binds its parameters.
func (ro *runbookRunOptions) Complete(args []string) error {
	rb, err := ro.findRunbook(args[0])
	if err != nil {
		return err
	}
	params, err := runbooks.Bind(rb, ro.set)
	if err != nil {
		return usageErr("%v", err)
	}
	ro.rb, ro.params = rb, params
	return nil
}

// Validate checks the connection flags.
func (ro *runbookRunOptions) Validate() error { return ro.ssh.check() }

// Run runs the runbook on the selected hosts (runbooks.Execute), prints
// the verdicts on stdout (text or --json) and the summary line on stderr,
// and returns the exit status the verdicts give.
func (ro *runbookRunOptions) Run(ctx context.Context, stdout, stderr io.Writer) error {
	r, err := ro.newRunner(&ro.ssh)
	if err != nil {
		return err
	}
	defer r.Keys.Close()
	m := ro.startMeter("runbook "+ro.rb.ID, r.Engine, len(r.Targets))
	out := r.RunRunbook(ctx, r.Targets, ro.rb, runbooks.RunOptions{Yes: ro.yes, Params: ro.params})
	m.end()
	if ro.json {
		err = writeJSON(stdout, struct {
			Runbook   string             `json:"runbook"`
			Worst     step.Status        `json:"worst"`
			Summary   string             `json:"summary"`
			Simulated bool               `json:"simulated,omitempty"`
			Folded    []runbooks.Folded  `json:"folded"`
			Hosts     []runbooks.HostRun `json:"hosts"`
		}{ro.rb.ID, out.Worst, out.Summary, simulatedRun(r), out.Folded, out.Runs})
	} else {
		err = printFoldedVerdicts(stdout, ro.rb, out.Folded, simulatedRun(r))
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(stderr, out.Summary)
	if ctx.Err() != nil {
		return errInterrupted
	}
	switch worst := out.Worst; {
	case worst == step.Fail || out.CutShort:
		return errSilentFailure
	case worst == step.Skipped || !runbooks.AnyVerdict(out.Runs): // nothing was checked: never a pass
		return &exitError{code: ExitUnknown, err: errors.New("")}
	case runbooks.AnyUnknown(out.Runs) && !ro.allowUnknown:
		return &exitError{code: ExitUnknown, err: errors.New("")}
	}
	return nil
}

// printFoldedVerdicts prints a runbook run's verdicts as text; on a
// simulated fleet (simulated) the line under the title says so.
func printFoldedVerdicts(w io.Writer, rb runbooks.Runbook, folded []runbooks.Folded, simulated bool) error {
	fmt.Fprintf(w, "%s: %s\n", rb.ID, rb.Title)
	if simulated {
		fmt.Fprintln(w, simulatedFleet+" (gpulab sim): these verdicts are about simulated hosts, not real hardware")
	}
	for _, f := range folded {
		fmt.Fprintf(w, "\n%s (%s)\n", f.Title, f.Check)
		for _, g := range f.Groups {
			fmt.Fprintf(w, "  %s\n", render.Verdict(g))
			printFacts(w, g.Facts)
			if g.Hint != "" {
				fmt.Fprintf(w, "  %*s %s\n", render.StatusWidth, "", render.Next(g.Hint).String())
			}
		}
	}
	return nil
}

// maxTextFacts is how many facts of a verdict the text shows; --json
// has them all.
const maxTextFacts = 8

// printFacts prints a verdict's facts under it, each a line.
func printFacts(w io.Writer, facts []string) {
	for i, f := range facts {
		if i == maxTextFacts {
			fmt.Fprintf(w, "  %*s · %d more (--json has them all)\n", render.StatusWidth, "", len(facts)-i)
			break
		}
		fmt.Fprintf(w, "  %*s · %s\n", render.StatusWidth, "", f)
	}
}

// printParams lists a runbook's or lab's parameters for `show`.
func printParams(w io.Writer, params []step.Param) {
	if len(params) == 0 {
		return
	}
	fmt.Fprintln(w, "\nParameters (--set name=value):")
	for _, p := range params {
		var notes []string
		if p.Type != "" && p.Type != "string" {
			notes = append(notes, p.Type)
		}
		if p.Pattern != "" {
			notes = append(notes, "matching "+p.Pattern)
		}
		if p.Default != "" {
			notes = append(notes, "default "+p.Default)
		}
		note := ""
		if len(notes) > 0 {
			note = " (" + strings.Join(notes, "; ") + ")"
		}
		fmt.Fprintf(w, "  %-16s %s%s\n", p.Name, p.Help, note)
	}
}
