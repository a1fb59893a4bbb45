package spec

import (
	"fmt"
	"sort"
)

// Faults is what is wrong with one simulated DGX A100. The zero value is a
// healthy machine. It is what `nvmlprobe --mock-faults` takes as JSON.
type Faults struct {
	// Machine names the simulated machine: its GPUs' serials and UUIDs
	// are derived from it (Serial, UUID), so that each host of a fleet
	// has GPUs of its own. Empty: the recorded machine's.
	Machine string `json:"machine,omitempty"`
	// NVLinkDown lists GPU index pairs whose NVLink is down: `nvidia-smi
	// topo -m` shows the pair's PCIe path (SYS across NUMA nodes) instead
	// of NV#, and each GPU of a pair loses the links LinksDown names.
	NVLinkDown [][2]int `json:"nvlink_down,omitempty"`
	// ECC holds error counts per GPU index.
	ECC map[int]ECCCounts `json:"ecc,omitempty"`
	// RemapPending lists GPUs with a row remap pending (a reset applies it).
	RemapPending []int `json:"remap_pending,omitempty"`
	// XIDs are the Xid events in the kernel log since boot.
	XIDs []XID `json:"xids,omitempty"`
	// MIG turns MIG mode on for a GPU and creates these GPU instance
	// profiles on it ("3g.20gb", "1g.5gb"...), each with one compute
	// instance spanning it, placed as the driver would (see PlaceMIG).
	MIG map[int][]string `json:"mig,omitempty"`
	// Processes run on the GPUs: NVML lists them, each with the memory it
	// uses (added to its GPU's), and /proc shows their names and cgroups
	// (the probe reads them from a tree WriteProc writes).
	Processes []Process `json:"processes,omitempty"`
	// Utilization is a GPU's utilisation in percent, by GPU index; a GPU
	// not named is idle (0%).
	Utilization map[int]uint32 `json:"utilization,omitempty"`
}

// ECCCounts are a GPU's DRAM ECC error counters: volatile (since the
// driver loaded) and aggregate (over the GPU's life).
type ECCCounts struct {
	VolatileUncorrected  uint64 `json:"volatile_uncorrected,omitempty"`
	AggregateUncorrected uint64 `json:"aggregate_uncorrected,omitempty"`
	VolatileCorrected    uint64 `json:"volatile_corrected,omitempty"`
	AggregateCorrected   uint64 `json:"aggregate_corrected,omitempty"`
}

// XID is one Xid event of the kernel log.
type XID struct {
	GPU  int `json:"gpu"`
	Code int `json:"code"`
	// Message is the driver's text after "Xid (PCI:...): CODE, ".
	Message string `json:"message"`
	// SecondsAfterBoot places the line in the log (dmesg's timestamp).
	SecondsAfterBoot float64 `json:"seconds_after_boot"`
}

// Validate reports the first thing in f that no DGX A100 can show: a GPU
// index out of range, a pair of one GPU, an unknown MIG profile or a MIG
// layout that does not fit, a process without a PID or in a MIG instance
// its GPU lacks, a utilisation over 100%.
func (f Faults) Validate() error {
	gpu := func(what string, i int) error {
		if i < 0 || i >= GPUs {
			return fmt.Errorf("%s: GPU %d: a DGX A100 has GPUs 0-%d", what, i, GPUs-1)
		}
		return nil
	}
	for _, p := range f.NVLinkDown {
		if err := firstErr(gpu("nvlink_down", p[0]), gpu("nvlink_down", p[1])); err != nil {
			return err
		}
		if p[0] == p[1] {
			return fmt.Errorf("nvlink_down: pair [%d,%d] is one GPU", p[0], p[1])
		}
	}
	for i := range f.ECC {
		if err := gpu("ecc", i); err != nil {
			return err
		}
	}
	for _, i := range f.RemapPending {
		if err := gpu("remap_pending", i); err != nil {
			return err
		}
	}
	for _, x := range f.XIDs {
		if err := gpu("xids", x.GPU); err != nil {
			return err
		}
		if x.Code <= 0 || x.SecondsAfterBoot < 0 {
			return fmt.Errorf("xids: Xid %d at %vs: want a positive code and a time after boot", x.Code, x.SecondsAfterBoot)
		}
	}
	for i, profiles := range f.MIG {
		if err := gpu("mig", i); err != nil {
			return err
		}
		if _, err := PlaceMIG(profiles); err != nil {
			return fmt.Errorf("mig: GPU %d: %w", i, err)
		}
	}
	return f.validateProcesses()
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// PairDown reports whether the NVLink between GPUs a and b is down.
func (f Faults) PairDown(a, b int) bool {
	for _, p := range f.NVLinkDown {
		if p == [2]int{a, b} || p == [2]int{b, a} {
			return true
		}
	}
	return false
}

// LinksDown lists the links of gpu that are down, ascending. On an
// NVSwitch system every link carries traffic to every peer, so no link
// "belongs" to a pair; the simulation takes, for each pair (a, b) that is
// down, the two links of each GPU that go to NVSwitch (a+b) mod 6 (links
// s and s+6). Both GPUs of the pair lose them, so both show them inactive
// and both have fewer active links to their other peers.
func (f Faults) LinksDown(gpu int) []int {
	down := map[int]bool{}
	for _, p := range f.NVLinkDown {
		if p[0] != gpu && p[1] != gpu {
			continue
		}
		s := (p[0] + p[1]) % Switches
		down[s], down[s+Switches] = true, true
	}
	var out []int
	for l := range down {
		out = append(out, l)
	}
	sort.Ints(out)
	return out
}

// LinkUp reports whether a link of gpu is up.
func (f Faults) LinkUp(gpu, link int) bool {
	for _, l := range f.LinksDown(gpu) {
		if l == link {
			return false
		}
	}
	return true
}

// ActiveLinks counts gpu's links that are up.
func (f Faults) ActiveLinks(gpu int) int { return LinksPerGPU - len(f.LinksDown(gpu)) }

// ECCFor returns gpu's ECC counters (zero when none are set).
func (f Faults) ECCFor(gpu int) ECCCounts { return f.ECC[gpu] }

// Pending reports whether gpu has a row remap pending.
func (f Faults) Pending(gpu int) bool {
	for _, g := range f.RemapPending {
		if g == gpu {
			return true
		}
	}
	return false
}

// RemappedRows are gpu's remapped-row counters as NVML reports them: a
// pending remap counts one row, remapped for an uncorrectable error when
// the GPU has any, for correctable errors otherwise (the shape of
// testdata/fixtures/nvidia-smi-q/a100-sxm4-80gb-drv510-ecc-remap-excerpt.txt).
func (f Faults) RemappedRows(gpu int) (correctable, uncorrectable int, pending bool) {
	if !f.Pending(gpu) {
		return 0, 0, false
	}
	if e := f.ECC[gpu]; e.VolatileUncorrected > 0 || e.AggregateUncorrected > 0 {
		return 0, 1, true
	}
	return 1, 0, true
}

// MIGOn reports whether gpu runs in MIG mode.
func (f Faults) MIGOn(gpu int) bool {
	_, ok := f.MIG[gpu]
	return ok
}

// Instances is gpu's MIG layout (nil when MIG is off or the layout does
// not fit: Validate says why).
func (f Faults) Instances(gpu int) []GPUInstance {
	gis, _ := PlaceMIG(f.MIG[gpu])
	return gis
}
