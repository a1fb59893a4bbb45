// Package sim builds simulated NVML machines on go-nvml's mock server, for
// demos with no hardware and for tests. The probe marks every snapshot taken
// from them "simulated": they are never evidence about real hardware.
package sim

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// DGX A100 layout: GPU bus ids as NVIDIA documents them for the DGX A100,
// NUMA nodes and CPU affinity as an HGX A100 with 2x EPYC 7763 in NPS4
// reports them (testdata/fixtures/nvidia-smi-topo-m/hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt),
// 12 NVLinks per GPU into six NVSwitches.
var (
	dgxBus      = []uint32{0x07, 0x0f, 0x47, 0x4e, 0x87, 0x90, 0xb7, 0xbd}
	dgxNUMA     = []int{3, 3, 1, 1, 7, 7, 5, 5}
	dgxCPUFirst = []int{48, 48, 16, 16, 112, 112, 80, 80}
	switchBus   = []uint32{0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9}
)

// DGXA100 returns an initialised-on-demand mock of a DGX A100 (8x
// A100-SXM4-40GB) that answers what go-nvml's mock leaves out: PCI ids,
// PCIe link, temperature, power, clocks, ECC, row remapping, NVLink,
// topology, P2P, NUMA and CPU affinity, processes (none).
func DGXA100() *server.Server {
	s := dgxa100.New()
	for i, dev := range s.Devices {
		d := dev.(*server.Device)
		i := i
		bus := dgxBus[i]
		d.PciBusID = fmt.Sprintf("00000000:%02X:00.0", bus)
		d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) { return pciInfo(0, bus, d.Config.PciDeviceId), nvml.SUCCESS }
		d.GetSerialFunc = func() (string, nvml.Return) { return fmt.Sprintf("14230200%05d", 1000+i), nvml.SUCCESS }
		d.GetCurrPcieLinkGenerationFunc = func() (int, nvml.Return) { return 4, nvml.SUCCESS }
		d.GetMaxPcieLinkGenerationFunc = func() (int, nvml.Return) { return 4, nvml.SUCCESS }
		d.GetCurrPcieLinkWidthFunc = func() (int, nvml.Return) { return 16, nvml.SUCCESS }
		d.GetMaxPcieLinkWidthFunc = func() (int, nvml.Return) { return 16, nvml.SUCCESS }
		d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{}, nvml.SUCCESS }
		d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return uint32(29 + i%3), nvml.SUCCESS }
		d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return uint32(52000 + 1000*i), nvml.SUCCESS }
		d.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return 400000, nvml.SUCCESS }
		d.GetClockInfoFunc = func(t nvml.ClockType) (uint32, nvml.Return) {
			if t == nvml.CLOCK_MEM {
				return 1215, nvml.SUCCESS
			}
			return 210, nvml.SUCCESS
		}
		d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { return nvml.ClocksEventReasonGpuIdle, nvml.SUCCESS }
		d.GetPersistenceModeFunc = func() (nvml.EnableState, nvml.Return) { return nvml.FEATURE_ENABLED, nvml.SUCCESS }
		d.GetComputeModeFunc = func() (nvml.ComputeMode, nvml.Return) { return nvml.COMPUTEMODE_DEFAULT, nvml.SUCCESS }
		d.GetEccModeFunc = func() (nvml.EnableState, nvml.EnableState, nvml.Return) {
			return nvml.FEATURE_ENABLED, nvml.FEATURE_ENABLED, nvml.SUCCESS
		}
		d.GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) { return 0, nvml.SUCCESS }
		d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 0, false, false, nvml.SUCCESS }
		d.GetNvLinkStateFunc = func(link int) (nvml.EnableState, nvml.Return) {
			if link < 0 || link >= 12 {
				return 0, nvml.ERROR_INVALID_ARGUMENT
			}
			return nvml.FEATURE_ENABLED, nvml.SUCCESS
		}
		d.GetNvLinkVersionFunc = func(int) (uint32, nvml.Return) { return 3, nvml.SUCCESS }
		d.GetNvLinkRemotePciInfoFunc = func(link int) (nvml.PciInfo, nvml.Return) {
			return pciInfo(0, switchBus[link%len(switchBus)], 0x1af110de), nvml.SUCCESS
		}
		d.GetTopologyCommonAncestorFunc = func(other nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
			o := other.(*server.Device)
			if dgxNUMA[o.Index] == dgxNUMA[i] {
				return nvml.TOPOLOGY_NODE, nvml.SUCCESS
			}
			return nvml.TOPOLOGY_SYSTEM, nvml.SUCCESS
		}
		d.GetP2PStatusFunc = func(nvml.Device, nvml.GpuP2PCapsIndex) (nvml.GpuP2PStatus, nvml.Return) {
			return nvml.P2P_STATUS_OK, nvml.SUCCESS
		}
		d.GetNumaNodeIdFunc = func() (int, nvml.Return) { return dgxNUMA[i], nvml.SUCCESS }
		d.GetCpuAffinityFunc = func(words int) ([]uint, nvml.Return) {
			mask := make([]uint, max(words, 4))
			for c := dgxCPUFirst[i]; c < dgxCPUFirst[i]+16; c++ {
				mask[c/64] |= 1 << (uint(c) % 64)
			}
			return mask, nvml.SUCCESS
		}
		d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.SUCCESS }
		d.GetGraphicsRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.SUCCESS }
		d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
		d.GetMigDeviceHandleByIndexFunc = func(int) (nvml.Device, nvml.Return) { return nil, nvml.ERROR_NOT_FOUND }
	}
	return s
}

func pciInfo(domain, bus, deviceID uint32) nvml.PciInfo {
	p := nvml.PciInfo{Domain: domain, Bus: bus, PciDeviceId: deviceID}
	id := fmt.Sprintf("%08X:%02X:00.0", domain, bus)
	for k := 0; k < len(id) && k < len(p.BusId)-1; k++ {
		p.BusId[k] = int8(id[k])
	}
	return p
}
