package spec

import (
	"cmp"
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
	// State is the process's state in /proc/PID/stat: "" (sleeping, S),
	// "D" (uninterruptible: stuck in the driver, its /dev/nvidia* devices
	// open) or "Z" (a zombie its parent has not reaped, still listed by
	// NVML).
	State string `json:"state,omitempty"`
}

// States a simulated process may be in.
var processStates = []string{"", "S", "R", "D", "Z"}

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
		if !slices.Contains(processStates, p.State) {
			return fmt.Errorf("processes: PID %d: state %q: want D (stuck in the driver), Z (a zombie), or none", p.PID, p.State)
		}
		if prev, ok := byPID[p.PID]; ok && (prev.Name != p.Name || prev.Cgroup != p.Cgroup || prev.State != p.State) {
			return fmt.Errorf("processes: PID %d is listed twice with different names, cgroups or states", p.PID)
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
// each PID a directory with comm (the name and a newline), cgroup (the
// process's cgroup text, "0::/" when it has none) and stat (its state and
// parent), and for a process in state D its open files (fd/: the
// driver's control and UVM devices and its GPUs' /dev/nvidiaN). The probe
// reads a simulated machine's processes there, by its real code path.
func (f Faults) WriteProc(dir string) error {
	gpus := map[uint32][]int{}
	for _, p := range f.Processes {
		gpus[p.PID] = append(gpus[p.PID], p.GPU)
	}
	done := map[uint32]bool{}
	for _, p := range f.Processes {
		if done[p.PID] {
			continue
		}
		done[p.PID] = true
		if err := writeProcess(dir, p, gpus[p.PID]); err != nil {
			return err
		}
	}
	return nil
}

func writeProcess(dir string, p Process, gpus []int) error {
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
	state, ppid := cmp.Or(p.State, "S"), max(p.PID-1, 1)
	stat := fmt.Sprintf("%d (%s) %s %d %d %d 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n", p.PID, p.Name, state, ppid, p.PID, p.PID)
	for name, text := range map[string]string{"comm": p.Name + "\n", "cgroup": cg, "stat": stat} {
		if err := os.WriteFile(filepath.Join(pd, name), []byte(text), 0o600); err != nil {
			return err
		}
	}
	if p.State != "D" {
		return nil
	}
	fd := filepath.Join(pd, "fd")
	if err := os.MkdirAll(fd, 0o700); err != nil {
		return err
	}
	links := []string{"/dev/null", "/dev/nvidiactl", "/dev/nvidia-uvm"}
	for _, g := range gpus {
		links = append(links, fmt.Sprintf("/dev/nvidia%d", g))
	}
	for i, target := range links {
		if err := os.Symlink(target, filepath.Join(fd, strconv.Itoa(i))); err != nil {
			return err
		}
	}
	return nil
}

// WritePstore writes f's crash records under dir, as /sys/fs/pstore
// holds them.
func (f Faults) WritePstore(dir string) error {
	for name, text := range f.Pstore {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			return err
		}
	}
	return nil
}
