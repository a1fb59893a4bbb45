package step

import (
	"cmp"
	"fmt"

	"github.com/gpulab/gpulab/step/parse"
)

func init() {
	rules["host-faults"] = Rule{Inputs: []string{"dmesg-xid"}, Fn: hostFaults}
}

// hostFaults judges the host's own faults in the kernel log, the ones a
// GPU job dies of without the GPU being at fault: an uncorrected memory
// error, a fatal machine check or a task hung inside the NVIDIA driver
// FAIL; OOM kills, corrected memory errors, other machine checks and
// other hung tasks WARN. Each fact says what happened and the fix.
func hostFaults(in []Input, _ map[string]any) Verdict {
	k := in[0].Value.(*parse.KernelLog)
	var fatal, other []Evidence
	add := func(isFatal bool, fact string, line int) {
		e := Evidence{Step: in[0].Step, Fact: fact, Line: line}
		if isFatal {
			fatal = append(fatal, e)
		} else {
			other = append(other, e)
		}
	}
	for _, h := range k.Host {
		switch h.Kind {
		case parse.HostOOM:
			add(false, oomFact(h), h.Line)
		case parse.HostHungTask:
			add(h.Fatal, hungFact(h), h.Line)
		case parse.HostMCE:
			if h.Fatal {
				add(true, "machine check: "+h.Message+". Fix: drain the node; the CPU, its cache or its memory failed: read mcelog or rasdaemon (ras-mc-ctl --errors) and have the part replaced", h.Line)
			}
		}
	}
	edacFacts(k, add)
	if n := mceLogged(k); n > 0 {
		add(false, fmt.Sprintf("%d machine-check line(s) the kernel logged without calling them fatal (corrected, or the severity in mcelog). Fix: read them in mcelog or rasdaemon (ras-mc-ctl --errors)", n), 0)
	}
	switch {
	case len(fatal) > 0:
		return verdict(Fail, fmt.Sprintf("%d host fault(s) that stop GPU work", len(fatal)), append(fatal, other...)...)
	case len(other) > 0:
		return verdict(Warn, fmt.Sprintf("%d host fault(s) worth a look", len(other)), other...)
	}
	over := fmt.Sprintf("%d kernel log line(s) read", k.Lines)
	if k.First != "" {
		over += ", from " + k.First + " to " + k.Last
	}
	return verdict(Pass, "no OOM kill, hung task, memory error or machine check in the kernel log", Evidence{Step: in[0].Step, Fact: over})
}

func oomFact(h parse.HostEvent) string {
	if h.Cgroup {
		return fmt.Sprintf("OOM killer killed pid %d (%s) in a memory cgroup over its own limit (a pod or unit). Fix: raise the container's memory limit or lower the job's memory; the GPU is not at fault", h.PID, h.Process)
	}
	return fmt.Sprintf("OOM killer killed pid %d (%s): the host ran out of memory. Fix: find what filled host memory (pinned buffers, data loaders, page cache of the dataset) and cap it; the GPU is not at fault", h.PID, h.Process)
}

func hungFact(h parse.HostEvent) string {
	if h.GPU {
		return fmt.Sprintf("task %s (pid %d) blocked %d s in state D inside the NVIDIA driver: the driver is wedged and no GPU reset can happen while it waits. Fix: collect nvidia-bug-report.sh, drain the node and reboot it", h.Process, h.PID, h.Seconds)
	}
	return fmt.Sprintf("task %s (pid %d) blocked %d s in state D outside the GPU driver (storage, network file system, a kernel lock): GPU jobs that touch it stall too. Fix: look at the task's call trace in the log", h.Process, h.PID, h.Seconds)
}

// edacFacts adds one fact per DIMM the EDAC lines name: how many
// corrected or uncorrected errors, in how many reports.
func edacFacts(k *parse.KernelLog, add func(bool, string, int)) {
	type dimm struct {
		where           string
		ce, ue, reports int
		firstLine       int
	}
	var order []*dimm
	by := map[string]*dimm{}
	for _, h := range k.Host {
		if h.Kind != parse.HostEDAC {
			continue
		}
		d := by[h.Where]
		if d == nil {
			d = &dimm{where: cmp.Or(h.Where, "an unnamed memory location"), firstLine: h.Line}
			by[h.Where] = d
			order = append(order, d)
		}
		d.reports++
		if h.Fatal {
			d.ue += h.Count
		} else {
			d.ce += h.Count
		}
	}
	for _, d := range order {
		if d.ue > 0 {
			add(true, fmt.Sprintf("EDAC: %d uncorrected memory error(s) on %s (%d report(s)). Fix: drain the node and have the DIMM replaced", d.ue, d.where, d.reports), d.firstLine)
			continue
		}
		add(false, fmt.Sprintf("EDAC: %d corrected memory error(s) on %s (%d report(s)). Fix: replace the DIMM before its errors turn uncorrectable", d.ce, d.where, d.reports), d.firstLine)
	}
}

// mceLogged counts the machine-check reports not called fatal.
func mceLogged(k *parse.KernelLog) int {
	n := 0
	for _, h := range k.Host {
		if h.Kind == parse.HostMCE && !h.Fatal {
			n++
		}
	}
	return n
}
