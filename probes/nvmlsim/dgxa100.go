// Package sim builds simulated NVML machines on go-nvml's mock server, for
// demos with no hardware and for tests. The probe marks every snapshot taken
// from them "simulated": they are never evidence about real hardware.
//
// The machine's layout, identity and faults are described in sim/spec
// (no cgo), which sim/dgx renders as command-line tools: the probe and the
// tools of one simulated host agree.
package nvmlsim

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gpulab/gpulab/sim/spec"
)

// Faults is what is wrong with one simulated DGX A100 (see spec.Faults);
// the zero value is a healthy machine.
type Faults = spec.Faults

// ECCCounts are a GPU's ECC error counters (see spec.ECCCounts).
type ECCCounts = spec.ECCCounts

// XID is one Xid event (see spec.XID).
type XID = spec.XID

// DGXA100 returns a healthy simulated DGX A100: DGXA100With(Faults{}).
func DGXA100() *server.Server { return DGXA100With(Faults{}) }

// DGXA100With returns an initialised-on-demand mock of a DGX A100 (8x
// A100-SXM4-40GB) with the faults f, answering what go-nvml's mock leaves
// out: PCI ids, PCIe link, temperature, power, clocks, ECC, row remapping,
// NVLink, topology, P2P, NUMA and CPU affinity, MIG instances, Xid events,
// processes and utilisation (f.Processes, f.Utilization; none and 0% for a
// healthy machine).
//
// With f.NVLinkDown, each GPU of a pair shows the links spec.LinksDown
// names disabled, and the pair's P2P over NVLink is not supported, so
// their topology is their PCIe path. Xid events: an event set replays the
// machine's f.XIDs once, in time order, to the devices registered on it,
// then times out. f should pass f.Validate; what does not (a GPU index out
// of range, a MIG layout that does not fit) is left out.
//
// The device name, driver, NVML and CUDA versions are the recorded
// machine's (NVIDIA A100-SXM4-40GB, 535.129.03, CUDA 12.2), as the tools
// of sim/dgx print them, not go-nvml's mock's ("Mock NVIDIA ...", 550):
// a simulated host tells one story whichever tool is asked.
func DGXA100With(f Faults) *server.Server {
	s := dgxa100.New()
	s.LookupSymbolFunc = func(symbol string) error {
		if symbol == "nvmlDeviceGetGpuFabricInfoV" {
			// go-nvml calls it through a handler no mock can answer: the
			// simulated driver does not export it (no fabric health mask).
			return nvml.ERROR_FUNCTION_NOT_FOUND
		}
		return nil
	}
	s.DriverVersion, s.NvmlVersion, s.CudaDriverVersion = spec.Driver, "12."+spec.Driver, 12020
	events := xidEvents(f)
	for i, dev := range s.Devices {
		d := dev.(*server.Device)
		identity(d, i, f.Machine)
		d.MemoryInfo = nvml.Memory{Total: spec.MemoryTotalMiB << 20, Used: uint64(f.MemoryUsedMiB(i)) << 20,
			Free: uint64(f.MemoryFreeMiB(i)) << 20}
		readings(d, i, f)
		health(d, i, f)
		links(d, i, f)
		placement(d, i, f)
		mig(d, i, f)
		processes(d, i, f)
		state(d, i, f)
		hang(d, f.NVMLHang[i])
		d.RegisterEventsFunc = func(types uint64, set nvml.EventSet) nvml.Return {
			es, ok := set.(*eventSet)
			if !ok {
				return nvml.ERROR_INVALID_ARGUMENT
			}
			if types&nvml.EventTypeXidCriticalError != 0 {
				es.add(d, events[i])
			}
			return nvml.SUCCESS
		}
	}
	s.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) { return newEventSet(), nvml.SUCCESS }
	handles(s, f)
	return s
}

// handles makes nvmlDeviceGetHandleByIndex answer GPU_IS_LOST for the
// GPUs f.GPULost names (fallen off the bus: the driver still counts
// them) and never return for one whose f.NVMLHang names it.
func handles(s *server.Server, f Faults) {
	byIndex := s.DeviceGetHandleByIndexFunc
	s.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if f.NVMLHang[i] == "nvmlDeviceGetHandleByIndex" {
			select {}
		}
		if slices.Contains(f.GPULost, i) {
			return nil, nvml.ERROR_GPU_IS_LOST
		}
		return byIndex(i)
	}
}

func identity(d *server.Device, i int, machine string) {
	bus := spec.BusIDs[i]
	d.UUID = spec.UUID(machine, i)
	d.GetNameFunc = func() (string, nvml.Return) { return spec.GPUName, nvml.SUCCESS }
	d.PciBusID = spec.BusID(i)
	d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) { return pciInfo(0, bus, d.Config.PciDeviceId), nvml.SUCCESS }
	d.GetSerialFunc = func() (string, nvml.Return) { return spec.Serial(machine, i), nvml.SUCCESS }
}

// readings are the idle figures of the recorded machine, and f's
// temperature, power limit and PCIe generation.
func readings(d *server.Device, i int, f Faults) {
	d.GetCurrPcieLinkGenerationFunc = func() (int, nvml.Return) { return f.LinkGen(i), nvml.SUCCESS }
	d.GetMaxPcieLinkGenerationFunc = func() (int, nvml.Return) { return spec.PCIeGen, nvml.SUCCESS }
	d.GetGpuMaxPcieLinkGenerationFunc = func() (int, nvml.Return) { return spec.PCIeGen, nvml.SUCCESS }
	d.GetCurrPcieLinkWidthFunc = func() (int, nvml.Return) { return 16, nvml.SUCCESS }
	d.GetMaxPcieLinkWidthFunc = func() (int, nvml.Return) { return 16, nvml.SUCCESS }
	d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) {
		return uint32(f.Temperature(i)), nvml.SUCCESS
	}
	d.GetTemperatureThresholdFunc = func(t nvml.TemperatureThresholds) (uint32, nvml.Return) {
		switch t {
		case nvml.TEMPERATURE_THRESHOLD_SLOWDOWN:
			return spec.SlowdownC, nvml.SUCCESS
		case nvml.TEMPERATURE_THRESHOLD_SHUTDOWN:
			return spec.ShutdownC, nvml.SUCCESS
		}
		return 0, nvml.ERROR_NOT_SUPPORTED
	}
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return uint32(spec.PowerMilliW[i]), nvml.SUCCESS }
	d.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return uint32(f.PowerLimit(i)) * 1000, nvml.SUCCESS }
	d.GetPowerManagementDefaultLimitFunc = func() (uint32, nvml.Return) { return spec.PowerLimitW * 1000, nvml.SUCCESS }
	d.GetClockInfoFunc = func(t nvml.ClockType) (uint32, nvml.Return) {
		if t == nvml.CLOCK_MEM {
			return 1215, nvml.SUCCESS
		}
		return 210, nvml.SUCCESS
	}
	d.GetPersistenceModeFunc = func() (nvml.EnableState, nvml.Return) { return nvml.FEATURE_ENABLED, nvml.SUCCESS }
	d.GetComputeModeFunc = func() (nvml.ComputeMode, nvml.Return) { return nvml.COMPUTEMODE_DEFAULT, nvml.SUCCESS }
}

// health is ECC and row remapping.
func health(d *server.Device, i int, f Faults) {
	e := f.ECCFor(i)
	d.GetEccModeFunc = func() (nvml.EnableState, nvml.EnableState, nvml.Return) {
		return nvml.FEATURE_ENABLED, nvml.FEATURE_ENABLED, nvml.SUCCESS
	}
	d.GetTotalEccErrorsFunc = func(t nvml.MemoryErrorType, c nvml.EccCounterType) (uint64, nvml.Return) {
		switch {
		case t == nvml.MEMORY_ERROR_TYPE_UNCORRECTED && c == nvml.VOLATILE_ECC:
			return e.VolatileUncorrected, nvml.SUCCESS
		case t == nvml.MEMORY_ERROR_TYPE_UNCORRECTED && c == nvml.AGGREGATE_ECC:
			return e.AggregateUncorrected, nvml.SUCCESS
		case t == nvml.MEMORY_ERROR_TYPE_CORRECTED && c == nvml.VOLATILE_ECC:
			return e.VolatileCorrected, nvml.SUCCESS
		case t == nvml.MEMORY_ERROR_TYPE_CORRECTED && c == nvml.AGGREGATE_ECC:
			return e.AggregateCorrected, nvml.SUCCESS
		}
		return 0, nvml.ERROR_INVALID_ARGUMENT
	}
	corr, unc, pending := f.RemappedRows(i)
	d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return corr, unc, pending, false, nvml.SUCCESS }
}

// links are the GPU's 12 NVLinks into the NVSwitches and what P2P they give.
func links(d *server.Device, i int, f Faults) {
	d.GetNvLinkStateFunc = func(link int) (nvml.EnableState, nvml.Return) {
		if link < 0 || link >= spec.LinksPerGPU {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		if !f.LinkUp(i, link) {
			return nvml.FEATURE_DISABLED, nvml.SUCCESS
		}
		return nvml.FEATURE_ENABLED, nvml.SUCCESS
	}
	d.GetNvLinkVersionFunc = func(int) (uint32, nvml.Return) { return 3, nvml.SUCCESS }
	d.GetNvLinkRemotePciInfoFunc = func(link int) (nvml.PciInfo, nvml.Return) {
		if link < 0 || link >= spec.LinksPerGPU {
			return nvml.PciInfo{}, nvml.ERROR_INVALID_ARGUMENT
		}
		return pciInfo(0, spec.SwitchBus[spec.LinkSwitch(link)], 0x1af110de), nvml.SUCCESS
	}
	d.GetP2PStatusFunc = func(other nvml.Device, c nvml.GpuP2PCapsIndex) (nvml.GpuP2PStatus, nvml.Return) {
		if c == nvml.P2P_CAPS_INDEX_NVLINK && f.PairDown(i, other.(*server.Device).Index) {
			return nvml.P2P_STATUS_NOT_SUPPORTED, nvml.SUCCESS
		}
		return nvml.P2P_STATUS_OK, nvml.SUCCESS
	}
}

// placement is where the GPU sits: PCIe path to its peers, NUMA node, CPUs.
func placement(d *server.Device, i int, _ Faults) {
	d.GetTopologyCommonAncestorFunc = func(other nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
		o := other.(*server.Device)
		switch {
		case o.Index == i:
			return nvml.TOPOLOGY_INTERNAL, nvml.SUCCESS
		case spec.SamePCIeSwitch(i, o.Index):
			return nvml.TOPOLOGY_MULTIPLE, nvml.SUCCESS
		case spec.NUMANodes[o.Index] == spec.NUMANodes[i]:
			return nvml.TOPOLOGY_NODE, nvml.SUCCESS
		}
		return nvml.TOPOLOGY_SYSTEM, nvml.SUCCESS
	}
	d.GetNumaNodeIdFunc = func() (int, nvml.Return) { return spec.NUMANodes[i], nvml.SUCCESS }
	d.GetCpuAffinityFunc = func(words int) ([]uint, nvml.Return) {
		mask := make([]uint, max(words, spec.Threads/64))
		for _, c := range spec.NodeCPUs(spec.NUMANodes[i]) {
			mask[c/64] |= 1 << (uint(c) % 64)
		}
		return mask, nvml.SUCCESS
	}
}

func pciInfo(domain, bus, deviceID uint32) nvml.PciInfo {
	p := nvml.PciInfo{Domain: domain, Bus: bus, PciDeviceId: deviceID}
	id := fmt.Sprintf("%08X:%02X:00.0", domain, bus)
	for k := 0; k < len(id) && k < len(p.BusId)-1; k++ {
		p.BusId[k] = int8(id[k])
	}
	return p
}

// xidEvents are f's Xids per GPU as NVML events, in time order.
func xidEvents(f Faults) map[int][]spec.XID {
	out := map[int][]spec.XID{}
	for _, x := range f.XIDs {
		out[x.GPU] = append(out[x.GPU], x)
	}
	return out
}

// eventSet delivers the Xids of the devices registered on it once, in
// time order, then times out on every wait.
type eventSet struct {
	mock.EventSet
	mu      sync.Mutex
	pending []pendingEvent
}

type pendingEvent struct {
	at float64
	ev nvml.EventData
}

func newEventSet() *eventSet {
	es := &eventSet{}
	es.WaitFunc = es.wait
	es.FreeFunc = func() nvml.Return { return nvml.SUCCESS }
	return es
}

func (es *eventSet) add(d nvml.Device, xids []spec.XID) {
	es.mu.Lock()
	defer es.mu.Unlock()
	for _, x := range xids {
		es.pending = append(es.pending, pendingEvent{at: x.SecondsAfterBoot,
			ev: nvml.EventData{Device: d, EventType: nvml.EventTypeXidCriticalError, EventData: uint64(x.Code)}})
	}
	sort.SliceStable(es.pending, func(a, b int) bool { return es.pending[a].at < es.pending[b].at })
}

func (es *eventSet) wait(ms uint32) (nvml.EventData, nvml.Return) {
	es.mu.Lock()
	if len(es.pending) > 0 {
		ev := es.pending[0].ev
		es.pending = es.pending[1:]
		es.mu.Unlock()
		return ev, nvml.SUCCESS
	}
	es.mu.Unlock()
	time.Sleep(time.Duration(ms) * time.Millisecond)
	return nvml.EventData{}, nvml.ERROR_TIMEOUT
}
