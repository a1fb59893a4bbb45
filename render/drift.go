package render

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/probes/report"
)

// Drift is one attribute the fleet's hosts do not agree on: each value
// with the hosts that have it, the most common first. "dgx[01-15]
// 92.00.45.00.05, dgx16 92.00.36.00.02": the hosts after the first value
// are the ones that differ.
type Drift struct {
	Attribute string       `json:"attribute"`
	Values    []DriftValue `json:"values"`
}

// DriftValue is one value of an attribute and the hosts that have it.
type DriftValue struct {
	Value string `json:"value"`
	Hosts string `json:"hosts"` // a node set
	Count int    `json:"count"`
	names []string
}

// driftAttributes are what hosts of one GPU model should agree on, each
// read from a host's snapshot: the software and firmware versions, the
// GPU count, and the modes a reset or reboot changes.
var driftAttributes = []struct {
	name string
	of   func(*report.Snapshot) string
}{
	{"driver", func(s *report.Snapshot) string { return orNotRead(s.DriverVersion) }},
	{"CUDA", func(s *report.Snapshot) string { return orNotRead(s.CUDADriverVersion) }},
	{"GPUs", gpuModels},
	{"NICs", func(s *report.Snapshot) string {
		if s.Fabric == nil || !s.Fabric.PCIRead || s.Fabric.Truncated {
			return "not read"
		}
		return fmt.Sprintf("%d network controller(s)", s.Fabric.NICs)
	}},
	{"VBIOS", perGPU(func(g report.GPU) string { return orNotRead(g.VBIOSVersion) })},
	{"inforom", perGPU(func(g report.GPU) string { return orNotRead(g.InforomImage) })},
	{"persistence", perGPU(func(g report.GPU) string { return onOff(g.PersistenceMode) })},
	{"ECC mode", perGPU(eccMode)},
	{"MIG mode pending a reset", perGPU(migPending)},
}

// FleetDrift folds the hosts by each attribute and returns those with
// more than one value. Hosts are compared with the hosts of the same GPU
// model only (an H100 pool's VBIOS is not an A100 pool's drift); with
// more than one model, each attribute names its model. hosts[i]'s
// snapshot is snaps[i] and classes[i] how reaching it ended; a host that
// failed (no snapshot, no NVML, a run cut short: report.OutcomeOf) is
// left out, the summary line says why, and so is a host without GPUs
// (NVML seeing none is its own finding).
func FleetDrift(hosts []string, snaps []*report.Snapshot, classes []string) []Drift {
	models := map[string][]int{}
	var order []string
	for i := range hosts {
		class := ""
		if i < len(classes) {
			class = classes[i]
		}
		if i >= len(snaps) || report.OutcomeOf(snaps[i], class) == report.Failed || len(snaps[i].GPUs) == 0 {
			continue
		}
		m := gpuModel(snaps[i])
		if _, ok := models[m]; !ok {
			order = append(order, m)
		}
		models[m] = append(models[m], i)
	}
	var out []Drift
	for _, m := range order {
		for _, a := range driftAttributes {
			d := foldAttribute(hosts, snaps, models[m], a.of)
			if d == nil {
				continue
			}
			d.Attribute = a.name
			if len(order) > 1 {
				d.Attribute += " of " + m
			}
			out = append(out, *d)
		}
	}
	return out
}

// foldAttribute folds the hosts at idx by one attribute; nil when they
// agree.
func foldAttribute(hosts []string, snaps []*report.Snapshot, idx []int, of func(*report.Snapshot) string) *Drift {
	by := map[string][]string{}
	var order []string
	for _, i := range idx {
		v := of(snaps[i])
		if v == "not read" {
			continue // a value nobody read disagrees with nothing
		}
		if _, ok := by[v]; !ok {
			order = append(order, v)
		}
		by[v] = append(by[v], hosts[i])
	}
	if len(order) < 2 {
		return nil
	}
	slices.SortStableFunc(order, func(x, y string) int { return len(by[y]) - len(by[x]) })
	d := &Drift{}
	for _, v := range order {
		d.Values = append(d.Values, DriftValue{Value: v, Hosts: inventory.FoldNames(by[v]), Count: len(by[v]), names: by[v]})
	}
	return d
}

// gpuModel is the host's GPU models: "NVIDIA A100-SXM4-80GB", or each
// model it has, joined.
func gpuModel(s *report.Snapshot) string {
	var names []string
	for _, g := range s.GPUs {
		if n := orNotRead(g.Name); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return strings.Join(names, " + ")
}

// String is the drift in one line: "VBIOS: dgx[01-15] 92.00.45.00.05,
// dgx16 92.00.36.00.02".
func (d Drift) String() string {
	parts := make([]string, len(d.Values))
	for i, v := range d.Values {
		parts[i] = v.Hosts + " " + v.Value
	}
	return d.Attribute + ": " + strings.Join(parts, "; ")
}

// DriftTotal is the drift's part of the summary line: "drift in VBIOS
// (dgx16), driver (dgx[03-04])", naming the hosts off the most common
// value; "" for none.
func DriftTotal(drift []Drift) string {
	if len(drift) == 0 {
		return ""
	}
	parts := make([]string, len(drift))
	for i, d := range drift {
		var off []string
		from := 1
		if d.Values[0].Count == d.Values[1].Count {
			from = 0 // no value most hosts share: none is the odd one
		}
		for _, v := range d.Values[from:] {
			off = append(off, v.Hosts)
		}
		parts[i] = fmt.Sprintf("%s (%s)", d.Attribute, strings.Join(off, ", "))
		if from == 0 {
			parts[i] = fmt.Sprintf("%s (no majority: %s)", d.Attribute, strings.Join(off, ", "))
		}
	}
	return "drift in " + strings.Join(parts, ", ")
}

// DriftFlags are the phrases a host off the fleet's most common value is
// flagged with, by host: "drift: VBIOS 92.00.36.00.02 (most hosts:
// 92.00.36.00.04)"; with no majority, every host of the attribute.
func DriftFlags(drift []Drift) map[string][]string {
	out := map[string][]string{}
	for _, d := range drift {
		odd := d.Values
		if len(d.Values) > 1 && d.Values[0].Count > d.Values[1].Count {
			odd = d.Values[1:]
		}
		for _, v := range odd {
			phrase := fmt.Sprintf("drift: %s %s", d.Attribute, v.Value)
			if len(odd) < len(d.Values) {
				phrase += fmt.Sprintf(" (most hosts: %s)", d.Values[0].Value)
			} else {
				phrase += " (no value most hosts share)"
			}
			for _, h := range v.names {
				out[h] = append(out[h], phrase)
			}
		}
	}
	return out
}

func orNotRead(s string) string {
	if s == "" {
		return "not read"
	}
	return s
}

func onOff(b *bool) string {
	switch {
	case b == nil:
		return "not read"
	case *b:
		return "on"
	}
	return "off"
}

// gpuModels is the host's GPUs by model: "8x NVIDIA A100-SXM4-80GB".
func gpuModels(s *report.Snapshot) string {
	count := map[string]int{}
	var names []string
	for _, g := range s.GPUs {
		n := orNotRead(g.Name)
		if count[n] == 0 {
			names = append(names, n)
		}
		count[n]++
	}
	if len(names) == 0 {
		return "none"
	}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%dx %s", count[n], n)
	}
	return strings.Join(parts, ", ")
}

// perGPU is a host's value of a GPU attribute: the one value all its
// GPUs have, or each value with the GPUs that have it ("92.00.45.00.05
// on GPU[0-6], 92.00.36.00.02 on GPU7").
func perGPU(of func(report.GPU) string) func(*report.Snapshot) string {
	return func(s *report.Snapshot) string {
		by := map[string][]string{}
		var order []string
		unread := false
		for _, g := range s.GPUs {
			v := of(g)
			if v == "not read" {
				unread = true // a hung GPU's: the GPUs read say the host's value
				continue
			}
			if _, ok := by[v]; !ok {
				order = append(order, v)
			}
			by[v] = append(by[v], fmt.Sprintf("GPU%d", g.Index))
		}
		switch {
		case len(order) == 0 && unread:
			return "not read"
		case len(order) == 0:
			return "no GPU"
		case len(order) == 1:
			return order[0]
		}
		parts := make([]string, len(order))
		for i, v := range order {
			parts[i] = v + " on " + inventory.FoldNames(by[v])
		}
		return strings.Join(parts, ", ")
	}
}

// eccMode is "on", "off", or the mode and the one pending the next
// reset: "on, off after a reset".
func eccMode(g report.GPU) string {
	cur := onOff(g.ECC.Enabled)
	if g.ECC.Pending != nil && g.ECC.Enabled != nil && *g.ECC.Pending != *g.ECC.Enabled {
		return cur + ", " + onOff(g.ECC.Pending) + " after a reset"
	}
	return cur
}

// migPending is the MIG mode a reset will set, where it differs from
// the mode now: "enabled after a reset"; "none" otherwise. The mode itself
// is the pool's choice (an inference pool runs MIG), not drift.
func migPending(g report.GPU) string {
	if g.MIG.Pending != "" && g.MIG.Pending != g.MIG.Current {
		return g.MIG.Pending + " after a reset"
	}
	return "none"
}
