package parse

import (
	"regexp"
	"strconv"
	"strings"
)

func init() {
	register(Kind{Name: "vllm-bench-throughput", Command: "vllm bench throughput (or benchmarks/benchmark_throughput.py)",
		Parse: func(s string) (any, error) { return ParseVLLMBenchThroughput(s) }, Fixtures: []string{"workloads/vllm-bench-throughput"}})
}

// VLLMThroughput is the result of vllm's offline throughput benchmark:
// "Throughput: X requests/s, Y total tokens/s, Z output tokens/s" and, in
// newer versions, "Total num prompt tokens" and "Total num output tokens".
// Before vllm PR #8914 (autumn 2024) the line was "Throughput: X
// requests/s, Y tokens/s", Y counting prompt and output tokens: it is read
// as the total rate, and the output rate is null.
type VLLMThroughput struct {
	RequestThroughput *float64 `json:"request_throughput_rps"`
	TotalThroughput   *float64 `json:"total_token_throughput_tps"`
	OutputThroughput  *float64 `json:"output_token_throughput_tps"`
	PromptTokens      *int64   `json:"total_prompt_tokens"`
	OutputTokens      *int64   `json:"total_output_tokens"`
	// ImageTokensUncounted is vllm's warning that a multi-modal run on a
	// backend other than vllm-chat left image tokens out of the counts.
	ImageTokensUncounted bool `json:"image_tokens_uncounted,omitempty"`
	// Line is the "Throughput:" line's.
	Line int `json:"line,omitempty"`
}

var (
	vtLine   = regexp.MustCompile(`(?:^|\s)Throughput: (.*)$`)
	vtFields = regexp.MustCompile(`^([0-9.]+) requests/s, ([0-9.]+) (total )?tokens/s(?:, ([0-9.]+) output tokens/s)?\s*$`)
	vtTokens = regexp.MustCompile(`^Total num (prompt|output) tokens:\s*(.*?)\s*$`)
)

// ParseVLLMBenchThroughput reads the result lines of vllm bench throughput
// (and benchmarks/benchmark_throughput.py, old and new) out of its log:
// engine INFO lines, progress bars redrawn with carriage returns and the
// command line around them are passed over.
func ParseVLLMBenchThroughput(text string) (*VLLMThroughput, error) {
	out := &VLLMThroughput{}
	var e errs
	for n, raw := range lines(text) {
		ln := n + 1
		for _, rec := range strings.Split(raw, "\r") {
			l := strings.TrimSpace(rec)
			if strings.Contains(l, "Multi-modal request with") && strings.Contains(l, "image tokens") {
				out.ImageTokensUncounted = true
				continue
			}
			if m := vtTokens.FindStringSubmatch(l); m != nil {
				v, err := strconv.ParseInt(m[2], 10, 64)
				if err != nil {
					e.add(ln, "total num %s tokens %q is not a whole number", m[1], m[2])
					continue
				}
				p := &out.PromptTokens
				if m[1] == "output" {
					p = &out.OutputTokens
				}
				if *p != nil {
					e.add(ln, "a second \"Total num %s tokens\" line (kept the first)", m[1])
					continue
				}
				*p = &v
				continue
			}
			m := vtLine.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			if out.Line != 0 {
				e.add(ln, "a second \"Throughput:\" line (the output of several runs?): kept the one at line %d", out.Line)
				continue
			}
			f := vtFields.FindStringSubmatch(m[1])
			if f == nil {
				e.add(ln, "not \"Throughput: N requests/s, N total tokens/s, N output tokens/s\": %q", l)
				continue
			}
			vals := make([]*float64, 3)
			bad := false
			for i, s := range []string{f[1], f[2], f[4]} {
				if s == "" {
					continue
				}
				v, err := strconv.ParseFloat(s, 64)
				if err != nil {
					e.add(ln, "%q is not a number", s)
					bad = true
					break
				}
				vals[i] = &v
			}
			if bad {
				continue
			}
			if f[3] == "" && f[4] != "" {
				e.add(ln, "an output rate without \"total\" before the token rate: %q", l)
				continue
			}
			out.RequestThroughput, out.TotalThroughput, out.OutputThroughput = vals[0], vals[1], vals[2]
			out.Line = ln
		}
	}
	if out.Line == 0 {
		e.add(0, "no \"Throughput: N requests/s, ...\" line (want the output of vllm bench throughput or benchmark_throughput.py; the run did not finish, or the output was cut)")
	}
	return out, e.err()
}
