package render

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/probes/report"
)

// The host's lines under the GPU table hold every finding its rows do
// not: a zombie on a GPU, a GPU NVML calls lost (its row was never
// read), the host's own; a GPU's own finding is in its row, not twice.
func TestHostFindingsShowWhatNoRowHolds(t *testing.T) {
	u := uint64(3)
	g := report.GPU{Index: 1, UUID: "GPU-1", ECC: report.ECC{Volatile: &report.ECCCounts{Uncorrected: u}}}
	g.Findings = nil
	for _, f := range report.GPUFindings(g) {
		g.Findings = append(g.Findings, f.Message)
	}
	s := &report.Snapshot{NVML: report.NVMLState{Available: true}, GPUs: []report.GPU{g},
		Processes: []report.Process{{GPU: 1, PID: 5130, Name: "train.py"}},
		HostState: report.HostState{ProcScanned: true, Stuck: []report.StuckProcess{{PID: 5130, Name: "train.py", State: "Z"}}},
		Errors:    []report.FieldError{{Field: "gpu[3]", GPU: ptrInt(3), Code: "GPU_IS_LOST", Message: "GPU is lost"}}}
	lines := HostFindings(s)
	joined := strings.Join(lines, "\n")
	for _, want := range []string{"zombie", "GPU3: the GPU is lost"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no line says %q:\n%s", want, joined)
		}
	}
	if slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, "uncorrected ECC") }) {
		t.Errorf("GPU1's own ECC finding is in its row and under the table:\n%s", joined)
	}
}

func ptrInt(i int) *int { return &i }
