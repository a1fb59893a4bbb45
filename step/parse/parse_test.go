package parse

import (
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.json from the parsers' output")

const fixtures = "../../testdata/fixtures"

// TestGolden parses every fixture of every kind and compares the JSON with
// testdata/golden/KIND/FILE.json (go test ./step/parse -update rewrites
// them; review the diff). Errors are part of the golden: a damaged fixture
// must keep failing the same way.
func TestGolden(t *testing.T) {
	for _, k := range Kinds() {
		for _, dir := range k.Fixtures {
			files, _ := filepath.Glob(filepath.Join(fixtures, dir, "*"))
			if len(files) == 0 {
				t.Errorf("%s: no fixtures in %s", k.Name, dir)
			}
			for _, f := range files {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				v, perr := k.Parse(string(data))
				got := map[string]any{"value": v}
				if perr != nil {
					got["error"] = strings.Split(perr.Error(), "\n")
				}
				out, _ := json.MarshalIndent(got, "", "  ")
				golden := filepath.Join("testdata", "golden", k.Name, filepath.Base(f)+".json")
				if *update {
					os.MkdirAll(filepath.Dir(golden), 0o755)
					os.WriteFile(golden, append(out, '\n'), 0o644)
					continue
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Errorf("%s: %v (go test ./step/parse -update)", golden, err)
					continue
				}
				if string(want) != string(out)+"\n" {
					t.Errorf("%s %s differs from %s", k.Name, filepath.Base(f), golden)
				}
			}
		}
	}
}

func fixture(t *testing.T, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtures, dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestErrorsQuoteAtMostTheStartOfALine feeds every parser a megabyte-long
// line and many short bad lines: each error quotes at most MaxQuoted bytes
// of the input (with the line's length), and at most MaxProblems problems
// are listed.
func TestErrorsQuoteAtMostTheStartOfALine(t *testing.T) {
	long := strings.Repeat("GPU0 X NV12 é", 1<<20/14)
	inputs := map[string]string{
		"a long line":           "GPU0\tGPU1\n" + long + "\n",
		"a long line first":     long + "\n",
		"a long indented line":  "Attached GPUs : 1\nGPU 00000000:07:00.0\n" + long + "\n",
		"a long labelled value": "============ Serving Benchmark Result ============\nSuccessful requests: " + long + "\n",
		"many bad lines":        strings.Repeat("!? not output\n", 10000),
	}
	for _, k := range Kinds() {
		for name, in := range inputs {
			_, err := k.Parse(in)
			if err == nil {
				continue
			}
			msg := err.Error()
			lines := strings.Split(msg, "\n")
			if len(lines) > MaxProblems+1 {
				t.Errorf("%s, %s: %d problems listed, want at most %d and a count", k.Name, name, len(lines), MaxProblems)
			}
			for _, l := range lines {
				if len(l) > MaxQuoted+200 {
					t.Errorf("%s, %s: a %d-byte error: %.300s", k.Name, name, len(l), l)
					break
				}
			}
		}
	}
}

func TestClipped(t *testing.T) {
	long := strings.Repeat("a", MaxQuoted-1) + "é" + strings.Repeat("b", 100)
	want := `line 3: not understood: "` + strings.Repeat("a", MaxQuoted-1) + `"… (301 bytes)`
	if got := errorf(3, "not understood: %q", long).Error(); got != want {
		t.Errorf("errorf(%%q, 301 bytes) = %s, want %s", got, want)
	}
	if got := errorf(3, "short: %q", "ok").Error(); got != `line 3: short: "ok"` {
		t.Errorf("errorf(%%q, short) = %s", got)
	}
	var e errs
	for i := range MaxProblems + 5 {
		e.add(i+1, "bad")
	}
	if got := strings.Split(e.err().Error(), "\n"); len(got) != MaxProblems+1 || got[MaxProblems] != "and 5 more problems" {
		t.Errorf("%d problems reported as %q", MaxProblems+5, got)
	}
}

// allocated is how many bytes f allocates.
//
// The count is the whole process's: what the runtime, the race detector
// or another goroutine allocates meanwhile adds to it (a busy machine put
// TestDmesgXidMemoryPerLine over its budget). That noise only adds, so
// the least of three runs is what f itself allocates.
func allocated(f func()) uint64 {
	least := uint64(math.MaxUint64)
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

// linearWork fails t when the bytes f allocates for an input of 4n units
// are more than 8 times those for n units: linear work gives 4 times,
// quadratic 16.
func linearWork(t *testing.T, what string, n int, f func(n int)) {
	t.Helper()
	f(n) // warm up (regexp machines, pools)
	small, big := allocated(func() { f(n) }), allocated(func() { f(4 * n) })
	t.Logf("%s: %d units allocate %d bytes, %d units %d bytes", what, n, small, 4*n, big)
	if big > 8*small {
		t.Errorf("%s: %d units allocate %d bytes, %d units %d bytes (%.1f times): quadratic", what, n, small, 4*n, big, float64(big)/float64(small))
	}
}

// TestNotTheCommandsOutput: what a host prints when the command is not
// there, or answers with an error, is not the command's output, and no
// parser may read it as an answer (a shell's "command not found" is not
// "no MIG device", an error is not "no link"). Empty output is an answer
// only where the command prints nothing when it has nothing to list.
func TestNotTheCommandsOutput(t *testing.T) {
	emptyIsAnAnswer := map[string]string{
		"kubectl-get-events": "kubectl writes \"No resources found\" to stderr",
		"rdma-link":          "rdma link prints nothing on a host without RDMA devices",
	}
	for _, k := range Kinds() {
		for _, out := range []string{"", "  \n", "bash: line 1: " + k.Name + ": command not found\n", "error: You must be logged in to the server (Unauthorized)\n", "sudo: a password is required\n"} {
			_, err := k.Parse(out)
			if strings.TrimSpace(out) == "" && emptyIsAnAnswer[k.Name] != "" {
				if err != nil {
					t.Errorf("%s on empty output: %v; want no error (%s)", k.Name, err, emptyIsAnAnswer[k.Name])
				}
				continue
			}
			if err == nil {
				t.Errorf("%s took %q as its command's output", k.Name, out)
			}
		}
	}
}

// TestCutOutputIsNotWhole: each of these outputs, cut after its first lines
// (head -n, a connection lost), reads as cut, not as a smaller machine: a
// two-node numactl that announced eight, a topology matrix with two of
// its eight rows, a dcgmi diag table without its end.
func TestCutOutputIsNotWhole(t *testing.T) {
	for _, tc := range []struct {
		kind, fixture string
		keep          int
		want          string
	}{
		{"numactl-hardware", "numactl-hardware/asus-esc8000a-e12-2node-epyc9374f.txt", 4, "2 nodes announced, 1 listed: the output was cut"},
		{"numactl-hardware", "numactl-hardware/asus-esc8000a-e12-2node-epyc9374f.txt", 7, "no node distances table"},
		{"nvidia-smi-topo", "nvidia-smi-topo-m/a100-8gpu-nv12-17nic-mlx5-bond.txt", 3, "have no row (GPU2, GPU3"},
		{"dcgmi-diag", "workloads/dcgmi-diag/dcgm4.4.1-r2-8xB200-slurm-pcie-fail-warning.txt", 12, "without its closing border: the output was cut"},
	} {
		data, err := os.ReadFile("../../testdata/fixtures/" + tc.fixture)
		if err != nil {
			t.Fatal(err)
		}
		k, _ := Lookup(tc.kind)
		if _, err := k.Parse(string(data)); err != nil {
			t.Fatalf("%s whole: %v", tc.fixture, err)
		}
		head := strings.Join(strings.SplitAfter(string(data), "\n")[:tc.keep], "")
		v, err := k.Parse(head)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s cut to %d lines: %v, want an error saying %q", tc.fixture, tc.keep, err, tc.want)
		}
		if v == nil {
			t.Errorf("%s cut to %d lines: no value: the part read is kept as evidence of a failure", tc.fixture, tc.keep)
		}
	}
}
