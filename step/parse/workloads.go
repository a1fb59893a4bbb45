package parse

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

func init() {
	register(Kind{Name: "vllm-bench-serve", Command: "vllm bench serve (or benchmarks/benchmark_serving.py)",
		Parse: func(s string) (any, error) { return ParseVLLMBenchServe(s) }, Fixtures: []string{"workloads/vllm-bench-serve"}})
	register(Kind{Name: "dcgmi-diag", Command: "dcgmi diag -r 1|2|3|4",
		Parse: func(s string) (any, error) { return ParseDCGMDiag(s) }, Fixtures: []string{"workloads/dcgmi-diag"}})
	register(Kind{Name: "gpu-burn", Command: "gpu_burn [-d] [-tc] SECONDS",
		Parse: func(s string) (any, error) { return ParseGPUBurn(s) }, Fixtures: []string{"workloads/gpu-burn"}})
}

// VLLMBench is the result block of vllm bench serve. Metrics holds every
// "Label (unit): value" line under a snake_case key (so new lines are
// kept); the common ones are also typed fields.
type VLLMBench struct {
	Metrics            map[string]float64 `json:"metrics"`
	SuccessfulRequests *float64           `json:"successful_requests"`
	FailedRequests     *float64           `json:"failed_requests"`
	MaxConcurrency     *float64           `json:"max_concurrency"`
	DurationS          *float64           `json:"duration_s"`
	RequestThroughput  *float64           `json:"request_throughput_rps"`
	OutputThroughput   *float64           `json:"output_token_throughput_tps"`
	TotalThroughput    *float64           `json:"total_token_throughput_tps"`
	TTFT               Latency            `json:"ttft_ms"`
	TPOT               Latency            `json:"tpot_ms"`
	ITL                Latency            `json:"itl_ms"`
	E2EL               Latency            `json:"e2el_ms"`
}

// Latency is a latency's summary, in milliseconds, as vllm printed it
// (percentiles by name: "p99", "p90"...).
type Latency struct {
	Mean        *float64           `json:"mean"`
	Median      *float64           `json:"median"`
	Std         *float64           `json:"std,omitempty"`
	Percentiles map[string]float64 `json:"percentiles"`
}

var (
	vbLine    = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9 ()%/.,\-]*?):\s+(-?[0-9][0-9.eE+-]*|nan|inf)(\s.*)?$`)
	vbLatency = regexp.MustCompile(`^(Mean|Median|Std|P(\d+(?:\.\d+)?)) (TTFT|TPOT|ITL|E2EL) \(ms\)$`)
	nonWord   = regexp.MustCompile(`[^a-z0-9]+`)
)

func snake(label string) string {
	return strings.Trim(nonWord.ReplaceAllString(strings.ToLower(label), "_"), "_")
}

// ParseVLLMBenchServe reads the "Serving Benchmark Result" block in its
// layouts (benchmark_serving.py and vllm bench serve, with or without the
// failed, concurrency, peak and speculative-decoding lines, padded or
// trimmed).
func ParseVLLMBenchServe(text string) (*VLLMBench, error) {
	out := &VLLMBench{Metrics: map[string]float64{}}
	for _, l := range []*Latency{&out.TTFT, &out.TPOT, &out.ITL, &out.E2EL} {
		l.Percentiles = map[string]float64{}
	}
	var e errs
	in := false
	for n, raw := range lines(text) {
		ln := n + 1
		l := strings.TrimSpace(raw)
		switch {
		case strings.Contains(l, "Serving Benchmark Result"):
			in = true
			continue
		case !in || l == "" || strings.HasPrefix(l, "---") || strings.HasPrefix(l, "==="):
			continue
		}
		m := vbLine.FindStringSubmatch(l)
		if m == nil {
			if strings.HasSuffix(l, ":") { // a sub-heading ("Per-position acceptance (%):")
				continue
			}
			e.add(ln, "not a \"label: value\" line: %q", l)
			continue
		}
		label := strings.TrimSpace(m[1])
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			e.add(ln, "%s: %q is not a number", label, m[2])
			continue
		}
		if extra := strings.TrimSpace(m[3]); extra != "" {
			e.add(ln, "%s: unexpected %q after the value (kept %v)", label, extra, v)
		}
		out.Metrics[snake(label)] = v
		val := v
		if lm := vbLatency.FindStringSubmatch(label); lm != nil {
			lat := map[string]*Latency{"TTFT": &out.TTFT, "TPOT": &out.TPOT, "ITL": &out.ITL, "E2EL": &out.E2EL}[lm[3]]
			switch {
			case lm[1] == "Mean":
				lat.Mean = &val
			case lm[1] == "Median":
				lat.Median = &val
			case lm[1] == "Std":
				lat.Std = &val
			default:
				lat.Percentiles["p"+lm[2]] = v
			}
			continue
		}
		switch strings.ToLower(label) {
		case "successful requests":
			out.SuccessfulRequests = &val
		case "failed requests":
			out.FailedRequests = &val
		case "maximum request concurrency":
			out.MaxConcurrency = &val
		case "benchmark duration (s)":
			out.DurationS = &val
		case "request throughput (req/s)":
			out.RequestThroughput = &val
		case "output token throughput (tok/s)":
			out.OutputThroughput = &val
		case "total token throughput (tok/s)":
			out.TotalThroughput = &val
		}
	}
	if !in {
		e.add(0, "no \"Serving Benchmark Result\" block (want the output of vllm bench serve)")
	} else if out.SuccessfulRequests == nil {
		e.add(0, "the result block has no \"Successful requests\" line")
	}
	return out, e.err()
}

// DCGMDiag is dcgmi diag's table.
type DCGMDiag struct {
	Version   string     `json:"dcgm_version,omitempty"`
	Driver    string     `json:"driver_version,omitempty"`
	DeviceIDs []string   `json:"device_ids"`
	Tests     []DCGMTest `json:"tests"`
	// Overall is the worst result of any test: Fail, Warn, Pass, or Skip
	// when every test was skipped.
	Overall string `json:"overall"`
	Failed  int    `json:"failed"`
	Passed  int    `json:"passed"`
	Skipped int    `json:"skipped"`
	Warned  int    `json:"warned"`
	// Completed is true when dcgmi printed "Successfully ran diagnostic".
	Completed bool `json:"completed"`
}

// DCGMTest is one test's row with its per-GPU results and messages.
type DCGMTest struct {
	Section  string            `json:"section"`
	Name     string            `json:"name"`
	Result   string            `json:"result"` // Pass, Fail, Skip, Warn
	Raw      string            `json:"raw"`    // as printed: "Fail - All"
	GPUs     map[string]string `json:"gpus"`
	Warnings []string          `json:"warnings"`
	Info     []string          `json:"info"`
	Line     int               `json:"line"`
}

var dcgmSection = regexp.MustCompile(`^[|+]-+\s+(\w+)\s+-+[+|]`)

// ParseDCGMDiag reads dcgmi diag's text table (DCGM 1.x to 4.x layouts:
// Blacklist/Denylist names, "Pass - All" suffixes, wrapped Warning and
// Info cells, per-GPU rows).
func ParseDCGMDiag(text string) (*DCGMDiag, error) {
	r := &dcgmReader{out: &DCGMDiag{DeviceIDs: []string{}, Tests: []DCGMTest{}}}
	for n, raw := range lines(text) {
		r.line(n+1, strings.TrimRight(raw, " "))
	}
	r.msg.end()
	r.tally()
	if len(r.out.Tests) == 0 {
		r.e.add(0, "no dcgmi diag table (want the output of dcgmi diag -r N)")
	} else if r.open {
		r.e.add(r.openAt, "the table ends here without its closing border: the output was cut, and the tests after it are not known")
	}
	return r.out, r.e.err()
}

// dcgmReader reads dcgmi diag's table a line at a time: the section it
// is in, the test the rows after it belong to, and the Warning or Info
// being continued over wrapped rows.
type dcgmReader struct {
	out     *DCGMDiag
	e       errs
	section string
	cur     *DCGMTest
	msg     joined
	msgFull bool // the last chunk filled its cell: the next continues its word
	// open says the table's last line so far is a row, not a border:
	// the table ends with a border, so an open one at the end was cut.
	open   bool
	openAt int
}

func (r *dcgmReader) line(ln int, l string) {
	switch {
	case strings.HasPrefix(l, "+"):
		r.open = false
	case strings.HasPrefix(l, "|"):
		r.open, r.openAt = true, ln
	}
	if strings.Contains(l, "Successfully ran diagnostic") {
		r.out.Completed = true
		return
	}
	if m := dcgmSection.FindStringSubmatch(l); m != nil {
		r.section, r.cur = m[1], nil
		r.msg.end()
		return
	}
	if !strings.HasPrefix(l, "|") || strings.HasPrefix(l, "|--") && !strings.Contains(l, "  ") {
		return
	}
	cells := strings.Split(l, "|")
	if len(cells) < 4 {
		return
	}
	left, right := strings.TrimSpace(cells[1]), cells[2]
	val := strings.TrimSpace(right)
	switch {
	case left == "Diagnostic":
	case r.section == "Metadata":
		r.metadata(left, val)
	case left == "Warning" || left == "Info":
		r.message(ln, left, right)
	case left == "":
		r.continuation(ln, right)
	default:
		r.out.Tests = append(r.out.Tests, DCGMTest{Section: r.section, Name: left, Raw: val, Result: firstWord(val), GPUs: map[string]string{}, Warnings: []string{}, Info: []string{}, Line: ln})
		r.msg.end()
		r.cur = &r.out.Tests[len(r.out.Tests)-1]
	}
}

func (r *dcgmReader) metadata(key, val string) {
	switch key {
	case "DCGM Version":
		r.out.Version = val
	case "Driver Version Detected":
		r.out.Driver = val
	case "GPU Device IDs Detected":
		for _, id := range strings.Split(val, ",") {
			r.out.DeviceIDs = append(r.out.DeviceIDs, strings.TrimSpace(id))
		}
	}
}

// message starts a test's Warning or Info.
func (r *dcgmReader) message(ln int, kind, right string) {
	if r.cur == nil {
		r.e.add(ln, "a %s row before any test", kind)
		return
	}
	content := strings.TrimPrefix(right, " ")
	s := strings.TrimSpace(content)
	r.msg.end()
	if kind == "Warning" {
		r.cur.Warnings = append(r.cur.Warnings, s)
		r.msg.start(&r.cur.Warnings[len(r.cur.Warnings)-1])
	} else {
		r.cur.Info = append(r.cur.Info, s)
		r.msg.start(&r.cur.Info[len(r.cur.Info)-1])
	}
	r.msgFull = len(strings.TrimRight(content, " ")) >= len(right)-3
}

// continuation is a row with no name: a GPU's result, or more of the
// message being continued.
func (r *dcgmReader) continuation(ln int, right string) {
	if r.cur == nil {
		return
	}
	content := strings.TrimPrefix(right, " ")
	val := strings.TrimSpace(right)
	if g, rest, ok := strings.Cut(val, ": "); ok && strings.HasPrefix(g, "GPU") && isInt(strings.TrimPrefix(g, "GPU")) {
		r.cur.GPUs[g] = firstWord(rest)
		r.msg.end()
		return
	}
	if r.msg.to == nil {
		r.e.add(ln, "a continuation row that belongs to nothing: %q", val)
		return
	}
	// DCGM wraps at a fixed width (the cell's, less its padding),
	// mid-word: a chunk that fills it continues the word on the next line.
	if !r.msgFull && !strings.HasPrefix(content, " ") {
		r.msg.add(" ")
	}
	r.msg.add(strings.TrimRight(content, " "))
	r.msgFull = len(strings.TrimRight(content, " ")) >= len(right)-3
}

// tally counts the tests by result and gives the overall one.
func (r *dcgmReader) tally() {
	out := r.out
	for i := range out.Tests {
		t := &out.Tests[i]
		for j, w := range t.Warnings {
			t.Warnings[j] = strings.TrimSpace(w)
		}
		switch t.Result {
		case "Pass":
			out.Passed++
		case "Fail":
			out.Failed++
		case "Skip":
			out.Skipped++
		case "Warn":
			out.Warned++
		default:
			r.e.add(t.Line, "test %q: result %q is not Pass, Fail, Skip or Warn", t.Name, t.Raw)
		}
	}
	switch {
	case out.Failed > 0:
		out.Overall = "Fail"
	case out.Warned > 0:
		out.Overall = "Warn"
	case out.Passed > 0:
		out.Overall = "Pass"
	case out.Skipped > 0:
		out.Overall = "Skip"
	}
}

// joined is a string being built from many lines: a message wrapped over
// thousands of rows is written once, not copied once per row (+=).
type joined struct {
	to *string // where the message goes; nil: none being continued
	b  strings.Builder
}

// start continues *to, ending the message being continued.
func (j *joined) start(to *string) {
	j.end()
	j.to = to
	j.b.WriteString(*to)
}

func (j *joined) add(s string) { j.b.WriteString(s) }

// end writes the message being continued to its place.
func (j *joined) end() {
	if j.to != nil {
		*j.to = j.b.String()
	}
	j.to = nil
	j.b.Reset()
}

func firstWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// GPUBurn is gpu_burn's outcome: the verdict per GPU and the last
// progress record (Gflop/s, errors, temperatures per GPU).
type GPUBurn struct {
	GPUs     []BurnGPU `json:"gpus"`
	Tested   *int      `json:"tested"`
	Faulty   int       `json:"faulty"`
	OK       int       `json:"ok"`
	Progress *float64  `json:"progress_percent"`
	// Doubles and TensorCores say how the run was asked to burn.
	Doubles     bool `json:"doubles"`
	TensorCores bool `json:"tensor_cores"`
	// Complete is true when gpu_burn printed its "Tested N GPUs" summary
	// with a verdict for each. A run that aborted (every worker died),
	// was killed, or whose output was cut lacks it: Reason says how far
	// it got and quotes the failure it printed.
	Complete bool   `json:"complete"`
	Reason   string `json:"reason,omitempty"`
}

// BurnGPU is one GPU's line in the summary and its last progress figures.
type BurnGPU struct {
	Index   int      `json:"index"`
	Name    string   `json:"name,omitempty"`
	Verdict string   `json:"verdict"` // OK or FAULTY; "" when the summary is missing
	Gflops  *float64 `json:"gflops"`
	Errors  *int64   `json:"errors"`
	TempC   *int     `json:"temp_c"`
	// Died is gpu_burn's "(DIED!)" in the last progress record: the
	// GPU's worker process is gone.
	Died bool `json:"died,omitempty"`
}

var (
	burnGPU      = regexp.MustCompile(`^GPU (\d+): (.+?) \(UUID:`)
	burnVerdict  = regexp.MustCompile(`^GPU (\d+): (OK|FAULTY)\b`)
	burnTested   = regexp.MustCompile(`^Tested (\d+) GPUs:`)
	burnProgress = regexp.MustCompile(`^(\d+(?:\.\d+)?)%\s+proc'd: (.*?)\s+errors: (.*?)\s+temps: (.*?)\s*$`)
	burnGflops   = regexp.MustCompile(`\((\d+(?:\.\d+)?) Gflop/s\)`)
	burnErr      = regexp.MustCompile(`(-?\d+)(\s*\((?:DIED|WARNING)!\))?`)
	burnTemp     = regexp.MustCompile(`(-?\d+) C`)
)

// ParseGPUBurn reads gpu_burn's output: progress records redrawn with
// carriage returns, the per-GPU summary, and negative (overflowed) error
// counts, which count as errors.
func ParseGPUBurn(text string) (*GPUBurn, error) {
	r := &burnReader{out: &GPUBurn{GPUs: []BurnGPU{}}, byIndex: map[int]*BurnGPU{}}
	for n, raw := range lines(text) {
		for _, rec := range strings.Split(raw, "\r") {
			r.record(n+1, strings.TrimSpace(rec))
		}
	}
	if r.last != nil {
		r.lastProgress()
	}
	out := r.out
	for _, g := range out.GPUs {
		switch g.Verdict {
		case "OK":
			out.OK++
		case "FAULTY":
			out.Faulty++
		}
	}
	out.Complete = out.Tested != nil && *out.Tested == out.OK+out.Faulty
	r.why()
	return out, r.e.err()
}

// burnReader reads gpu_burn's output a record at a time (its progress
// lines are records ended by \r within one line).
type burnReader struct {
	out     *GPUBurn
	e       errs
	byIndex map[int]*BurnGPU
	// last is the last progress record's fields, lastLine its line.
	last     []string
	lastLine int
	// failure is the first line gpu_burn wrote about a worker failing,
	// aborted its "No clients are alive!  Aborting"; killing is the line
	// of its "Killing processes".
	failure, aborted struct {
		line int
		text string
	}
	killing int
}

// gpu is GPU i's entry, added the first time it is named.
func (r *burnReader) gpu(i int) *BurnGPU {
	if g, ok := r.byIndex[i]; ok {
		return g
	}
	r.out.GPUs = append(r.out.GPUs, BurnGPU{Index: i})
	for k := range r.out.GPUs {
		r.byIndex[r.out.GPUs[k].Index] = &r.out.GPUs[k]
	}
	return r.byIndex[i]
}

func (r *burnReader) record(ln int, l string) {
	out := r.out
	switch {
	case l == "":
	case burnProgress.MatchString(l):
		r.last, r.lastLine = burnProgress.FindStringSubmatch(l), ln
	case strings.HasPrefix(l, "No clients are alive"):
		r.aborted.line, r.aborted.text = ln, l
	case strings.HasPrefix(l, "Couldn't init") || strings.HasPrefix(l, "Failure during compute") || strings.Contains(l, "Error in \""):
		if r.failure.line == 0 {
			r.failure.line, r.failure.text = ln, l
		}
	case strings.HasPrefix(l, "Killing processes"):
		r.killing = ln
	case burnVerdict.MatchString(l):
		m := burnVerdict.FindStringSubmatch(l)
		i, _ := strconv.Atoi(m[1])
		r.gpu(i).Verdict = m[2]
	case burnGPU.MatchString(l):
		m := burnGPU.FindStringSubmatch(l)
		i, _ := strconv.Atoi(m[1])
		r.gpu(i).Name = m[2]
	case burnTested.MatchString(l):
		v, _ := strconv.Atoi(burnTested.FindStringSubmatch(l)[1])
		out.Tested = &v
	case strings.Contains(l, "using DOUBLES"):
		out.Doubles = true
		out.TensorCores = out.TensorCores || strings.Contains(l, "Tensor Cores")
	case strings.Contains(l, "using FLOATS"):
		out.TensorCores = out.TensorCores || strings.Contains(l, "Tensor Cores")
	}
}

// lastProgress reads the last progress record: how far the run got, and
// each GPU's Gflop/s, error count (and whether its worker died) and
// temperature.
func (r *burnReader) lastProgress() {
	last := r.last
	p, _ := strconv.ParseFloat(last[1], 64)
	r.out.Progress = &p
	procs := strings.Split(last[2], " - ")
	errsF := burnErr.FindAllStringSubmatch(last[3], -1)
	temps := burnTemp.FindAllStringSubmatch(last[4], -1)
	for i := range procs {
		g := r.gpu(i)
		if m := burnGflops.FindStringSubmatch(procs[i]); m != nil {
			v, _ := strconv.ParseFloat(m[1], 64)
			g.Gflops = &v
		}
		if i < len(errsF) {
			v, _ := strconv.ParseInt(errsF[i][1], 10, 64)
			g.Errors = &v
			g.Died = strings.Contains(errsF[i][2], "DIED")
		}
		if i < len(temps) {
			v, _ := strconv.Atoi(temps[i][1])
			g.TempC = &v
		}
	}
	if len(errsF) != len(procs) || len(temps) != len(procs) {
		r.e.add(0, "the last progress record has %d GPUs, %d error counts and %d temperatures", len(procs), len(errsF), len(temps))
	}
}

// why says, for a run without a whole summary, how far it got and why it
// ended (Reason), and where.
func (r *burnReader) why() {
	out, e := r.out, &r.e
	reached := "before its first progress record"
	if r.last != nil {
		reached = fmt.Sprintf("at %s%% (line %d)", r.last[1], r.lastLine)
	}
	switch {
	case out.Tested == nil && len(out.GPUs) == 0:
		out.Reason = "no gpu_burn output"
		e.add(0, "no gpu_burn output (want its progress lines or its \"Tested N GPUs\" summary)")
	case out.Tested == nil && r.aborted.line > 0:
		out.Reason = errorf(0, "gpu_burn aborted %s: every GPU's worker died (line %d: %q)", reached, r.aborted.line, r.aborted.text).Msg
		e.add(r.aborted.line, "gpu_burn aborted, every GPU's worker dead, with no \"Tested N GPUs\" summary")
	case out.Tested == nil && r.killing > 0:
		out.Reason = errorf(0, "the run stopped %s while killing its workers (line %d), with no \"Tested N GPUs\" summary", reached, r.killing).Msg
		e.add(r.killing, "no \"Tested N GPUs\" summary after \"Killing processes\": the run did not finish, or the output was cut")
	case out.Tested == nil:
		out.Reason = errorf(0, "the run stopped %s with no \"Tested N GPUs\" summary: it did not finish, or its output was cut", reached).Msg
		if r.lastLine > 0 {
			e.add(r.lastLine, "no \"Tested N GPUs\" summary after this: the run did not finish, or the output was cut")
		} else {
			e.add(0, "no \"Tested N GPUs\" summary: the run did not finish, or the output was cut")
		}
	case *out.Tested != out.OK+out.Faulty:
		out.Reason = fmt.Sprintf("the summary says %d GPUs were tested but gives %d verdicts: the output was cut", *out.Tested, out.OK+out.Faulty)
		e.add(0, "the summary says %d GPUs were tested but lists %d", *out.Tested, out.OK+out.Faulty)
	}
	if !out.Complete && r.failure.line > 0 {
		out.Reason += errorf(0, "; line %d says %q", r.failure.line, r.failure.text).Msg
	}
}
