// Package spec describes the simulated DGX A100 without NVML: its layout
// (PCI bus ids, NUMA nodes and CPUs, NVLinks, NICs), the identity of its
// GPUs, its MIG profiles, and what can be wrong with it (Faults).
//
// probes/nvmlsim builds go-nvml's mock from it and sim/dgx renders the
// command-line tools from it, so that the probe and the tools tell one
// story. It needs neither cgo nor go-nvml: a program that only renders
// tool output (the simulated fleet's shell) can import it on a build
// without cgo.
package spec

import (
	"fmt"
	"strings"
)

// GPUs is the number of GPUs of a DGX A100; LinksPerGPU the NVLinks of
// each (NVLink 3, two to each of six NVSwitches).
const (
	GPUs        = 8
	LinksPerGPU = 12
	Switches    = 6
)

// Layout of a DGX A100 (8x A100-SXM4-40GB, 2x AMD EPYC 7742).
//
// Bus ids are the DGX A100's own (NVIDIA's DGX A100 user guide lists
// GPUs at 07, 0F, 47, 4E, 87, 90, B7, BD). NUMA nodes and CPU affinity
// follow a real 8-GPU A100 board with two 64-core EPYCs in NPS4 (eight
// NUMA nodes of 16 cores): testdata/fixtures/nvidia-smi-topo-m/
// hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt gives nodes 3,3,1,1,7,7,5,5
// and 16 cores per GPU pair. That board has SMT off; a DGX A100 runs
// with SMT on (256 threads), so each GPU's affinity also holds the
// sibling threads 128 above its cores ("48-63,176-191"), as nvidia-smi
// prints them on a DGX A100.
var (
	BusIDs    = [GPUs]uint32{0x07, 0x0f, 0x47, 0x4e, 0x87, 0x90, 0xb7, 0xbd}
	NUMANodes = [GPUs]int{3, 3, 1, 1, 7, 7, 5, 5}
	// SwitchBus is the PCI bus of each NVSwitch (the remote end of a link).
	SwitchBus = [Switches]uint32{0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9}
)

// CPU topology: 2 sockets x 64 cores x 2 threads; NPS4 makes 8 NUMA
// nodes of 16 cores, node n holding cores 16n..16n+15 and their siblings.
const (
	Sockets        = 2
	CoresPerSocket = 64
	Threads        = Sockets * CoresPerSocket * 2
	NUMACount      = 8
	CoresPerNode   = Sockets * CoresPerSocket / NUMACount
)

// NodeCPUs lists the CPUs (threads) of NUMA node n, ascending.
func NodeCPUs(n int) []int {
	var out []int
	for _, base := range []int{0, Threads / 2} {
		for c := 0; c < CoresPerNode; c++ {
			out = append(out, base+n*CoresPerNode+c)
		}
	}
	return out
}

// CPUList is a GPU's CPU affinity as nvidia-smi and the probe print it:
// "48-63,176-191".
func CPUList(gpu int) string {
	n := NUMANodes[gpu]
	lo := n * CoresPerNode
	return fmt.Sprintf("%d-%d,%d-%d", lo, lo+CoresPerNode-1, lo+Threads/2, lo+Threads/2+CoresPerNode-1)
}

// BusID is a GPU's PCI address as NVML prints it: "00000000:07:00.0".
func BusID(gpu int) string { return fmt.Sprintf("00000000:%02X:00.0", BusIDs[gpu]) }

// KernelBusID is a GPU's PCI address as the kernel log names it in Xid
// lines: "0000:07:00".
func KernelBusID(gpu int) string { return fmt.Sprintf("0000:%02x:00", BusIDs[gpu]) }

// LinkSwitch is the NVSwitch a GPU's link goes to.
func LinkSwitch(link int) int { return link % Switches }

// Identity and idle readings of the eight GPUs, in index order, as
// recorded on a real 8x A100-SXM4-40GB with driver 535.129.03
// (testdata/fixtures/nvidia-smi-q/a100-sxm4-40gb-8gpu-drv535-full-a.txt;
// sim/dgx tests that these equal the recording). These are the recorded
// machine's; a named simulated machine's GPUs have serials and UUIDs of
// their own (Serial, UUID), as the GPUs of two real machines do.
var (
	Serials = [GPUs]string{"1323121035405", "1323121013540", "1323121015220", "1323121015264",
		"1322921084044", "1323121035431", "1323121035302", "1322921056183"}
	UUIDs = [GPUs]string{"GPU-faae5314-b87e-87c0-400b-b7cfb9e7b310", "GPU-20af7308-7522-d66f-fe01-fb6f0551a4b9",
		"GPU-55be19c4-22e1-4622-c7c5-a617a8001574", "GPU-8029ef2b-47a3-15f7-cca6-5777783049b4",
		"GPU-a62346e8-6045-319e-845d-0bf10385caaf", "GPU-926d0f1b-0ac4-e9cb-ec83-520d975c12cf",
		"GPU-aac22a4c-e9dd-6fb5-46e5-0f14b9374044", "GPU-1a011247-3834-ff88-6682-d0776a7d7a1e"}
	TemperatureC = [GPUs]int{22, 22, 21, 22, 23, 22, 22, 22}
	PowerMilliW  = [GPUs]int{52120, 53160, 51790, 52330, 53050, 55010, 52170, 53100}
)

// Memory of each GPU as the recording shows it idle (FB Memory Usage).
const (
	MemoryTotalMiB    = 40960
	MemoryReservedMiB = 620
	MemoryUsedMiB     = 4
	MemoryFreeMiB     = 40334 // as recorded: not Total-Reserved-Used
	PowerLimitW       = 400   // the default and maximum limit
	MinPowerLimitW    = 100
	SlowdownC         = 89 // GPU Slowdown Temp
	ShutdownC         = 92 // GPU Shutdown Temp
	PCIeGen           = 4
	VBIOSVersion      = "92.00.36.00.04"
	InforomImage      = "G506.0200.00.04"
	GPUName           = "NVIDIA A100-SXM4-40GB"
	Driver            = "535.129.03"
	CUDA              = "12.2"
)

// NIC is one of the host's RDMA adapters.
type NIC struct {
	Name   string // mlx5_0
	Netdev string // ibp12s0
	Bus    uint32 // PCI bus
	GPUs   [2]int // the GPUs under the same PCIe switch
	GUID   string // node GUID as ibv_devinfo prints it
	LID    int
}

// NICs are the compute HCAs: one ConnectX-6 HDR InfiniBand adapter under
// each GPU pair's PCIe switch. A real DGX A100 has eight compute HCAs
// (two per switch) and storage NICs besides; this simulation keeps four,
// one per switch, which is what a placement check needs (each GPU has a
// PXB NIC). Bus numbers are chosen next to each GPU pair's and are not
// from a recording; the IPoIB names follow from them as DGX OS names
// interfaces (ibpNs0 for bus N). GUIDs and LIDs are made up.
var NICs = [4]NIC{
	{Name: "mlx5_0", Netdev: "ibp12s0", Bus: 0x0c, GPUs: [2]int{0, 1}, GUID: "b83f:d203:0098:1a20", LID: 11},
	{Name: "mlx5_1", Netdev: "ibp75s0", Bus: 0x4b, GPUs: [2]int{2, 3}, GUID: "b83f:d203:0098:1a3c", LID: 12},
	{Name: "mlx5_2", Netdev: "ibp141s0", Bus: 0x8d, GPUs: [2]int{4, 5}, GUID: "b83f:d203:0098:19f8", LID: 13},
	{Name: "mlx5_3", Netdev: "ibp186s0", Bus: 0xba, GPUs: [2]int{6, 7}, GUID: "b83f:d203:0098:1a04", LID: 14},
}

// SamePCIeSwitch reports whether two GPUs sit under one PCIe switch.
func SamePCIeSwitch(a, b int) bool { return a/2 == b/2 }

// MIGUUID is the UUID of the MIG device of the GPU gpuUUID's GPU
// instance gi and compute instance ci: derived from the GPU's UUID so
// that every tool and the probe name it alike ("MIG-" and a version-5
// style UUID).
func MIGUUID(gpuUUID string, gi, ci int) string {
	u := strings.ReplaceAll(strings.TrimPrefix(gpuUUID, "GPU-"), "-", "")
	return "MIG-" + uuidOf(fmt.Sprintf("%s/%d/%d", u, gi, ci))
}

// UUID is GPU gpu's UUID on the simulated machine named machine: the
// recording's for "", else one derived from the name and the recording's,
// so that no two hosts of a fleet share a GPU (a UUID names one GPU in
// the world, and tools that track GPUs by it must see eight per host).
func UUID(machine string, gpu int) string {
	if machine == "" {
		return UUIDs[gpu]
	}
	return "GPU-" + uuidOf(machine+"/"+UUIDs[gpu])
}

// Serial is GPU gpu's board serial number on the simulated machine named
// machine: the recording's for "", else 13 digits derived from the name.
func Serial(machine string, gpu int) string {
	if machine == "" {
		return Serials[gpu]
	}
	h := fnv64(machine + "/" + Serials[gpu])
	return fmt.Sprintf("%s%09d", Serials[gpu][:4], h%1e9)
}

// fnv64 is s's FNV-1a hash.
func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range s {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// uuidOf is a version-5 style UUID derived from s.
func uuidOf(s string) string {
	h := fnv64(s)
	g := h*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	return fmt.Sprintf("%08x-%04x-5%03x-%04x-%012x", uint32(h>>32), uint16(h>>16), uint16(h)&0xfff,
		0x8000|uint16(g>>48)&0x3fff, g&0xffffffffffff)
}
