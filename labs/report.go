package labs

import (
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpulab/gpulab/internal/fileio"
	"github.com/gpulab/gpulab/internal/visible"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/orchestrator"
)

// Dir is where a record is written under a results directory:
// RESULTS/LAB/20261129-103822-gpu[01-04].
func (r *Record) Dir(results string) string {
	names := make([]string, len(r.Hosts))
	for i, h := range r.Hosts {
		names[i] = h.Host
	}
	hosts := strings.NewReplacer("/", "_", " ", "_").Replace(inventory.FoldNames(names))
	if len(hosts) > 60 {
		hosts = hosts[:60]
	}
	return filepath.Join(results, r.Lab, r.Started.UTC().Format("20060102-150405")+"-"+hosts)
}

// Write writes the record's files into dir (record.json, record.md,
// junit.xml, and the charts as SVG beside them), each atomically, and appends its rows to the results
// directory's results.csv.
func (r *Record) Write(dir, resultsCSV string) error {
	if err := r.WriteJSON(dir); err != nil {
		return err
	}
	// Charts first, so that record.md links only those drawn; one that
	// cannot be drawn is said in record.md, never a reason to lose it.
	drawn, chartErr := r.writeCharts(dir)
	md := r.Markdown() + chartsMarkdown(dir, drawn)
	if chartErr != nil {
		md += "\n" + mdCell(chartErr.Error()) + "\n"
	}
	if err := fileio.WriteAtomic(filepath.Join(dir, "record.md"), []byte(md)); err != nil {
		return err
	}
	x, err := r.JUnit()
	if err != nil {
		return err
	}
	if err := fileio.WriteAtomic(filepath.Join(dir, "junit.xml"), x); err != nil {
		return err
	}
	if resultsCSV == "" {
		return nil
	}
	if err := r.appendCSV(resultsCSV, dir); err != nil {
		return &CSVRowError{Path: resultsCSV, Err: err}
	}
	return nil
}

// CSVRowError is Write's error when the record's files were written and
// only its rows in results.csv were not.
type CSVRowError struct {
	Path string
	Err  error
}

func (e *CSVRowError) Error() string {
	return fmt.Sprintf("its rows in %s were not added: %v", e.Path, e.Err)
}

func (e *CSVRowError) Unwrap() error { return e.Err }

// verdictMark is how the Markdown ticks a criterion.
func verdictMark(s Status) string {
	switch s {
	case "PASS":
		return "[x]"
	case "WARN":
		return "[x] ⚠"
	}
	return "[ ]"
}

// Markdown renders the record for people: the run, the environment, the
// standard result table, the acceptance conclusion (each criterion ticked
// or crossed, with the value measured and the expression), and the steps
// as evidence.
func (r *Record) Markdown() string {
	var b strings.Builder
	r.mdHeader(&b)
	r.mdEnvironment(&b)
	r.mdKubernetes(&b)
	r.mdResult(&b)
	r.mdAcceptance(&b)
	r.mdEvidence(&b)
	b.WriteString("Outputs are in record.json (`jq '.hosts[].steps[] | {id, stdout}'`).\n")
	// What hosts printed and what the lab file says reach a terminal when
	// the record is read (cat record.md, results show): every control
	// character but line breaks and tabs is escaped, once, here.
	return visible.Text(b.String())
}

func hostNames(hosts []HostRecord) []string {
	names := make([]string, len(hosts))
	for i, h := range hosts {
		names[i] = h.Host
	}
	return names
}

// mdHeader is the title, the SIMULATED warning, and the run in a list:
// lab, hosts, when and how complete, mode, conclusion, how to reproduce.
func (r *Record) mdHeader(b *strings.Builder) {
	names := hostNames(r.Hosts)
	state := "complete"
	switch {
	case r.NotRun != "":
		state = "INCOMPLETE (no step ran)"
	case len(r.Unreached) > 0:
		state = "INCOMPLETE (cut short: " + strings.Join(r.Unreached, "; ") + ")"
	case !r.Complete:
		state = "INCOMPLETE"
		if r.Interrupted {
			state += " (interrupted)"
		}
	}
	fmt.Fprintf(b, "# Lab record: %s\n\n", r.Name)
	if r.Simulated {
		b.WriteString("> **SIMULATED fleet** (gpulab sim): every output below comes from simulated DGX A100 hosts. Nothing in this record is evidence about real hardware; it is a demonstration, and the lab's maturity stays draft.\n\n")
	}
	fmt.Fprintf(b, "- Lab: `%s` (maturity %s, %s)\n", r.Lab, r.Maturity, r.Source)
	fmt.Fprintf(b, "- Hosts: %s\n", inventory.FoldNames(names))
	if r.Finished.IsZero() {
		fmt.Fprintf(b, "- Run: %s → no end recorded (gpulab stopped before the run ended), %s\n", r.Started.UTC().Format(time.RFC3339), state)
	} else {
		fmt.Fprintf(b, "- Run: %s → %s (%s), %s\n", r.Started.UTC().Format(time.RFC3339), r.Finished.UTC().Format(time.RFC3339), r.Finished.Sub(r.Started).Round(time.Second), state)
	}
	if r.Solved {
		b.WriteString("- Mode: **--solve** (the lab's demo fast-forward ran instead of the full steps: a demonstration, not a measurement to cite)\n")
	}
	if r.Guided {
		b.WriteString("- Mode: guided (the operator chose, step by step, what ran; skipped steps are in the evidence)\n")
	}
	// The verdict the run printed (Record.Verdict), its first word bold.
	verdict := r.Verdict()
	word := strings.IndexAny(verdict, ":(")
	if word < 0 {
		word = len(verdict)
	}
	conclusion := "**" + strings.TrimSpace(verdict[:word]) + "**" + strings.TrimPrefix(verdict[word:], " ")
	if verdict[word:] != "" && verdict[word] == '(' {
		conclusion = "**" + strings.TrimSpace(verdict[:word]) + "** " + verdict[word:]
	}
	if r.NotRun != "" {
		conclusion = "**NOT RUN** (no step ran: " + mdCell(r.NotRun) + "; nothing was measured)"
	}
	fmt.Fprintf(b, "- Conclusion: %s\n", conclusion)
	fmt.Fprintf(b, "- Reproduce: %s\n", r.reproduceText(inventory.FoldNames(names)))

}

// mdEnvironment is each host's kernel, driver, CUDA and GPUs, and the
// components the hosts share, folded.
func (r *Record) mdEnvironment(b *strings.Builder) {
	b.WriteString("\n## Environment\n\n")
	for _, h := range r.Hosts {
		if h.Environment.Simulated {
			b.WriteString("**SIMULATED**: the GPU facts come from the probe's simulated DGX A100; nothing in this record is about real hardware.\n\n")
			break
		}
	}
	b.WriteString("| Host | Kernel | Driver | CUDA | GPUs | Source |\n|---|---|---|---|---|---|\n")
	for _, h := range r.Hosts {
		e := h.Environment
		gpus := strings.Join(e.GPUs, "; ")
		if gpus == "" {
			gpus = "none reported"
			if e.Error != "" {
				gpus += " (" + e.Error + ")"
			}
		}
		source := orNA(e.Source)
		if e.Simulated {
			source += ", SIMULATED"
		}
		if e.Probe != "" {
			source += " (probe: " + e.Probe + ")"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", h.Host, mdCell(orNA(e.Kernel)), mdCell(orNA(e.Driver)), mdCell(orNA(e.CUDA)), mdCell(gpus), mdCell(source))
	}
	// Components, the hosts with the same versions folded.
	var compOrder []string
	compHosts := map[string][]string{}
	for _, h := range r.Hosts {
		c := h.Environment.Components
		if len(c) == 0 {
			continue
		}
		var parts []string
		for _, n := range slices.Sorted(maps.Keys(c)) {
			parts = append(parts, n+": "+c[n])
		}
		key := strings.Join(parts, "; ")
		if compHosts[key] == nil {
			compOrder = append(compOrder, key)
		}
		compHosts[key] = append(compHosts[key], h.Host)
	}
	if len(compOrder) > 0 {
		b.WriteString("\nComponents:\n")
		for _, k := range compOrder {
			fmt.Fprintf(b, "- %s: %s\n", inventory.FoldNames(compHosts[k]), mdCell(k))
		}
	}
}

// mdKubernetes is the cluster side, for labs that read one.
func (r *Record) mdKubernetes(b *strings.Builder) {
	if k := r.Kubernetes; k != nil {
		var vs []string
		for _, key := range []string{"Server Version", "Client Version"} {
			if v := k.Versions[key]; v != "" {
				vs = append(vs, strings.TrimSuffix(key, " Version")+" "+v)
			}
		}
		how := "kubectl on " + k.Host
		if k.Host == "" {
			how = "client-go, context " + k.Context
		}
		fmt.Fprintf(b, "\nKubernetes (%s): %s; %d of %d nodes offer GPU resources.\n", mdCell(how), orNA(strings.Join(vs, ", ")), len(k.Nodes), k.AllNodes)
		if k.Error != "" && k.Host != "" {
			fmt.Fprintf(b, "kubectl said: %s\n", mdCell(k.Error))
		} else if k.Error != "" {
			fmt.Fprintf(b, "client-go said: %s\n", mdCell(k.Error))
		}
		if len(k.Nodes) > 0 {
			b.WriteString("\n| Node | Kubelet | Runtime | OS | GPU resources (allocatable/capacity) | Product | MIG strategy |\n|---|---|---|---|---|---|---|\n")
			for _, n := range k.Nodes {
				fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", mdCell(n.Name), mdCell(orNA(n.Kubelet)), mdCell(orNA(n.Runtime)), mdCell(orNA(n.OS)),
					mdCell(strings.Join(n.GPUs, ", ")), mdCell(orNA(n.Product)), mdCell(orNA(n.MIGStrategy)))
			}
		}
	}
}

// mdResult is the standard result table, one row per host.
func (r *Record) mdResult(b *strings.Builder) {
	b.WriteString("\n## Result\n\n")
	b.WriteString("| Host | Workload | Mode | Request | Throughput | P50 | P95 | P99 | Interference coefficient | Fragmentation | Stability (new during the run) | Notes |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, h := range r.Hosts {
		cell := func(metric string) string {
			if metric == "" {
				return "n/a"
			}
			v, ok := h.Metrics[metric]
			if !ok {
				return "not measured"
			}
			return FormatValue(v)
		}
		tp := cell(r.Result.Throughput)
		if r.Result.Throughput != "" && tp != "not measured" {
			tp += " " + r.Result.Unit
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", h.Host, mdCell(r.Result.Workload), mdCell(r.Result.Mode), mdCell(r.Result.Request),
			tp, cell(r.Result.P50), cell(r.Result.P95), cell(r.Result.P99), cell(metricOr(h, "interference_coefficient")), cell(metricOr(h, "fragmentation")), stability(h), mdCell(notes(h)))
	}

}

// mdAcceptance is every criterion folded across hosts, and the lab's
// principle.
func (r *Record) mdAcceptance(b *strings.Builder) {
	b.WriteString("\n## Acceptance\n\n")
	for _, g := range FoldScores(r.Hosts) {
		fmt.Fprintf(b, "- %s **%s** %s (%s) — %s: %s\n", verdictMark(g.Status), g.ID, g.Description, g.Kind(), g.Hosts, g.Summary)
	}
	if r.Principle != "" {
		fmt.Fprintf(b, "\n## Principle\n\n%s\n", r.Principle)
	}
}

// mdEvidence is each host's steps with their outcomes, and its cleanup.
func (r *Record) mdEvidence(b *strings.Builder) {
	b.WriteString("\n## Evidence\n\n")
	for _, h := range r.Hosts {
		fmt.Fprintf(b, "### %s\n\n", h.Host)
		if h.Stopped != "" {
			fmt.Fprintf(b, "Stopped early: %s\n\n", h.Stopped)
		}
		b.WriteString("| Phase | Step | Command | Exit | Outcome |\n|---|---|---|---|---|\n")
		for _, s := range h.Steps {
			out := s.Outcome()
			if len(s.Samples) > 0 {
				out += "; " + summarizeSamples(s.Samples)
			}
			if s.SampleProblem != "" {
				out += "; sampling: " + s.SampleProblem
			}
			exit := fmt.Sprint(s.ExitCode)
			if s.ExitCode < 0 {
				exit = "—"
			}
			fmt.Fprintf(b, "| %s | %s | `%s` | %s | %s |\n", s.Phase, s.ID, strings.ReplaceAll(s.Command, "|", `\|`), exit, mdCell(out))
		}
		cleanup := "ran"
		switch {
		case !h.CleanupRan:
			cleanup = "did not run"
		case !slices.ContainsFunc(h.Steps, func(s StepRecord) bool { return s.Phase == "cleanup" }):
			cleanup = "had nothing to do: the lab has no cleanup step"
		}
		if len(h.CleanupProblems) > 0 {
			cleanup += " with problems: " + strings.Join(h.CleanupProblems, "; ")
		}
		if len(h.CleanupLeft) > 0 {
			cleanup = "was abandoned (a second interrupt); left to undo by hand on " + h.Host + ":\n"
			for _, c := range h.CleanupLeft {
				cleanup += "\n    " + c
			}
			cleanup += "\n"
		}
		fmt.Fprintf(b, "\nCleanup %s.\n\n", cleanup)
	}
}

// reproduceText is the record's Reproduce line: the command that runs the
// lab again on hosts, after the one that brings a simulated fleet back
// when the run's went with it (ReproduceFleet).
func (r *Record) reproduceText(hosts string) string {
	run := "`" + orchestrator.QuoteArgs(append([]string{"gpulab", "lab", "run", r.Lab, "-H", hosts}, r.Reproduce...)) + "`"
	if len(r.ReproduceFleet) == 0 {
		return run
	}
	fleet := "`" + orchestrator.QuoteArgs(r.ReproduceFleet) + "`"
	if len(r.Reproduce) == 0 {
		return fmt.Sprintf("%s, then run %s on %s in its Labs tab (the same SIMULATED fleet and cluster: same seed, same hosts; the run's own inventory was temporary)", fleet, r.Lab, hosts)
	}
	return fmt.Sprintf("%s (the same SIMULATED fleet: same seed, same hosts; the run's own inventory was temporary), then in another terminal %s", fleet, run)
}

func metricOr(h HostRecord, name string) string {
	if _, ok := h.Metrics[name]; ok {
		return name
	}
	return ""
}

// stability reads the stability metrics a lab measures (oom, xid,
// gpu_lost: what is new between the run's start and its end, not what
// the host showed before), "not measured" when the lab measures them and
// the host has none (no step ran, or the kernel log could not be read),
// "n/a" when it measures none.
func stability(h HostRecord) string {
	var parts []string
	measured := false
	for _, m := range []string{"oom", "xid", "gpu_lost"} {
		if v, ok := h.Metrics[m]; ok {
			parts = append(parts, m+" "+FormatValue(v))
		}
		_, wanted := h.MetricErrors[m]
		measured = measured || wanted
	}
	switch {
	case len(parts) > 0:
		return strings.Join(parts, ", ")
	case measured:
		return "not measured"
	}
	return "n/a"
}

func notes(h HostRecord) string {
	switch {
	case h.Class != orchestrator.OK:
		return "host " + h.Class.String()
	case h.Stopped != "":
		return "stopped: " + h.Stopped
	}
	return ""
}

func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// ScoreGroup is a criterion's verdict shared by several hosts.
type ScoreGroup struct {
	Score
	Hosts string
}

// FoldScores folds, per criterion, the hosts with the same verdict and
// summary: "gpu[01-07]: PASS ...; gpu05: FAIL ...".
func FoldScores(hosts []HostRecord) []ScoreGroup {
	type key struct{ id, status, summary string }
	var order []key
	members := map[key][]string{}
	first := map[key]Score{}
	for _, h := range hosts {
		for _, s := range h.Scores {
			k := key{s.ID, string(s.Status), s.Summary}
			if _, ok := members[k]; !ok {
				order = append(order, k)
				first[k] = s
			}
			members[k] = append(members[k], h.Host)
		}
	}
	pos := map[string]int{}
	for i, k := range order {
		if _, ok := pos[k.id]; !ok {
			pos[k.id] = i
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return pos[order[a].id] < pos[order[b].id] })
	out := make([]ScoreGroup, len(order))
	for i, k := range order {
		out[i] = ScoreGroup{Score: first[k], Hosts: inventory.FoldNames(members[k])}
	}
	return out
}

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Name    string       `xml:"name,attr"`
	Tests   int          `xml:"tests,attr"`
	Fail    int          `xml:"failures,attr"`
	Errors  int          `xml:"errors,attr"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string           `xml:"name,attr"`
	Tests      int              `xml:"tests,attr"`
	Failures   int              `xml:"failures,attr"`
	Errors     int              `xml:"errors,attr"`
	Skipped    int              `xml:"skipped,attr"`
	Timestamp  string           `xml:"timestamp,attr"`
	Time       string           `xml:"time,attr"`
	Properties *junitProperties `xml:"properties"`
	Cases      []junitCase      `xml:"testcase"`
}

// junitProperties is a suite's <properties>; nil writes none.
type junitProperties struct {
	Property []junitProperty `xml:"property"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// JUnit renders the record as JUnit XML for CI: one suite per host, one
// test case per criterion; FAIL is a failure, UNKNOWN and PENDING are
// errors (the evidence is missing), SKIPPED is skipped, WARN passes with a
// note; a host that did not pass with none of those to show it (only
// WARNs, interrupted, not reached) gets one more case that fails. A simulated fleet's run says so in the suites' names, which CI
// shows ("LAB/HOST (SIMULATED)"), and in a property, simulated = true, of
// each suite.
func (r *Record) JUnit() ([]byte, error) {
	mark := ""
	var props *junitProperties
	if r.Simulated {
		mark, props = " (SIMULATED)", &junitProperties{Property: []junitProperty{{Name: "simulated", Value: "true"}}}
	}
	all := junitSuites{Name: r.Lab + mark}
	for _, h := range r.Hosts {
		s := junitSuite{Name: r.Lab + "/" + h.Host + mark, Timestamp: r.Started.UTC().Format(time.RFC3339), Time: fmt.Sprintf("%.3f", r.Finished.Sub(r.Started).Seconds()),
			Properties: props}
		for _, sc := range h.Scores {
			c := junitCase{Name: sc.ID + ": " + sc.Description, Classname: r.Lab + "." + h.Host}
			msg := &junitMessage{Message: sc.Summary, Type: string(sc.Status), Text: "expr: " + sc.Expr}
			switch sc.Status {
			case "FAIL":
				c.Failure = msg
				s.Failures++
			case "UNKNOWN", Pending:
				c.Error = msg
				s.Errors++
			case "SKIPPED":
				c.Skipped = msg
				s.Skipped++
			default:
				c.SystemOut = string(sc.Status) + ": " + sc.Summary
			}
			s.Cases = append(s.Cases, c)
			s.Tests++
		}
		if c := r.junitHostVerdict(h); c != nil && s.Failures == 0 && s.Errors == 0 {
			// The criteria alone would read green for a host that did
			// not pass (only WARNs, no criterion passed, interrupted, not
			// reached): CI must not.
			if c.Failure != nil {
				s.Failures++
			} else {
				s.Errors++
			}
			s.Cases = append(s.Cases, *c)
			s.Tests++
		}
		all.Tests += s.Tests
		all.Fail += s.Failures
		all.Errors += s.Errors
		all.Suites = append(all.Suites, s)
	}
	out, err := xml.MarshalIndent(all, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(out, '\n')...), nil
}

// junitHostVerdict is the test case that says why a host did not pass,
// nil for one that passed: an error where the evidence is missing (not
// reached, interrupted, undecided), a failure otherwise.
func (r *Record) junitHostVerdict(h HostRecord) *junitCase {
	c := &junitCase{Name: "verdict: " + h.Host + " passed", Classname: r.Lab + "." + h.Host}
	switch {
	case h.Passed && !r.Interrupted:
		return nil
	case r.Interrupted:
		c.Error = &junitMessage{Message: "the run was interrupted: " + r.Verdict(), Type: "INTERRUPTED"}
	case h.Class != orchestrator.OK:
		c.Error = &junitMessage{Message: fmt.Sprintf("not reached: %s: %s", h.Class, h.Err), Type: "UNREACHED"}
	case len(h.Undecided()) > 0:
		c.Error = &junitMessage{Message: "undecided: " + strings.Join(h.Undecided(), ", ") + " could not be decided", Type: "UNDECIDED"}
	default:
		c.Failure = &junitMessage{Message: "did not pass: no criterion passed on evidence, or one that counts failed or was skipped", Type: "FAILED"}
	}
	return c
}

// CSVHeader is the first row of results.csv. Columns are only ever added
// at the end, so that readers that take them by position keep working.
// simulated is true for a row of a simulated fleet's record (gpulab sim),
// false otherwise, and empty in a row written before the column was added
// whose record could no longer be read.
var CSVHeader = []string{"started", "lab", "host", "workload", "mode", "request", "throughput", "unit", "p50", "p95", "p99", "passed", "complete", "record", "simulated"}

// legacyCSVColumns is how many columns results.csv had before simulated:
// a file whose header is CSVHeader's first legacyCSVColumns columns is
// brought up to date before a row is added to it (see addCSVColumn).
const legacyCSVColumns = 14

// appendCSV appends one row per host to the results CSV, writing the
// header first when the file is new, and bringing up to date a file
// written before the simulated column. The rows are one write to a file
// opened O_APPEND, made holding an exclusive lock on it (flock), which
// every gpulab writing to the same results.csv takes.
func (r *Record) appendCSV(path, dir string) error {
	if err := fileio.MkdirTrusted(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := lockCSV(path)
	if err != nil {
		return err
	}
	defer func() { f.Close() }() // f may be the updated file's
	st, err := f.Stat()
	if err != nil {
		return err
	}
	var b strings.Builder
	w := csv.NewWriter(&b)
	switch head, err := firstLine(f); {
	case err != nil:
		return fmt.Errorf("%s: %w", path, err)
	case st.Size() == 0:
		w.Write(CSVHeader)
	case head == strings.Join(CSVHeader[:legacyCSVColumns], ","):
		nf, err := addCSVColumn(f, path, st)
		if err != nil {
			return fmt.Errorf("%s: add the simulated column: %w", path, err)
		}
		f.Close()
		f = nf
	}
	for _, h := range r.Hosts {
		val := func(m string) string {
			if v, ok := h.Metrics[m]; ok && m != "" {
				return FormatValue(v)
			}
			return ""
		}
		w.Write(csvCells(r.Started.UTC().Format(time.RFC3339), r.Lab, h.Host, r.Result.Workload, r.Result.Mode, r.Result.Request,
			val(r.Result.Throughput), r.Result.Unit, val(r.Result.P50), val(r.Result.P95), val(r.Result.P99),
			fmt.Sprint(h.Passed), fmt.Sprint(r.Complete), dir, fmt.Sprint(r.Simulated)))
	}
	w.Flush()
	if _, err := f.WriteString(b.String()); err != nil {
		return err
	}
	return f.Close()
}

// csvCells neutralises cells a spreadsheet would read as a formula (they
// start with =, +, -, @, a tab or a carriage return: a lab's workload
// "=HYPERLINK(…)" or a host's name), as OWASP advises: a ' before them. A
// number ("-3.5") stays a number.
func csvCells(cells ...string) []string {
	for i, c := range cells {
		if c == "" || !strings.ContainsRune("=+-@\t\r", rune(c[0])) {
			continue
		}
		if _, err := strconv.ParseFloat(c, 64); err == nil {
			continue
		}
		cells[i] = "'" + c
	}
	return cells
}

// lockCSV opens path for appending (creating it) and locks it. The lock
// is on the file, not its name: when the file it locked is no longer at
// path once the lock is had (another gpulab updated it, see
// addCSVColumn), it opens path again.
func lockCSV(path string) (*os.File, error) {
	for range 100 {
		f, err := fileio.OpenOwned(path, os.O_CREATE|os.O_APPEND|os.O_RDWR, 0o644)
		if err != nil {
			return nil, err
		}
		if err := fileio.Lock(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		held, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, err
		}
		if now, err := os.Stat(path); err == nil && os.SameFile(held, now) {
			return f, nil
		}
		f.Close()
	}
	return nil, fmt.Errorf("lock %s: it was replaced each time it was locked", path)
}

// firstLine is f's first line, without its line break; f's offset is
// left where it was (appends go to the end all the same).
func firstLine(f *os.File) (string, error) {
	buf := make([]byte, 4096)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	return strings.TrimSuffix(line, "\r"), nil
}

// addCSVColumn rewrites the results.csv f, locked, that was written before
// the simulated column: the header gets the column, and each row its
// record's answer (recordSimulated; empty when the record cannot be read
// any more). The new file replaces path atomically, locked before it takes
// the name, and is returned locked, for the rows to be added.
func addCSVColumn(f *os.File, path string, st os.FileInfo) (*os.File, error) {
	data, err := fileio.ReadAll(io.NewSectionReader(f, 0, st.Size()), fileio.MaxRecord)
	if err != nil {
		return nil, err
	}
	cr := csv.NewReader(bytes.NewReader(data))
	cr.FieldsPerRecord = -1
	rows, err := cr.ReadAll()
	if err != nil {
		return nil, err
	}
	rows[0] = CSVHeader
	for i, row := range rows[1:] {
		for len(row) < legacyCSVColumns {
			row = append(row, "")
		}
		rows[i+1] = append(row, legacySimulated(path, row[legacyCSVColumns-1]))
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return nil, err
	}
	keep := false
	defer func() {
		if !keep {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	w := csv.NewWriter(tmp)
	w.WriteAll(rows)
	if err := w.Error(); err != nil {
		return nil, err
	}
	if err := tmp.Chmod(st.Mode().Perm()); err != nil {
		return nil, err
	}
	if err := tmp.Sync(); err != nil {
		return nil, err
	}
	if err := fileio.Lock(tmp); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, err
	}
	// CreateTemp opened it without O_APPEND: the rows go at the end.
	if _, err := tmp.Seek(0, io.SeekEnd); err != nil {
		return nil, err
	}
	keep = true
	return tmp, nil
}

// legacySimulated is the simulated column of an old row of the
// results.csv at csvPath whose record column is dir: "true" or "false" as
// the record says, "" when it cannot be read. The record is looked for
// where it sits in the results directory today (LAB/RUN next to
// results.csv, which a moved directory keeps), then at dir.
func legacySimulated(csvPath, dir string) string {
	if dir == "" {
		return ""
	}
	for _, d := range []string{filepath.Join(filepath.Dir(csvPath), filepath.Base(filepath.Dir(dir)), filepath.Base(dir)), dir} {
		if sim, err := recordSimulated(d); err == nil {
			return fmt.Sprint(sim)
		}
	}
	return ""
}

func orNA(s string) string {
	if s == "" {
		return "n/a"
	}
	return s
}
