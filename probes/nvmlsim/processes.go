package nvmlsim

import (
	"math"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// processes answers NVML's process and utilisation calls for GPU i from
// f: f's processes on it as compute processes (with their MIG instance,
// or none as NVML says it: 0xFFFFFFFF), none as graphics processes, and
// its utilisation (memory utilisation follows the GPU's, as a busy kernel
// reads memory).
func processes(d *server.Device, i int, f Faults) {
	var infos []nvml.ProcessInfo
	for _, p := range f.ProcessesOn(i) {
		info := nvml.ProcessInfo{Pid: p.PID, UsedGpuMemory: p.UsedMiB << 20, GpuInstanceId: math.MaxUint32, ComputeInstanceId: math.MaxUint32}
		if p.GPUInstance != nil {
			info.GpuInstanceId, info.ComputeInstanceId = uint32(*p.GPUInstance), 0
			if p.ComputeInstance != nil {
				info.ComputeInstanceId = uint32(*p.ComputeInstance)
			}
		}
		infos = append(infos, info)
	}
	d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return infos, nvml.SUCCESS }
	d.GetGraphicsRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.SUCCESS }
	u := f.UtilizationOf(i)
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		return nvml.Utilization{Gpu: u, Memory: u / 2}, nvml.SUCCESS
	}
}
