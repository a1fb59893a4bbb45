package cli

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpulab/gpulab/internal/suggest"
	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/internal/visible"
	"github.com/gpulab/gpulab/labs"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/render"
)

// resultsDir is the results directory a results command reads: --results,
// else the default (options.resultsDir).
type resultsDir struct {
	o       *options
	results string
}

func (rd *resultsDir) dir() string {
	if rd.results != "" {
		return rd.results
	}
	return rd.o.resultsDir()
}

// resolve finds a record by its directory, or by LAB/RUN (or RUN) under
// the results directory.
func (rd *resultsDir) resolve(arg string) (labs.RecordRef, error) {
	for _, d := range []string{arg, filepath.Join(rd.dir(), arg)} {
		if r, err := labs.ReadRecord(d); err == nil {
			return labs.RecordRef{Dir: d, Record: r}, nil
		} else if !os.IsNotExist(err) {
			return labs.RecordRef{}, configErr(err)
		}
	}
	d, err := findRun(rd.dir(), arg)
	if err != nil {
		return labs.RecordRef{}, err
	}
	r, err := labs.ReadRecord(d)
	if err != nil {
		return labs.RecordRef{}, configErr(err)
	}
	return labs.RecordRef{Dir: d, Record: r}, nil
}

func newResultsCmd(o *options) *cobra.Command {
	rd := &resultsDir{o: o}
	cmd := &cobra.Command{
		Use:   "results",
		Short: "Lab records: list them, show one, compare runs side by side",
		Long: `Every gpulab lab run writes a record under the results directory
(--results DIR, default $GPULAB_RESULTS, then ~/.local/share/gpulab/results):
LAB/TIME-HOSTS/record.json, record.md and junit.xml, and a row per host in
results.csv. These commands read them back.`,
		Args: cobra.NoArgs,
	}
	cmd.PersistentFlags().StringVar(&rd.results, "results", "", "the results `DIR` (default $GPULAB_RESULTS, then ~/.local/share/gpulab/results)")
	cmd.AddCommand(newResultsListCmd(o, rd), newResultsShowCmd(o, rd), newResultsCompareCmd(o, rd.resolve))
	return cmd
}

// resultsQuery is what results list selects by, as its flags give it.
type resultsQuery struct {
	lab, hostExpr, status, since string
	q                            labs.Query
}

func newResultsListCmd(o *options, rd *resultsDir) *cobra.Command {
	f := &resultsQuery{}
	list := &cobra.Command{
		Use:   "list",
		Short: "List lab records, newest first",
		Example: `  gpulab results list
  gpulab results list --lab mig-isolation --json | jq -r '.[].dir'
  gpulab results list -H 'gpu[01-04]' --status failed --since 7d
  gpulab results list --lab exclusive-baseline -H gpu07 --status passed --last 1`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return f.Run(c, o, rd)
		},
	}
	list.Flags().StringVar(&f.lab, "lab", "", "only the records of lab `ID`")
	list.Flags().StringVarP(&f.hostExpr, "hosts", "H", "", "only the records that ran on one of these hosts (a host `EXPR`: gpu[01-04], @group)")
	list.Flags().StringVar(&f.status, "status", "", "only passed, failed, undecided (nothing failed, some criteria UNKNOWN) or incomplete records")
	list.Flags().StringVar(&f.since, "since", "", "only the records started since `WHEN`: a duration back (90m, 36h, 7d) or a date (2026-11-01)")
	list.Flags().IntVar(&f.q.Last, "last", 0, "only the newest `N` records that match")
	return list
}

// Run lists the records the query selects, newest first.
func (f *resultsQuery) Run(c *cobra.Command, o *options, rd *resultsDir) error {
	refs, err := labs.ListRecords(rd.dir())
	if err != nil && len(refs) == 0 {
		return configErr(err)
	}
	if err != nil {
		fmt.Fprintf(c.ErrOrStderr(), "gpulab: %v\n", err)
	}
	if err := o.checkLabQuery(f.lab, rd.dir(), refs); err != nil {
		return err
	}
	q, err := f.query(o)
	if err != nil {
		return err
	}
	keep := q.Select(refs)
	if o.json {
		if keep == nil {
			keep = []labs.RecordRef{}
		}
		return writeJSON(c.OutOrStdout(), keep)
	}
	return printRecordList(c.OutOrStdout(), rd.dir(), refs, keep)
}

// query checks the flags and makes the query: -H's hosts from the
// inventory, the status among labs.Statuses, --since as a time.
func (f resultsQuery) query(o *options) (labs.Query, error) {
	q := f.q
	q.Lab = f.lab
	if f.hostExpr != "" {
		inv, err := o.loadInventory(false)
		if err != nil {
			return q, err
		}
		hosts, err := inv.Select(f.hostExpr)
		if err != nil {
			return q, usageErr("-H %s: %v", f.hostExpr, err)
		}
		for _, h := range hosts {
			q.Hosts = append(q.Hosts, h.Name)
		}
	}
	if f.status != "" && !slices.Contains(labs.Statuses, f.status) {
		return q, usageErr("--status %q: want one of %s", f.status, strings.Join(labs.Statuses, ", "))
	}
	q.Status = f.status
	if f.since != "" {
		since, err := parseSince(f.since, time.Now())
		if err != nil {
			return q, usageErr("%v", err)
		}
		q.Since = since
	}
	return q, nil
}

// printRecordList prints the records kept of those in dir (refs), or why
// there are none.
func printRecordList(w io.Writer, dir string, refs, keep []labs.RecordRef) error {
	switch {
	case len(keep) == 0 && len(refs) == 0:
		fmt.Fprintf(w, "no lab records in %s (gpulab lab run ID -H EXPR writes them)\n", dir)
		return nil
	case len(keep) == 0:
		fmt.Fprintf(w, "no lab record in %s matches the query (%s there; gpulab results list shows them all)\n", dir, text.Plural(len(refs), "record is", "records are"))
		return nil
	}
	t := render.NewTable("STARTED", "LAB", "HOSTS", "RESULT", "RUN")
	glob := ""
	for _, r := range keep { // records are anyone's files: their names are escaped
		run := relTo(dir, r.Dir)
		if strings.ContainsAny(run, "[]*?") && glob == "" {
			glob = run
		}
		started, lab, hosts, result := render.Record(r.Record)
		if r.Record.Simulated {
			result += " (SIMULATED)"
		}
		t.Add(started, lab, hosts, result, visible.String(run))
	}
	if err := t.WriteText(w); err != nil || glob == "" {
		return err
	}
	// A shell reads [001-006] as a pattern (zsh refuses it).
	fmt.Fprintf(w, "\nA RUN with [ ] needs quotes in a shell (gpulab results show %s), or give its start alone if no other run shares it (gpulab results show %s).\n",
		visible.String(orchestrator.Quote(glob)), visible.String(orchestrator.Quote(runStart(glob))))
	return nil
}

func newResultsShowCmd(o *options, rd *resultsDir) *cobra.Command {
	return &cobra.Command{
		Use:     "show RUN",
		Short:   "Print a record (its Markdown; --json for the record itself)",
		Example: "  gpulab results show mig-isolation/20261129-104700-gpu07\n  gpulab results show 20261129-104700-gpu07 --json | jq '.hosts[].scores'",
		Args:    exactArgs(1, "a record: its directory, LAB/RUN or RUN"),
		RunE: func(c *cobra.Command, args []string) error {
			return (&resultsShowOptions{options: o, dir: rd}).Run(c.OutOrStdout(), args[0])
		},
	}
}

// resultsShowOptions are gpulab results show's: the results directory
// the record is looked for in.
type resultsShowOptions struct {
	*options
	dir *resultsDir
}

// Run prints the record run names: its Markdown, or record.json.
func (s *resultsShowOptions) Run(w io.Writer, run string) error {
	ref, err := s.dir.resolve(run)
	if err != nil {
		return err
	}
	if s.json {
		return writeJSON(w, ref.Record)
	}
	md, err := labs.ReadMarkdown(ref.Dir, ref.Record)
	if err != nil {
		return configErr(fmt.Errorf("%w (--json prints record.json)", err))
	}
	_, err = io.WriteString(w, md)
	return err
}

// resultsCompareOptions are gpulab results compare's flags; resolve finds
// a record by the names results list prints.
type resultsCompareOptions struct {
	*options
	svg     string
	resolve func(string) (labs.RecordRef, error)
}

func newResultsCompareCmd(o *options, resolve func(string) (labs.RecordRef, error)) *cobra.Command {
	co := &resultsCompareOptions{options: o, resolve: resolve}
	c := &cobra.Command{
		Use:   "compare BASELINE RUN...",
		Short: "Runs side by side, with interference coefficients against the first",
		Long: `Lay records side by side in the standard result table. The first record
is the baseline (typically exclusive-baseline), every row of it marked
"(baseline)": each row's throughput ratio and P99 interference coefficient
are its figure divided by the baseline's on the same host (shared ÷
exclusive, the seed's definition), or by the baseline's first host's for a
host the baseline did not run on. A run is compared with others, never
with itself.

Each BASELINE and RUN is a record: its directory, LAB/RUN or RUN as gpulab
results list prints it, or the run's start alone (LAB/20261129-104700).

--svg DIR draws the comparison as SVG into DIR: compare-latency.svg (P50,
P95 and P99 of each run, its P99 interference coefficient written above
it) and compare-nccl-busbw.svg (bus bandwidth against message size, one
line per run that ran nccl-tests).`,
		Example: "  gpulab results compare exclusive-baseline/20261129-101500-gpu07 mig-isolation/20261129-104700-gpu07\n  gpulab results compare BASELINE RUN --svg ./charts",
		Args:    compareArgs,
		RunE:    func(c *cobra.Command, args []string) error { return co.Run(args, c.OutOrStdout(), c.ErrOrStderr()) },
	}
	c.Flags().StringVar(&co.svg, "svg", "", "draw the comparison as SVG charts into `DIR`")
	return c
}

// Run lays the records named by args side by side (and draws them with
// --svg), the first the baseline.
func (co *resultsCompareOptions) Run(args []string, stdout, stderr io.Writer) error {
	refs, err := resolveRuns(args, co.resolve)
	if err != nil {
		return err
	}
	rows := labs.Compare(refs)
	if co.svg != "" { // drawn first: a directory that cannot be written is said before any table
		charts := labs.CompareCharts(refs, rows)
		if len(charts) == 0 {
			fmt.Fprintln(stderr, "no chart: these records have no latency figures and no nccl-tests output (nothing written to --svg "+co.svg+")")
		}
		if len(charts) > 0 {
			paths, err := labs.WriteCharts(co.svg, charts)
			for _, p := range paths {
				fmt.Fprintln(stderr, "chart:", p)
			}
			if err != nil {
				return &exitError{code: ExitFailed, err: fmt.Errorf("--svg %s: %w", co.svg, err)}
			}
		}
	}
	if co.json {
		return writeJSON(stdout, rows)
	}
	printCompare(stdout, rows)
	return nil
}

// checkLabQuery refuses --lab ID when ID is neither a lab gpulab knows
// (built in, or --labs) nor the lab of a record: a typo, answered with
// the name it probably meant.
func (o *options) checkLabQuery(lab, dir string, refs []labs.RecordRef) error {
	if lab == "" {
		return nil
	}
	var ids, recorded []string
	for _, r := range refs {
		if !slices.Contains(recorded, r.Record.Lab) {
			recorded = append(recorded, r.Record.Lab)
		}
	}
	ls, _ := labs.Load(o.labs) // a broken --labs leaves the records' labs
	for _, l := range ls {
		ids = append(ids, l.ID)
	}
	if slices.Contains(ids, lab) || slices.Contains(recorded, lab) {
		return nil
	}
	slices.Sort(recorded)
	ids = append(ids, recorded...)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if hint := suggest.Hint(lab, ids); hint != "" {
		return usageErr("--lab %q: no lab has that ID%s (gpulab lab list shows the labs)", lab, visible.String(hint))
	}
	return usageErr("--lab %q: no lab has that ID: the labs are %s (gpulab lab list), and the records in %s are of %s", lab,
		visible.String(strings.Join(ids, ", ")), dir, visible.String(cmp.Or(strings.Join(recorded, ", "), "none yet")))
}

// compareArgs wants a baseline and at least one run, and says what they
// are when one is missing.
func compareArgs(cmd *cobra.Command, args []string) error {
	if len(args) >= 2 {
		return nil
	}
	got := "no record"
	if len(args) == 1 {
		got = fmt.Sprintf("the baseline %s alone, no RUN to compare with it", visible.String(orchestrator.Quote(args[0])))
	}
	return usageErr(`%s: want a BASELINE record and at least one RUN to compare with it, got %s
  each is a record's directory, LAB/RUN or RUN, or the run's start (LAB/20261129-104700)
  e.g. gpulab results compare exclusive-baseline/20261129-101500-gpu07 mig-isolation/20261129-104700-gpu07
  gpulab results list shows the runs (--lab ID, -H EXPR, --last N narrow it)`, cmd.CommandPath(), got)
}

// resolveRuns reads the records args name, refusing one named twice (a
// run compared with itself), however each was written.
func resolveRuns(args []string, resolve func(string) (labs.RecordRef, error)) ([]labs.RecordRef, error) {
	var refs []labs.RecordRef
	var infos []os.FileInfo
	for i, a := range args {
		ref, err := resolve(a)
		if err != nil {
			return nil, err
		}
		info, err := os.Stat(ref.Dir)
		if err != nil {
			return nil, configErr(err)
		}
		for j, prev := range infos {
			if os.SameFile(prev, info) {
				return nil, usageErr("%s (argument %d) and %s (argument %d) are the same run, %s: compare a run with another, not with itself (gpulab results list shows the runs)",
					visible.String(orchestrator.Quote(args[j])), j+1, visible.String(orchestrator.Quote(a)), i+1, visible.String(ref.Dir))
			}
		}
		refs, infos = append(refs, ref), append(infos, info)
	}
	return refs, nil
}

// parseSince reads --since: a duration back from now (90m, 36h, 7d) or a
// date (2006-01-02, local time).
func parseSince(s string, now time.Time) (time.Time, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if days, err := strconv.Atoi(n); err == nil && days >= 0 {
			return now.AddDate(0, 0, -days), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, s, time.Local); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--since %q: want a duration back from now (90m, 36h, 7d) or a date (2026-11-01)", s)
}

func relTo(base, path string) string {
	if rel, err := filepath.Rel(base, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

func printCompare(w io.Writer, rows []labs.CompareRow) {
	f := func(v *float64) string {
		if v == nil {
			return "—"
		}
		return labs.FormatValue(*v)
	}
	// RUN first: rows of two runs of one lab on one host read the same
	// but for it.
	t := render.NewTable("RUN", "LAB", "HOST", "WORKLOAD", "MODE", "THROUGHPUT", "P50", "P99", "THROUGHPUT ÷ BASE", "P99 INTERFERENCE", "RESULT")
	for _, r := range rows {
		tp := f(r.Throughput)
		if r.Throughput != nil && r.Unit != "" {
			tp += " " + r.Unit
		}
		res := r.Outcome()
		if r.Simulated {
			res += " (SIMULATED)"
		}
		run := runStart(r.Dir)
		if r.Baseline {
			run += " (baseline)"
		}
		t.Add(visible.String(run), visible.String(r.Lab), visible.String(r.Host), visible.String(r.Workload),
			visible.String(r.Mode), visible.String(tp), f(r.P50), f(r.P99), f(r.ThroughputRatio), f(r.P99Coefficient), res)
	}
	t.WriteText(w)
}

// runStart is a run directory's time, the start of its name
// (20261129-104700 of e2e/20261129-104700-gpu[01-02]).
func runStart(run string) string {
	base := filepath.Base(run)
	if len(base) >= len("20060102-150405") {
		return base[:len("20060102-150405")]
	}
	return base
}

// findRun finds a record's directory under dir by LAB/RUN or RUN, whole
// or its start (the time alone: no brackets to quote in a shell). More
// than one run starting so is an error naming them.
func findRun(dir, arg string) (string, error) {
	esc := labs.GlobEscape(arg)
	for _, pattern := range []string{
		filepath.Join(labs.GlobEscape(dir), "*", esc, "record.json"),
		filepath.Join(labs.GlobEscape(dir), esc+"*", "record.json"),
		filepath.Join(labs.GlobEscape(dir), "*", esc+"*", "record.json"),
	} {
		m, _ := filepath.Glob(pattern)
		switch {
		case len(m) == 1:
			return filepath.Dir(m[0]), nil
		case len(m) > 1 && arg != "":
			var runs []string
			for _, f := range m {
				runs = append(runs, relTo(dir, filepath.Dir(f)))
			}
			return "", usageErr("%q names %d runs: %s", arg, len(m), strings.Join(runs, ", "))
		}
	}
	return "", usageErr("no record %q (gpulab results list shows them; a directory, LAB/RUN or RUN, or its start: LAB/20261129-104700; quote a RUN with [ ] in a shell)", arg)
}
