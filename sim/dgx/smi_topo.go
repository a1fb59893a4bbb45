package dgx

import (
	"fmt"
	"strings"

	"github.com/gpulab/gpulab/sim/spec"
)

// TopoCode is how nvidia-smi topo -m shows the path between GPUs a and b,
// the same way the probe's collector derives it from NVML: through the
// NVSwitches a pair is NV<n>, n the active links of the lower-numbered
// GPU; a pair whose NVLink is down (or a GPU with no link up) shows its
// PCIe path: PXB under one switch, NODE within a NUMA node, SYS across.
func (h *Host) TopoCode(a, b int) string {
	if a == b {
		return "X"
	}
	if n := h.Faults.ActiveLinks(min(a, b)); n > 0 && !h.Faults.PairDown(a, b) {
		return fmt.Sprintf("NV%d", n)
	}
	return pciePath(a, b)
}

func pciePath(a, b int) string {
	switch {
	case spec.SamePCIeSwitch(a, b):
		return "PXB"
	case spec.NUMANodes[a] == spec.NUMANodes[b]:
		return "NODE"
	}
	return "SYS"
}

// gpuNIC is the path from GPU g to NIC n: PXB under the NIC's PCIe
// switch, SYS elsewhere (each NIC's NUMA node holds only its GPU pair).
func gpuNIC(g int, n spec.NIC) string {
	if n.GPUs[0] == g || n.GPUs[1] == g {
		return "PXB"
	}
	return "SYS"
}

const topoLegend = `
Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
`

// topoMatrix is nvidia-smi topo -m with the driver's own tab separators:
// GPU rows as in testdata/fixtures/nvidia-smi-topo-m/2x-rtx3090-NV4-tabs.txt
// (" X " for self, "\t\t" before GPU NUMA ID), NIC columns, rows and
// legend as in asus-esc8000a-e12-4x-rtx6000ada-4nic-2numa.txt (whose tabs
// the poster expanded to spaces). TestTopoFormat renders both.
func (h *Host) topoMatrix() string {
	var cols, nics []string
	for g := 0; g < spec.GPUs; g++ {
		cols = append(cols, fmt.Sprintf("GPU%d", g))
	}
	for k, n := range spec.NICs {
		cols = append(cols, fmt.Sprintf("NIC%d", k))
		nics = append(nics, n.Name)
	}
	var rows []string
	for g := 0; g < spec.GPUs; g++ {
		var codes []string
		for o := 0; o < spec.GPUs; o++ {
			codes = append(codes, h.TopoCode(g, o))
		}
		for _, n := range spec.NICs {
			codes = append(codes, gpuNIC(g, n))
		}
		rows = append(rows, topoGPURow(cols[g], codes, spec.CPUList(g), fmt.Sprint(spec.NUMANodes[g])))
	}
	for k, n := range spec.NICs {
		var codes []string
		for g := 0; g < spec.GPUs; g++ {
			codes = append(codes, gpuNIC(g, n))
		}
		for m := range spec.NICs {
			codes = append(codes, map[bool]string{true: "X", false: "SYS"}[m == k])
		}
		rows = append(rows, topoRow(cols[spec.GPUs+k], codes))
	}
	return topoText(cols, rows, nics)
}

// topoText assembles the matrix: header, rows, legend, NIC legend.
func topoText(cols, rows, nics []string) string {
	var b strings.Builder
	b.WriteString("\t" + strings.Join(cols, "\t") + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n")
	for _, r := range rows {
		b.WriteString(r + "\n")
	}
	b.WriteString(topoLegend)
	if len(nics) > 0 {
		b.WriteString("\nNIC Legend:\n\n")
		for k, n := range nics {
			fmt.Fprintf(&b, "  NIC%d: %s\n", k, n)
		}
	}
	return b.String()
}

func topoRow(name string, codes []string) string {
	var b strings.Builder
	b.WriteString(name)
	for _, c := range codes {
		if c == "X" {
			c = " X "
		}
		b.WriteString("\t" + c)
	}
	return b.String()
}

func topoGPURow(name string, codes []string, cpus, numa string) string {
	return topoRow(name, codes) + "\t" + cpus + "\t" + numa + "\t\tN/A"
}

func smiTopo(h *Host, t *term, a flags) int {
	if len(a) == 1 && (a[0] == "-m" || a[0] == "--matrix") {
		t.print(h.topoMatrix())
		return 0
	}
	t.print(smiInvalid)
	return smiInvalidArg
}

// NVLinkGBps is an A100 NVLink 3 link's speed as nvidia-smi prints it.
const NVLinkGBps = "25 GB/s"

// smiNVLink is nvidia-smi nvlink --status (-s) and --errorcounters (-e),
// optionally for -i GPUs: the GPU line and each link indented with a tab
// and a space, as in testdata/fixtures/nvidia-smi-nvlink-status/
// 2x-rtx3090-nvlink-s-4links-uuid-redacted.txt (the driver's own tab; the
// H100 recordings' nine spaces are that tab expanded), error counters and
// the blank line between links as in nvidia-smi-nvlink-e/h100-18links-elided.txt.
// A link that is down shows "<inactive>".
func smiNVLink(h *Host, t *term, a flags) int {
	gpus, ok := h.smiSelect(a)
	if !ok {
		t.print("No devices were found\n")
		return smiNotFound
	}
	status := a.has("-s", "--status")
	errors := a.has("-e", "--errorcounters")
	if status == errors {
		t.print(smiInvalid)
		return smiInvalidArg
	}
	var b strings.Builder
	for _, g := range gpus {
		fmt.Fprintf(&b, "GPU %d: %s (UUID: %s)\n", g, GPUName, h.uuid(g))
		for l := 0; l < spec.LinksPerGPU; l++ {
			switch {
			case status && h.Faults.LinkUp(g, l):
				fmt.Fprintf(&b, "\t Link %d: %s\n", l, NVLinkGBps)
			case status:
				fmt.Fprintf(&b, "\t Link %d: <inactive>\n", l)
			default:
				if l > 0 {
					b.WriteString("\n")
				}
				for _, c := range []string{"Replay Errors", "Recovery Errors", "CRC Errors"} {
					fmt.Fprintf(&b, "\t Link %d: %s: 0\n", l, c)
				}
			}
		}
	}
	t.print(b.String())
	return 0
}
