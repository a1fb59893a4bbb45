package report

import (
	"fmt"
	"strconv"
	"strings"
)

// hostFindings are the host's faults the snapshot read: processes stuck
// on the GPUs and crash records from earlier boots.
//
//   - stuck-process: a process in state D with /dev/nvidia* open for the
//     whole sampling window: it waits inside the driver, and no GPU reset
//     can happen while it does (one reading is no evidence: a driver call
//     may sleep a moment). Its open files unreadable (another user's,
//     without root): unknown.
//   - zombie-gpu-process: a zombie NVML still lists: the driver keeps its
//     context and memory until it is reaped.
//   - pstore-crash: the kernel kept a crash record (panic, oops) from an
//     earlier boot: the node rebooted while nothing watched.
func hostFindings(s *Snapshot) []Finding {
	var out []Finding
	for _, p := range s.HostState.Stuck {
		// The process is named in the message and evidence: the health
		// events' entities are NVSentinel's GPU, GPU_UUID, PCI and NVLINK.
		who := fmt.Sprintf("pid %d (%s)", p.PID, p.Name)
		switch {
		case p.State == "D" && p.WholeWindow && len(p.Devices) > 0:
			out = append(out, Finding{Check: "stuck-process", Action: ActionReboot, Codes: []string{"D_STATE"},
				Message:  fmt.Sprintf("%s in state D holding %s for the whole %gs window", who, strings.Join(p.Devices, ", "), s.WindowSeconds),
				Entities: deviceEntities(s, p.Devices),
				Evidence: []string{fmt.Sprintf("/proc/%d/stat: state D at the snapshot and %gs later; /proc/%d/fd: %s", p.PID, s.WindowSeconds, p.PID, strings.Join(p.Devices, ", "))}})
		case p.State == "D" && p.WholeWindow && p.FDsUnread:
			out = append(out, Finding{Check: "stuck-process", Unknown: true, Action: ActionNone,
				Message:  fmt.Sprintf("%s in state D for the whole window; whether it holds a GPU is unknown (its open files are not readable: run the probe as root)", who),
				Evidence: []string{fmt.Sprintf("/proc/%d/fd: not readable", p.PID)}})
		case p.State == "Z":
			f := Finding{Check: "zombie-gpu-process", Action: ActionResetGPU,
				Message:  fmt.Sprintf("%s is a zombie NVML still lists: its parent (pid %d) has not reaped it", who, p.PPID),
				Evidence: []string{fmt.Sprintf("/proc/%d/stat: state Z, parent %d; NVML lists it as a GPU process", p.PID, p.PPID)}}
			var on []string
			for _, g := range s.Processes {
				if int(g.PID) == p.PID {
					f.Evidence = append(f.Evidence, fmt.Sprintf("GPU%d: %d MiB", g.GPU, g.UsedMiB))
					f.Entities = append(f.Entities, Entity{"GPU", strconv.Itoa(g.GPU)})
					on = append(on, fmt.Sprintf("GPU%d", g.GPU))
				}
			}
			if len(on) > 0 {
				f.Message = fmt.Sprintf("%s on %s is a zombie NVML still lists: its parent (pid %d) has not reaped it", who, strings.Join(on, ", "), p.PPID)
			}
			out = append(out, f)
		}
	}
	if ps := s.HostState.Pstore; ps != nil && len(ps.Records) > 0 {
		f := Finding{Check: "pstore-crash", Action: ActionNone,
			Message: fmt.Sprintf("%d crash record(s) in pstore from an earlier boot", len(ps.Records)+ps.More)}
		for _, r := range ps.Records {
			e := "/sys/fs/pstore/" + r.Name
			if r.Panic != "" {
				e += ": " + r.Panic
				if !strings.Contains(f.Message, ": ") {
					f.Message += ": " + r.Panic
				}
			}
			f.Evidence = append(f.Evidence, e)
		}
		out = append(out, f)
	}
	return out
}

// gpuCountFinding compares the GPUs NVML counts with the inventory's
// expect.gpus: one fewer is a GPU off the bus or never enumerated.
func gpuCountFinding(s *Snapshot) []Finding {
	if s.Expect == nil || s.Expect.GPUs == 0 || !GPUCountRead(s) || NVMLCount(s) >= s.Expect.GPUs {
		return nil
	}
	return []Finding{{Check: "gpu-count", Fatal: true, Action: ActionReboot,
		Message:  fmt.Sprintf("NVML counts %d GPU(s) where the inventory expects %d", NVMLCount(s), s.Expect.GPUs),
		Evidence: []string{fmt.Sprintf("nvmlDeviceGetCount: %d; expect.gpus = %d (lspci -d 10de: and the kernel log for a GPU that fell off the bus)", NVMLCount(s), s.Expect.GPUs)}}}
}

// deviceEntities names the GPUs /dev/nvidiaN devices are.
func deviceEntities(s *Snapshot, devices []string) []Entity {
	var out []Entity
	for _, d := range devices {
		n, err := strconv.Atoi(strings.TrimPrefix(d, "/dev/nvidia"))
		if err != nil {
			continue // nvidiactl, nvidia-uvm: the driver, not a GPU
		}
		if g, ok := gpuByIndex(s, n); ok {
			out = append(out, gpuEntities(g)...)
		} else {
			out = append(out, Entity{"GPU", strconv.Itoa(n)})
		}
	}
	return out
}

// hostChecks are the probe checks of the host's side, and whether a
// snapshot holds their evidence.
var hostChecks = []probeCheck{
	{name: "gpu-count", host: true, ready: func(s *Snapshot) bool { return s.Expect != nil && s.Expect.GPUs > 0 && GPUCountRead(s) },
		applies: expects("gpus", func(e *Expect) int { return e.GPUs }),
		why:     func(*Snapshot) string { return "NVML's GPU count was not read" },
		read: func(s *Snapshot) string {
			return fmt.Sprintf("NVML counts %d GPU(s); the inventory expects %d", NVMLCount(s), s.Expect.GPUs)
		}},
	{name: "stuck-process", host: true, why: procWhy, read: procRead, ready: func(s *Snapshot) bool {
		if !s.HostState.ProcScanned || s.HostState.Truncated {
			return false
		}
		for _, p := range s.HostState.Stuck {
			// In state D at one reading: a moment's sleep or a wedge,
			// undecided without a window; unreadable for the whole
			// window: undecided.
			if p.State == "D" && (s.WindowSeconds == 0 || p.WholeWindow && p.FDsUnread) {
				return false
			}
		}
		return true
	}},
	// A zombie is a finding when NVML still lists it: every GPU's process
	// list must have been read.
	{name: "zombie-gpu-process", host: true, read: procRead,
		ready: func(s *Snapshot) bool {
			return s.HostState.ProcScanned && !s.HostState.Truncated && processListsUnread(s) == ""
		},
		why: func(s *Snapshot) string {
			if s.HostState.ProcScanned && !s.HostState.Truncated {
				return processListsUnread(s)
			}
			return procWhy(s)
		}},
	{name: "pstore-crash", host: true, ready: func(s *Snapshot) bool { return s.HostState.Pstore != nil },
		why:  func(s *Snapshot) string { return "/sys/fs/pstore was not read: " + fieldError(s, "host.pstore") },
		read: func(*Snapshot) string { return "/sys/fs/pstore read: no crash record" }},
}

// procWhy says why the stuck-process scan's evidence is missing.
func procWhy(s *Snapshot) string {
	switch {
	case !s.HostState.ProcScanned:
		return "/proc was not read: " + fieldError(s, "host.processes")
	case s.HostState.Truncated:
		return "/proc held more processes, or more stuck ones, than the probe reads (65,536; 64)"
	case s.WindowSeconds == 0:
		return "a process was in state D at the one reading taken; only a sampling window (--window) tells a moment's sleep from a wedge"
	}
	return "a process stayed in state D for the whole window and its open files are not readable: run the probe as root"
}

// processListsUnread says which GPUs' process lists NVML did not give
// ("" when every GPU's was read).
func processListsUnread(s *Snapshot) string {
	var words []string
	for _, e := range UnreadGPUs(s) {
		words = append(words, fmt.Sprintf("GPU%d was not read (%s)", *e.GPU, e.Code))
	}
	for _, g := range s.GPUs {
		if g.Hung != "" {
			words = append(words, fmt.Sprintf("GPU%d hung in %s before its processes were read", g.Index, g.Hung))
		}
	}
	for _, e := range s.Errors {
		if strings.Contains(e.Field, "].processes.") {
			words = append(words, e.Field+" "+e.Code)
		}
	}
	if len(words) == 0 {
		return ""
	}
	return "NVML's process lists were not all read: " + strings.Join(words, ", ")
}

// procRead is what the stuck-process scan read where it found nothing.
func procRead(s *Snapshot) string {
	return "/proc read: no process in state D held a GPU device" + windowWords(s) + "; no zombie NVML lists as a GPU process"
}

// expects is a check's applies: none where the inventory gives no
// expect.KEY for the host.
func expects(key string, of func(*Expect) int) func(*Snapshot) string {
	return func(s *Snapshot) string {
		if s.Expect == nil || of(s.Expect) == 0 {
			return "the inventory gives no expect." + key + " for this host"
		}
		return ""
	}
}

// fieldError is the error s records for field, in words.
func fieldError(s *Snapshot, field string) string {
	for _, e := range s.Errors {
		if e.Field == field {
			return e.Code + ": " + e.Message
		}
	}
	return "not asked for"
}
