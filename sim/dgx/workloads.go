package dgx

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gpulab/gpulab/sim/spec"
)

func init() {
	tools["gpu_burn"] = gpuBurn
	tools["vllm"] = vllm
}

// burnRate is gpu_burn's Gflop/s per A100-40GB by mode: doubles with
// tensor cores as recorded on A100s (testdata/fixtures/workloads/gpu-burn/
// gpu_burn-8xA100-80GB-doubles-tensorcores-superbench.txt: ~16950); the
// others are estimates from the A100's peak rates, not recordings.
func burnRate(doubles, tensor bool) float64 {
	switch {
	case doubles && tensor:
		return 16950
	case doubles:
		return 9100
	case tensor:
		return 92000
	}
	return 18300
}

// gpuBurn runs gpu-burn in its current wording (testdata/fixtures/
// workloads/gpu-burn/gpu_burn-RTXA500-stops-at-100pct-no-summary.txt and
// gpu_burn-RTXA2000-no-progress-lines-OK.txt) with the multi-GPU progress
// records of the recorded 8x A100 run: ten records, one each pace, a tenth
// of the requested seconds apart in the summaries' clock. A GPU in MIG
// mode is no CUDA device; a GPU with uncorrected ECC errors miscompares
// and ends FAULTY.
func gpuBurn(ctx context.Context, h *Host, t *term, args []string) int {
	o, code, done := parseBurnArgs(t, args[1:])
	if done {
		return code
	}
	secs, doubles, tensor, given := o.secs, o.doubles, o.tensor, o.given
	var cuda []int // physical GPUs CUDA sees, in its order
	for g := 0; g < spec.GPUs; g++ {
		if !h.Faults.MIGOn(g) {
			cuda = append(cuda, g)
		}
	}
	if !given {
		t.print("Run length not specified in the command line. ")
	}
	t.printf("Using compare file: compare.ptx\nBurning for %d seconds.\n", secs)
	t.print(h.smiList())
	kind := "FLOATS"
	bytes := 268435456
	if doubles {
		kind, bytes = "DOUBLES", 536870912
	}
	use := ""
	if tensor {
		use = ", using Tensor Cores"
	}
	for d := range cuda {
		t.printf("Initialized device %d with 40339 MB of memory (39928 MB available, using 35935 MB of it), using %s%s\n", d, kind, use)
		t.printf("Results are %d bytes each, thus performing %d iterations\n", bytes, 35935*(1<<20)/bytes-2)
	}
	iters := 35935*(1<<20)/bytes - 2
	rate := burnRate(doubles, tensor)
	errs := make([]int, len(cuda))
	for step := 1; step <= 10; step++ {
		if !h.wait(ctx, 1) {
			return ExitCancelled
		}
		var procd, errCol, temps []string
		for d, g := range cuda {
			if h.Faults.ECCFor(g).VolatileUncorrected > 0 && step >= 3 {
				errs[d] += 41 * step
			}
			procd = append(procd, fmt.Sprintf("%d (%.0f Gflop/s)", iters*step, rate-float64((g*37+step*11)%90)))
			errCol = append(errCol, strconv.Itoa(errs[d]))
			temps = append(temps, fmt.Sprintf("%d C", spec.TemperatureC[g]+3*step+g%3))
		}
		t.printf("%.1f%%  proc'd: %s   errors: %s   temps: %s \n", float64(step)*10, strings.Join(procd, " - "),
			strings.Join(errCol, " - "), strings.Join(temps, " - "))
		if step < 10 {
			at := h.now().Add(time.Duration(secs*step/10) * time.Second)
			t.printf("\tSummary at:   %s\n\n", at.Format("Mon Jan _2 15:04:05 MST 2006"))
		}
	}
	t.print("Killing processes with SIGTERM (soft kill)\n")
	for d := range cuda {
		t.printf("Freed memory for dev %d\nUninitted cublas\n", d)
	}
	t.printf("done\n\nTested %d GPUs:\n", len(cuda))
	for d := range cuda {
		verdict := "OK"
		if errs[d] > 0 {
			verdict = "FAULTY"
		}
		t.printf("\tGPU %d: %s\n", d, verdict)
	}
	return 0 // gpu_burn reports a faulty GPU, it does not fail
}

// burnArgs are gpu_burn's options: -d, -tc, -m X (memory, accepted), TIME.
type burnArgs struct {
	secs                   int
	doubles, tensor, given bool
}

// parseBurnArgs reads gpu_burn's command line; done is set when it has
// answered already (-h, a syntax error) with code.
func parseBurnArgs(t *term, args []string) (o burnArgs, code int, done bool) {
	o.secs = 10
	for k := 0; k < len(args); k++ {
		switch a := args[k]; {
		case a == "-d":
			o.doubles = true
		case a == "-tc":
			o.tensor = true
		case a == "-m" && k+1 < len(args):
			k++
		case a == "-h" || a == "--help":
			t.print("GPU Burn\nUsage: gpu_burn [OPTIONS] [TIME]\n\n-m X\tUse X MB of memory.\n-m N%\tUse N% of the available GPU memory.\n" +
				"-d\tUse doubles\n-tc\tTry to use Tensor cores\n-l\tLists all GPUs in the system\n-h\tShow this help message\n")
			return o, 0, true
		default:
			n, err := strconv.Atoi(a)
			if err != nil || n <= 0 {
				t.printf("Syntax error near: %s\n", a)
				return o, 1, true
			}
			o.secs, o.given = n, true
		}
	}
	return o, 0, false
}

// vllmVersion is the vLLM the hosts carry: the version recorded serving
// on A100 40GB in testdata/fixtures/workloads/vllm-bench-serve/
// benchmark_serving-qwen2-7b-2xA100-40GB-random1024-10prompts.txt.
const vllmVersion = "0.10.1.1"

// vllm answers vllm --version and vllm bench serve.
func vllm(ctx context.Context, h *Host, t *term, args []string) int {
	switch {
	case len(args) == 2 && (args[1] == "--version" || args[1] == "-v"):
		t.print(vllmVersion + "\n")
		return 0
	case len(args) >= 3 && args[1] == "bench" && args[2] == "serve":
		return vllmBenchServe(ctx, h, t, args[3:])
	}
	return t.fail(2, "usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ...\n"+
		"vllm: error: the simulated host answers vllm --version and vllm bench serve\n")
}

// benchServeOptions are vllm bench serve's options that take a value.
var benchServeOptions = map[string]bool{
	"--backend": true, "--base-url": true, "--host": true, "--port": true, "--endpoint": true, "--model": true,
	"--dataset-name": true, "--dataset-path": true, "--num-prompts": true, "--random-input-len": true,
	"--random-output-len": true, "--random-range-ratio": true, "--request-rate": true, "--max-concurrency": true,
	"--seed": true, "--tokenizer": true, "--burstiness": true, "--percentile-metrics": true, "--metric-percentiles": true,
	"--result-filename": true, "--result-dir": true, "--num-warmups": true, "--random-input": true, "--random-output": true,
	"--ignore-eos": false, "--trust-remote-code": false, "--save-result": false, "--disable-tqdm": false,
}

// vllmBenchServe prints the run's progress, then the result block in the
// layout of the recorded A100-40GB run (label 40 wide, value padded to
// 10: benchmark_serving-qwen2-7b-2xA100-40GB-random1024-10prompts.txt).
// The figures follow a simple model of a 7B model on one A100-40GB
// (batch up to 256): they are not measurements.
func vllmBenchServe(ctx context.Context, h *Host, t *term, args []string) int {
	opt := map[string]string{"--num-prompts": "1000", "--random-input-len": "1024", "--random-output-len": "128"}
	for k := 0; k < len(args); k++ {
		name, val, hasVal := strings.Cut(args[k], "=")
		takes, known := benchServeOptions[name]
		if !known {
			return t.fail(2, "usage: vllm bench serve [-h] [--backend BACKEND] [--base-url BASE_URL] ...\n"+
				fmt.Sprintf("vllm bench serve: error: unrecognized arguments: %s\n", args[k]))
		}
		if takes && !hasVal {
			if k+1 >= len(args) {
				return t.fail(2, fmt.Sprintf("vllm bench serve: error: argument %s: expected one argument\n", name))
			}
			k++
			val = args[k]
		}
		opt[name] = val
	}
	num := func(name string) (int, bool) { n, err := strconv.Atoi(opt[name]); return n, err == nil && n > 0 }
	prompts, ok1 := num("--num-prompts")
	in, ok2 := num("--random-input-len")
	out, ok3 := num("--random-output-len")
	if !ok1 || !ok2 || !ok3 {
		return t.fail(2, "vllm bench serve: error: --num-prompts, --random-input-len and --random-output-len take positive integers\n")
	}
	conc := min(prompts, 256)
	if c, ok := num("--max-concurrency"); ok {
		conc = min(conc, c)
	}
	t.print("Starting initial single prompt test run...\n")
	if !h.wait(ctx, 2) {
		return ExitCancelled
	}
	t.print("Initial test run completed. Starting main benchmark run...\nTraffic request rate: inf\n")
	if !h.wait(ctx, 6) {
		return ExitCancelled
	}
	tpot := 12 + 0.12*float64(conc)
	ttft := 40 + 0.004*float64(in*conc)
	batches := (prompts + conc - 1) / conc
	dur := float64(batches) * (ttft + float64(out)*tpot) / 1000
	row := func(label string, v any) string {
		s := fmt.Sprint(v)
		if f, ok := v.(float64); ok {
			s = fmt.Sprintf("%.2f", f)
		}
		return fmt.Sprintf("%-40s %-10s\n", label, s)
	}
	var b strings.Builder
	b.WriteString("============ Serving Benchmark Result ============\n")
	b.WriteString(row("Successful requests:", prompts))
	if _, ok := opt["--max-concurrency"]; ok {
		b.WriteString(row("Maximum request concurrency:", conc))
	}
	b.WriteString(row("Benchmark duration (s):", dur))
	b.WriteString(row("Total input tokens:", prompts*in))
	b.WriteString(row("Total generated tokens:", prompts*out))
	b.WriteString(row("Request throughput (req/s):", float64(prompts)/dur))
	b.WriteString(row("Output token throughput (tok/s):", float64(prompts*out)/dur))
	b.WriteString(row("Total Token throughput (tok/s):", float64(prompts*(in+out))/dur))
	for _, sec := range []struct {
		title, short string
		mean         float64
		median, p99  float64
	}{
		{"Time to First Token", "TTFT", ttft, 0.97, 1.62},
		{"Time per Output Token (excl. 1st token)", "TPOT", tpot, 0.99, 1.04},
		{"Inter-token Latency", "ITL", tpot, 0.95, 2.1},
	} {
		b.WriteString(center(sec.title, 50, '-') + "\n")
		b.WriteString(row(fmt.Sprintf("Mean %s (ms):", sec.short), sec.mean))
		b.WriteString(row(fmt.Sprintf("Median %s (ms):", sec.short), sec.mean*sec.median))
		b.WriteString(row(fmt.Sprintf("P99 %s (ms):", sec.short), sec.mean*sec.p99))
	}
	b.WriteString(strings.Repeat("=", 50) + "\n")
	t.print(b.String())
	return 0
}

// center is Python's str.center, as vLLM's headings use it.
func center(s string, width int, fill byte) string {
	if len(s) >= width {
		return s
	}
	pad := width - len(s)
	left := pad / 2
	if pad%2 == 1 && width%2 == 1 {
		left++
	}
	return strings.Repeat(string(fill), left) + s + strings.Repeat(string(fill), pad-left)
}
