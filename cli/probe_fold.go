package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/probes/report"
	"github.com/gpulab/gpulab/render"
)

// printProbesFolded prints the probe's snapshots the way exec prints
// outputs: hosts whose hardware reads the same (GPUs, memory, ECC and MIG
// modes, NUMA nodes, NVLinks, topology, driver, findings) are shown once
// under their node set, and every other group as a diff against the
// largest: a GPU missing, a link down, another driver stand out. What
// changes from second to second (utilisation, temperature, power, memory
// in use) is not compared; each group's range of it closes the group.
func printProbesFolded(w io.Writer, results []app.ProbeResult) error {
	groups, snaps := hardwareGroups(results)
	for i, g := range groups {
		fmt.Fprintf(w, "\n---------------- %s", render.HostCount(g.NodeSet, len(g.Hosts)))
		if i == 0 {
			fmt.Fprintln(w)
			io.WriteString(w, g.Stdout)
		} else {
			fmt.Fprintf(w, ": differs from %s\n", groups[0].NodeSet)
			io.WriteString(w, lineDiff(groups[0].Stdout, g.Stdout))
		}
		var gs []*report.Snapshot
		for _, h := range g.Hosts {
			gs = append(gs, snaps[h])
		}
		fmt.Fprintln(w, liveRanges(gs))
	}
	return nil
}

// hardwareGroups folds the hosts that answered by their hardware (the
// largest group first), and gives their snapshots by host.
func hardwareGroups(results []app.ProbeResult) ([]orchestrator.Group, map[string]*report.Snapshot) {
	var hrs []orchestrator.HostResult
	snaps := map[string]*report.Snapshot{}
	widths := hardwareWidths(results)
	for _, r := range results {
		if r.Snapshot == nil || !r.Snapshot.NVML.Available {
			continue // the summary lines say why
		}
		snaps[r.Host] = r.Snapshot
		text := hardwareText(r.Snapshot, widths)
		hrs = append(hrs, orchestrator.HostResult{Host: r.Host, Steps: []orchestrator.Result{{Stdout: []byte(text)}}})
	}
	if len(hrs) == 0 {
		return nil, snaps
	}
	return orchestrator.Fold(hrs, 0), snaps
}

// markHardwareGroups tells each result, for --json, which hardware group
// it is in (0: the largest, as the text folds them) and that group's node
// set; a host without a snapshot is in none.
func markHardwareGroups(results []app.ProbeResult) {
	groups, _ := hardwareGroups(results)
	byHost := map[string]int{}
	for i, g := range groups {
		for _, h := range g.Hosts {
			byHost[h] = i
		}
	}
	for i := range results {
		if g, ok := byHost[results[i].Host]; ok {
			results[i].HardwareGroup, results[i].HardwareHosts = &g, groups[g].NodeSet
		}
	}
}

func hardwareWidths(results []app.ProbeResult) []int {
	heads := render.GPUHardwareHeads()
	widths := make([]int, len(heads))
	for i, c := range heads {
		widths[i] = text.Width(c)
	}
	for _, r := range results {
		if r.Snapshot == nil {
			continue
		}
		for _, g := range r.Snapshot.GPUs {
			for i, v := range render.GPUHardware(g) {
				widths[i] = max(widths[i], text.Width(v))
			}
		}
	}
	return widths
}

// hardwareText is what one host's hardware reads: the key hosts fold by.
func hardwareText(s *report.Snapshot, widths []int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "driver %s, CUDA %s, NVML %s, probe %s\n", dash(s.DriverVersion), dash(s.CUDADriverVersion), dash(s.NVMLVersion), dash(s.ProbeVersion))
	render.GPUHardwareTable(s, widths).WriteText(&b)
	b.WriteString(topologyText(s))
	for _, x := range s.XIDs {
		fmt.Fprintln(&b, render.XID(x))
	}
	for _, l := range render.HostFindings(s) {
		fmt.Fprintln(&b, l)
	}
	for _, l := range []string{render.XIDHistoryUnread(s), render.FieldsNotGiven(s)} {
		if l != "" {
			fmt.Fprintln(&b, l)
		}
	}
	return b.String()
}

// topologyText sums the pairwise topology, then names each pair that is
// not at the host's most common level (a link down, a GPU behind another
// switch).
func topologyText(s *report.Snapshot) string {
	if len(s.Topology) == 0 {
		return ""
	}
	count := map[string]int{}
	for _, l := range s.Topology {
		count[l.Level]++
	}
	levels := make([]string, 0, len(count))
	for l := range count {
		levels = append(levels, l)
	}
	slices.SortFunc(levels, func(a, b string) int {
		if count[a] != count[b] {
			return count[b] - count[a]
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	if n := len(s.GPUs); len(levels) == 1 && len(s.Topology) == n*(n-1)/2 {
		fmt.Fprintf(&b, "topology: every pair %s\n", levels[0])
		return b.String()
	}
	parts := make([]string, len(levels))
	for i, l := range levels {
		parts[i] = text.Plural(count[l], "pair", "pairs") + " " + l
	}
	fmt.Fprintf(&b, "topology: %s\n", strings.Join(parts, ", "))
	for _, lvl := range levels[1:] {
		var pairs []string
		for _, l := range s.Topology {
			if l.Level == lvl {
				pairs = append(pairs, fmt.Sprintf("%d-%d", l.A, l.B))
			}
		}
		fmt.Fprintf(&b, "  %s: GPUs %s\n", lvl, strings.Join(pairs, " "))
	}
	return b.String()
}

// lineDiff shows how b's lines differ from a's: the first line of each
// (the driver) and the table's header as context, then every line only a
// has ("- ") and only b has ("+ "), in order, by their longest common
// subsequence. The marker is followed by a space, so a GPU row reads
// "- 0 ..." (grep '^- '), never as a negative index. The texts are a
// host's hardware, tens of lines.
func lineDiff(a, b string) string {
	x, y := strings.SplitAfter(a, "\n"), strings.SplitAfter(b, "\n")
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			if i < 2 { // the driver line and the table's header
				out.WriteString("  " + x[i])
			}
			i, j = i+1, j+1
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			out.WriteString("- " + x[i])
			i++
		default:
			out.WriteString("+ " + y[j])
			j++
		}
	}
	return out.String()
}

// liveRanges is the range over a group's GPUs of what changes from
// second to second.
func liveRanges(snaps []*report.Snapshot) string {
	type span struct {
		lo, hi float64
		n      int
	}
	var util, temp, power, used span
	add := func(s *span, v float64) {
		if s.n == 0 || v < s.lo {
			s.lo = v
		}
		if s.n == 0 || v > s.hi {
			s.hi = v
		}
		s.n++
	}
	for _, s := range snaps {
		for _, g := range s.GPUs {
			if g.Utilization != nil {
				add(&util, float64(g.Utilization.GPUPercent))
			}
			if g.TemperatureC != nil {
				add(&temp, float64(*g.TemperatureC))
			}
			if g.PowerW != nil {
				add(&power, *g.PowerW)
			}
			if g.Memory != nil {
				add(&used, float64(g.Memory.UsedMiB))
			}
		}
	}
	text := func(name string, s span, unit string) string {
		if s.n == 0 {
			return name + " -"
		}
		if s.lo == s.hi {
			return fmt.Sprintf("%s %.0f%s", name, s.lo, unit)
		}
		return fmt.Sprintf("%s %.0f-%.0f%s", name, s.lo, s.hi, unit)
	}
	return "now: " + strings.Join([]string{text("utilisation", util, "%"), text("temperature", temp, "C"),
		text("power", power, " W"), text("memory used", used, " MiB")}, ", ")
}
