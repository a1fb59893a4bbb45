package collect

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gpulab/gpulab/probes/report"
	"github.com/gpulab/gpulab/sim/spec"
)

// The PCI bus and the fabric manager: the simulated DGX A100's sysfs (8
// GPUs, 6 NVSwitches, 4 HCAs) counted; a real fabric manager log's last
// [ERROR] line read; the daemon's absence from /proc said; and one GPU
// more on the bus than NVML sees is a finding.
func TestFabricScan(t *testing.T) {
	dir := t.TempDir()
	pci, proc := filepath.Join(dir, "pci"), filepath.Join(dir, "proc")
	if err := os.Mkdir(proc, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := (spec.Faults{}).WritePCI(pci); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join("..", "..", "testdata", "fixtures", "fabricmanager-log", "feb2025-inband-multicast-then-nvswitch-non-fatal-12028.log")
	s := &report.Snapshot{NVML: report.NVMLState{Available: true}, GPUs: make([]report.GPU, 7)}
	c := &collector{snap: s, opts: Options{ProcRoot: proc, PCIDir: pci, FabricManagerLog: log}}
	c.fabricScan(c.stuckProcesses())
	f := s.Fabric
	if f == nil || f.PCIGPUs != 8 || f.NVSwitches != 6 || f.ManagerRunning == nil || *f.ManagerRunning || !f.LogRead ||
		f.LogLastError != "[Feb 27 2025 15:10:02] [ERROR] [tid 12727] detected NVSwitch non-fatal error 12028 on fid 0 on NVSwitch pci bus id 00000000:86:00.0 physical id 3 port 61" {
		t.Fatalf("%+v", f)
	}
	var got []string
	for _, x := range report.Findings(s) {
		got = append(got, x.Check)
	}
	if len(got) != 3 || got[0] != "gpu-pci-count" || got[1] != "fabric-manager" || got[2] != "fabric-manager-log" {
		t.Errorf("%v", got)
	}
	// The daemon running (its 15-character comm), all 8 GPUs seen: clean
	// but for the log's error.
	if err := (spec.Faults{}).WriteFabricManager(proc, filepath.Join(dir, "fm.log")); err != nil {
		t.Fatal(err)
	}
	s = &report.Snapshot{NVML: report.NVMLState{Available: true}, GPUs: make([]report.GPU, 8)}
	c = &collector{snap: s, opts: Options{ProcRoot: proc, PCIDir: pci, FabricManagerLog: filepath.Join(dir, "fm.log")}}
	c.fabricScan(c.stuckProcesses())
	if f := report.Findings(s); len(f) != 0 || !*s.Fabric.ManagerRunning {
		t.Errorf("%+v %+v", f, s.Fabric)
	}
	for _, check := range []string{"gpu-pci-count", "fabric-manager", "fabric-manager-log"} {
		if !report.CheckMade(s, check) {
			t.Errorf("%s not made: %s", check, report.WhyNotMade(s, check))
		}
	}
}

// A fabric manager log that is a FIFO (or anything but a file) is
// refused at once, never waited on: the check is UNKNOWN saying why, and
// the probe goes on.
func TestFabricManagerLogNotAFile(t *testing.T) {
	dir := t.TempDir()
	pci, proc, fifo := filepath.Join(dir, "pci"), filepath.Join(dir, "proc"), filepath.Join(dir, "fabricmanager.log")
	if err := errors.Join(os.Mkdir(proc, 0o700), (spec.Faults{}).WritePCI(pci), syscall.Mkfifo(fifo, 0o600)); err != nil {
		t.Fatal(err)
	}
	s := &report.Snapshot{NVML: report.NVMLState{Available: true}, GPUs: make([]report.GPU, 8)}
	c := &collector{snap: s, opts: Options{ProcRoot: proc, PCIDir: pci, FabricManagerLog: fifo}}
	c.fabricScan(c.stuckProcesses())
	if s.Fabric.LogRead || report.CheckMade(s, "fabric-manager-log") || !strings.Contains(report.WhyNotMade(s, "fabric-manager-log"), "not a regular file") {
		t.Errorf("log read %v, why %q", s.Fabric.LogRead, report.WhyNotMade(s, "fabric-manager-log"))
	}
	if b, err := readSmall(fifo); err == nil {
		t.Errorf("readSmall read a FIFO: %q", b)
	}
}

// Each GPU's PCIe path is read from the simulated sysfs: the switch's
// downstream and upstream ports and the root port above it, nearest
// first; a downstream port the knob trains at x8 is a finding on its GPU
// (NVML's view of the GPU's own link shows nothing).
func TestPCIePaths(t *testing.T) {
	dir := t.TempDir()
	pci, proc := filepath.Join(dir, "pci"), filepath.Join(dir, "proc")
	f := spec.Faults{PCIeBridgeWidth: map[int]int{5: 8}}
	if err := errors.Join(os.Mkdir(proc, 0o700), f.WritePCI(pci)); err != nil {
		t.Fatal(err)
	}
	s := &report.Snapshot{NVML: report.NVMLState{Available: true}}
	for i := range spec.BusIDs {
		s.GPUs = append(s.GPUs, report.GPU{Index: i, PCIBusID: spec.BusID(i)})
	}
	c := &collector{snap: s, opts: Options{ProcRoot: proc, PCIDir: pci}}
	c.fabricScan(c.stuckProcesses())
	g := s.GPUs[5]
	if !g.PCIe.PathRead || len(g.PCIe.Path) != 3 || g.PCIe.Path[0].BDF != "0000:82:08.0" || g.PCIe.Path[2].BDF != "0000:80:01.1" ||
		*g.PCIe.Path[0].WidthCurrent != 8 || *g.PCIe.Path[0].WidthMax != 16 || *g.PCIe.Path[1].GenMax != 4 {
		t.Fatalf("GPU5's path: %+v", g.PCIe.Path)
	}
	var got []string
	for _, x := range report.Findings(s) {
		if x.Check == "pcie-path" {
			got = append(got, x.Message)
		}
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], "GPU5: a PCIe bridge on the GPU's path trained narrow: 0000:82:08.0 at x8 of x16") {
		t.Errorf("pcie-path findings: %q", got)
	}
	if s.Fabric.PCIGPUs != 8 || s.Fabric.NVSwitches != 6 {
		t.Errorf("PCI count through the links: %+v", s.Fabric)
	}
}

// NVML's bus ids as sysfs names them, a domain above 0xffff (Intel VMD)
// included; what is not a PCI function is not taken for one.
func TestSysfsBDF(t *testing.T) {
	for in, want := range map[string]string{"00000000:07:00.0": "0000:07:00.0", "00000000:4E:00.0": "0000:4e:00.0",
		"00010000:01:00.0": "10000:01:00.0", "0000:3b:00.0": "0000:3b:00.0", "GPU-1234": "", "": ""} {
		if got := sysfsBDF(in); got != want {
			t.Errorf("sysfsBDF(%q) = %q, want %q", in, got, want)
		}
	}
	for _, name := range []string{"pci0000:00", "0000:07:00", "0000:07:00.8", "0000:0g:00.0"} {
		if isBDF(name) {
			t.Errorf("isBDF(%q)", name)
		}
	}
}
