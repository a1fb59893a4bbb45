package render

import (
	"strings"
	"testing"

	"github.com/gpulab/gpulab/probes/report"
)

// The fleet's drift: the host whose VBIOS differs is named, off the most
// common value; a host with one GPU apart says which; hosts that agree,
// and hosts without NVML, are no drift.
func TestFleetDrift(t *testing.T) {
	on := true
	snap := func(vbios ...string) *report.Snapshot {
		s := &report.Snapshot{NVML: report.NVMLState{Available: true}, DriverVersion: "535.129.03", CUDADriverVersion: "12.2"}
		for i, v := range vbios {
			s.GPUs = append(s.GPUs, report.GPU{Index: i, Name: "NVIDIA A100-SXM4-80GB", VBIOSVersion: v, PersistenceMode: &on})
		}
		return s
	}
	hosts := []string{"dgx01", "dgx02", "dgx03", "dgx04", "dgx05"}
	snaps := []*report.Snapshot{snap("92.00.45.00.05", "92.00.45.00.05"), snap("92.00.45.00.05", "92.00.45.00.05"),
		snap("92.00.45.00.05", "92.00.36.00.02"), snap("92.00.45.00.05", "92.00.45.00.05"), {NVML: report.NVMLState{Available: false}}}
	d := FleetDrift(hosts, snaps, nil)
	if len(d) != 1 || d[0].String() != "VBIOS: dgx[01-02,04] 92.00.45.00.05; dgx03 92.00.45.00.05 on GPU0, 92.00.36.00.02 on GPU1" {
		t.Fatalf("%+v", d)
	}
	if got := DriftTotal(d); got != "drift in VBIOS (dgx03)" {
		t.Errorf("total: %q", got)
	}
	if got := DriftTotal(FleetDrift(hosts[2:4], snaps[2:4], nil)); got != "drift in VBIOS (no majority: dgx03, dgx04)" {
		t.Errorf("1 against 1: %q", got)
	}
	if got := ProbeTotal(hosts, snaps, nil); !strings.HasSuffix(got, ", drift in VBIOS (dgx03)") {
		t.Errorf("ProbeTotal: %q", got)
	}
	snaps[1].DriverVersion = "550.54.15"
	for _, s := range snaps[:4] {
		for i := range s.GPUs {
			s.GPUs[i].ECC.Enabled = &on
		}
	}
	snaps[3].GPUs[0].ECC.Pending = new(bool)
	var lines []string
	for _, x := range FleetDrift(hosts, snaps, nil) {
		lines = append(lines, x.String())
	}
	want := []string{"driver: dgx[01,03-04] 535.129.03; dgx02 550.54.15",
		"VBIOS: dgx[01-02,04] 92.00.45.00.05; dgx03 92.00.45.00.05 on GPU0, 92.00.36.00.02 on GPU1",
		"ECC mode: dgx[01-03] on; dgx04 on, off after a reset on GPU0, on on GPU1"}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	// A GPU whose values were not read (it hung) disagrees with nothing:
	// its host's value is its other GPUs'.
	hung := snap("", "92.00.45.00.05")
	hung.GPUs[0].PersistenceMode = nil
	if d := FleetDrift([]string{"dgx01", "dgx02"}, []*report.Snapshot{snap("92.00.45.00.05", "92.00.45.00.05"), hung}, nil); len(d) != 0 {
		t.Errorf("a hung GPU is drift: %+v", d)
	}
	if d := FleetDrift(hosts[:2], snaps[:1], nil); len(d) != 0 {
		t.Errorf("one host is no drift: %+v", d)
	}
	// Two pools of two models: each compared within itself, and named.
	h100 := snap("96.00.74.00.0D", "96.00.74.00.0D")
	for i := range h100.GPUs {
		h100.GPUs[i].Name = "NVIDIA H100 80GB HBM3"
	}
	h100b := snap("96.00.74.00.0D", "96.00.74.00.0D")
	for i := range h100b.GPUs {
		h100b.GPUs[i].Name = "NVIDIA H100 80GB HBM3"
		h100b.GPUs[i].MIG = report.MIG{Current: "disabled", Pending: "enabled"}
	}
	mixed := FleetDrift([]string{"a1", "a2", "h1", "h2"}, []*report.Snapshot{snap("92.00.45.00.05"), snap("92.00.45.00.05"), h100, h100b}, nil)
	if len(mixed) != 1 || mixed[0].String() != "MIG mode pending a reset of NVIDIA H100 80GB HBM3: h1 none; h2 enabled after a reset" {
		t.Errorf("mixed: %+v", mixed)
	}
	// A host lost before its probe ended is no evidence: not compared.
	if d := FleetDrift(hosts[2:4], snaps[2:4], []string{"lost", "ok"}); len(d) != 0 {
		t.Errorf("one host is no drift: %+v", d)
	}
}

// The hosts off the most common value are flagged with it; with no
// majority, every host is.
func TestDriftFlags(t *testing.T) {
	snap := func(driver string) *report.Snapshot {
		return &report.Snapshot{NVML: report.NVMLState{Available: true}, DriverVersion: driver, GPUs: []report.GPU{{Name: "NVIDIA A100-SXM4-80GB"}}}
	}
	hosts := []string{"dgx01", "dgx02", "dgx03"}
	flags := DriftFlags(FleetDrift(hosts, []*report.Snapshot{snap("535.129.03"), snap("550.54.15"), snap("535.129.03")}, nil))
	if len(flags) != 1 || len(flags["dgx02"]) != 1 || flags["dgx02"][0] != "drift: driver 550.54.15 (most hosts: 535.129.03)" {
		t.Errorf("%v", flags)
	}
	flags = DriftFlags(FleetDrift(hosts[:2], []*report.Snapshot{snap("535.129.03"), snap("550.54.15")}, nil))
	if len(flags) != 2 || flags["dgx01"][0] != "drift: driver 535.129.03 (no value most hosts share)" {
		t.Errorf("1 against 1: %v", flags)
	}
}

// A host with a network controller fewer on its PCI bus than its peers
// is drift; a host whose bus was not read disagrees with nothing.
func TestNICDrift(t *testing.T) {
	snap := func(nics int, read bool) *report.Snapshot {
		return &report.Snapshot{NVML: report.NVMLState{Available: true}, GPUs: []report.GPU{{Name: "NVIDIA A100-SXM4-40GB"}},
			Fabric: &report.Fabric{PCIRead: read, NICs: nics}}
	}
	d := FleetDrift([]string{"dgx01", "dgx02", "dgx03", "dgx04"}, []*report.Snapshot{snap(5, true), snap(5, true), snap(4, true), snap(0, false)}, nil)
	if len(d) != 1 || d[0].String() != "NICs: dgx[01-02] 5 network controller(s); dgx03 4 network controller(s)" {
		t.Errorf("%+v", d)
	}
}
