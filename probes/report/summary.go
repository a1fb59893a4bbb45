package report

import (
	"fmt"
	"sort"
	"strings"
)

// Hardware sums a host up in one line, so that identical hosts fold
// together: "8× NVIDIA A100-SXM4-80GB, NV12 full mesh, driver 550.54.15".
func Hardware(s *Snapshot) string {
	if s == nil {
		return ""
	}
	if !s.NVML.Available {
		return "no NVML: " + s.NVML.Error
	}
	names := map[string]int{}
	var order []string
	for _, g := range s.GPUs {
		if names[g.Name] == 0 {
			order = append(order, g.Name)
		}
		names[g.Name]++
	}
	var parts []string
	for _, n := range order {
		parts = append(parts, fmt.Sprintf("%d× %s", names[n], n))
	}
	if len(parts) == 0 {
		parts = append(parts, "0 GPUs")
	}
	levels := map[string]int{}
	for _, l := range s.Topology {
		levels[l.Level]++
	}
	if n := len(s.GPUs); n > 1 && len(levels) == 1 && len(s.Topology) == n*(n-1)/2 {
		for lvl := range levels {
			if strings.HasPrefix(lvl, "NV") {
				parts = append(parts, lvl+" full mesh")
			} else {
				parts = append(parts, "all pairs "+lvl)
			}
		}
	} else if len(levels) > 0 {
		var ls []string
		for lvl, c := range levels {
			ls = append(ls, fmt.Sprintf("%s×%d", lvl, c))
		}
		sort.Strings(ls)
		parts = append(parts, "links "+strings.Join(ls, " "))
	}
	parts = append(parts, "driver "+s.DriverVersion)
	if s.Simulated {
		parts = append(parts, "SIMULATED")
	}
	return strings.Join(parts, ", ")
}

// Flags are what a snapshot shows worth a look, one short phrase each:
// the messages of its Findings, in their order. A host with none is
// healthy as far as the probe can tell. The workbench's Fleet tab flags a
// host's row with the same phrases.
func Flags(s *Snapshot) []string {
	var out []string
	for _, f := range Findings(s) {
		out = append(out, f.Message)
	}
	return out
}

// KmsgUnread is the error that kept the probe from reading the kernel's
// Xid history (--kmsg), nil when it read it or was not asked to.
func KmsgUnread(s *Snapshot) *FieldError {
	for i, e := range s.Errors {
		if e.Field == "xids.kmsg" {
			return &s.Errors[i]
		}
	}
	return nil
}

// NVLinksDown names the GPU pairs whose NVLink is down (see
// nvlinkPairsDown): "NVLink GPU0–GPU4 down (SYS)".
func NVLinksDown(s *Snapshot) []string {
	var out []string
	for _, d := range nvlinkPairsDown(s) {
		out = append(out, d.String())
	}
	return out
}

// remapRead is the row-remap state of the GPU an Xid names (by index, or
// by its bus id); nil where the snapshot did not read it.
func remapRead(s *Snapshot, x XIDEvent) *RemappedRows {
	for _, g := range s.GPUs {
		if x.GPU != nil && g.Index == *x.GPU || x.GPU == nil && SamePCI(g.PCIBusID, x.PCIBusID) {
			return g.RemappedRows
		}
	}
	return nil
}

// SamePCI compares NVML's "00000000:3B:00.0" with the kernel's "0000:3b:00".
func SamePCI(nvmlID, kmsgID string) bool {
	norm := func(s string) string {
		s = strings.ToLower(s)
		s = strings.TrimSuffix(s, ".0")
		parts := strings.Split(s, ":")
		if len(parts) == 3 {
			parts[0] = strings.TrimLeft(parts[0], "0")
		}
		return strings.Join(parts, ":")
	}
	return nvmlID != "" && norm(nvmlID) == norm(kmsgID)
}
