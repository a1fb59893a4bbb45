package parse

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

func init() {
	register(Kind{Name: "nccl-tests", Command: "all_reduce_perf (and the other nccl-tests *_perf binaries)",
		Parse: func(s string) (any, error) { return ParseNCCLTests(s) }, Fixtures: []string{"workloads/nccl-tests"}})
}

// NCCLTests is one nccl-tests run: the bandwidth table by message size and
// the summary lines.
type NCCLTests struct {
	Version     string `json:"version,omitempty"` // nccl-tests
	NCCLVersion string `json:"nccl_version,omitempty"`
	Collective  string `json:"collective,omitempty"` // "all_reduce_perf" when the log says
	Threads     *int   `json:"threads"`
	GPUsPerProc *int   `json:"gpus_per_process"`
	// Ranks are the "Using devices" lines: one per GPU in the job.
	Ranks []NCCLTestsRank `json:"ranks"`
	Hosts []string        `json:"hosts"`
	Rows  []NCCLTestsRow  `json:"rows"`
	// AvgBusBW is the run's "Avg bus bandwidth" in GB/s.
	AvgBusBW *float64 `json:"avg_bus_bandwidth_gbps"`
	// PeakBusBW is the highest out-of-place bus bandwidth in the table.
	PeakBusBW   *float64 `json:"peak_bus_bandwidth_gbps"`
	OutOfBounds *int     `json:"out_of_bounds"`
	// WrongResults sums the #wrong columns; null when the run did not
	// validate (validation: 0 prints N/A) or used the float error column.
	WrongResults *int `json:"wrong_results"`
	// Complete is true when the run printed "# Avg bus bandwidth", which
	// nccl-tests does after its last size. A run killed, failed or timed
	// out mid-table (or an output cut short) lacks it: Reason says where
	// the table ends and quotes the first failure printed after it.
	Complete bool   `json:"complete"`
	Reason   string `json:"reason,omitempty"`
}

// NCCLTestsRank is one "Rank N ... device D [bus] name" line.
type NCCLTestsRank struct {
	Rank   int    `json:"rank"`
	Host   string `json:"host"`
	Device int    `json:"device"`
	BusID  string `json:"bus_id"`
	GPU    string `json:"gpu"`
}

// NCCLTestsRow is one message size.
type NCCLTestsRow struct {
	SizeBytes  int64            `json:"size_bytes"`
	Count      int64            `json:"count"`
	Type       string           `json:"type"`
	Redop      string           `json:"redop,omitempty"`
	Root       *int             `json:"root,omitempty"`
	OutOfPlace NCCLTestsMeasure `json:"out_of_place"`
	InPlace    NCCLTestsMeasure `json:"in_place"`
	Line       int              `json:"line"`
}

// NCCLTestsMeasure is time and bandwidths for one placement. Wrong counts
// wrong results (newer versions); MaxError is the older float error
// column; either is null when the run did not validate (N/A).
type NCCLTestsMeasure struct {
	TimeUS   float64  `json:"time_us"`
	AlgBW    float64  `json:"algbw_gbps"`
	BusBW    float64  `json:"busbw_gbps"`
	Wrong    *int     `json:"wrong"`
	MaxError *float64 `json:"max_error"`
}

var (
	mpiTag        = regexp.MustCompile(`^\[\d+,\d+\]<std(?:out|err)>:`)
	ntVersion     = regexp.MustCompile(`nccl-tests version (\S+)`)
	ntCollective  = regexp.MustCompile(`Collective test (?:starting|concluded): (\S+)`)
	ntThreads     = regexp.MustCompile(`nThread (\d+) nGpus (\d+)`)
	ntRank        = regexp.MustCompile(`^\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+ on\s+(\S+) device\s+(\d+) \[([^\]]*)\] (.+?)\s*$`)
	ntNCCLVersion = regexp.MustCompile(`^NCCL version (\S+)`)
	ntAvg         = regexp.MustCompile(`Avg bus bandwidth\s*:\s*([0-9.eE+-]+)`)
	ntOOB         = regexp.MustCompile(`Out of bounds values\s*:\s*(\d+)`)
)

// ParseNCCLTests reads nccl-tests output in its layouts: with or without
// redop and root columns, #wrong or the older error column, N/A when not
// validated, mpirun --tag-output prefixes, '#' lost by the poster, launcher
// and NCCL INFO lines mixed in.
func ParseNCCLTests(text string) (*NCCLTests, error) {
	out := &NCCLTests{Ranks: []NCCLTestsRank{}, Hosts: []string{}, Rows: []NCCLTestsRow{}}
	var e errs
	hosts := map[string]bool{}
	header := 0 // the line of the column header, once seen
	ls := lines(text)
	for n, raw := range ls {
		ln := n + 1
		l := mpiTag.ReplaceAllString(raw, "")
		body := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "#"))
		switch {
		case body == "":
			continue
		case ntHeaderLine(out, hosts, body):
			continue
		case strings.Contains(body, "size") && strings.Contains(body, "count") && strings.Contains(body, "busbw"):
			if header == 0 {
				header = ln
			}
			continue
		case strings.HasPrefix(strings.TrimSpace(l), "#"):
			continue // other comment lines: units, "out-of-place", "Using devices"
		}
		f := strings.Fields(l)
		if len(f) == 0 || !isInt(f[0]) {
			continue // launcher noise, NCCL INFO lines, "Using devices" without '#'
		}
		row, err := ntRow(f, ln)
		if err != nil {
			e.add(ln, "%v: %q", err, strings.TrimSpace(l))
			continue
		}
		out.Rows = append(out.Rows, row)
	}
	ntTotals(out)
	out.Complete = out.AvgBusBW != nil
	after := header
	switch {
	case len(out.Rows) > 0 && !out.Complete:
		last := out.Rows[len(out.Rows)-1]
		after = last.Line
		out.Reason = fmt.Sprintf("the table ends at %s (line %d) with no '# Avg bus bandwidth' line: the run, or its output, was cut off", sizeText(last.SizeBytes), last.Line)
		e.add(last.Line, "the table ends here with no '# Avg bus bandwidth' line: the run, or its output, was cut off")
	case len(out.Rows) > 0:
	case header > 0:
		out.Reason = "the table has a header but no rows: the run stopped before its first size"
		e.add(0, "a table header but no rows (the run stopped before its first size?)")
	default:
		out.Reason = "no nccl-tests table"
		e.add(0, "no nccl-tests table (want the output of all_reduce_perf or another *_perf binary)")
	}
	if !out.Complete && out.Reason != "" {
		if n, l := ntFailure(ls, after); n > 0 {
			out.Reason += errorf(0, "; line %d says %q", n, l).Msg
		}
	}
	return out, e.err()
}

// ntHeaderLine reads one of the lines around the table (its comment lines,
// the '#' taken off): the version and collective, threads and GPUs per
// process, each rank's device, NCCL's version, the average bus bandwidth,
// the out-of-bounds count. It says whether body was one of them.
func ntHeaderLine(out *NCCLTests, hosts map[string]bool, body string) bool {
	switch {
	case ntVersion.MatchString(body):
		out.Version = ntVersion.FindStringSubmatch(body)[1]
		if m := ntCollective.FindStringSubmatch(body); m != nil {
			out.Collective = m[1]
		}
	case ntCollective.MatchString(body):
		out.Collective = ntCollective.FindStringSubmatch(body)[1]
	case ntThreads.MatchString(body):
		m := ntThreads.FindStringSubmatch(body)
		t, _ := strconv.Atoi(m[1])
		g, _ := strconv.Atoi(m[2])
		out.Threads, out.GPUsPerProc = &t, &g
	case ntRank.MatchString(body):
		m := ntRank.FindStringSubmatch(body)
		r, _ := strconv.Atoi(m[1])
		d, _ := strconv.Atoi(m[3])
		out.Ranks = append(out.Ranks, NCCLTestsRank{Rank: r, Host: m[2], Device: d, BusID: m[4], GPU: m[5]})
		if !hosts[m[2]] {
			hosts[m[2]] = true
			out.Hosts = append(out.Hosts, m[2])
		}
	case ntNCCLVersion.MatchString(body):
		out.NCCLVersion = ntNCCLVersion.FindStringSubmatch(body)[1]
	case ntAvg.MatchString(body):
		v, _ := strconv.ParseFloat(ntAvg.FindStringSubmatch(body)[1], 64)
		out.AvgBusBW = &v
	case ntOOB.MatchString(body):
		v, _ := strconv.Atoi(ntOOB.FindStringSubmatch(body)[1])
		out.OutOfBounds = &v
	default:
		return false
	}
	return true
}

// ntTotals is the peak out-of-place bus bandwidth and the wrong results
// summed over the rows (nil where no row gives them).
func ntTotals(out *NCCLTests) {
	for _, r := range out.Rows {
		if out.PeakBusBW == nil || r.OutOfPlace.BusBW > *out.PeakBusBW {
			v := r.OutOfPlace.BusBW
			out.PeakBusBW = &v
		}
		for _, m := range []NCCLTestsMeasure{r.OutOfPlace, r.InPlace} {
			if m.Wrong != nil {
				if out.WrongResults == nil {
					out.WrongResults = new(int)
				}
				*out.WrongResults += *m.Wrong
			}
		}
	}
}

// ntFailure finds the first line after line after (1-based; 0 for the
// whole input) that reports a failure: nccl-tests' "Test NCCL failure",
// an NCCL WARN, mpirun's or Slurm's word that a process died or the job
// was cancelled. NCCL INFO lines are passed over.
func ntFailure(ls []string, after int) (int, string) {
	for i := after; i < len(ls); i++ {
		l := strings.TrimSpace(mpiTag.ReplaceAllString(ls[i], ""))
		low := strings.ToLower(l)
		if l == "" || strings.Contains(l, "NCCL INFO") {
			continue
		}
		for _, w := range []string{"fail", "error", "nccl warn", "abort", "killed", "terminated", "cancelled", "signal", "timeout", "timed out", "exited"} {
			if strings.Contains(low, w) {
				return i + 1, l
			}
		}
	}
	return 0, ""
}

// sizeText writes a message size as nccl-tests' -b and -e take it.
func sizeText(b int64) string {
	for _, u := range []struct {
		div  int64
		name string
	}{{1 << 30, "GB"}, {1 << 20, "MB"}, {1 << 10, "KB"}} {
		if b >= u.div && b%u.div == 0 {
			return fmt.Sprintf("%d %s", b/u.div, u.name)
		}
	}
	return fmt.Sprintf("%d B", b)
}

func isInt(s string) bool {
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil
}

// ntRow reads "size count type [redop] [root] time algbw busbw wrong|error
// time algbw busbw wrong|error".
func ntRow(f []string, ln int) (NCCLTestsRow, error) {
	r := NCCLTestsRow{Line: ln}
	if len(f) < 11 {
		return r, errorf(0, "a table row has %d fields, want at least 11", len(f))
	}
	r.SizeBytes, _ = strconv.ParseInt(f[0], 10, 64)
	c, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return r, errorf(0, "count %q is not a number", f[1])
	}
	r.Count, r.Type = c, f[2]
	rest := f[3:]
	switch len(rest) {
	case 8:
	case 9, 10:
		if _, err := strconv.ParseFloat(rest[0], 64); err != nil {
			r.Redop, rest = rest[0], rest[1:]
		}
		if len(rest) == 9 {
			root, err := strconv.Atoi(rest[0])
			if err != nil {
				return r, errorf(0, "root %q is not a number", rest[0])
			}
			r.Root, rest = &root, rest[1:]
		}
	default:
		return r, errorf(0, "a table row has %d fields, want 11 to 13", len(f))
	}
	if len(rest) != 8 {
		return r, errorf(0, "cannot tell the columns apart")
	}
	var err2 error
	r.OutOfPlace, err2 = ntMeasure(rest[:4])
	if err2 != nil {
		return r, err2
	}
	r.InPlace, err2 = ntMeasure(rest[4:])
	return r, err2
}

func ntMeasure(f []string) (NCCLTestsMeasure, error) {
	var m NCCLTestsMeasure
	vals := make([]float64, 3)
	for i := range vals {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return m, errorf(0, "%q is not a number", f[i])
		}
		vals[i] = v
	}
	m.TimeUS, m.AlgBW, m.BusBW = vals[0], vals[1], vals[2]
	switch last := f[3]; {
	case last == "N/A":
	case isInt(last):
		w, _ := strconv.Atoi(last)
		m.Wrong = &w
	default:
		v, err := strconv.ParseFloat(last, 64)
		if err != nil {
			return m, errorf(0, "error column %q is not a number", last)
		}
		m.MaxError = &v
	}
	return m, nil
}
