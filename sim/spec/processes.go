package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Process is a process running on a simulated GPU, as NVML lists it and as
// /proc shows it: its name (/proc/PID/comm) and the text of its
// /proc/PID/cgroup, from which the probe reads the pod it runs in
// ("0::/kubepods.slice/kubepods-pod<uid>.slice/cri-containerd-<id>.scope"
// for a Kubernetes pod, "0::/system.slice/train.service" for a process
// outside Kubernetes).
type Process struct {
	GPU     int    `json:"gpu"`
	PID     uint32 `json:"pid"`
	Name    string `json:"name"`
	UsedMiB uint64 `json:"used_mib"`
	// GPUInstance and ComputeInstance place the process in a MIG instance
	// of its GPU (required when the GPU is in MIG mode, refused when not);
	// ComputeInstance defaults to 0, the one compute instance the
	// simulation creates per GPU instance.
	GPUInstance     *int `json:"gpu_instance,omitempty"`
	ComputeInstance *int `json:"compute_instance,omitempty"`
	// Cgroup is the text of /proc/PID/cgroup; empty is the root cgroup
	// ("0::/").
	Cgroup string `json:"cgroup,omitempty"`
}

// maxComm is the longest process name /proc/PID/comm holds (TASK_COMM_LEN
// less the NUL).
const maxComm = 15

// validateProcesses reports the first process no DGX A100 could list, or a
// utilisation out of range.
func (f Faults) validateProcesses() error {
	byPID := map[uint32]Process{}
	for _, p := range f.Processes {
		if p.GPU < 0 || p.GPU >= GPUs {
			return fmt.Errorf("processes: PID %d: GPU %d: a DGX A100 has GPUs 0-%d", p.PID, p.GPU, GPUs-1)
		}
		if p.PID == 0 {
			return fmt.Errorf("processes: GPU %d: a process needs a PID > 0", p.GPU)
		}
		if p.Name == "" || len(p.Name) > maxComm || strings.ContainsAny(p.Name, "/\n\x00") {
			return fmt.Errorf("processes: PID %d: name %q: want 1-%d characters, no '/' or newline (as /proc/PID/comm)", p.PID, p.Name, maxComm)
		}
		if strings.ContainsRune(p.Cgroup, 0) {
			return fmt.Errorf("processes: PID %d: the cgroup text has a NUL byte", p.PID)
		}
		if prev, ok := byPID[p.PID]; ok && (prev.Name != p.Name || prev.Cgroup != p.Cgroup) {
			return fmt.Errorf("processes: PID %d is listed twice with different names or cgroups", p.PID)
		}
		byPID[p.PID] = p
		if err := f.validatePlacement(p); err != nil {
			return err
		}
		if used := f.processesMiB(p.GPU); used > MemoryFreeMiB {
			return fmt.Errorf("processes: GPU %d: its processes use %d MiB, more than its %d MiB free", p.GPU, used, MemoryFreeMiB)
		}
	}
	for i, u := range f.Utilization {
		if i < 0 || i >= GPUs {
			return fmt.Errorf("utilization: GPU %d: a DGX A100 has GPUs 0-%d", i, GPUs-1)
		}
		if u > 100 {
			return fmt.Errorf("utilization: GPU %d: %d%%: want 0-100", i, u)
		}
	}
	return nil
}

// validatePlacement checks a process's MIG instance against its GPU's
// layout.
func (f Faults) validatePlacement(p Process) error {
	if !f.MIGOn(p.GPU) {
		if p.GPUInstance != nil || p.ComputeInstance != nil {
			return fmt.Errorf("processes: PID %d: GPU %d is not in MIG mode: no gpu_instance or compute_instance", p.PID, p.GPU)
		}
		return nil
	}
	if p.GPUInstance == nil {
		return fmt.Errorf("processes: PID %d: GPU %d is in MIG mode: say which gpu_instance the process runs in", p.PID, p.GPU)
	}
	if p.ComputeInstance != nil && *p.ComputeInstance != 0 {
		return fmt.Errorf("processes: PID %d: compute instance %d: each simulated GPU instance has compute instance 0 only", p.PID, *p.ComputeInstance)
	}
	if !slices.ContainsFunc(f.Instances(p.GPU), func(g GPUInstance) bool { return g.ID == *p.GPUInstance }) {
		return fmt.Errorf("processes: PID %d: GPU %d has no GPU instance %d", p.PID, p.GPU, *p.GPUInstance)
	}
	return nil
}

// ProcessesOn lists the processes of gpu, in the order given.
func (f Faults) ProcessesOn(gpu int) []Process {
	var out []Process
	for _, p := range f.Processes {
		if p.GPU == gpu {
			out = append(out, p)
		}
	}
	return out
}

// UtilizationOf is gpu's utilisation in percent (0, idle, when unset).
func (f Faults) UtilizationOf(gpu int) uint32 { return f.Utilization[gpu] }

// processesMiB is the framebuffer gpu's processes use.
func (f Faults) processesMiB(gpu int) int {
	n := 0
	for _, p := range f.ProcessesOn(gpu) {
		n += int(p.UsedMiB)
	}
	return n
}

// WriteProc writes, under dir, what /proc shows of f's processes: for
// each PID a directory with comm (the name and a newline) and cgroup (the
// process's cgroup text, "0::/" when it has none). The probe reads a
// simulated machine's processes there, by its real code path.
func (f Faults) WriteProc(dir string) error {
	for _, p := range f.Processes {
		pd := filepath.Join(dir, strconv.FormatUint(uint64(p.PID), 10))
		if err := os.MkdirAll(pd, 0o700); err != nil {
			return err
		}
		cg := p.Cgroup
		if cg == "" {
			cg = "0::/"
		}
		if !strings.HasSuffix(cg, "\n") {
			cg += "\n"
		}
		if err := os.WriteFile(filepath.Join(pd, "comm"), []byte(p.Name+"\n"), 0o600); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(pd, "cgroup"), []byte(cg), 0o600); err != nil {
			return err
		}
	}
	return nil
}
