package labs

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/probes/report"
)

// Environment is a host's declaration in the lab record: what the
// conclusion held on. Fields the host could not give stay empty.
type Environment struct {
	Kernel string   `json:"kernel,omitempty"`
	Driver string   `json:"driver,omitempty"`
	CUDA   string   `json:"cuda,omitempty"`
	NVML   string   `json:"nvml,omitempty"`
	GPUs   []string `json:"gpus"` // "0: NVIDIA A100-SXM4-80GB, 81920 MiB, MIG Disabled"
	// Components maps a component of the GPU stack found on the host
	// (nvidia-ctk, dcgmi, docker, containerd, kubelet, ...) to the first
	// line its version flag prints, as it printed it.
	Components map[string]string `json:"components,omitempty"`
	// Source says where the GPU lines come from: "probe VERSION (NVML)"
	// or "nvidia-smi"; Probe says why the probe could not give them.
	Source string `json:"source,omitempty"`
	Probe  string `json:"probe,omitempty"`
	// Simulated marks a declaration read from the probe's simulator: no
	// conclusion about real hardware may be drawn from such a run.
	Simulated bool   `json:"simulated,omitempty"`
	Error     string `json:"error,omitempty"`
}

// envCommand reads the declaration in one round trip; every part may fail
// on its own (no driver, no nvidia-smi) without hiding the others.
const envCommand = `uname -sr; ` +
	`nvidia-smi --query-gpu=index,name,driver_version,memory.total,mig.mode.current --format=csv,noheader 2>/dev/null | sed 's/^/gpu /'; ` +
	`nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/cuda \1/p' | head -1; ` +
	`for c in ` + componentCommands + `; do set -- $c; command -v "$1" >/dev/null 2>&1 || continue; ` +
	`v=$(timeout 5 "$@" 2>&1 | grep -m1 '[^[:space:]]'); [ -n "$v" ] && printf 'component %s %s\n' "$1" "$v"; done; true`

// componentCommands are the GPU stack's components whose versions the
// declaration records, as the first line each prints.
const componentCommands = `"nvidia-ctk --version" "nvidia-container-cli --version" "dcgmi --version" "nv-fabricmanager --version" ` +
	`"docker --version" "containerd --version" "crio --version" "kubelet --version" "ofed_info -s"`

func captureEnvironment(ctx context.Context, conn *orchestrator.Conn) Environment {
	r := conn.Run(ctx, "environment", envCommand, orchestrator.RunOptions{Timeout: 30 * time.Second})
	env := parseEnvironment(string(r.Stdout))
	if len(env.GPUs) > 0 {
		env.Source = "nvidia-smi"
	}
	if r.Class != orchestrator.OK {
		env.Error = r.Class.String() + ": " + orchestrator.FirstLine(string(r.Stderr)+r.Err)
	}
	return env
}

// fromProbe fills the GPU part of the declaration from a probe snapshot,
// which knows more than nvidia-smi's query (MIG instances, NVML version);
// without NVML on the host the nvidia-smi lines stay and the reason is kept.
func (env *Environment) fromProbe(s *report.Snapshot, r orchestrator.Result) {
	switch {
	case s == nil:
		env.Probe = "the probe gave no snapshot: " + orchestrator.FirstLine(string(r.Stderr)+" "+r.Err)
		return
	case !s.NVML.Available:
		env.Probe = "no NVML on the host: " + s.NVML.Error
		return
	}
	env.Source = "probe " + s.ProbeVersion + " (NVML)"
	env.Simulated = env.Simulated || s.Simulated
	env.Driver, env.NVML = s.DriverVersion, s.NVMLVersion
	if s.CUDADriverVersion != "" {
		env.CUDA = s.CUDADriverVersion
	}
	env.GPUs = []string{}
	for _, g := range s.GPUs {
		line := fmt.Sprintf("%d: %s", g.Index, g.Name)
		if g.Memory != nil {
			line += fmt.Sprintf(", %d MiB", g.Memory.TotalMiB)
		}
		env.GPUs = append(env.GPUs, line+", "+migLayout(g.MIG))
	}
}

// migLayout says a GPU's MIG mode and its instances by profile:
// "MIG enabled: 3g.40gb ×2, 1g.10gb" (a pending change noted).
func migLayout(m report.MIG) string {
	if m.Current == "" {
		return "MIG not supported"
	}
	out := "MIG " + m.Current
	if m.Pending != "" && m.Pending != m.Current {
		out += " (" + m.Pending + " after reset)"
	}
	var order []string
	n := map[string]int{}
	for _, gi := range m.GPUInstances {
		if n[gi.Profile] == 0 {
			order = append(order, gi.Profile)
		}
		n[gi.Profile]++
	}
	for k, p := range order {
		sep := ", "
		if k == 0 {
			sep = ": "
		}
		out += sep + p
		if n[p] > 1 {
			out += fmt.Sprintf(" ×%d", n[p])
		}
	}
	return out
}

// parseEnvironment reads envCommand's output: the kernel line, "gpu "
// lines of nvidia-smi's CSV query, and a "cuda " line.
func parseEnvironment(out string) Environment {
	env := Environment{GPUs: []string{}}
	for i, l := range strings.Split(strings.TrimSpace(out), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case i == 0:
			env.Kernel = l
		case strings.HasPrefix(l, "gpu "):
			f := strings.Split(strings.TrimPrefix(l, "gpu "), ", ")
			if len(f) == 5 {
				env.Driver = f[2]
				env.GPUs = append(env.GPUs, f[0]+": "+f[1]+", "+f[3]+", MIG "+f[4])
			}
		case strings.HasPrefix(l, "cuda "):
			env.CUDA = strings.TrimPrefix(l, "cuda ")
		case strings.HasPrefix(l, "component "):
			if name, v, ok := strings.Cut(strings.TrimPrefix(l, "component "), " "); ok {
				if env.Components == nil {
					env.Components = map[string]string{}
				}
				env.Components[name] = strings.TrimSpace(v)
			}
		}
	}
	return env
}

// stabilityCommand reads, in one round trip, what the record's Stability
// column reports as changes over the run: the kernel log's Xid and
// out-of-memory lines with their timestamps, its first and last lines
// (where the ring buffer starts and ends), and how many GPUs the driver
// lists. Where kernel.dmesg_restrict refuses dmesg, it asks sudo without a
// password (sudo -n: it never waits for one). A part the host cannot give
// (dmesg refused, no driver) is left out. The kernel log's lines are matched before its first line is read:
// a ring that wraps in between can only lose lines older than that first
// line, never ones the count kept.
const stabilityCommand = `k=; if dmesg >/dev/null 2>&1; then k=dmesg; ` +
	`elif sudo -n dmesg >/dev/null 2>&1; then k='sudo -n dmesg'; fi; ` +
	`if [ -n "$k" ]; then ` +
	`echo '@xid'; $k | grep 'NVRM: Xid' | tail -n 4096; ` +
	`echo '@oom'; $k | grep -i 'out of memory' | tail -n 4096; ` +
	`echo '@first'; $k | head -n 1; echo '@last'; $k | tail -n 1; fi; ` +
	`n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU '); [ "$n" -gt 0 ] && echo "@gpus $n"; ` +
	`echo "@boot $(cat /proc/sys/kernel/random/boot_id 2>/dev/null)"; echo '@end'`

// stabilityLines is how many of each kind of line stabilityCommand keeps
// (the newest).
const stabilityLines = 4096

// kernelState is the kernel log and the GPUs at one moment: what
// stabilityCommand read.
type kernelState struct {
	readable bool // dmesg answered
	// first and last are the timestamps (seconds since boot) of the log's
	// first and last lines; ok says both were there and stamped.
	first, last float64
	stamped     bool
	// lines are the Xid and OOM lines' timestamps; unstamped counts those
	// without one.
	lines     map[string][]float64
	unstamped map[string]int
	gpus      int64 // 0: the driver listed none (or is not there)
	// empty: the log was read and held no line at all (cleared with
	// dmesg -C): every stamped line after it is new.
	empty bool
	// boot is the kernel's boot_id ("" where it cannot be read): it
	// changes when the host reboots. complete says the read ran to its
	// end (a lost connection, a cut output leave it false).
	boot     string
	complete bool
}

// stabilityCounts reads stabilityCommand's output.
func stabilityCounts(out string) kernelState {
	k := kernelState{lines: map[string][]float64{}, unstamped: map[string]int{}}
	var section string
	var firstOK, lastOK, firstSeen, lastSeen bool
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "@gpus "):
			fmt.Sscan(strings.TrimPrefix(l, "@gpus "), &k.gpus)
			continue
		case strings.HasPrefix(l, "@boot"):
			k.boot = strings.TrimSpace(strings.TrimPrefix(l, "@boot"))
			continue
		case strings.TrimSpace(l) == "@end":
			k.complete = true
			continue
		case strings.HasPrefix(l, "@"):
			section, k.readable = strings.TrimPrefix(strings.TrimSpace(l), "@"), true
			continue
		case strings.TrimSpace(l) == "":
			continue
		}
		at, ok := kmsgStamp(l)
		switch section {
		case "xid", "oom":
			if ok {
				k.lines[section] = append(k.lines[section], at)
			} else {
				k.unstamped[section]++
			}
		case "first":
			k.first, firstOK, firstSeen = at, ok, true
		case "last":
			k.last, lastOK, lastSeen = at, ok, true
		}
	}
	k.stamped = firstOK && lastOK
	k.empty = k.readable && !firstSeen && !lastSeen
	return k
}

// kmsgStamp reads dmesg's default timestamp, "[ 1234.567890] ": seconds
// since boot.
func kmsgStamp(line string) (float64, bool) {
	rest, ok := strings.CutPrefix(line, "[")
	if !ok {
		return 0, false
	}
	stamp, _, ok := strings.Cut(rest, "]")
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(stamp), 64)
	return v, err == nil
}

func countStability(ctx context.Context, conn *orchestrator.Conn) kernelState {
	r := conn.Run(ctx, "stability", stabilityCommand, orchestrator.RunOptions{Timeout: 30 * time.Second, MaxOutput: 4 << 20})
	if r.Truncated || r.Class != orchestrator.OK {
		return kernelState{} // not complete: nothing is read from it
	}
	return stabilityCounts(string(r.Stdout))
}

// StabilityMetrics are measured by every run (criteria may read them):
// new Xid lines, new out-of-memory kills, GPUs the driver no longer lists.
var StabilityMetrics = []string{"xid", "oom", "gpu_lost"}

// stabilityMetrics are the run's changes: the Xid lines (xid) and OOM
// kills (oom) the kernel logged after the run started, counted by their
// timestamps against the log's last line at the start, and the GPUs the
// driver no longer lists (gpu_lost). Where the log cannot tell, the metric
// is left out and why says why: a log without timestamps, one that
// restarted (a reboot), or one whose ring buffer wrapped past the run's
// start (its lines from then are gone: a count would miss what they held).
func stabilityMetrics(before, after kernelState) (map[string]any, map[string]string) {
	out, why := map[string]any{}, map[string]string{}
	all := []string{"xid", "oom", "gpu_lost"}
	switch {
	case !before.complete || !after.complete:
		for _, k := range all {
			why[k] = "the host's kernel log and GPU list could not be read to the end before and after the run (the connection was lost, or the read timed out)"
		}
		return out, why
	case before.boot != "" && after.boot != "" && before.boot != after.boot:
		for _, k := range all {
			why[k] = "the host rebooted during the run (its boot_id changed): what the kernel logged before the reboot is gone"
		}
		return out, why
	}
	start := before.last
	if before.empty { // a cleared log: everything in it now is new
		start = math.Inf(-1)
	}
	for _, k := range []string{"xid", "oom"} {
		switch {
		case !before.readable || !after.readable:
			why[k] = "the kernel log could not be read before and after the run: dmesg was refused (kernel.dmesg_restrict=1?) and sudo -n dmesg too (no passwordless sudo)"
			continue
		case after.empty && before.empty:
			why[k] = "the kernel log read empty before and after the run (a container's, or one cleared and quiet): there is no timestamp to count from"
			continue
		case after.empty && !before.empty:
			why[k] = "the kernel log was cleared during the run (dmesg -C?): what it held from the run is gone"
			continue
		case !before.empty && !before.stamped || !after.stamped || after.unstamped[k] > 0:
			why[k] = "the kernel log has lines without timestamps (printk.time off?): gpulab cannot tell the run's lines from older ones"
			continue
		case after.last < start:
			why[k] = fmt.Sprintf("the kernel log restarted during the run (its last line is at %.6f s, before the run's start at %.6f s): the host rebooted?", after.last, before.last)
			continue
		case after.first > start && !before.empty:
			why[k] = fmt.Sprintf("the kernel log's ring buffer wrapped (or the log was cleared) during the run: it now starts at %.6f s, after the run's start at %.6f s, so lines from the run are gone and new ones cannot all be counted", after.first, before.last)
			continue
		}
		var n int64
		oldest := math.Inf(1)
		for _, at := range after.lines[k] {
			oldest = min(oldest, at)
			if at > start {
				n++
			}
		}
		if len(after.lines[k]) >= stabilityLines && oldest > start {
			why[k] = fmt.Sprintf("more than %d matching lines since the run started: at least %d", stabilityLines, n)
			continue
		}
		out[k] = n
	}
	if before.gpus > 0 {
		out["gpu_lost"] = max(before.gpus-after.gpus, 0)
	}
	return out, why
}
