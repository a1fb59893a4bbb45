package dgx

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gpulab/gpulab/sim/spec"
)

func init() {
	tools["lspci"] = lspci
}

// pciDev is a PCI function; a bridge has the bus behind it.
type pciDev struct {
	slot, class, name, rev string
	bus                    *pciBus
}

// pciBus is a bus and the functions on it; sub is the highest bus number
// behind it (the bridge's subordinate).
type pciBus struct {
	num, sub int
	devs     []*pciDev
}

const (
	amdRoot   = "Advanced Micro Devices, Inc. [AMD] Starship/Matisse Root Complex"
	amdDummy  = "Advanced Micro Devices, Inc. [AMD] Starship/Matisse PCIe Dummy Host Bridge"
	amdGPP    = "Advanced Micro Devices, Inc. [AMD] Starship/Matisse GPP Bridge"
	pexSwitch = "Broadcom / LSI PEX880xx PCIe Gen 4 Switch"
	gpuDev    = "NVIDIA Corporation GA100 [A100 SXM4 40GB]"
	nvSwitch  = "NVIDIA Corporation GA100 [A100 NVSwitch]"
	hcaDev    = "Mellanox Technologies MT28908 Family [ConnectX-6]"
	mgmtNIC   = "Intel Corporation Ethernet Controller X550"
)

// switchTree is a root port with a PCIe switch behind it and, on the
// switch's downstream ports, one endpoint each (sorted by bus).
func switchTree(root int, endpoints map[int]*pciDev) *pciBus {
	var buses []int
	for b := range endpoints {
		buses = append(buses, b)
	}
	sort.Ints(buses)
	down := &pciBus{num: root + 2, sub: root + 0x1f}
	for k, b := range buses {
		down.devs = append(down.devs, &pciDev{slot: fmt.Sprintf("%02x.0", 4*k), class: "PCI bridge", name: pexSwitch,
			bus: &pciBus{num: b, sub: b, devs: []*pciDev{endpoints[b]}}})
	}
	up := &pciBus{num: root + 1, sub: root + 0x1f, devs: []*pciDev{{slot: "00.0", class: "PCI bridge", name: pexSwitch, bus: down}}}
	return &pciBus{num: root, sub: root + 0x1f, devs: []*pciDev{
		{slot: "00.0", class: "Host bridge", name: amdRoot},
		{slot: "01.0", class: "Host bridge", name: amdDummy},
		{slot: "01.1", class: "PCI bridge", name: amdGPP, bus: up},
	}}
}

// pciRoots is the host's PCI forest: each GPU pair with its HCA behind a
// PCIe switch on its own root complex, the six NVSwitches behind another,
// the management port on the last. The layout is the DGX A100's in
// outline (GPU, HCA and NVSwitch bus numbers as spec has them); bridge
// numbering is the simulation's, not a recording.
func pciRoots() []*pciBus {
	var roots []*pciBus
	for _, g := range spec.PCIGroups() { // the sysfs tree the probe reads is the same (spec.WritePCI)
		ends := map[int]*pciDev{}
		for _, b := range g.Endpoints {
			switch {
			case slices.Contains(spec.BusIDs[:], b):
				ends[int(b)] = &pciDev{slot: "00.0", class: "3D controller", name: gpuDev, rev: "a1"}
			case slices.Contains(spec.SwitchBus[:], b):
				ends[int(b)] = &pciDev{slot: "00.0", class: "Bridge", name: nvSwitch, rev: "a1"}
			default:
				ends[int(b)] = &pciDev{slot: "00.0", class: "Infiniband controller", name: hcaDev}
			}
		}
		roots = append(roots, switchTree(int(g.Root), ends))
	}
	roots = append(roots, &pciBus{num: 0xe0, sub: 0xff, devs: []*pciDev{
		{slot: "00.0", class: "Host bridge", name: amdRoot},
		{slot: "03.1", class: "PCI bridge", name: amdGPP, bus: &pciBus{num: 0xe2, sub: 0xe2, devs: []*pciDev{
			{slot: "00.0", class: "Ethernet controller", name: mgmtNIC, rev: "01"}}}},
	}})
	return roots
}

// lspciTree draws the forest as lspci -t does (pciutils' ls-tree.c: a
// line buffer in which, once a line is out, every '+' and '|' becomes
// '|' and everything else a space), with names under -v: the drawing of
// testdata/fixtures/lspci-tv/*.txt.
func lspciTree(roots []*pciBus, verbose bool) string {
	var b strings.Builder
	line := make([]byte, 0, 256)
	var out func(n int)
	out = func(n int) {
		b.Write(line[:n])
		b.WriteByte('\n')
		for k := 0; k < n; k++ {
			if line[k] == '+' || line[k] == '|' {
				line[k] = '|'
			} else {
				line[k] = ' '
			}
		}
	}
	put := func(p int, s string) int {
		for len(line) < p+len(s) {
			line = append(line, ' ')
		}
		copy(line[p:], s)
		return p + len(s)
	}
	var dev func(d *pciDev, p int)
	var bus func(u *pciBus, p int)
	dev = func(d *pciDev, p int) {
		p = put(p, d.slot)
		if d.bus != nil {
			if d.bus.num == d.bus.sub {
				p = put(p, fmt.Sprintf("-[%02x]--", d.bus.num))
			} else {
				p = put(p, fmt.Sprintf("-[%02x-%02x]--", d.bus.num, d.bus.sub))
			}
			bus(d.bus, p)
			return
		}
		if verbose {
			p = put(p, "  "+d.name)
		}
		out(p)
	}
	bus = func(u *pciBus, p int) {
		switch {
		case len(u.devs) == 0:
			out(p)
		case len(u.devs) == 1:
			dev(u.devs[0], put(p, "--"))
		default:
			for k, d := range u.devs {
				mark := "+-"
				if k == len(u.devs)-1 {
					mark = `\-`
				}
				dev(d, put(p, mark))
			}
		}
	}
	p := put(0, "-")
	for k, r := range roots {
		mark := "+-"
		if k == len(roots)-1 {
			mark = `\-`
		}
		bus(r, put(p, fmt.Sprintf("%s[%04x:%02x]-", mark, 0, r.num)))
	}
	return b.String()
}

// lspciList is plain lspci: one line per function in bus order.
func lspciList(roots []*pciBus) string {
	type fn struct {
		bus int
		d   *pciDev
	}
	var all []fn
	var walk func(u *pciBus)
	walk = func(u *pciBus) {
		for _, d := range u.devs {
			all = append(all, fn{u.num, d})
			if d.bus != nil {
				walk(d.bus)
			}
		}
	}
	for _, r := range roots {
		walk(r)
	}
	sort.SliceStable(all, func(a, b int) bool {
		if all[a].bus != all[b].bus {
			return all[a].bus < all[b].bus
		}
		return all[a].d.slot < all[b].d.slot
	})
	var b strings.Builder
	for _, f := range all {
		fmt.Fprintf(&b, "%02x:%s %s: %s", f.bus, f.d.slot, f.d.class, f.d.name)
		if f.d.rev != "" {
			fmt.Fprintf(&b, " (rev %s)", f.d.rev)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// lspci answers lspci, lspci -t and lspci -tv (-t -v, -vt).
func lspci(_ context.Context, _ *Host, t *term, args []string) int {
	tree, verbose := false, false
	for _, a := range args[1:] {
		if !strings.HasPrefix(a, "-") || len(a) < 2 || strings.Trim(a[1:], "tv") != "" {
			return t.fail(1, fmt.Sprintf("lspci: invalid option -- '%s'\nUsage: lspci [<switches>]\n", strings.TrimLeft(a, "-")))
		}
		tree = tree || strings.Contains(a, "t")
		verbose = verbose || strings.Contains(a, "v")
	}
	switch {
	case tree:
		t.print(lspciTree(pciRoots(), verbose))
	case verbose:
		return t.fail(1, "lspci: -v without -t is not simulated\n")
	default:
		t.print(lspciList(pciRoots()))
	}
	return 0
}
