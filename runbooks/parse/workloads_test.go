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

// FuzzWorkloads feeds the workload parsers their fixtures, mutated.
func FuzzWorkloads(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(fixtures, "workloads", "*", "*"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(string(data))
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, name := range []string{"nccl-tests", "vllm-bench-serve", "dcgmi-diag", "gpu-burn"} {
			k, _ := Lookup(name)
			if v, _ := k.Parse(s); v == nil {
				t.Fatalf("%s returned nil", name)
			}
		}
	})
}
