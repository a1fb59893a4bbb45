package parse

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNCCLTestsLayouts(t *testing.T) {
	v, err := ParseNCCLTests(fixture(t, "workloads/nccl-tests", "all_reduce_1node-8xA100-SXM4-80GB-nccltests2.19.4.txt"))
	if err != nil || v.Version != "2.19.4" || v.Collective != "all_reduce_perf" || len(v.Rows) != 25 || *v.AvgBusBW != 34.9024 || *v.PeakBusBW != 181.32 || len(v.Ranks) != 8 || v.Ranks[7].BusID != "0000:d4:00" {
		t.Errorf("2.19.4: %v %+v", err, v)
	}
	last := v.Rows[len(v.Rows)-1]
	if last.SizeBytes != 134217728 || last.Redop != "sum" || *last.Root != -1 || last.InPlace.BusBW != 182.90 || *last.OutOfPlace.Wrong != 0 {
		t.Errorf("last row: %+v", last)
	}
	// mpirun --tag-output prefixes, no header lines.
	v, err = ParseNCCLTests(fixture(t, "workloads/nccl-tests", "all_reduce_aws-batch-p5-H100-mpi-tagged-table-only.txt"))
	if err != nil || len(v.Rows) != 32 || *v.AvgBusBW != 156.742 {
		t.Errorf("tagged: %v rows %d", err, len(v.Rows))
	}
	// validation: 0 prints N/A: neither wrong nor an error value.
	v, _ = ParseNCCLTests(fixture(t, "workloads/nccl-tests", "all_reduce_1node-8xA100-40GB-old-nogroup-validation0-superbench.txt"))
	if r := v.Rows[0]; r.OutOfPlace.Wrong != nil || r.OutOfPlace.MaxError != nil || r.Root != nil || r.Redop != "sum" {
		t.Errorf("N/A row: %+v", r)
	}
	// The old float error column, no root.
	v, _ = ParseNCCLTests(fixture(t, "workloads/nccl-tests", "all_reduce_multinode-roce-old-narrow-table-only.txt"))
	if r := v.Rows[0]; r.OutOfPlace.MaxError == nil || *r.OutOfPlace.MaxError != 2e-07 || r.OutOfPlace.TimeUS != 2193.5 {
		t.Errorf("error column: %+v", r)
	}
	// A damaged row is named, the rest kept.
	v, err = ParseNCCLTests("#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n     8  2  float  sum  -1  34.8  0.00  0.00  0  36.1  0.00  0.00  0\n    16  4  float  sum  -1  35.4  x  0.00  0  36.2  0.00  0.00  0\n")
	if err == nil || !strings.Contains(err.Error(), `line 3: "x" is not a number`) || len(v.Rows) != 1 {
		t.Errorf("damaged: %v %d rows", err, len(v.Rows))
	}
	if _, err := ParseNCCLTests("Warning: Permanently added 'gpu01' to the list of known hosts.\n"); err == nil || !strings.Contains(err.Error(), "no nccl-tests table") {
		t.Errorf("no table: %v", err)
	}
}

// A run killed, failed or timed out mid-table is marked incomplete, with
// where the table ends and the first failure printed after it.
func TestNCCLTestsCutOff(t *testing.T) {
	const dir = "workloads/nccl-tests"
	v, err := ParseNCCLTests(fixture(t, dir, "all_reduce_1node-8xA100-SXM4-80GB-nccltests2.19.4.txt"))
	if err != nil || !v.Complete || v.Reason != "" {
		t.Errorf("a whole run: %v complete=%v %q", err, v.Complete, v.Reason)
	}
	v, err = ParseNCCLTests(fixture(t, dir, "all_reduce_128node-1024xH100-cut-after-16G-test-nccl-failure.txt"))
	want := `the table ends at 16 GB (line 11) with no '# Avg bus bandwidth' line: the run, or its output, was cut off; line 12 says "HCA-128: Test NCCL failure common.cu:1204 'unhandled cuda error (run with NCCL_DEBUG=INFO for details) / '"`
	if v.Complete || v.Reason != want || len(v.Rows) != 5 || *v.PeakBusBW != 367.29 || v.AvgBusBW != nil {
		t.Errorf("cut after 16 GB:\n got %q\nwant %q\n%+v", v.Reason, want, v)
	}
	if err == nil || err.Error() != "line 11: the table ends here with no '# Avg bus bandwidth' line: the run, or its output, was cut off" {
		t.Errorf("cut after 16 GB: error %v", err)
	}
	v, err = ParseNCCLTests(fixture(t, dir, "all_reduce_1node-2xRTX5090-header-then-test-nccl-failure-no-rows.txt"))
	if v.Complete || !strings.HasPrefix(v.Reason, "the table has a header but no rows: the run stopped before its first size; line 10 says \"GENOA-06: Test NCCL failure common.cu:392") ||
		err == nil || !strings.Contains(err.Error(), "a table header but no rows") || len(v.Ranks) != 2 {
		t.Errorf("no rows: %v %q", err, v.Reason)
	}
	// A Slurm time limit after a row, through mpirun's tags; NCCL INFO
	// lines are passed over; sizes that are not a power of 1024.
	v, _ = ParseNCCLTests("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n" +
		"[1,0]<stdout>:    67108864      16777216     float     sum      -1   1568.3   42.79   80.23      0   1560.9   42.99   80.61      0\n" +
		"gpu01:1234:1250 [0] NCCL INFO comm 0x55 rank 0 nranks 16 - Abort COMPLETE\n" +
		"slurmstepd: error: *** STEP 4242.0 ON gpu01 CANCELLED AT 2024-12-02T10:43:35 DUE TO TIME LIMIT ***\n")
	if v.Complete || v.Reason != `the table ends at 64 MB (line 2) with no '# Avg bus bandwidth' line: the run, or its output, was cut off; line 4 says "slurmstepd: error: *** STEP 4242.0 ON gpu01 CANCELLED AT 2024-12-02T10:43:35 DUE TO TIME LIMIT ***"` {
		t.Errorf("time limit: %q", v.Reason)
	}
	v, _ = ParseNCCLTests("     1048584        262146     float     sum      -1    217.2    4.83    7.24      0    217.1    4.83    7.25      0\n")
	if v.Complete || v.Reason != "the table ends at 1048584 B (line 1) with no '# Avg bus bandwidth' line: the run, or its output, was cut off" {
		t.Errorf("silent cut: %q", v.Reason)
	}
	// A failure line megabytes long is quoted as errors quote the input.
	v, _ = ParseNCCLTests("     8  2  float  sum  -1  34.8  0.00  0.00  0  36.1  0.00  0.00  0\nTest NCCL failure " + strings.Repeat("x", 1<<20) + "\n")
	if len(v.Reason) > 2*MaxQuoted+200 || !strings.Contains(v.Reason, "… (1048594 bytes)") {
		t.Errorf("long failure line: %d bytes: %.300s", len(v.Reason), v.Reason)
	}
}

func TestVLLMBenchServe(t *testing.T) {
	v, err := ParseVLLMBenchServe(fixture(t, "workloads/vllm-bench-serve", "vllm_bench_serve-nemotron3-nano-fp8-H200-conc1024-2048req.txt"))
	if err != nil || *v.SuccessfulRequests != 2048 || *v.OutputThroughput != 15828.3 || *v.TTFT.Median != 1534.84 || v.TTFT.Percentiles["p99"] != 15465.31 || v.MaxConcurrency == nil {
		t.Errorf("%v %+v", err, v)
	}
	// A stray character after a value is reported, the value kept.
	v, err = ParseVLLMBenchServe(fixture(t, "workloads/vllm-bench-serve", "vllm_bench_serve-glm5.1-fp8-8xH200-specdecode-mtp.txt"))
	if err == nil || !strings.Contains(err.Error(), `line 14: Mean TTFT (ms): unexpected "·"`) || *v.TTFT.Mean != 13395.44 || v.Metrics["acceptance_rate"] != 21.33 {
		t.Errorf("%v %+v", err, v.Metrics)
	}
}

func TestVLLMBenchThroughput(t *testing.T) {
	const dir = "workloads/vllm-bench-throughput"
	for _, c := range []struct {
		file              string
		req, total        float64
		output            *float64
		prompt, outTokens int64 // 0: no totals printed
		line              int
	}{
		// vllm bench throughput: three rates and the token totals.
		{"vllm_bench_throughput-lfm2.5-350m-H100-with-command-line.txt", 70.77, 54350.30, ptr(18116.77), 262144, 131072, 3},
		{"vllm_bench_throughput-qwen3-8b-1xMI325X-rocm.txt", 34.14, 17466.30, ptr(8739.16), 255648, 256000, 1},
		{"benchmark_throughput-hermes3-llama3.1-8b-sonnet-10prompts-vllm-readme.txt", 7.15, 4656.00, ptr(1072.15), 5014, 1500, 1},
		{"benchmark_throughput-qwen2-vl-7b-visionarena-vllm-readme.txt", 2.55, 4036.92, ptr(326.90), 14527, 1280, 1},
		// vllm PR #8914's example: three rates, no totals.
		{"benchmark_throughput-3field-no-token-totals-vllm-pr8914.txt", 89.27, 22853.37, ptr(11426.69), 0, 0, 1},
		// Before: "N tokens/s" counts prompt and output tokens.
		{"benchmark_throughput-old2field-qwen2.5-7b-RTX4090D-vllm-backend.txt", 9.14, 1754.43, nil, 0, 0, 1},
		{"benchmark_throughput-v0.4.1-llama3-8b-RTX3090-full-log-2field.txt", 0.63, 2580.85, nil, 0, 0, 13},
	} {
		v, err := ParseVLLMBenchThroughput(fixture(t, dir, c.file))
		if err != nil || *v.RequestThroughput != c.req || *v.TotalThroughput != c.total || v.Line != c.line {
			t.Errorf("%s: %v %+v", c.file, err, v)
			continue
		}
		if (c.output == nil) != (v.OutputThroughput == nil) || c.output != nil && *v.OutputThroughput != *c.output {
			t.Errorf("%s: output rate %v, want %v", c.file, v.OutputThroughput, c.output)
		}
		if c.prompt == 0 && (v.PromptTokens != nil || v.OutputTokens != nil) || c.prompt != 0 && (v.PromptTokens == nil || *v.PromptTokens != c.prompt || *v.OutputTokens != c.outTokens) {
			t.Errorf("%s: tokens %v %v, want %d %d", c.file, v.PromptTokens, v.OutputTokens, c.prompt, c.outTokens)
		}
	}
	// Progress redrawn with carriage returns on the result's line, the
	// multi-modal warning (with its colour codes), a fork's prefix.
	v, err := ParseVLLMBenchThroughput("Processed prompts: 100%|##| 10/10 [00:01<00:00]\rThroughput: 7.15 requests/s, 4656.00 total tokens/s, 1072.15 output tokens/s\n" +
		"\x1b[91mWARNING\x1b[0m: Multi-modal request with vllm backend detected. The following metrics are not accurate because image tokens are not counted. See vllm-project/vllm/issues/9778 for details.\n")
	if err != nil || *v.OutputThroughput != 1072.15 || !v.ImageTokensUncounted || v.Line != 1 {
		t.Errorf("carriage returns: %v %+v", err, v)
	}
	if v, err := ParseVLLMBenchThroughput("bs_64_input_128_output_128 Throughput: 1.00 requests/s, 256.00 total tokens/s, 128.00 output tokens/s\n"); err != nil || *v.TotalThroughput != 256 {
		t.Errorf("prefixed: %v %+v", err, v)
	}
	// Several runs pasted together: the first is kept, the others named.
	v, err = ParseVLLMBenchThroughput("# run 1\nThroughput: 1.84 requests/s, 2124.55 total tokens/s, 236.06 output tokens/s\nTotal num prompt tokens:  204800\nTotal num output tokens:  25600\n# run 2\nThroughput: 2.13 requests/s, 2458.73 total tokens/s, 273.19 output tokens/s\nTotal num prompt tokens:  204800\n")
	if err == nil || !strings.Contains(err.Error(), `line 6: a second "Throughput:" line (the output of several runs?): kept the one at line 2`) ||
		!strings.Contains(err.Error(), `line 7: a second "Total num prompt tokens" line`) || *v.RequestThroughput != 1.84 {
		t.Errorf("several runs: %v %+v", err, v)
	}
	// Damaged lines are named; a log without the result says so.
	v, err = ParseVLLMBenchThroughput("Throughput: 1.5 requests/s, nan total tokens/s, 3 output tokens/s\nTotal num output tokens:  12x\n")
	if err == nil || !strings.Contains(err.Error(), `line 1: not "Throughput: N requests/s`) || !strings.Contains(err.Error(), `line 2: total num output tokens "12x" is not a whole number`) || v.RequestThroughput != nil {
		t.Errorf("damaged: %v %+v", err, v)
	}
	if _, err := ParseVLLMBenchThroughput("INFO 05-01 15:32:08 model_runner.py:1057] Graph capturing finished in 3 secs.\nProcessed prompts:  33%|###  | 329/1000\n"); err == nil || !strings.Contains(err.Error(), "the run did not finish, or the output was cut") {
		t.Errorf("cut: %v", err)
	}
}

func ptr(f float64) *float64 { return &f }

func TestDCGMDiag(t *testing.T) {
	v, err := ParseDCGMDiag(fixture(t, "workloads/dcgmi-diag", "dcgm4.4.1-r2-8xB200-slurm-pcie-fail-warning.txt"))
	if err != nil || v.Version != "4.4.1" || v.Overall != "Fail" || len(v.DeviceIDs) != 8 || v.Tests[2].Name != "pcie" || v.Tests[2].GPUs["GPU7"] != "Pass" {
		t.Errorf("%v %+v", err, v)
	}
	if w := v.Tests[2].Warnings[0]; !strings.Contains(w, "Syntax error: value, object") || !strings.HasSuffix(w, "Restart DCGM. Rerun diagnostics.") {
		t.Errorf("a wrapped warning is joined back, words whole: %q", w)
	}
	v, _ = ParseDCGMDiag(fixture(t, "workloads/dcgmi-diag", "dcgm3.3.8-r3-failearly-8xH100-cuinit-fail.txt"))
	if v.Failed != 1 || v.Skipped != 3 || v.Tests[10].Raw != "Fail - All" || v.Tests[10].Result != "Fail" {
		t.Errorf("%+v", v.Tests)
	}
}

// A Warning wrapped over many rows is joined in linear work (it was joined
// with += per row: 2 s per MiB of rows).
func TestDCGMDiagLongWarningLinear(t *testing.T) {
	const head = "|-----  Hardware  ----------+------------------------------------------------|\n" +
		"| pcie                      | Fail - All                                     |\n" +
		"| Warning                   | start                                          |\n"
	const row = "|                           | y                                              |\n"
	linearWork(t, "wrapped warning rows", 4000, func(n int) {
		v, _ := ParseDCGMDiag(head + strings.Repeat(row, n))
		if len(v.Tests) != 1 || len(v.Tests[0].Warnings) != 1 || len(v.Tests[0].Warnings[0]) != len("start")+2*n {
			t.Fatalf("%d rows: %+v", n, v.Tests)
		}
	})
}

func TestGPUBurn(t *testing.T) {
	v, err := ParseGPUBurn(fixture(t, "workloads/gpu-burn", "gpu_burn-16gpu-FAULTY-negative-errors-tail.txt"))
	if err != nil || *v.Tested != 16 || v.Faulty != 16 || *v.GPUs[1].Errors != -524288000 {
		t.Errorf("%v %+v", err, v)
	}
	v, err = ParseGPUBurn(fixture(t, "workloads/gpu-burn", "gpu_burn-8xA100-80GB-doubles-tensorcores-superbench.txt"))
	if err != nil || v.OK != 8 || !v.Doubles || !v.TensorCores || v.GPUs[0].Name != "NVIDIA A100-SXM4-80GB" || *v.Progress != 100 {
		t.Errorf("%v %+v", err, v)
	}
	if _, err := ParseGPUBurn("GPU 0: NVIDIA A100 (UUID: GPU-1)\nBurning for 10 seconds.\n10.0%  proc'd: 1 (100 Gflop/s)   errors: 0   temps: 40 C \n"); err == nil || !strings.Contains(err.Error(), "did not finish") {
		t.Errorf("a cut run: %v", err)
	}
}

// A run that aborted, was killed or was cut before its summary is marked
// incomplete, with how far it got and the failure it printed.
func TestGPUBurnCutOff(t *testing.T) {
	const dir = "workloads/gpu-burn"
	for _, f := range []string{"gpu_burn-8xA100-80GB-doubles-tensorcores-superbench.txt", "gpu_burn-RTXA2000-no-progress-lines-OK.txt", "gpu_burn-16gpu-FAULTY-negative-errors-tail.txt"} {
		if v, _ := ParseGPUBurn(fixture(t, dir, f)); !v.Complete || v.Reason != "" {
			t.Errorf("%s: complete=%v %q", f, v.Complete, v.Reason)
		}
	}
	v, err := ParseGPUBurn(fixture(t, dir, "gpu_burn-RTXA500-stops-at-100pct-no-summary.txt"))
	if v.Complete || v.Reason != `the run stopped at 100.0% (line 12) with no "Tested N GPUs" summary: it did not finish, or its output was cut` || *v.Progress != 100 || *v.GPUs[0].Gflops != 3519 {
		t.Errorf("stops at 100%%: %q %+v", v.Reason, v)
	}
	if err == nil || err.Error() != `line 12: no "Tested N GPUs" summary after this: the run did not finish, or the output was cut` {
		t.Errorf("stops at 100%%: %v", err)
	}
	v, err = ParseGPUBurn(fixture(t, dir, "gpu_burn-GTX1650-sgemm-failure-died-aborting.txt"))
	if v.Complete || v.Reason != `gpu_burn aborted at 10.0% (line 4): every GPU's worker died (line 6: "No clients are alive!  Aborting"); line 3 says "Failure during compute: Error in \"SGEMM\": CUBLAS_STATUS_EXECUTION_FAILED"` ||
		!v.GPUs[0].Died || *v.GPUs[0].Errors != -1 || err == nil || !strings.HasPrefix(err.Error(), "line 6: gpu_burn aborted") {
		t.Errorf("died: %v %q %+v", err, v.Reason, v.GPUs)
	}
	v, _ = ParseGPUBurn(fixture(t, dir, "gpu_burn-TeslaT4-init-failed-died-aborting.txt"))
	if v.Complete || !strings.HasPrefix(v.Reason, "gpu_burn aborted at 0.0% (line 4)") || !strings.HasSuffix(v.Reason, `line 3 says "Couldn't init a GPU test: Error:"`) || !v.GPUs[0].Died || *v.GPUs[0].Errors != 0 {
		t.Errorf("init failed: %q %+v", v.Reason, v.GPUs)
	}
	// Killed while killing its workers (the old wording); a summary cut
	// after its first verdict; only died workers marked.
	v, err = ParseGPUBurn("GPU 0: Tesla K40m (UUID: GPU-1)\nGPU 1: Quadro M4000 (UUID: GPU-2)\n" +
		"13.1%  proc'd: -1 (0 Gflop/s) - 6636 (423 Gflop/s)   errors: 0  (DIED!)- 0   temps: 93 C - 57 C \nKilling processes.. ")
	if v.Complete || v.Reason != `the run stopped at 13.1% (line 3) while killing its workers (line 4), with no "Tested N GPUs" summary` || !v.GPUs[0].Died || v.GPUs[1].Died ||
		err == nil || !strings.HasPrefix(err.Error(), "line 4: no \"Tested N GPUs\" summary after \"Killing processes\"") {
		t.Errorf("killing: %v %q %+v", err, v.Reason, v.GPUs)
	}
	v, _ = ParseGPUBurn("100.0%  proc'd: 9 (1 Gflop/s) - 9 (1 Gflop/s)   errors: 0 - 0   temps: 40 C - 41 C\nKilling processes.. done\n\nTested 2 GPUs:\n\tGPU 0: OK\n")
	if v.Complete || v.Reason != "the summary says 2 GPUs were tested but gives 1 verdicts: the output was cut" {
		t.Errorf("cut summary: %q", v.Reason)
	}
}

// FuzzWorkloads feeds the workload parsers their fixtures, mutated.
func FuzzWorkloads(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(fixtures, "workloads", "*", "*"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(string(data))
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, name := range []string{"nccl-tests", "vllm-bench-serve", "vllm-bench-throughput", "dcgmi-diag", "gpu-burn"} {
			k, _ := Lookup(name)
			if v, _ := k.Parse(s); v == nil {
				t.Fatalf("%s returned nil", name)
			}
		}
	})
}
