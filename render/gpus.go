package render

import (
	"fmt"
	"strings"

	"github.com/gpulab/gpulab/internal/visible"
	"github.com/gpulab/gpulab/probes/report"
)

// A probe's GPU table: each column's cell is worded here once, for
// `gpulab probe --no-fold`, the folded probe's hardware table and the
// workbench's host view. What NVML did not give is "-", never a zero.

// gpuColumn is one column of the GPU table: its layout, its cell now,
// and its cell in the hardware table (nil: not hardware, it changes from
// second to second).
type gpuColumn struct {
	Column
	now, hardware func(report.GPU) string
}

// gpuColumns are the GPU table's columns, in order, each defined once: a
// new column is one line here. On a narrow screen the bus id, power, the
// name, NUMA node, temperature, utilisation and memory give way, in that
// order; what says a GPU is sick (ECC, MIG, NVLinks, findings) stays.
var gpuColumns = []gpuColumn{
	{Column{Head: "GPU"}, index, index},
	{Column{Head: "NAME", Drop: 6, Max: 24}, name, name},
	{Column{Head: "BUS", Drop: 8}, bus, bus},
	{Column{Head: "MEMORY", Drop: 2}, func(g report.GPU) string { return GPUMemory(g.Memory) }, memoryTotal},
	{Column{Head: "UTIL", Right: true, Drop: 3}, func(g report.GPU) string { return GPUUtil(g.Utilization) }, nil},
	{Column{Head: "TEMP", Right: true, Drop: 4}, func(g report.GPU) string { return GPUTemp(g.TemperatureC) }, nil},
	{Column{Head: "POWER", Right: true, Drop: 7}, GPUPower, nil},
	{Column{Head: "ECC"}, func(g report.GPU) string { return GPUECC(g.ECC) }, func(g report.GPU) string { return GPUECCMode(g.ECC) }},
	{Column{Head: "MIG", Max: 20}, mig, mig},
	{Column{Head: "NUMA", Drop: 5}, numa, numa},
	{Column{Head: "NVLINK"}, GPUNVLinks, GPUNVLinks},
	{Column{Head: "FINDINGS", Max: 40}, GPUFindings, GPUFindings},
}

func index(g report.GPU) string { return fmt.Sprint(g.Index) }
func name(g report.GPU) string  { return visible.String(g.Name) }
func bus(g report.GPU) string   { return visible.String(g.PCIBusID) }
func mig(g report.GPU) string   { return GPUMIG(g.MIG) }
func numa(g report.GPU) string  { return GPUNUMA(g.NUMANode) }

func memoryTotal(g report.GPU) string {
	if g.Memory == nil || g.Memory.TotalMiB == 0 {
		return "-"
	}
	return fmt.Sprintf("%d MiB", g.Memory.TotalMiB)
}

// GPUTable is a snapshot's GPUs with what they read now.
func GPUTable(s *report.Snapshot) Table {
	var t Table
	for _, c := range gpuColumns {
		t.Columns = append(t.Columns, c.Column)
	}
	for _, g := range s.GPUs {
		row := make([]string, len(gpuColumns))
		for i, c := range gpuColumns {
			row[i] = c.now(g)
		}
		t.Add(row...)
	}
	return t
}

// GPUHardwareTable is a snapshot's GPUs' hardware, what does not change
// from second to second: the key the probe folds hosts by. Its columns
// are at least min wide (nil: as wide as they need), so that the tables
// of hosts that differ line up.
func GPUHardwareTable(s *report.Snapshot, min []int) Table {
	var t Table
	for _, c := range gpuColumns {
		if c.hardware != nil {
			col := Column{Head: c.Head}
			if len(min) > len(t.Columns) {
				col.Min = min[len(t.Columns)]
			}
			t.Columns = append(t.Columns, col)
		}
	}
	for _, g := range s.GPUs {
		t.Add(GPUHardware(g)...)
	}
	return t
}

// GPUHardware is one GPU's hardware cells, in GPUHardwareTable's order.
func GPUHardware(g report.GPU) []string {
	var row []string
	for _, c := range gpuColumns {
		if c.hardware != nil {
			row = append(row, c.hardware(g))
		}
	}
	return row
}

// GPUHardwareHeads are GPUHardwareTable's heads.
func GPUHardwareHeads() []string {
	var heads []string
	for _, c := range gpuColumns {
		if c.hardware != nil {
			heads = append(heads, c.Head)
		}
	}
	return heads
}

// GPUMemory is memory in use of the total, as nvidia-smi counts it:
// "1024/81559 MiB".
func GPUMemory(m *report.Memory) string {
	if m == nil || m.TotalMiB == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d MiB", m.UsedMiB, m.TotalMiB)
}

// GPUUtil is the share of the last sample period a kernel ran: "37%".
func GPUUtil(u *report.Utilization) string {
	if u == nil {
		return "-"
	}
	return fmt.Sprintf("%d%%", u.GPUPercent)
}

// GPUTemp is the GPU's temperature: "41C".
func GPUTemp(t *uint32) string {
	if t == nil {
		return "-"
	}
	return fmt.Sprintf("%dC", *t)
}

// GPUPower is the draw, of the limit when NVML gave it: "52/400 W".
func GPUPower(g report.GPU) string {
	switch {
	case g.PowerW == nil:
		return "-"
	case g.PowerLimitW == nil:
		return fmt.Sprintf("%.0f W", *g.PowerW)
	}
	return fmt.Sprintf("%.0f/%.0f W", *g.PowerW, *g.PowerLimitW)
}

// GPUECCMode is whether ECC is on: "on", "off", or "-".
func GPUECCMode(e report.ECC) string {
	if e.Enabled == nil {
		return "-"
	}
	if *e.Enabled {
		return "on"
	}
	return "off"
}

// GPUECC is ECC's mode and its volatile counts, uncorrected first:
// "on 0 UE 3 CE"; an uncorrected error is what the findings flag.
func GPUECC(e report.ECC) string {
	if e.Enabled != nil && *e.Enabled && e.Volatile != nil {
		return fmt.Sprintf("on %d UE %d CE", e.Volatile.Uncorrected, e.Volatile.Corrected)
	}
	return GPUECCMode(e)
}

// GPUMIG is MIG's mode: "off", or the GPU instances' profiles when it is
// on ("3g.40gb,1g.10gb×4"), "on (no GI)" when it has none, and the mode it
// changes to at the next reset.
func GPUMIG(m report.MIG) string {
	s := "off"
	switch m.Current {
	case "":
		return "-"
	case "enabled":
		s = profiles(m.GPUInstances)
		if s == "" {
			s = "on (no GI)"
		}
	}
	if m.Pending != "" && m.Pending != m.Current {
		s += " (pending " + visible.String(m.Pending) + ")"
	}
	return s
}

// profiles is the GPU instances' profiles in the order they first come,
// each with its count when it repeats: "3g.40gb,1g.10gb×4".
func profiles(gis []report.GPUInstance) string {
	var order []string
	n := map[string]int{}
	for _, gi := range gis {
		p := visible.String(gi.Profile)
		if n[p] == 0 {
			order = append(order, p)
		}
		n[p]++
	}
	for i, p := range order {
		if n[p] > 1 {
			order[i] = fmt.Sprintf("%s×%d", p, n[p])
		}
	}
	return strings.Join(order, ",")
}

// GPUNUMA is the GPU's NUMA node.
func GPUNUMA(n *int) string {
	if n == nil {
		return "-"
	}
	return fmt.Sprint(*n)
}

// GPUNVLinks is how many of a GPU's NVLinks are up: "10/12 up", or "-".
func GPUNVLinks(g report.GPU) string {
	if len(g.NVLinks) == 0 {
		return "-"
	}
	up := 0
	for _, l := range g.NVLinks {
		if l.Active {
			up++
		}
	}
	return fmt.Sprintf("%d/%d up", up, len(g.NVLinks))
}

// GPUFindings is what the probe flags the GPU with, "; " between them.
func GPUFindings(g report.GPU) string {
	if len(g.Findings) == 0 {
		return "-"
	}
	return visible.String(strings.Join(g.Findings, "; "))
}

// HostFindings are s's findings the GPU table does not show, one line
// each: the host's own (stuck processes, pstore, RDMA ports, the fabric,
// counts) and those of a GPU that its row does not hold (a zombie or a
// stuck process on it, NVML's GPU_IS_LOST or RESET_REQUIRED, a GPU whose
// handle hung and has no row): "finding: mlx5_3 port 1 (InfiniBand) is
// DOWN, Polling (action: contact-support)". The Xids and NVLinks down
// have lines of their own.
func HostFindings(s *report.Snapshot) []string {
	inRow := map[string]bool{}
	for _, g := range s.GPUs {
		for _, m := range g.Findings {
			inRow[fmt.Sprintf("GPU%d: %s", g.Index, m)] = true
		}
	}
	var out []string
	for _, f := range report.Findings(s) {
		if f.Check == "xid" || f.Check == "xid-history" || f.Check == "nvlink-down" || inRow[f.Message] {
			continue
		}
		l := "finding: " + f.Message + " (action: " + string(f.Action) + ")"
		if f.Unknown {
			l = "unknown: " + f.Message
		}
		out = append(out, l)
	}
	return out
}
