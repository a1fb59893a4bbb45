package parse

import (
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Host fault kinds: what the kernel says about the host under the GPUs
// that looks like a GPU fault to the job that died of it.
const (
	HostOOM      = "oom-kill"  // the OOM killer killed a process
	HostHungTask = "hung-task" // a task blocked (state D) past the hung-task timeout
	HostEDAC     = "edac"      // a memory controller counted ECC errors
	HostMCE      = "mce"       // a machine check: the CPU, its caches or memory
)

// HostEvent is one host fault the kernel log states.
type HostEvent struct {
	Kind string `json:"kind"`
	Time string `json:"time,omitempty"`
	Line int    `json:"line"`
	// Fatal: an uncorrected memory error (EDAC UE), a machine check the
	// kernel calls fatal or uncorrected, a task hung inside the NVIDIA
	// driver.
	Fatal bool `json:"fatal,omitempty"`
	// Process and PID: the OOM killer's victim, the hung task.
	Process string `json:"process,omitempty"`
	PID     int    `json:"pid,omitempty"`
	// Cgroup is true for an OOM kill inside a memory cgroup (a pod or a
	// unit over its own limit), false for the whole host out of memory.
	Cgroup bool `json:"cgroup,omitempty"`
	// GPU is true for a hung task whose call trace runs through the
	// NVIDIA driver ([nvidia], [nvidia_uvm]).
	GPU bool `json:"gpu,omitempty"`
	// Seconds is how long a hung task was blocked; Count how many errors
	// an EDAC line counts.
	Seconds int `json:"seconds,omitempty"`
	Count   int `json:"count,omitempty"`
	// Where is the DIMM an EDAC line names, as the kernel writes it.
	Where   string `json:"where,omitempty"`
	Message string `json:"message"`
}

// hungTrace is how many messages after a hung task's line its call trace
// is looked through for the NVIDIA driver.
const hungTrace = 64

// readHostMessage records a host fault the message states: its text is
// the kernel's, after the log prefix (a line of another program, or text
// that is not a kernel line, never starts with these).
func (k *KernelLog) readHostMessage(t, ts string, line int) {
	if k.hung > 0 {
		switch {
		case line-k.hungLine > hungTrace || strings.HasPrefix(t, "INFO: task "):
			// The driver's own lines (NVRM:) may come between the trace's:
			// only the next hung task, or the trace's length, ends it.
			k.hung = 0
		case strings.Contains(t, "[nvidia"):
			h := &k.Host[k.hung-1]
			h.GPU, h.Fatal = true, true
		}
	}
	e, ok := hostEvent(t)
	if !ok {
		return
	}
	e.Time, e.Line, e.Message = ts, line, t
	k.Host = append(k.Host, e)
	if e.Kind == HostHungTask {
		k.hung, k.hungLine = len(k.Host), line
	}
}

// hostEvent reads one kernel message as a host fault.
func hostEvent(t string) (HostEvent, bool) {
	switch {
	case strings.HasPrefix(t, "Out of memory: Kill"), strings.HasPrefix(t, "Memory cgroup out of memory: Kill"):
		// "Out of memory: Killed process 49358 (grep) ..." (older kernels:
		// "Kill process N (name) score ..."), "Memory cgroup out of
		// memory: Killed process ...".
		e := HostEvent{Kind: HostOOM, Cgroup: strings.HasPrefix(t, "Memory cgroup")}
		rest := t[strings.Index(t, "process ")+len("process "):]
		if sp := strings.IndexByte(rest, ' '); sp > 0 {
			e.PID, _ = strconv.Atoi(rest[:sp])
			// The name runs to the ")" before the numbers that follow it
			// (" total-vm:", " score"), or the line's last ")": a name may
			// hold parentheses.
			name := strings.TrimPrefix(rest[sp+1:], "(")
			end := strings.LastIndexByte(name, ')')
			for _, after := range []string{") total-vm:", ") score", ")\n"} {
				if i := strings.Index(name, after); i >= 0 {
					end = i
					break
				}
			}
			if end >= 0 {
				e.Process = name[:end]
			}
		}
		return e, true
	case strings.HasPrefix(t, "INFO: task ") && strings.Contains(t, " blocked for more than "):
		// "INFO: task nvidia-smi:1346229 blocked for more than 120 seconds."
		who, after, _ := strings.Cut(strings.TrimPrefix(t, "INFO: task "), " blocked for more than ")
		e := HostEvent{Kind: HostHungTask}
		if i := strings.LastIndexByte(who, ':'); i > 0 {
			e.Process = who[:i]
			e.PID, _ = strconv.Atoi(who[i+1:])
		}
		e.Seconds, _ = strconv.Atoi(strings.Fields(after + " ")[0])
		return e, true
	case strings.HasPrefix(t, "EDAC MC"):
		return edacEvent(t)
	case strings.HasPrefix(t, "mce: "), strings.HasPrefix(t, "[Hardware Error]:"), hardwareErrorRE.MatchString(t),
		strings.HasPrefix(t, "Kernel panic - not syncing: Fatal machine check"):
		return mceEvent(t)
	}
	return HostEvent{}, false
}

// hardwareErrorRE is APEI/GHES's form: "{1}[Hardware Error]: ...".
var hardwareErrorRE = regexp.MustCompile(`^\{\d+\}\[Hardware Error\]: `)

// edacEvent reads "EDAC MC0: 5555 CE memory read error on
// CPU_SrcID#0_Ha#0_Chan#0_DIMM#0 (channel:0 ...)": a count of corrected
// (CE) or uncorrected (UE) errors. "EDAC MC: Ver: 3.0.0", "EDAC MC0:
// Giving out device ..." and other banners are not errors.
func edacEvent(t string) (HostEvent, bool) {
	_, rest, ok := strings.Cut(t, ": ")
	f := strings.Fields(rest)
	if !ok || len(f) < 1 {
		return HostEvent{}, false
	}
	if f[0] == "CE" || f[0] == "UE" {
		// Older drivers: "EDAC MC0: UE page 0x0, offset 0x0, ...": one error.
		f = append([]string{"1"}, f...)
	}
	if len(f) < 2 || (f[1] != "CE" && f[1] != "UE") {
		return HostEvent{}, false
	}
	n, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil && strings.Trim(f[0], "0123456789") == "" {
		n = math.MaxInt32 // more errors than a number holds: still errors
	} else if err != nil || n == 0 {
		return HostEvent{}, false
	}
	e := HostEvent{Kind: HostEDAC, Count: int(min(n, math.MaxInt32)), Fatal: f[1] == "UE"}
	if _, on, ok := strings.Cut(rest, " on "); ok {
		e.Where, _, _ = strings.Cut(on, " (")
	}
	return e, true
}

// mceEvent reads a machine-check line. Only the lines that say what
// happened are events: "Machine check events logged" (severity in the
// lines after it, or in mcelog/rasdaemon), "Corrected error", "System
// Fatal error", "Uncorrected ...", "Memory error not recovered"; the
// register dumps after them are not.
func mceEvent(t string) (HostEvent, bool) {
	lower := strings.ToLower(t)
	switch {
	case strings.Contains(lower, "fatal") || strings.Contains(lower, "uncorrected") || strings.Contains(lower, "not recovered") ||
		strings.Contains(lower, "machine check exception") || strings.Contains(lower, "context corrupt"):
		return HostEvent{Kind: HostMCE, Fatal: true}, true
	case strings.Contains(lower, "machine check events logged") || strings.Contains(lower, "corrected error") ||
		strings.Contains(lower, "event severity: corrected"):
		return HostEvent{Kind: HostMCE}, true
	}
	return HostEvent{}, false
}
