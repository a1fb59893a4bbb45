package collect

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpulab/gpulab/probes/nvmlsim"
	"github.com/gpulab/gpulab/probes/report"
)

// BenchmarkCollectPerGPU is the snapshot's cost per GPU on the simulated
// DGX A100 (8 GPUs, every field answered): every NVML call under its
// deadline, on a goroutine of its own. The target is 20 ms of
// NVML time per GPU; the mock's calls take microseconds, so this measures
// the collector's own overhead (the host scan reads an empty /proc here:
// BenchmarkHostScan measures it). go test ./probes/collect -bench CollectPerGPU
func BenchmarkCollectPerGPU(b *testing.B) {
	s := nvmlsim.DGXA100()
	if r := s.Init(); r != nvml.SUCCESS {
		b.Fatal(r)
	}
	b.ReportAllocs()
	proc := b.TempDir()
	start := time.Now()
	for b.Loop() {
		Collect(s, Options{Host: "bench", ProcRoot: proc})
	}
	perGPU := time.Since(start) / time.Duration(b.N*8)
	b.ReportMetric(float64(perGPU.Microseconds())/1000, "ms/GPU")
}

// BenchmarkHostScan is the stuck-process scan of this machine's /proc:
// every process's stat, and the open files of those in state D. It
// reports the time per process. go test ./probes/collect -bench HostScan
func BenchmarkHostScan(b *testing.B) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		b.Skip("no /proc on this machine:", err) // the scan reads nothing else
	}
	procs := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			procs++
		}
	}
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		c := &collector{snap: &report.Snapshot{}, opts: Options{ProcRoot: "/proc"}}
		c.stuckProcesses()
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N*max(procs, 1)), "µs/process")
}
