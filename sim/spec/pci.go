package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// PCIGroup is one root complex of the simulated host: a root port with a
// PCIe switch behind it and one endpoint on each of the switch's
// downstream ports, sorted by bus. The layout is the DGX A100's in
// outline (GPU, HCA and NVSwitch bus numbers as BusIDs, NICs and
// SwitchBus have them); the bridges' numbering is the simulation's.
type PCIGroup struct {
	Root      uint32
	Endpoints []uint32
}

// PCIGroups are the host's root complexes with a switch: each GPU pair
// with its HCA, then the six NVSwitches. (The management port sits
// behind a root port of its own on bus 0xe0.)
func PCIGroups() []PCIGroup {
	var out []PCIGroup
	for p, root := range []uint32{0x00, 0x40, 0x80, 0xa0} {
		ends := []uint32{BusIDs[2*p], BusIDs[2*p+1], NICs[p].Bus}
		slices.Sort(ends)
		out = append(out, PCIGroup{Root: root, Endpoints: ends})
	}
	return append(out, PCIGroup{Root: 0xc0, Endpoints: SwitchBus[:]})
}

// Bridges are the bridges above the group's k-th endpoint, from the root:
// the root port (RR:01.1), the switch's upstream port (RR+1:00.0) and
// its downstream port (RR+2:4k.0), each as "0000:BB:DD.F".
func (g PCIGroup) Bridges(k int) [3]string {
	return [3]string{fmt.Sprintf("0000:%02x:01.1", g.Root), fmt.Sprintf("0000:%02x:00.0", g.Root+1), fmt.Sprintf("0000:%02x:%02x.0", g.Root+2, 4*k)}
}

// PCIeSpeeds are sysfs's link speeds by generation, as
// current_link_speed and max_link_speed print them.
var PCIeSpeeds = map[int]string{1: "2.5 GT/s PCIe", 2: "5.0 GT/s PCIe", 3: "8.0 GT/s PCIe", 4: "16.0 GT/s PCIe", 5: "32.0 GT/s PCIe"}

// pciFunction is one PCI function's sysfs attributes.
type pciFunction struct {
	vendor, class string
	// gen and width are its link's, current and maximum; 0: no link
	// attributes (the root complex's host bridges have none).
	gen, width, genMax, widthMax int
}

// WritePCI writes the host's PCI functions as sysfs shows them: the
// tree under dir's parent's devices/ (pci0000:RR/root port/switch
// upstream port/downstream port/endpoint, each with vendor, class and
// its link's current and maximum speed and width), and dir holding a
// link to each function in it, as /sys/bus/pci/devices links into
// /sys/devices. The GPUs (3D controllers), NVSwitches (bridges of class
// 0x0680) and HCAs are the switches' endpoints; the management NIC sits
// on a root port of its own. A downstream port of PCIeBridgeWidth trains
// narrower than its maximum.
func (f Faults) WritePCI(dir string) error {
	tree := filepath.Join(filepath.Dir(dir), "devices")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	put := func(path []string, fn pciFunction) error {
		p := filepath.Join(append([]string{tree}, path...)...)
		if err := os.MkdirAll(p, 0o700); err != nil {
			return err
		}
		attrs := map[string]string{"vendor": fn.vendor, "class": fn.class}
		if fn.gen > 0 {
			attrs["current_link_speed"], attrs["max_link_speed"] = PCIeSpeeds[fn.gen], PCIeSpeeds[fn.genMax]
			attrs["current_link_width"], attrs["max_link_width"] = fmt.Sprint(fn.width), fmt.Sprint(fn.widthMax)
		}
		for name, text := range attrs {
			if err := os.WriteFile(filepath.Join(p, name), []byte(text+"\n"), 0o600); err != nil {
				return err
			}
		}
		return os.Symlink(p, filepath.Join(dir, path[len(path)-1]))
	}
	for _, g := range PCIGroups() {
		dom := fmt.Sprintf("pci0000:%02x", g.Root)
		for k, bus := range g.Endpoints {
			br := g.Bridges(k)
			path := []string{dom}
			for j, b := range br {
				path = append(path, b)
				if k > 0 && j < 2 {
					continue // written with the first endpoint
				}
				fn := pciFunction{vendor: "0x1022", class: "0x060400", gen: PCIeGen, width: 16, genMax: PCIeGen, widthMax: 16}
				if j > 0 {
					fn.vendor = "0x1000" // the PCIe switch's ports
				}
				if j == 2 {
					fn.width = f.bridgeWidth(bus)
				}
				if err := put(path, fn); err != nil {
					return err
				}
			}
			if err := put(append(path, fmt.Sprintf("0000:%02x:00.0", bus)), f.endpoint(bus)); err != nil {
				return err
			}
		}
	}
	mgmt := []string{"pci0000:e0", "0000:e0:03.1"}
	if err := put(mgmt, pciFunction{vendor: "0x1022", class: "0x060400", gen: 3, width: 4, genMax: 3, widthMax: 4}); err != nil {
		return err
	}
	return put(append(mgmt, "0000:e2:00.0"), pciFunction{vendor: "0x8086", class: "0x020000", gen: 3, width: 4, genMax: 3, widthMax: 4})
}

// endpoint is the function on bus: a GPU (its link at LinkGen when
// busy... as NVML reports it), an NVSwitch or an HCA.
func (f Faults) endpoint(bus uint32) pciFunction {
	if i := slices.Index(BusIDs[:], bus); i >= 0 {
		return pciFunction{vendor: "0x10de", class: "0x030200", gen: f.LinkGen(i), width: 16, genMax: PCIeGen, widthMax: 16}
	}
	if slices.Contains(SwitchBus[:], bus) {
		return pciFunction{vendor: "0x10de", class: "0x068000", gen: PCIeGen, width: 8, genMax: PCIeGen, widthMax: 8}
	}
	return pciFunction{vendor: "0x15b3", class: "0x020700", gen: PCIeGen, width: 16, genMax: PCIeGen, widthMax: 16}
}

// bridgeWidth is the width the downstream port above bus trains at: 16,
// or what PCIeBridgeWidth says for the GPU on bus.
func (f Faults) bridgeWidth(bus uint32) int {
	if i := slices.Index(BusIDs[:], bus); i >= 0 {
		if w, ok := f.PCIeBridgeWidth[i]; ok {
			return w
		}
	}
	return 16
}
