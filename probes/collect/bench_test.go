package collect

import (
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpulab/gpulab/probes/nvmlsim"
)

// BenchmarkCollectPerGPU is the snapshot's cost per GPU on the simulated
// DGX A100 (8 GPUs, every field answered): every NVML call under its
// deadline, on a goroutine of its own. The target is 20 ms of
// NVML time per GPU; the mock's calls take microseconds, so this measures
// the collector's own overhead. go test ./probes/collect -bench CollectPerGPU
func BenchmarkCollectPerGPU(b *testing.B) {
	s := nvmlsim.DGXA100()
	if r := s.Init(); r != nvml.SUCCESS {
		b.Fatal(r)
	}
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		Collect(s, Options{Host: "bench"})
	}
	perGPU := time.Since(start) / time.Duration(b.N*8)
	b.ReportMetric(float64(perGPU.Microseconds())/1000, "ms/GPU")
}
