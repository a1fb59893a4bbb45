package nvmlsim_test

import (
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpulab/gpulab/probes/collect"
	"github.com/gpulab/gpulab/probes/nvmlsim"
	"github.com/gpulab/gpulab/sim/spec"
)

// The simulated machine's processes reach the snapshot through the
// collector's real path: NVML's process list, then /proc/PID/comm and
// /proc/PID/cgroup under a tree WriteProc wrote, mapped to pods by
// report.ContainerFromCgroup.
func TestProcessesShowInTheSnapshot(t *testing.T) {
	gi := 2
	const uid = "3f0c6e0a-5b1d-4d1e-9c2b-7a6f5e4d3c2b"
	f := nvmlsim.Faults{
		MIG: map[int][]string{5: {"3g.20gb", "3g.20gb"}},
		Processes: []spec.Process{
			{GPU: 1, PID: 1001, Name: "python", UsedMiB: 2048,
				Cgroup: "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod3f0c6e0a_5b1d_4d1e_9c2b_7a6f5e4d3c2b.slice/cri-containerd-" + hex64 + ".scope"},
			{GPU: 3, PID: 4242, Name: "train", UsedMiB: 1000, Cgroup: "0::/system.slice/train.service"},
			{GPU: 5, PID: 77, Name: "infer", UsedMiB: 300, GPUInstance: &gi},
		},
		Utilization: map[int]uint32{1: 87},
	}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	proc := t.TempDir()
	if err := f.WriteProc(proc); err != nil {
		t.Fatal(err)
	}
	s := nvmlsim.DGXA100With(f)
	if r := s.Init(); r != nvml.SUCCESS {
		t.Fatalf("Init: %v", r)
	}
	snap := collect.Collect(s, collect.Options{Host: "sim", ProcRoot: proc})
	if len(snap.Processes) != 3 {
		t.Fatalf("%d processes, want 3: %+v", len(snap.Processes), snap.Processes)
	}
	p := snap.Processes[0]
	if p.GPU != 1 || p.PID != 1001 || p.Name != "python" || p.UsedMiB != 2048 || p.PodUID != uid || p.ContainerID != hex64 || p.GPUInstanceID != nil {
		t.Errorf("pod process = %+v, want GPU 1 PID 1001 python 2048 MiB in pod %s", p, uid)
	}
	if p := snap.Processes[1]; p.PID != 4242 || p.Name != "train" || p.PodUID != "" || p.ContainerID != "" {
		t.Errorf("system.slice process = %+v, want PID 4242 train in no pod", p)
	}
	if p := snap.Processes[2]; p.GPUInstanceID == nil || *p.GPUInstanceID != 2 || p.ComputeInstanceID == nil || *p.ComputeInstanceID != 0 {
		t.Errorf("MIG process = %+v, want GPU instance 2, compute instance 0", p)
	}
	g1 := snap.GPUs[1]
	if g1.Utilization == nil || g1.Utilization.GPUPercent != 87 || g1.Memory.UsedMiB != 4+2048 {
		t.Errorf("GPU1 utilization %+v, memory %+v; want 87%% and 2052 MiB used", g1.Utilization, g1.Memory)
	}
	if g0 := snap.GPUs[0]; g0.Utilization.GPUPercent != 0 || g0.Memory.UsedMiB != 4 {
		t.Errorf("GPU0 (idle) utilization %+v, memory %+v", g0.Utilization, g0.Memory)
	}
}

const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
