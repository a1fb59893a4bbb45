package render

import (
	"testing"

	"github.com/gpulab/gpulab/probes/report"
)

// The one count of a probe run: a host without NVML or without a
// snapshot failed, a host with findings is flagged, not ok, and so is one
// whose NVML answers with no GPU.
func TestProbeTotal(t *testing.T) {
	one := []report.GPU{{Index: 0}}
	healthy := &report.Snapshot{NVML: report.NVMLState{Available: true}, GPUs: one}
	noNVML := &report.Snapshot{NVML: report.NVMLState{Available: false, Error: "libnvidia-ml.so.1 not found"}}
	gpu := 0
	flagged := &report.Snapshot{NVML: report.NVMLState{Available: true}, GPUs: one, XIDs: []report.XIDEvent{{Code: 79, GPU: &gpu}}}
	noGPU := &report.Snapshot{NVML: report.NVMLState{Available: true}}
	// g printed a whole snapshot and was lost before its probe ended:
	// no evidence, failed for that, never ok.
	got := ProbeTotal([]string{"a", "b", "c", "d", "e", "f", "g", "h"}, []*report.Snapshot{healthy, noNVML, flagged, nil, nil, nil, healthy, noGPU}, []string{"ok", "exit", "ok", "refused", "refused", "ok", "lost", "ok"})
	if want := "8 hosts: 1 ok, 2 flagged (c,h), 5 failed: 1 no NVML (b), 2 refused (d,e), 1 no snapshot (f), 1 lost (g)"; got != want {
		t.Errorf("ProbeTotal = %q, want %q", got, want)
	}
}
