package dgx

import (
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/gpulab/gpulab/sim/spec"
)

// migLayouts are the MIG layouts a sick host may carry, each valid on an
// A100-SXM4-40GB. The first is the one recorded in
// testdata/fixtures/nvidia-smi-mig-lgi/a100-40gb-2x-3g.20gb.txt.
var migLayouts = [][]string{
	{"3g.20gb", "3g.20gb"},
	{"4g.20gb", "2g.10gb", "1g.5gb"},
	{"2g.10gb", "2g.10gb", "2g.10gb", "1g.5gb"},
	{"1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb", "1g.5gb"},
}

// Plan returns one Faults per host for a fleet of n hosts: exactly one
// sick host (when n >= 1) chosen by seed, with several faults an operator
// should find: an NVLink down between two GPUs on different PCIe switches
// (topo -m shows SYS for the pair), uncorrected ECC errors and a pending
// row remap on one GPU with the Xid 48 and Xid 63 that go with them, an
// Xid 79 on another GPU, and MIG enabled on one or two GPUs where every
// other host has MIG disabled. The same seed gives the same plan;
// different seeds vary which host and which GPUs.
func Plan(seed int64, n int) (sick int, faults []spec.Faults) {
	if n <= 0 {
		return -1, nil
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
	faults = make([]spec.Faults, n)
	sick = r.IntN(n)
	faults[sick] = sickFaults(r)
	return sick, faults
}

func sickFaults(r *rand.Rand) spec.Faults {
	gpus := r.Perm(spec.GPUs)
	a := gpus[0]
	var b int
	for _, g := range gpus[1:] {
		if !spec.SamePCIeSwitch(a, g) {
			b = g
			break
		}
	}
	var rest []int // GPUs not on the pair, in random order
	for _, g := range gpus {
		if g != a && g != b {
			rest = append(rest, g)
		}
	}
	ecc, lost := rest[0], rest[1]
	f := spec.Faults{
		NVLinkDown: [][2]int{{min(a, b), max(a, b)}},
		ECC: map[int]spec.ECCCounts{ecc: {
			VolatileUncorrected: uint64(1 + r.IntN(3)), VolatileCorrected: uint64(r.IntN(40)),
		}},
		RemapPending: []int{ecc},
		MIG:          map[int][]string{},
	}
	e := f.ECC[ecc]
	e.AggregateUncorrected, e.AggregateCorrected = e.VolatileUncorrected, e.VolatileCorrected+uint64(r.IntN(200))
	f.ECC[ecc] = e
	t48 := 3600 + r.Float64()*40000
	t79 := 3600 + r.Float64()*40000
	pid := 2000 + r.IntN(60000)
	proc := fmt.Sprintf("pid=%d, name=python3, ", pid)
	f.XIDs = []spec.XID{
		// Wording: Xid 48 as the 5xx drivers print it; Xid 63 as recorded in
		// testdata/fixtures/dmesg-xid/xid63-row-remapper-a100.txt; Xid 79 as
		// in dmesg-xid/syslog-zh-locale-month-xid79-then-dmesg-rtx4090.txt.
		{GPU: ecc, Code: 48, SecondsAfterBoot: t48, Message: proc +
			"An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0."},
		{GPU: ecc, Code: 63, SecondsAfterBoot: t48 + 0.000041, Message: proc +
			"Row Remapper: New row marked for remapping, reset gpu to activate."},
		{GPU: lost, Code: 79, SecondsAfterBoot: t79, Message: "pid='<unknown>', name=<unknown>, GPU has fallen off the bus."},
	}
	sort.SliceStable(f.XIDs, func(i, j int) bool { return f.XIDs[i].SecondsAfterBoot < f.XIDs[j].SecondsAfterBoot })
	migGPUs := rest[2 : 3+r.IntN(2)]
	for _, g := range migGPUs {
		f.MIG[g] = migLayouts[r.IntN(len(migLayouts))]
	}
	return f
}
