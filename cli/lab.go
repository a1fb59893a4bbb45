package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/labs"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/render"
)

// loadLabs loads the built-in labs plus --labs directories.
func (o *options) loadLabs() ([]*labs.Lab, error) {
	ls, err := labs.Load(o.labs)
	if err != nil {
		return nil, configErr(fmt.Errorf("labs: %w", err))
	}
	return ls, nil
}

// findLab loads the labs and returns the one called id.
func (o *options) findLab(id string) (*labs.Lab, error) {
	ls, err := o.loadLabs()
	if err != nil {
		return nil, err
	}
	if l, ok := labs.Find(ls, id); ok {
		return l, nil
	}
	return nil, noSuch("lab", id, ls, func(l *labs.Lab) string { return l.ID })
}

func newLabCmd(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "MIU labs: scenario, success criteria scored live, comparison table, lab record",
		Long: `A lab is a minimum increment unit: a scenario with quantified success
criteria and counterexamples (what the system must reject), a comparison
table across modes, and a lab record that lets someone else reproduce the
conclusion in thirty minutes.

Criteria are CEL expressions over the lab's metrics, which steps compute
from their commands' parsed output (gpulab parse). Missing evidence is
UNKNOWN, never PASS. Maturity: draft, validated (ran on real hardware),
reproducible (a stranger reproduced it), production-notes.

Built-in labs are embedded; --labs DIR adds your own (TOML, same schema as
labs/builtin/*.toml).`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(&cobra.Command{
		Use:     "list",
		Short:   "List the labs with their maturity and estimate",
		Example: "  gpulab lab list\n  gpulab lab list --json | jq -r '.[] | select(.maturity != \"draft\") | .id'",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ls, err := o.loadLabs()
			if err != nil {
				return err
			}
			return printList(c.OutOrStdout(), o.json, ls, []string{"ID", "PLANE", "MATURITY", "MIN", "CRITERIA", "NAME"}, func(l *labs.Lab) []string {
				return []string{l.ID, l.Plane, l.Maturity, fmt.Sprint(l.EstimateMinutes), fmt.Sprintf("%d+%d", len(l.Criteria), len(l.Counter)), l.Name}
			})
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:               "show ID",
		ValidArgsFunction: completeWith(o.labIDs, false),
		Short:             "Show a lab: goal, constraints, flow, criteria, comparison table",
		Example:           "  gpulab lab show topology-sanity\n  gpulab lab show health-gate --json | jq '.criteria'",
		Args:              exactArgs(1, "a lab id (gpulab lab list)"),
		RunE: func(c *cobra.Command, args []string) error {
			return printShown(c.OutOrStdout(), o.json, func() (*labs.Lab, error) { return o.findLab(args[0]) }, func(w io.Writer, l *labs.Lab) error {
				printLab(w, l)
				return nil
			})
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "check FILE|DIR",
		Short: "Validate lab files: schema, parsers, CEL expressions, metrics",
		Long: `Validate lab files: unknown keys, unknown parsers, CEL expressions that do not
compile or are not bool, and criteria that read a metric no step measures
are reported with file:line:column. Exit 0 when valid, 2 when not (a
configuration error, as for any command given invalid --labs), or when a
file is over gpulab's limits (larger than 8 MiB, or nested more than 64
levels).`,
		Example: "  gpulab lab check my-labs/\n  gpulab lab check my-labs/mps.toml --json",
		Args:    exactArgs(1, "a directory or a .toml file"),
		RunE: func(c *cobra.Command, args []string) error {
			ls, err := labs.Load(append(append([]string(nil), o.labs...), args[0]))
			return reportCheck(c.OutOrStdout(), o.json, args[0], err, func() string {
				return fmt.Sprintf("%s: ok (%d labs with the built-in ones)", args[0], len(ls))
			})
		},
	})
	cmd.AddCommand(newLabRunCmd(o))
	return cmd
}

// labRunOptions are gpulab lab run's flags and argument, bound by
// newLabRunCmd; Complete, Validate and Run are the command's three steps
// (kubectl's shape), each callable without cobra.
type labRunOptions struct {
	*options
	f       sshFlags
	yes     bool
	solve   bool
	results string
	set     []string
	pf      probeFlags
	noProbe bool
	guided  bool

	// Complete fills these in from the argument and --set.
	lab    *labs.Lab
	params map[string]string
}

func newLabRunCmd(o *options) *cobra.Command {
	lr := &labRunOptions{options: o}
	run := &cobra.Command{
		Use:               "run ID -H EXPR",
		ValidArgsFunction: completeWith(o.labIDs, false),
		Short:             "Run a lab on hosts, score each criterion live, write the lab record",
		Long: `Run a lab on every selected host over SSH: prerequisites, then setup, run,
observe and check, then cleanup, which always runs (after a failure, a lost
host or Ctrl-C). Each criterion is scored as its metrics arrive and printed
with the value measured and its expression.

The lab record goes to --results DIR (default $GPULAB_RESULTS, then
${XDG_DATA_HOME:-~/.local/share}/gpulab/results): LAB/TIME-HOSTS/ holds
record.json, record.md and junit.xml, and results.csv gets one row per host.

The NVML probe is pushed for the run (and removed after it): it declares
each host's GPUs, driver, CUDA and MIG layout in the record, and samples the
host every few seconds during the steps that ask for it. --mock dgxa100
samples a simulated DGX A100 for demos (the record says SIMULATED).

--step walks the lab step by step: before each step gpulab shows its
command, what it measures and for which criteria, and reads a line from
standard input: enter runs the step, s skips it (its criteria end SKIPPED),
q stops (cleanup runs). --solve runs the lab's demo fast-forward where a
step has one; the record says so.

Ctrl-C (or SIGTERM, or SIGHUP when the terminal goes away) stops the lab:
cleanup still runs on every host and the record says incomplete. A second
Ctrl-C abandons cleanup: the record and the output list, per host, the
cleanup commands that were not run, to undo by hand. The record is kept up
to date as steps finish, so even a killed run shows what ran.

Exit status: 0 when every host passed, 1 when a criterion failed or was
skipped, a host was not reached or no criterion passed, 3 when nothing
failed but some criteria lacked evidence (UNDECIDED; --json lists them
under "undecided"), 2 for usage errors, 4 when the lab ran but its record
could not be saved (the verdicts are printed all the same), 130 after
Ctrl-C.`,
		Example: `  gpulab lab run topology-sanity -H 'gpu[01-08]'
  gpulab lab run health-gate -H @a100 --json | jq '.hosts[] | {host, passed}'
  gpulab lab run exclusive-baseline -H gpu07 --set model=Qwen/Qwen2-7B --set prom_url=http://prometheus:9090
  gpulab lab run mig-isolation -H gpu07 --set model=Qwen/Qwen2-7B --set mig_b=MIG-5c1e... --results ./results
  gpulab lab run nccl-allreduce -H gpu07 --set image=registry/nccl-tests:2.19 --step --solve`,
		Args: exactArgs(1, "a lab id (gpulab lab list)"),
		RunE: func(c *cobra.Command, args []string) error {
			if err := lr.Complete(args); err != nil {
				return err
			}
			if err := lr.Validate(); err != nil {
				return err
			}
			return lr.Run(c.InOrStdin(), c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	lr.f.register(run)
	lr.f.registerKube()
	run.Flags().StringVar(&lr.results, "results", "", "write the lab record under `DIR` (default $GPULAB_RESULTS, then ~/.local/share/gpulab/results)")
	run.Flags().StringArrayVar(&lr.set, "set", nil, "give the lab's parameter `name=value` (gpulab lab show ID lists them); repeatable")
	run.Flags().BoolVar(&lr.yes, "yes", false, "confirm the steps that change hosts")
	run.Flags().BoolVar(&lr.solve, "solve", false, "fast-forward: run each step's solve command where the lab has one (demos)")
	run.Flags().BoolVar(&lr.guided, "step", false, "guided: before each step show what it runs and measures, then wait for enter (run), s (skip) or q (stop; cleanup runs)")
	run.Flags().BoolVar(&lr.noProbe, "no-probe", false, "do not install the NVML probe: the environment comes from nvidia-smi and sampling steps get no samples, and probe steps are skipped")
	run.Flags().StringVar(&lr.pf.mock, "mock", "", "probe a simulated DGX A100 instead of NVML (demos; the record says SIMULATED): dgxa100")
	run.Flags().StringVar(&lr.pf.binary, "probe-binary", "", "push this probe `FILE` instead of the embedded one")
	return run
}

// Complete finds the lab args names, binds its parameters and settles
// where its record goes.
func (lr *labRunOptions) Complete(args []string) error {
	l, err := lr.findLab(args[0])
	if err != nil {
		return err
	}
	params, err := l.Bind(lr.set)
	if err != nil {
		return usageErr("%v", err)
	}
	if lr.results == "" {
		lr.results = lr.resultsDir()
	}
	lr.lab, lr.params = l, params
	return nil
}

// Validate checks the connection flags.
func (lr *labRunOptions) Validate() error { return lr.f.check() }

// Run runs the lab as gpulab lab run does (labs.Execute): the verdicts
// printed, the record written, the exit status from them. stdin answers
// --step's questions.
func (lr *labRunOptions) Run(stdin io.Reader, stdout, stderr io.Writer) error {
	o, l, params := lr.options, lr.lab, lr.params
	r, err := o.newRunner(&lr.f)
	if err != nil {
		return err
	}
	defer r.Keys.Close()
	if err := app.WritesHost(l, r.Targets); err != nil {
		return usageErr("%v", err)
	}
	prober, err := lr.pf.prober(lr.noProbe, r.Simulated)
	if err != nil {
		return err
	}
	abandonNote := "abandoning cleanup: the record lists what was left on each host (Ctrl-C again to quit now)"
	ctx, abandon, stop := interruptibleCleanup(stderr, "stopping the lab; cleanup runs on every host (Ctrl-C again to abandon it)", &abandonNote)
	defer stop()
	w := stdout
	progress := &progressLines{w: stderr}
	start := time.Now()
	var guide func(context.Context, labs.GuideStep) labs.GuideAnswer
	if lr.guided {
		guide = stepper(stdin, progress, !readsTerminal(stdin))
	}
	out := r.RunLab(ctx, app.LabRun{Lab: l, Targets: r.Targets, Results: lr.results, Getenv: o.getenv,
		Options: labs.RunOptions{Yes: lr.yes, Solve: lr.solve, Params: params, Probe: prober, Guide: guide, Abandon: abandon, Reproduce: o.reproduce(r.Inv.File, &lr.f, lr.set),
			OnEvent: func(ev labs.Event) {
				if o.json || ev.Kind != labs.StepFinished {
					return
				}
				s := ev.Step
				progress.line(fmt.Sprintf("%s  %-12s %-14s %s (%s)  [%s]\n", ev.Host, s.Phase, s.ID, s.Outcome(), s.Finished.Sub(s.Started).Round(time.Millisecond), eta(time.Since(start), l.EstimateMinutes)))
			}}})
	rec := out.Record
	// The verdicts are printed whatever the disk did.
	if o.json {
		err = writeJSON(w, rec)
	} else {
		err = printAcceptance(w, rec, out.Dir, simulatedRun(r))
	}
	if err != nil {
		return err
	}
	if o.json { // the verdict, naming a host not reached, where the text has it
		fmt.Fprintln(stderr, rec.Verdict())
	}
	switch {
	case rec.Interrupted && out.WriteErr != nil: // 130 says how it ended; the record's loss is said all the same
		return &exitError{code: ExitInterrupted, err: fmt.Errorf("interrupted, and %w", out.WriteErr)}
	case rec.Interrupted:
		return errInterrupted
	case out.WriteErr != nil:
		return &exitError{code: ExitNotSaved, err: fmt.Errorf("the lab ran, but %w", out.WriteErr)}
	}
	switch {
	case rec.Passed:
		return nil
	case len(rec.Undecided()) > 0: // nothing failed, nothing was shown either
		return &exitError{code: ExitUnknown, err: errors.New("")}
	}
	return errSilentFailure
}

// resultsDir is where lab records go by default.
func (o *options) resultsDir() string {
	if d := o.getenv("GPULAB_RESULTS"); d != "" {
		return d
	}
	if d := o.getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "gpulab", "results")
	}
	return filepath.Join(o.getenv("HOME"), ".local", "share", "gpulab", "results")
}

// printAcceptance prints the acceptance conclusion, criteria folded across
// hosts, and where the record is. What was simulated, the fleet (the
// record's, or simulated) or the probe's GPUs (--mock), is said under the
// title and on the verdict line.
func printAcceptance(w io.Writer, rec *labs.Record, dir string, simulated bool) error {
	verdict := rec.Verdict()
	fmt.Fprintf(w, "%s: %s\n", rec.Lab, rec.Name)
	if on, note := labSimulated(rec, simulated); on != "" {
		fmt.Fprintln(w, note)
		verdict += " " + on
	}
	fmt.Fprintln(w)
	for _, g := range labs.FoldScores(rec.Hosts) {
		fmt.Fprintf(w, "  %s\n", render.Score(g))
	}
	for _, h := range rec.Hosts {
		if len(h.CleanupLeft) > 0 {
			fmt.Fprintf(w, "  cleanup abandoned on %s; left to undo by hand:\n", h.Host)
			for _, c := range h.CleanupLeft {
				fmt.Fprintf(w, "      %s\n", c)
			}
		} else if !h.CleanupRan && h.Class == orchestrator.OK {
			fmt.Fprintf(w, "  cleanup did not run on %s\n", h.Host)
		}
		for _, p := range h.CleanupProblems {
			fmt.Fprintf(w, "  cleanup problem on %s: %s\n", h.Host, p)
		}
	}
	if rec.Principle != "" {
		fmt.Fprintf(w, "\nWhy: %s\n", rec.Principle)
	}
	if dir != "" {
		fmt.Fprintf(w, "\n%s\nrecord: %s\n", verdict, filepath.Join(dir, "record.md"))
	} else {
		fmt.Fprintf(w, "\n%s\n", verdict)
	}
	return nil
}

// labSimulated says what of a lab run was simulated, the fleet or the
// GPUs the probe declared and sampled (--mock on real hosts): what the
// verdict line adds ("on a SIMULATED fleet") and a line that explains it;
// "" when nothing was.
func labSimulated(rec *labs.Record, simulated bool) (on, note string) {
	if simulated || rec.Simulated {
		return "on a " + simulatedFleet, simulatedFleet + " (gpulab sim): every result below comes from simulated hosts; none is evidence about real hardware"
	}
	for _, h := range rec.Hosts {
		if h.Environment.Simulated {
			return "with SIMULATED GPUs (--mock)", "SIMULATED GPUs (--mock): the GPU facts and samples come from the probe's simulated DGX A100, not these hosts' hardware"
		}
	}
	return "", ""
}

// eta is the run's timer against the lab's estimate: "1m20s of about
// 30m", "31m5s of about 30m, over the estimate".
func eta(elapsed time.Duration, estimateMinutes int) string {
	est := time.Duration(estimateMinutes) * time.Minute
	s := fmt.Sprintf("%s of about %s", elapsed.Round(time.Second), strings.TrimSuffix(est.String(), "0s"))
	if elapsed > est {
		s += ", over the estimate"
	}
	return s
}

// progressLines prints a run's progress lines; while a guided run asks
// (asking), the question owns the terminal and the lines that come
// meanwhile are held, then printed after the answer.
type progressLines struct {
	mu     sync.Mutex
	w      io.Writer
	asking bool
	held   []string
}

func (p *progressLines) line(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.asking {
		p.held = append(p.held, s)
		return
	}
	io.WriteString(p.w, s)
}

// ask prints a question (printf-style) and holds progress lines until done.
func (p *progressLines) ask(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asking = true
	fmt.Fprintf(p.w, format, args...)
}

// done ends a question: the held lines are printed.
func (p *progressLines) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asking = false
	for _, s := range p.held {
		io.WriteString(p.w, s)
	}
	p.held = nil
}

// reproduce are the arguments a lab run's record gives for running it
// again, after the lab and -H: the files it read (absolute, as another
// directory needs them: the inventory wherever it was found) and the
// parameters set.
func (o *options) reproduce(inventory string, f *sshFlags, set []string) []string {
	var out []string
	file := func(flag, path string) {
		if path != "" {
			if abs, err := filepath.Abs(path); err == nil {
				path = abs
			}
			out = append(out, flag, path)
		}
	}
	if f.kube.via == "kube" {
		out = append(out, "--via", "kube")
		file("--kubeconfig", f.kube.kubeconfig)
		selector := cmpOr(f.kube.selector, f.user) // -l is the selector through Kubernetes
		for _, kv := range [][2]string{{"--context", f.kube.context}, {"--namespace", f.kube.namespace}, {"--image", f.kube.image}, {"--selector", selector}} {
			if kv[1] != "" {
				out = append(out, kv[0], kv[1])
			}
		}
	} else {
		file("--inventory", inventory)
		file("-F", f.sshConfig)
		file("--known-hosts", f.knownHosts)
		file("-i", f.identity)
		if f.user != "" {
			out = append(out, "-l", f.user)
		}
		if f.port != 0 {
			out = append(out, "-p", fmt.Sprint(f.port))
		}
	}
	for _, l := range o.labs {
		file("--labs", l)
	}
	for _, s := range set {
		out = append(out, "--set", s)
	}
	return out
}

// readsTerminal says whether r is a terminal.
func readsTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// stepper asks on out before each step of a guided run and reads the
// answer, a line, from in: empty or r runs the step, s skips it, q stops
// (cleanup runs). The end of input stops too. The labs runner asks once
// every host is done with the step before; progress lines that come while
// it asks (cleanup on a host that stopped) wait for the answer. With echo
// (the answers are not typed on a terminal, which would echo them), the
// answer is printed after the prompt, so that the next line starts a line.
func stepper(in io.Reader, out *progressLines, echo bool) func(context.Context, labs.GuideStep) labs.GuideAnswer {
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			lines <- strings.TrimSpace(sc.Text())
		}
	}()
	return func(ctx context.Context, g labs.GuideStep) labs.GuideAnswer {
		defer out.done()
		title := g.Step.Title
		if title == "" {
			title = g.Step.ID
		}
		var q strings.Builder
		fmt.Fprintf(&q, "\n── step %d/%d · %s · %s: %s\n   $ %s\n", g.N, g.Of, g.Phase, g.Step.ID, title, g.Command)
		if len(g.Measures) > 0 {
			fmt.Fprintf(&q, "   measures %s", strings.Join(g.Measures, ", "))
			if len(g.Criteria) > 0 {
				fmt.Fprintf(&q, " for %s", strings.Join(g.Criteria, ", "))
			}
			q.WriteString("\n")
		}
		out.ask("%s", q.String())
		for {
			out.ask("   [enter] run · s skip · q stop (cleanup runs) > ")
			select {
			case <-ctx.Done():
				return labs.GuideStop
			case l, ok := <-lines:
				if ok && echo {
					out.ask("%s\n", l)
				}
				switch {
				case !ok:
					out.ask("(end of input: the answers ended; stopping, cleanup runs)\n")
					return labs.GuideEndOfInput
				case l == "" || l == "r" || l == "y" || l == "yes":
					return labs.GuideRun
				case l == "s":
					return labs.GuideSkip
				case l == "q":
					return labs.GuideStop
				}
				out.ask("   %q: answer with enter, s or q\n", l)
			}
		}
	}
}

func printLab(w io.Writer, l *labs.Lab) {
	fmt.Fprintf(w, "%s: %s\n%s plane · %s · about %d min · %s\n\nGoal: %s\n", l.ID, l.Name, l.Plane, l.Maturity, l.EstimateMinutes, l.Cost, l.Goal)
	printParams(w, l.Params)
	// Only the constraints the lab states: an empty row reads as "none".
	var cons []string
	for _, c := range [][2]string{{"hardware", l.Constraints.Hardware}, {"MIG", l.Constraints.MIG}, {"Kubernetes", l.Constraints.Kubernetes}, {"workload", l.Constraints.Workload}} {
		if c[1] != "" {
			cons = append(cons, fmt.Sprintf("  %-11s %s", c[0]+":", c[1]))
		}
	}
	if len(cons) > 0 {
		fmt.Fprintf(w, "\nConstraints\n%s\n", strings.Join(cons, "\n"))
	}
	if len(l.Prerequisites) > 0 {
		fmt.Fprintln(w, "\nPrerequisites")
		for _, p := range l.Prerequisites {
			how := "confirm by hand"
			switch {
			case p.Expect != "":
				how = p.Command + " → " + p.Expect
			case p.Command != "":
				how = p.Command + " exits 0"
			}
			fmt.Fprintf(w, "  - %s (%s)\n", p.Description, how)
		}
	}
	for _, ph := range labs.Phases {
		var lines []string
		for _, s := range l.Steps {
			if s.Phase == ph {
				what := s.Command
				if s.PromQL != "" {
					what = "PromQL " + s.PromQL + " @ " + s.Prometheus
					if s.Range.Duration > 0 {
						what += " over " + s.Range.Duration.String()
					}
				}
				lines = append(lines, fmt.Sprintf("  %-8s %s", s.ID, what))
				if s.Solve != "" {
					lines = append(lines, "           --solve runs: "+s.Solve)
				}
				if s.Sample.Duration > 0 {
					lines = append(lines, fmt.Sprintf("           the probe samples the host every %v while it runs (samples)", s.Sample.Duration))
				}
				for _, m := range sortedKeys(s.Metrics) {
					lines = append(lines, fmt.Sprintf("           metrics.%s = %s", m, s.Metrics[m]))
				}
			}
		}
		if len(lines) > 0 {
			fmt.Fprintf(w, "\n%s%s\n%s\n", strings.ToUpper(ph[:1]), ph[1:], strings.Join(lines, "\n"))
		}
	}
	fmt.Fprintln(w, "\nSuccess criteria")
	for _, c := range l.Criteria {
		fmt.Fprintf(w, "  %-11s %-22s %s\n              %s\n", "["+c.Impact+"]", c.ID, c.Description, c.Expr)
	}
	if len(l.Counter) > 0 {
		fmt.Fprintln(w, "\nCounterexamples (must be rejected)")
		for _, c := range l.Counter {
			fmt.Fprintf(w, "  %-11s %-22s %s\n              %s\n", "["+c.Impact+"]", c.ID, c.Description, c.Expr)
		}
	}
	if len(l.Comparison) > 0 {
		fmt.Fprintln(w, "\nComparison")
		t := render.NewTable("MODE", "UNIT", "ISOLATION", "INTERFERENCE", "FRAGMENTATION", "GOVERNANCE", "OPS")
		t.Indent = "  "
		for _, r := range l.Comparison {
			t.Add(r.Mode, r.ResourceUnit, r.Isolation, r.Interference, r.Fragmentation, r.Governance, r.OpsComplexity)
		}
		t.WriteText(w)
	}
	if l.Principle != "" {
		fmt.Fprintf(w, "\nPrinciple\n  %s\n", l.Principle)
	}
	if l.StopLoss != "" {
		fmt.Fprintf(w, "\nCleanup and stop-loss\n  %s\n", l.StopLoss)
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
