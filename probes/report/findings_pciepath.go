package report

import (
	"fmt"
	"strings"
)

// pciePathFinding is a bridge on the GPU's path whose link trained
// narrower than its maximum: the GPU's own link (pcie-width) may be whole
// while every byte to the CPU still crosses the narrow one.
func pciePathFinding(g GPU) (Finding, bool) {
	var narrow, ev []string
	for _, h := range g.PCIe.Path {
		if h.WidthCurrent != nil && h.WidthMax != nil && *h.WidthCurrent < *h.WidthMax {
			narrow = append(narrow, fmt.Sprintf("%s at x%d of x%d", h.BDF, *h.WidthCurrent, *h.WidthMax))
		}
	}
	if len(narrow) == 0 {
		return Finding{}, false
	}
	ev = append(ev, "path: "+PathWords(g.PCIe.Path))
	return Finding{Check: "pcie-path", Action: ActionContactSupport, Codes: []string{"DCGM_FR_PCIE_WIDTH"},
		Message:  "a PCIe bridge on the GPU's path trained narrow: " + strings.Join(narrow, ", ") + " (the switch port, riser or cable between the GPU and the CPU)",
		Evidence: ev}, true
}

// PathWords is a GPU's path as one line, nearest bridge first:
// "0000:02:00.0 Gen4 x16 (max Gen4 x16), 0000:01:00.0 ...".
func PathWords(path []PCIeHop) string {
	if len(path) == 0 {
		return "no bridge (the GPU sits on the root complex)"
	}
	link := func(gen, width *int) string {
		g, w := "Gen?", "x?"
		if gen != nil {
			g = fmt.Sprintf("Gen%d", *gen)
		}
		if width != nil {
			w = fmt.Sprintf("x%d", *width)
		}
		return g + " " + w
	}
	parts := make([]string, len(path))
	for i, h := range path {
		parts[i] = fmt.Sprintf("%s %s (max %s)", h.BDF, link(h.GenCurrent, h.WidthCurrent), link(h.GenMax, h.WidthMax))
	}
	return strings.Join(parts, ", ")
}

// slotLimit is the first bridge on the path whose own maximum generation
// is below the GPU's: the slot's limit, not the GPU's fault; "" if none.
func slotLimit(g GPU) string {
	if g.PCIe.GenGPUMax == nil {
		return ""
	}
	for _, h := range g.PCIe.Path {
		if h.GenMax != nil && *h.GenMax < *g.PCIe.GenGPUMax {
			return fmt.Sprintf("bridge %s allows Gen%d at most, the GPU Gen%d: the platform's limit, not the GPU's fault", h.BDF, *h.GenMax, *g.PCIe.GenGPUMax)
		}
	}
	return ""
}

// pciePathCheck is the probe check of the bridges on each GPU's path.
var pciePathCheck = probeCheck{name: "pcie-path",
	ready: func(s *Snapshot) bool {
		return everyGPU(s, func(g GPU) bool {
			if !g.PCIe.PathRead {
				return false
			}
			for _, h := range g.PCIe.Path {
				if h.WidthCurrent == nil || h.WidthMax == nil {
					return false
				}
			}
			return true
		})
	},
	read: func(s *Snapshot) string {
		hops := 0
		for _, g := range s.GPUs {
			hops += len(g.PCIe.Path)
		}
		return fmt.Sprintf("%d GPU(s)' PCIe paths read from sysfs: %d bridge(s), each at its maximum width", len(s.GPUs), hops)
	},
}
