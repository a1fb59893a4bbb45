package tui

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/internal/visible"
	"github.com/gpulab/gpulab/probes/report"
	"github.com/gpulab/gpulab/render"
)

// renderHost draws one host's probe snapshot: GPUs with memory bars, the
// topology grid, NUMA and CPU affinity, MIG layout, processes with their
// pods, and health (findings, decoded Xids, refused fields). A snapshot of
// a simulated machine, or of a host of a simulated fleet, says SIMULATED.
func renderHost(s *report.Snapshot, simulated bool, st Styles, width int) string {
	var b []string
	add := func(lines ...string) { b = append(b, lines...) }
	title := st.CardTitle.Render(s.Host)
	if s.Simulated || simulated { // first, where a narrow terminal cannot cut it off
		title += " " + st.Badge.Render(" SIMULATED ")
	}
	title += st.CardMuted.Render(fmt.Sprintf("  driver %s · CUDA %s · NVML %s · probe %s · %.1f ms",
		dashed(s.DriverVersion), dashed(s.CUDADriverVersion), dashed(s.NVMLVersion), dashed(s.ProbeVersion), s.DurationMS))
	add(title)
	if !s.NVML.Available {
		add("", st.Error.Render("No NVML on this host: "+s.NVML.Error))
		return strings.Join(b, "\n")
	}
	add("", st.CardLabel.Render("GPUs"))
	add(gpuTable(s, st, width)...)
	if grid := topoGrid(s, st); len(grid) > 0 {
		add("", st.CardLabel.Render("Topology")+st.CardMuted.Render("  NV# NVLinks · PIX/PXB PCIe switch · PHB host bridge · NODE same NUMA · SYS across sockets"))
		add(grid...)
	}
	if l := migLayout(s); len(l) > 0 {
		add("", st.CardLabel.Render("MIG layout"))
		add(l...)
	}
	add("", st.CardLabel.Render("Processes"))
	if len(s.Processes) == 0 {
		add(st.CardMuted.Render("  none"))
	}
	for _, p := range s.Processes {
		where := "host"
		if p.PodUID != "" {
			where = "pod " + visible.String(p.PodUID)
		} else if p.ContainerID != "" { // a short id is shown whole (it was sliced at 12 bytes, and panicked)
			where = "container " + text.Clip(visible.String(p.ContainerID), 12)
		}
		add(fmt.Sprintf("  GPU%d  pid %-8d %s %8d MiB  %s", p.GPU, p.PID, cell(visible.String(p.Name), 16), p.UsedMiB, where))
	}
	add(healthLines(s, st, width)...)
	if l := render.FieldsNotGiven(s); l != "" {
		add(st.CardMuted.Render("  " + l))
	}
	return strings.Join(b, "\n")
}

// healthLines are the host view's Health section: what the probe flags
// the host with (report.Flags, as the Fleet row shows them), each Xid with
// its meaning and action, or that there is nothing.
func healthLines(s *report.Snapshot, st Styles, width int) []string {
	var b []string
	add := func(lines ...string) { b = append(b, lines...) }
	add("", st.CardLabel.Render("Health"))
	healthy := true
	// What the probe flags the host with (the Fleet row's flags:
	// report.Flags): an NVLink down, the kernel's Xid history not read,
	// each GPU's findings, the host's, the Xids.
	for _, f := range report.NVLinksDown(s) {
		healthy = false
		add(st.Error.Render("  ! " + f))
	}
	if e := report.KmsgUnread(s); e != nil && e.Code != "SIMULATED" {
		healthy = false
		add(wrap(st.Error.Render("  ! "+render.XIDHistoryUnread(s)), width-2)...)
	}
	for _, g := range s.GPUs {
		for _, f := range g.Findings {
			healthy = false
			add(st.Error.Render(fmt.Sprintf("  ! GPU%d: %s", g.Index, f)))
		}
	}
	// The host's own findings and those of a GPU its row does not hold
	// (lost, unreadable, a stuck or zombie process, the RDMA ports, the
	// fabric): what gpulab probe prints under its table.
	for _, l := range render.HostFindings(s) {
		healthy = false
		add(wrap(st.Error.Render("  ! "+visible.String(l)), width-2)...)
	}
	for _, x := range s.XIDs {
		healthy = false
		add(wrap(st.Error.Render("  "+render.XID(x)), width-2)...)
	}
	if healthy {
		add(st.CardText.Render("  no findings, no Xid"))
	}
	return b
}

// topoGrid draws the GPU×GPU matrix with NUMA and CPU affinity, coloured
// by distance.
func topoGrid(s *report.Snapshot, st Styles) []string {
	n := len(s.GPUs)
	if n < 2 {
		return nil
	}
	level := map[[2]int]string{}
	for _, l := range s.Topology {
		level[[2]int{l.A, l.B}], level[[2]int{l.B, l.A}] = l.Level, l.Level
	}
	head := "      "
	for j := range n {
		head += fmt.Sprintf("%-6s", "GPU"+strconv.Itoa(j))
	}
	lines := []string{st.TableHeader.Render(head + "NUMA  CPU affinity")}
	for i := range n {
		row := fmt.Sprintf("%-6s", "GPU"+strconv.Itoa(i))
		for j := range n {
			cellText := "X"
			if i != j {
				cellText = level[[2]int{i, j}]
				if cellText == "" {
					cellText = "?"
				}
			}
			row += topoStyle(cellText, st).Render(fmt.Sprintf("%-6s", cellText))
		}
		g := s.GPUs[i]
		numa := "-"
		if g.NUMANode != nil {
			numa = strconv.Itoa(*g.NUMANode)
		}
		lines = append(lines, row+fmt.Sprintf("%-6s%s", numa, dashed(g.CPUAffinity)))
	}
	return lines
}

func migLayout(s *report.Snapshot) []string {
	var out []string
	for _, g := range s.GPUs {
		if g.MIG.Current != "enabled" {
			continue
		}
		slots := make([]string, 8)
		for k := range slots {
			slots[k] = "·"
		}
		var names []string
		for n, gi := range g.MIG.GPUInstances {
			mark := string(rune('A' + n%26))
			for k := gi.PlacementStart; k < gi.PlacementStart+gi.PlacementSize && k < len(slots); k++ {
				slots[k] = mark
			}
			cis := make([]string, 0, len(gi.ComputeInstances))
			for _, ci := range gi.ComputeInstances {
				cis = append(cis, ci.Profile)
			}
			names = append(names, fmt.Sprintf("%s=%s[%s]", mark, gi.Profile, strings.Join(cis, ",")))
		}
		pending := ""
		if g.MIG.Pending != g.MIG.Current {
			pending = " (mode change pending: " + g.MIG.Pending + ")"
		}
		out = append(out, fmt.Sprintf("  GPU%d [%s] %s%s", g.Index, strings.Join(slots, ""), strings.Join(names, " "), pending))
	}
	return out
}

// gpuTable is the probe's GPU table (render.GPUTable, worded as the
// command line words it) fitted to the screen, memory with a bar: on a
// narrow one the columns that give way are named under it.
func gpuTable(s *report.Snapshot, st Styles, width int) []string {
	t := render.GPUTable(s)
	if m := t.Column("MEMORY"); m >= 0 {
		for i, g := range s.GPUs {
			t.Rows[i][m] = memBar(g.Memory) + t.Rows[i][m]
		}
	}
	head, rows, left := t.Fit(width)
	lines := append([]string{st.TableHeader.Render(head)}, rows...)
	if len(left) > 0 {
		lines = append(lines, st.CardMuted.Render("  not shown: "+strings.Join(left, ", ")+" (gpulab probe --no-fold has them)"))
	}
	return lines
}

// memBar is the share of memory in use, as a bar before the figures.
func memBar(m *report.Memory) string {
	if m == nil || m.TotalMiB == 0 {
		return ""
	}
	return bar(int64(m.UsedMiB), int64(m.TotalMiB), int64(m.TotalMiB), 8) + " " // bar clamps: a host may say it uses more than it has
}

func dashed(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
