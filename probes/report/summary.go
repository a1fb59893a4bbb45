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
