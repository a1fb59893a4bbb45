// Package collect fills a report.Snapshot from NVML. It is the only code in
// gpulab that calls go-nvml (which needs cgo); it runs inside the probe
// binary pushed to hosts.
//
// Every NVML call is guarded four ways: the entry point is looked up in the
// loaded library first (calling a symbol the driver does not export kills
// the process), a panic (go-nvml's mocks panic on what they do not
// implement) is recovered, a call that does not return within the
// per-call deadline is given up (the GPU is marked Hung with the call's
// name, and nothing more is asked of it), and a non-SUCCESS return is
// recorded in the snapshot's Errors with the field's name. A refused
// field never stops the collection, and a hung GPU never hangs the probe.
package collect

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpulab/gpulab/probes/report"
)

// Options shape a collection.
type Options struct {
	Host         string
	ProbeVersion string
	// ProcRoot is where /proc is read for process names and cgroups and
	// scanned for stuck processes; "" for /proc.
	ProcRoot string
	// PstoreDir is where the kernel's crash records are listed
	// (/sys/fs/pstore on a real host); "": not read.
	PstoreDir string
	// IBDir is where the RDMA devices are listed (/sys/class/infiniband on
	// a real host); "": not read. ReadSys reads a file under it (nil:
	// os.ReadFile; the simulated machine's counters rise as they are read).
	IBDir   string
	ReadSys func(string) ([]byte, error)
	// PCIDir is where the PCI devices are listed (/sys/bus/pci/devices),
	// FabricManagerLog the fabric manager's log; "": not read.
	PCIDir, FabricManagerLog string
	// Expect is what the inventory says the host has; nil: nothing.
	Expect *report.Expect
	Now    func() time.Time
	// CallTimeout is how long one NVML call may take before its GPU is
	// called hung (0: DefaultCallTimeout). After a first hang, calls get
	// HungCallTimeout: a driver that hung once may hold its lock for
	// every GPU, and the probe must still answer.
	CallTimeout time.Duration
}

// DefaultCallTimeout and HungCallTimeout bound one NVML call: a call
// that takes seconds is already a sick GPU (an idle GPU without
// persistence mode wakes in about a second).
const (
	DefaultCallTimeout = 5 * time.Second
	HungCallTimeout    = time.Second
)

type collector struct {
	lib  nvml.Interface
	snap *report.Snapshot
	opts Options
	// hung maps a GPU index (-1: host-wide) to the call that hung on it.
	hung map[int]string
}

// Collect reads everything NVML offers into a snapshot. lib must already
// be initialised (Init returned SUCCESS).
func Collect(lib nvml.Interface, o Options) *report.Snapshot {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ProcRoot == "" {
		o.ProcRoot = "/proc"
	}
	start := o.Now()
	s := &report.Snapshot{Schema: report.Schema, Host: o.Host, CollectedAt: start.UTC(), ProbeVersion: o.ProbeVersion,
		NVML: report.NVMLState{Available: true}, GPUs: []report.GPU{}, Topology: []report.TopoLink{},
		Processes: []report.Process{}, XIDs: []report.XIDEvent{}, Errors: []report.FieldError{}}
	c := newCollector(lib, s, o)
	c.system()
	var devices []nvml.Device
	var count int
	if c.call("device_count", nil, "nvmlDeviceGetCount", func() (r nvml.Return) { count, r = lib.DeviceGetCount(); return }) {
		for i := 0; i < count; i++ {
			var d nvml.Device
			idx := i
			if !c.call(fmt.Sprintf("gpu[%d]", i), &idx, "nvmlDeviceGetHandleByIndex", func() (r nvml.Return) { d, r = lib.DeviceGetHandleByIndex(i); return }) {
				continue
			}
			devices = append(devices, d)
			s.GPUs = append(s.GPUs, c.gpu(i, d))
		}
	}
	c.topology(devices)
	c.hostScan()
	s.DurationMS = float64(o.Now().Sub(start).Microseconds()) / 1000
	return s
}

func newCollector(lib nvml.Interface, s *report.Snapshot, o Options) *collector {
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	return &collector{lib: lib, snap: s, opts: o, hung: map[int]string{}}
}

// resume is a collector that goes on from s: what hung there is not
// asked again.
func resume(lib nvml.Interface, s *report.Snapshot, o Options) *collector {
	c := newCollector(lib, s, o)
	for _, g := range s.GPUs {
		if g.Hung != "" {
			c.hung[g.Index] = g.Hung
		}
	}
	for _, e := range s.Errors {
		if e.Code == "HUNG" && e.GPU == nil {
			c.hung[-1] = e.Field
		}
	}
	return c
}

// Hung reports whether any NVML call of s was given up on: the probe then
// leaves NVML without shutting it down (that would wait on the same lock).
func Hung(s *report.Snapshot) bool {
	for _, e := range s.Errors {
		if e.Code == "HUNG" {
			return true
		}
	}
	return false
}

// call runs one NVML call for field, guarded (see the package doc).
func (c *collector) call(field string, gpu *int, symbol string, fn func() nvml.Return) (ok bool) {
	if c.skip(gpu) {
		return false
	}
	if symbol != "" {
		if err := c.lookup(symbol); err != nil {
			c.fail(field, gpu, "MISSING_SYMBOL", fmt.Sprintf("the driver's libnvidia-ml does not export %s", symbol))
			return false
		}
	}
	o := c.run(fn)
	switch {
	case o.hung:
		c.markHung(field, gpu, symbol)
		return false
	case o.panicked:
		c.fail(field, gpu, "PANIC", fmt.Sprint(o.panic))
		return false
	case o.ret != nvml.SUCCESS:
		c.fail(field, gpu, returnCode(o.ret), c.errorString(o.ret))
		return false
	}
	return true
}

// outcome is how one NVML call ended.
type outcome struct {
	ret      nvml.Return
	panicked bool
	panic    any
	hung     bool
}

// run calls fn on a goroutine of its own and waits for it until the
// deadline. A call given up on is left blocked: NVML offers no way to
// cancel it, and the probe exits without waiting for it.
func (c *collector) run(fn func() nvml.Return) outcome {
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- outcome{panicked: true, panic: p}
			}
		}()
		done <- outcome{ret: fn()}
	}()
	d := c.opts.CallTimeout
	if len(c.hung) > 0 {
		d = min(d, HungCallTimeout)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case o := <-done:
		return o
	case <-t.C:
		return outcome{hung: true}
	}
}

// skip reports whether gpu (nil: host-wide) must not be asked anything
// more: it, or NVML as a whole, hung.
func (c *collector) skip(gpu *int) bool {
	if _, all := c.hung[-1]; all {
		return true
	}
	if gpu == nil {
		return false
	}
	_, ok := c.hung[*gpu]
	return ok
}

// markHung records that symbol did not return for field on gpu (nil:
// host-wide, and then nothing more is asked of NVML).
func (c *collector) markHung(field string, gpu *int, symbol string) {
	key, d := -1, c.opts.CallTimeout
	if gpu != nil {
		key = *gpu
	}
	if len(c.hung) > 0 {
		d = min(d, HungCallTimeout)
	}
	if symbol == "" {
		symbol = "an NVML call"
	}
	c.hung[key] = symbol
	c.fail(field, gpu, "HUNG", fmt.Sprintf("%s did not return within %v: nothing more was asked of this %s", symbol, d, map[bool]string{true: "GPU", false: "host's NVML"}[gpu != nil]))
}

// errorString is nvml.ErrorString, unless the library lacks it.
func (c *collector) errorString(r nvml.Return) string {
	if c.lookup("nvmlErrorString") != nil {
		return returnCode(r)
	}
	return nvml.ErrorString(r)
}

func (c *collector) lookup(symbol string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = nil // a mock without LookupSymbol: assume present, the call itself is guarded
		}
	}()
	ext := c.lib.Extensions()
	if ext == nil {
		return nil
	}
	// go-nvml calls the newest version the library has (name_v3, name_v2)
	// and falls back to the base name; any of them will do.
	err = ext.LookupSymbol(symbol)
	for _, v := range []string{"_v2", "_v3"} {
		if err == nil {
			break
		}
		if ext.LookupSymbol(symbol+v) == nil {
			err = nil
		}
	}
	return err
}

func (c *collector) fail(field string, gpu *int, code, msg string) {
	var g *int
	if gpu != nil {
		v := *gpu
		g = &v
	}
	c.snap.Errors = append(c.snap.Errors, report.FieldError{Field: field, GPU: g, Code: code, Message: msg})
}

// returnCode names an NVML return the way the C header does, without the
// NVML_ERROR_ prefix: NOT_SUPPORTED, NO_PERMISSION, ...
func returnCode(r nvml.Return) string {
	names := map[nvml.Return]string{
		nvml.ERROR_UNINITIALIZED: "UNINITIALIZED", nvml.ERROR_INVALID_ARGUMENT: "INVALID_ARGUMENT",
		nvml.ERROR_NOT_SUPPORTED: "NOT_SUPPORTED", nvml.ERROR_NO_PERMISSION: "NO_PERMISSION",
		nvml.ERROR_NOT_FOUND: "NOT_FOUND", nvml.ERROR_INSUFFICIENT_SIZE: "INSUFFICIENT_SIZE",
		nvml.ERROR_GPU_IS_LOST: "GPU_IS_LOST", nvml.ERROR_TIMEOUT: "TIMEOUT", nvml.ERROR_UNKNOWN: "UNKNOWN",
		nvml.ERROR_FUNCTION_NOT_FOUND: "FUNCTION_NOT_FOUND", nvml.ERROR_LIBRARY_NOT_FOUND: "LIBRARY_NOT_FOUND",
		nvml.ERROR_DRIVER_NOT_LOADED: "DRIVER_NOT_LOADED", nvml.ERROR_RESET_REQUIRED: "RESET_REQUIRED",
		nvml.ERROR_IN_USE: "IN_USE", nvml.ERROR_NO_DATA: "NO_DATA", nvml.ERROR_ARGUMENT_VERSION_MISMATCH: "ARGUMENT_VERSION_MISMATCH",
	}
	if n, ok := names[r]; ok {
		return n
	}
	return "NVML_" + strconv.Itoa(int(r))
}

func (c *collector) system() {
	s, lib := c.snap, c.lib
	c.call("driver_version", nil, "nvmlSystemGetDriverVersion", func() (r nvml.Return) { s.DriverVersion, r = lib.SystemGetDriverVersion(); return })
	c.call("nvml_version", nil, "nvmlSystemGetNVMLVersion", func() (r nvml.Return) { s.NVMLVersion, r = lib.SystemGetNVMLVersion(); return })
	var cuda int
	if c.call("cuda_driver_version", nil, "nvmlSystemGetCudaDriverVersion", func() (r nvml.Return) { cuda, r = lib.SystemGetCudaDriverVersion(); return }) {
		s.CUDADriverVersion = fmt.Sprintf("%d.%d", cuda/1000, cuda%1000/10)
	}
}

func ptr[T any](v T) *T { return &v }

func (c *collector) gpu(i int, d nvml.Device) report.GPU {
	g := report.GPU{Index: i}
	f := func(name string) string { return fmt.Sprintf("gpu[%d].%s", i, name) }
	idx := &i
	c.call(f("name"), idx, "nvmlDeviceGetName", func() (r nvml.Return) { g.Name, r = d.GetName(); return })
	c.call(f("uuid"), idx, "nvmlDeviceGetUUID", func() (r nvml.Return) { g.UUID, r = d.GetUUID(); return })
	c.call(f("serial"), idx, "nvmlDeviceGetSerial", func() (r nvml.Return) { g.Serial, r = d.GetSerial(); return })
	var pci nvml.PciInfo
	if c.call(f("pci_bus_id"), idx, "nvmlDeviceGetPciInfo", func() (r nvml.Return) { pci, r = d.GetPciInfo(); return }) {
		g.PCIBusID = busID(pci)
	}
	c.pcie(&g, d, f)
	c.sensors(&g, d, f)
	c.modes(&g, d, f)
	g.MIG = c.mig(i, d)
	g.NVLinks = c.nvlinks(i, d)
	var v int
	if c.call(f("numa_node"), idx, "nvmlDeviceGetNumaNodeId", func() (r nvml.Return) { v, r = d.GetNumaNodeId(); return }) {
		g.NUMANode = ptr(v)
	}
	var aff []uint
	if c.call(f("cpu_affinity"), idx, "nvmlDeviceGetCpuAffinity", func() (r nvml.Return) { aff, r = d.GetCpuAffinity(cpuWords()); return }) {
		g.CPUAffinity = cpuList(aff)
	}
	c.firmware(&g, d, f)
	c.recovery(&g, d, f)
	c.gpuFabric(&g, d, f)
	c.processes(i, d)
	g.Hung = c.hung[i]
	g.Findings = findings(g)
	return g
}

// firmware reads the GPU's VBIOS and inforom image versions.
func (c *collector) firmware(g *report.GPU, d nvml.Device, f func(string) string) {
	var v string
	if c.call(f("vbios_version"), &g.Index, "nvmlDeviceGetVbiosVersion", func() (r nvml.Return) { v, r = d.GetVbiosVersion(); return }) {
		g.VBIOSVersion = v
	}
	if c.call(f("inforom_image"), &g.Index, "nvmlDeviceGetInforomImageVersion", func() (r nvml.Return) { v, r = d.GetInforomImageVersion(); return }) {
		g.InforomImage = v
	}
}

// recovery reads what the driver says the GPU needs now: NVML's GPU
// recovery action field (drivers 570 and newer; older ones refuse it,
// recorded as the field's error).
func (c *collector) recovery(g *report.GPU, d nvml.Device, f func(string) string) {
	vals := []nvml.FieldValue{{FieldId: nvml.FI_DEV_GET_GPU_RECOVERY_ACTION}}
	if !c.call(f("recovery_action"), &g.Index, "nvmlDeviceGetFieldValues", func() nvml.Return { return d.GetFieldValues(vals) }) {
		return
	}
	if r := nvml.Return(vals[0].NvmlReturn); r != nvml.SUCCESS {
		c.fail(f("recovery_action"), &g.Index, returnCode(r), c.errorString(r))
		return
	}
	n, ok := fieldUint(vals[0])
	if !ok {
		c.fail(f("recovery_action"), &g.Index, "BAD_VALUE", fmt.Sprintf("value type %d is not a whole number", vals[0].ValueType))
		return
	}
	g.RecoveryAction = recoveryName(nvml.DeviceGpuRecoveryAction(n))
}

// fieldUint is a field value's unsigned whole number.
func fieldUint(v nvml.FieldValue) (uint64, bool) {
	b := v.Value
	le := func(n int) uint64 {
		var x uint64
		for k := n - 1; k >= 0; k-- {
			x = x<<8 | uint64(b[k])
		}
		return x
	}
	switch nvml.ValueType(v.ValueType) {
	case nvml.VALUE_TYPE_UNSIGNED_INT, nvml.VALUE_TYPE_SIGNED_INT:
		return le(4), true
	case nvml.VALUE_TYPE_UNSIGNED_LONG, nvml.VALUE_TYPE_UNSIGNED_LONG_LONG, nvml.VALUE_TYPE_SIGNED_LONG_LONG:
		return le(8), true
	case nvml.VALUE_TYPE_UNSIGNED_SHORT:
		return le(2), true
	}
	return 0, false
}

// recoveryName names a recovery action as the snapshot does.
func recoveryName(a nvml.DeviceGpuRecoveryAction) string {
	names := map[nvml.DeviceGpuRecoveryAction]string{
		nvml.GPU_RECOVERY_ACTION_NONE: "none", nvml.GPU_RECOVERY_ACTION_GPU_RESET: "gpu_reset",
		nvml.GPU_RECOVERY_ACTION_NODE_REBOOT: "node_reboot", nvml.GPU_RECOVERY_ACTION_DRAIN_P2P: "drain_p2p",
		nvml.GPU_RECOVERY_ACTION_DRAIN_AND_RESET: "drain_and_reset", nvml.GPU_RECOVERY_ACTION_RECOVER_IMEX_DOMAIN: "recover_imex_domain",
		nvml.GPU_RECOVERY_ACTION_BUS_RESET: "bus_reset", nvml.GPU_RECOVERY_ACTION_SYSTEM_REBOOT: "system_reboot",
	}
	if n, ok := names[a]; ok {
		return n
	}
	return fmt.Sprintf("unknown(%d)", a)
}

// pcie reads the GPU's PCIe link: generation and width, current and
// maximum. f names a field of this GPU.
func (c *collector) pcie(g *report.GPU, d nvml.Device, f func(string) string) {
	idx := &g.Index
	var v int
	if c.call(f("pcie.gen_current"), idx, "nvmlDeviceGetCurrPcieLinkGeneration", func() (r nvml.Return) { v, r = d.GetCurrPcieLinkGeneration(); return }) {
		g.PCIe.GenCurrent = ptr(v)
	}
	if c.call(f("pcie.gen_max"), idx, "nvmlDeviceGetMaxPcieLinkGeneration", func() (r nvml.Return) { v, r = d.GetMaxPcieLinkGeneration(); return }) {
		g.PCIe.GenMax = ptr(v)
	}
	if c.call(f("pcie.width_current"), idx, "nvmlDeviceGetCurrPcieLinkWidth", func() (r nvml.Return) { v, r = d.GetCurrPcieLinkWidth(); return }) {
		g.PCIe.WidthCurrent = ptr(v)
	}
	if c.call(f("pcie.width_max"), idx, "nvmlDeviceGetMaxPcieLinkWidth", func() (r nvml.Return) { v, r = d.GetMaxPcieLinkWidth(); return }) {
		g.PCIe.WidthMax = ptr(v)
	}
	if c.call(f("pcie.gen_gpu_max"), idx, "nvmlDeviceGetGpuMaxPcieLinkGeneration", func() (r nvml.Return) { v, r = d.GetGpuMaxPcieLinkGeneration(); return }) {
		g.PCIe.GenGPUMax = ptr(v)
	}
	g.PCIe.Replays = c.replays(g.Index, d)
}

// replays reads GPU i's PCIe replay counter.
func (c *collector) replays(i int, d nvml.Device) *uint64 {
	var v int
	if c.call(fmt.Sprintf("gpu[%d].pcie.replays", i), &i, "nvmlDeviceGetPcieReplayCounter", func() (r nvml.Return) { v, r = d.GetPcieReplayCounter(); return }) && v >= 0 {
		return ptr(uint64(v))
	}
	return nil
}

// sensors reads what the GPU measures now: memory, utilisation,
// temperature, power, clocks and the clock-event reasons.
func (c *collector) sensors(g *report.GPU, d nvml.Device, f func(string) string) {
	idx := &g.Index
	var mem nvml.Memory
	if c.call(f("memory"), idx, "nvmlDeviceGetMemoryInfo", func() (r nvml.Return) { mem, r = d.GetMemoryInfo(); return }) {
		g.Memory = &report.Memory{TotalMiB: mem.Total >> 20, UsedMiB: mem.Used >> 20, FreeMiB: mem.Free >> 20}
	}
	var util nvml.Utilization
	if c.call(f("utilization"), idx, "nvmlDeviceGetUtilizationRates", func() (r nvml.Return) { util, r = d.GetUtilizationRates(); return }) {
		g.Utilization = &report.Utilization{GPUPercent: util.Gpu, MemoryPercent: util.Memory}
	}
	var u uint32
	if c.call(f("temperature_c"), idx, "nvmlDeviceGetTemperature", func() (r nvml.Return) { u, r = d.GetTemperature(nvml.TEMPERATURE_GPU); return }) {
		g.TemperatureC = ptr(u)
	}
	if c.call(f("power_w"), idx, "nvmlDeviceGetPowerUsage", func() (r nvml.Return) { u, r = d.GetPowerUsage(); return }) {
		g.PowerW = ptr(float64(u) / 1000)
	}
	if c.call(f("power_limit_w"), idx, "nvmlDeviceGetEnforcedPowerLimit", func() (r nvml.Return) { u, r = d.GetEnforcedPowerLimit(); return }) {
		g.PowerLimitW = ptr(float64(u) / 1000)
	}
	if c.call(f("power_default_limit_w"), idx, "nvmlDeviceGetPowerManagementDefaultLimit", func() (r nvml.Return) { u, r = d.GetPowerManagementDefaultLimit(); return }) {
		g.PowerDefaultLimitW = ptr(float64(u) / 1000)
	}
	if c.call(f("slowdown_c"), idx, "nvmlDeviceGetTemperatureThreshold", func() (r nvml.Return) {
		u, r = d.GetTemperatureThreshold(nvml.TEMPERATURE_THRESHOLD_SLOWDOWN)
		return
	}) {
		g.SlowdownC = ptr(u)
	}
	if c.call(f("sm_clock_mhz"), idx, "nvmlDeviceGetClockInfo", func() (r nvml.Return) { u, r = d.GetClockInfo(nvml.CLOCK_SM); return }) {
		g.SMClockMHz = ptr(u)
	}
	if c.call(f("memory_clock_mhz"), idx, "nvmlDeviceGetClockInfo", func() (r nvml.Return) { u, r = d.GetClockInfo(nvml.CLOCK_MEM); return }) {
		g.MemoryClockMHz = ptr(u)
	}
	var reasons uint64
	if c.call(f("throttle_reasons"), idx, "nvmlDeviceGetCurrentClocksEventReasons", func() (r nvml.Return) { reasons, r = d.GetCurrentClocksEventReasons(); return }) {
		g.ThrottleReasons = throttleNames(reasons)
	}
}

// modes reads the GPU's modes and its memory health: persistence, compute
// mode, ECC with its counts, and row remapping (retired pages where the
// GPU has no row remapping).
func (c *collector) modes(g *report.GPU, d nvml.Device, f func(string) string) {
	idx, i := &g.Index, g.Index
	var st, pend nvml.EnableState
	if c.call(f("persistence_mode"), idx, "nvmlDeviceGetPersistenceMode", func() (r nvml.Return) { st, r = d.GetPersistenceMode(); return }) {
		g.PersistenceMode = ptr(st == nvml.FEATURE_ENABLED)
	}
	var cm nvml.ComputeMode
	if c.call(f("compute_mode"), idx, "nvmlDeviceGetComputeMode", func() (r nvml.Return) { cm, r = d.GetComputeMode(); return }) {
		g.ComputeMode = computeModeName(cm)
	}
	if c.call(f("ecc.mode"), idx, "nvmlDeviceGetEccMode", func() (r nvml.Return) { st, pend, r = d.GetEccMode(); return }) {
		g.ECC.Enabled, g.ECC.Pending = ptr(st == nvml.FEATURE_ENABLED), ptr(pend == nvml.FEATURE_ENABLED)
		if st == nvml.FEATURE_ENABLED {
			g.ECC.Volatile = c.ecc(i, d, nvml.VOLATILE_ECC, f("ecc.volatile"))
			g.ECC.Aggregate = c.ecc(i, d, nvml.AGGREGATE_ECC, f("ecc.aggregate"))
		}
	}
	var corr, unc int
	var isPending, failed bool
	if c.call(f("remapped_rows"), idx, "nvmlDeviceGetRemappedRows", func() (r nvml.Return) { corr, unc, isPending, failed, r = d.GetRemappedRows(); return }) {
		g.RemappedRows = &report.RemappedRows{Corrected: corr, Uncorrected: unc, Pending: isPending, Failure: failed}
	} else {
		g.RetiredPages = c.retired(i, d, f("retired_pages"))
	}
}

func (c *collector) ecc(i int, d nvml.Device, counter nvml.EccCounterType, field string) *report.ECCCounts {
	var e report.ECCCounts
	ok := c.call(field+".corrected", &i, "nvmlDeviceGetTotalEccErrors", func() (r nvml.Return) {
		e.Corrected, r = d.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_CORRECTED, counter)
		return
	})
	ok = c.call(field+".uncorrected", &i, "nvmlDeviceGetTotalEccErrors", func() (r nvml.Return) {
		e.Uncorrected, r = d.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, counter)
		return
	}) && ok
	if !ok {
		return nil
	}
	return &e
}

func (c *collector) retired(i int, d nvml.Device, field string) *report.RetiredPages {
	var sbe, dbe []uint64
	var pend nvml.EnableState
	if !c.call(field+".single_bit", &i, "nvmlDeviceGetRetiredPages", func() (r nvml.Return) {
		sbe, r = d.GetRetiredPages(nvml.PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)
		return
	}) {
		return nil
	}
	c.call(field+".double_bit", &i, "nvmlDeviceGetRetiredPages", func() (r nvml.Return) {
		dbe, r = d.GetRetiredPages(nvml.PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)
		return
	})
	c.call(field+".pending", &i, "nvmlDeviceGetRetiredPagesPendingStatus", func() (r nvml.Return) { pend, r = d.GetRetiredPagesPendingStatus(); return })
	return &report.RetiredPages{SingleBit: len(sbe), DoubleBit: len(dbe), Pending: pend == nvml.FEATURE_ENABLED}
}

func (c *collector) mig(i int, d nvml.Device) report.MIG {
	var m report.MIG
	var cur, pend int
	if !c.call(fmt.Sprintf("gpu[%d].mig.mode", i), &i, "nvmlDeviceGetMigMode", func() (r nvml.Return) { cur, pend, r = d.GetMigMode(); return }) {
		return m
	}
	m.Current, m.Pending = enabled(cur == nvml.DEVICE_MIG_ENABLE), enabled(pend == nvml.DEVICE_MIG_ENABLE)
	if cur != nvml.DEVICE_MIG_ENABLE {
		return m
	}
	// MIG device UUIDs, by (GPU instance, compute instance).
	uuids := map[[2]int]string{}
	var maxMig int
	if c.call(fmt.Sprintf("gpu[%d].mig.devices", i), &i, "nvmlDeviceGetMaxMigDeviceCount", func() (r nvml.Return) { maxMig, r = d.GetMaxMigDeviceCount(); return }) {
		for j := 0; j < maxMig; j++ {
			var md nvml.Device
			var gi, ci int
			var uuid string
			field := fmt.Sprintf("gpu[%d].mig.device[%d]", i, j)
			if !c.quietCallOn(&i, func() (r nvml.Return) { md, r = d.GetMigDeviceHandleByIndex(j); return }) {
				continue
			}
			if c.call(field+".gpu_instance_id", &i, "nvmlDeviceGetGpuInstanceId", func() (r nvml.Return) { gi, r = md.GetGpuInstanceId(); return }) &&
				c.call(field+".compute_instance_id", &i, "nvmlDeviceGetComputeInstanceId", func() (r nvml.Return) { ci, r = md.GetComputeInstanceId(); return }) &&
				c.call(field+".uuid", &i, "nvmlDeviceGetUUID", func() (r nvml.Return) { uuid, r = md.GetUUID(); return }) {
				uuids[[2]int{gi, ci}] = uuid
			}
		}
	}
	for p := 0; p < nvml.GPU_INSTANCE_PROFILE_COUNT; p++ {
		var info nvml.GpuInstanceProfileInfo
		if !c.quietCallOn(&i, func() (r nvml.Return) { info, r = d.GetGpuInstanceProfileInfo(p); return }) {
			continue // this GPU does not offer the profile
		}
		var gis []nvml.GpuInstance
		if !c.call(fmt.Sprintf("gpu[%d].mig.profile[%d].instances", i, p), &i, "nvmlDeviceGetGpuInstances", func() (r nvml.Return) { gis, r = d.GetGpuInstances(&info); return }) {
			continue
		}
		for _, gi := range gis {
			var gInfo nvml.GpuInstanceInfo
			if !c.call(fmt.Sprintf("gpu[%d].mig.gpu_instance", i), &i, "nvmlGpuInstanceGetInfo", func() (r nvml.Return) { gInfo, r = gi.GetInfo(); return }) {
				continue
			}
			inst := report.GPUInstance{ID: int(gInfo.Id), ProfileID: int(info.Id), Profile: giProfileName(p, info),
				PlacementStart: int(gInfo.Placement.Start), PlacementSize: int(gInfo.Placement.Size), MemoryMiB: info.MemorySizeMB}
			inst.ComputeInstances = c.computeInstances(i, gi, info, int(gInfo.Id), uuids)
			m.GPUInstances = append(m.GPUInstances, inst)
		}
	}
	sort.Slice(m.GPUInstances, func(a, b int) bool { return m.GPUInstances[a].ID < m.GPUInstances[b].ID })
	return m
}

func (c *collector) computeInstances(i int, gi nvml.GpuInstance, gInfo nvml.GpuInstanceProfileInfo, giID int, uuids map[[2]int]string) []report.ComputeInstance {
	var out []report.ComputeInstance
	for cp := 0; cp < nvml.COMPUTE_INSTANCE_PROFILE_COUNT; cp++ {
		var info nvml.ComputeInstanceProfileInfo
		if !c.quietCallOn(&i, func() (r nvml.Return) {
			info, r = gi.GetComputeInstanceProfileInfo(cp, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
			return
		}) {
			continue
		}
		var cis []nvml.ComputeInstance
		if !c.call(fmt.Sprintf("gpu[%d].mig.gpu_instance[%d].compute_instances", i, giID), &i, "nvmlGpuInstanceGetComputeInstances", func() (r nvml.Return) { cis, r = gi.GetComputeInstances(&info); return }) {
			continue
		}
		for _, ci := range cis {
			var cInfo nvml.ComputeInstanceInfo
			if !c.call(fmt.Sprintf("gpu[%d].mig.compute_instance", i), &i, "nvmlComputeInstanceGetInfo", func() (r nvml.Return) { cInfo, r = ci.GetInfo(); return }) {
				continue
			}
			name := giProfileName(-1, gInfo) // a compute instance spanning the GPU instance takes its name
			if info.SliceCount != gInfo.SliceCount {
				name = fmt.Sprintf("%dc.%s", info.SliceCount, name)
			}
			out = append(out, report.ComputeInstance{ID: int(cInfo.Id), ProfileID: int(info.Id),
				Profile:        name,
				PlacementStart: int(cInfo.Placement.Start), PlacementSize: int(cInfo.Placement.Size),
				DeviceUUID: uuids[[2]int{giID, int(cInfo.Id)}]})
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].ID < out[b].ID })
	return out
}

// quietCall is a guarded call whose failure is expected (probing which
// profiles exist) and not worth an error entry; a hang is still one (on
// gpu, nil for host-wide).
func (c *collector) quietCall(fn func() nvml.Return) (ok bool) {
	return c.quietCallOn(nil, fn)
}

func (c *collector) quietCallOn(gpu *int, fn func() nvml.Return) (ok bool) {
	return c.quietField(gpu, "nvml", "", fn)
}

// quietField is quietCallOn naming the field and NVML function that a
// hang is recorded against.
func (c *collector) quietField(gpu *int, field, symbol string, fn func() nvml.Return) (ok bool) {
	if c.skip(gpu) {
		return false
	}
	o := c.run(fn)
	if o.hung {
		c.markHung(field, gpu, symbol)
	}
	return !o.hung && !o.panicked && o.ret == nvml.SUCCESS
}

// giProfileName names a GPU instance profile as nvidia-smi does:
// "<slices>g.<memory GB, rounded up>gb", "+me" for the media-engine variant.
func giProfileName(profile int, info nvml.GpuInstanceProfileInfo) string {
	name := fmt.Sprintf("%dg.%dgb", info.SliceCount, int(math.Ceil(float64(info.MemorySizeMB)/1024)))
	if profile == nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1 {
		name += "+me"
	}
	return name
}

func (c *collector) nvlinks(i int, d nvml.Device) []report.NVLink {
	var out []report.NVLink
	for l := 0; l < nvml.NVLINK_MAX_LINKS; l++ {
		var st nvml.EnableState
		field := fmt.Sprintf("gpu[%d].nvlink[%d]", i, l)
		if l == 0 {
			if !c.call(field+".state", &i, "nvmlDeviceGetNvLinkState", func() (r nvml.Return) { st, r = d.GetNvLinkState(l); return }) {
				return nil // no NVLink at all on this GPU (or not readable): recorded once
			}
		} else if !c.quietCallOn(&i, func() (r nvml.Return) { st, r = d.GetNvLinkState(l); return }) {
			break // past the last link
		}
		link := report.NVLink{Link: l, Active: st == nvml.FEATURE_ENABLED}
		if link.Active {
			c.call(field+".version", &i, "nvmlDeviceGetNvLinkVersion", func() (r nvml.Return) { link.Version, r = d.GetNvLinkVersion(l); return })
			var pci nvml.PciInfo
			if c.call(field+".remote_pci", &i, "nvmlDeviceGetNvLinkRemotePciInfo", func() (r nvml.Return) { pci, r = d.GetNvLinkRemotePciInfo(l); return }) {
				link.RemotePCIBusID = busID(pci)
			}
		}
		out = append(out, link)
	}
	return out
}

func (c *collector) topology(devices []nvml.Device) {
	for a := 0; a < len(devices); a++ {
		activeTo := c.nvlinkCounts(a)
		for b := a + 1; b < len(devices); b++ {
			var lvl nvml.GpuTopologyLevel
			// a and b are places in the snapshot's GPUs; the link names
			// their NVML indexes (a GPU whose handle was refused is left
			// out of both).
			ga := c.snap.GPUs[a].Index
			link := report.TopoLink{A: ga, B: c.snap.GPUs[b].Index}
			if n := activeTo[c.snap.GPUs[b].PCIBusID]; n > 0 {
				link.Level = fmt.Sprintf("NV%d", n)
			} else if n := activeLinks(c.snap.GPUs[a]); n > 0 && !gpuBus(c.snap.GPUs, activeTo) && c.p2pNVLink(devices[a], devices[b]) {
				// Through NVSwitches: every active link reaches every peer.
				link.Level = fmt.Sprintf("NV%d", n)
			} else if c.call(fmt.Sprintf("topology[%d,%d]", link.A, link.B), &ga, "nvmlDeviceGetTopologyCommonAncestor", func() (r nvml.Return) { lvl, r = devices[a].GetTopologyCommonAncestor(devices[b]); return }) {
				link.Level = topoName(lvl)
			} else {
				continue
			}
			caps := map[string]nvml.GpuP2PCapsIndex{"read": nvml.P2P_CAPS_INDEX_READ, "write": nvml.P2P_CAPS_INDEX_WRITE, "nvlink": nvml.P2P_CAPS_INDEX_NVLINK, "atomics": nvml.P2P_CAPS_INDEX_ATOMICS}
			for name, ci := range caps {
				var st nvml.GpuP2PStatus
				if c.quietCallOn(&a, func() (r nvml.Return) { st, r = devices[a].GetP2PStatus(devices[b], ci); return }) {
					if link.P2P == nil {
						link.P2P = map[string]string{}
					}
					link.P2P[name] = p2pName(st)
				}
			}
			c.snap.Topology = append(c.snap.Topology, link)
		}
	}
}

func activeLinks(g report.GPU) int {
	n := 0
	for _, l := range g.NVLinks {
		if l.Active {
			n++
		}
	}
	return n
}

// gpuBus reports whether any link's remote end is one of the GPUs (direct
// GPU-to-GPU NVLink rather than NVSwitch).
func gpuBus(gpus []report.GPU, remotes map[string]int) bool {
	for _, g := range gpus {
		if remotes[g.PCIBusID] > 0 {
			return true
		}
	}
	return false
}

func (c *collector) p2pNVLink(a, b nvml.Device) bool {
	var st nvml.GpuP2PStatus
	return c.quietCall(func() (r nvml.Return) { st, r = a.GetP2PStatus(b, nvml.P2P_CAPS_INDEX_NVLINK); return }) && st == nvml.P2P_STATUS_OK
}

// nvlinkCounts counts GPU a's active links per remote PCI bus id.
func (c *collector) nvlinkCounts(a int) map[string]int {
	counts := map[string]int{}
	for _, l := range c.snap.GPUs[a].NVLinks {
		if l.Active && l.RemotePCIBusID != "" {
			counts[l.RemotePCIBusID]++
		}
	}
	return counts
}

func (c *collector) processes(i int, d nvml.Device) {
	for _, kind := range []string{"compute", "graphics"} {
		var ps []nvml.ProcessInfo
		sym, get := "nvmlDeviceGetComputeRunningProcesses", d.GetComputeRunningProcesses
		if kind == "graphics" {
			sym, get = "nvmlDeviceGetGraphicsRunningProcesses", d.GetGraphicsRunningProcesses
		}
		if !c.call(fmt.Sprintf("gpu[%d].processes.%s", i, kind), &i, sym, func() (r nvml.Return) { ps, r = get(); return }) {
			continue
		}
		for _, p := range ps {
			proc := report.Process{GPU: i, PID: p.Pid, Type: kind, UsedMiB: p.UsedGpuMemory >> 20}
			if p.GpuInstanceId != math.MaxUint32 {
				proc.GPUInstanceID = ptr(int(p.GpuInstanceId))
				proc.ComputeInstanceID = ptr(int(p.ComputeInstanceId))
			}
			if name, err := os.ReadFile(fmt.Sprintf("%s/%d/comm", c.opts.ProcRoot, p.Pid)); err == nil {
				proc.Name = strings.TrimSpace(string(name))
			}
			if cg, err := os.ReadFile(fmt.Sprintf("%s/%d/cgroup", c.opts.ProcRoot, p.Pid)); err == nil {
				proc.ContainerID, proc.PodUID = report.ContainerFromCgroup(string(cg))
			}
			c.snap.Processes = append(c.snap.Processes, proc)
		}
	}
}

func busID(p nvml.PciInfo) string {
	b := make([]byte, 0, len(p.BusIdLegacy))
	for _, c := range p.BusId {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	if len(b) == 0 {
		return fmt.Sprintf("%08X:%02X:%02X.0", p.Domain, p.Bus, p.Device)
	}
	return string(b)
}

func enabled(b bool) string {
	if b {
		return "enabled"
	}
	return "disabled"
}

func computeModeName(m nvml.ComputeMode) string {
	switch m {
	case nvml.COMPUTEMODE_DEFAULT:
		return "Default"
	case nvml.COMPUTEMODE_EXCLUSIVE_THREAD:
		return "Exclusive_Thread"
	case nvml.COMPUTEMODE_PROHIBITED:
		return "Prohibited"
	case nvml.COMPUTEMODE_EXCLUSIVE_PROCESS:
		return "Exclusive_Process"
	}
	return fmt.Sprintf("unknown(%d)", m)
}

func topoName(l nvml.GpuTopologyLevel) string {
	switch l {
	case nvml.TOPOLOGY_INTERNAL:
		return "X"
	case nvml.TOPOLOGY_SINGLE:
		return "PIX"
	case nvml.TOPOLOGY_MULTIPLE:
		return "PXB"
	case nvml.TOPOLOGY_HOSTBRIDGE:
		return "PHB"
	case nvml.TOPOLOGY_NODE:
		return "NODE"
	case nvml.TOPOLOGY_SYSTEM:
		return "SYS"
	}
	return fmt.Sprintf("unknown(%d)", l)
}

func p2pName(s nvml.GpuP2PStatus) string {
	switch s {
	case nvml.P2P_STATUS_OK:
		return "OK"
	case nvml.P2P_STATUS_CHIPSET_NOT_SUPPORED:
		return "CNS"
	case nvml.P2P_STATUS_GPU_NOT_SUPPORTED:
		return "GNS"
	case nvml.P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED:
		return "TNS"
	case nvml.P2P_STATUS_DISABLED_BY_REGKEY:
		return "NS"
	case nvml.P2P_STATUS_NOT_SUPPORTED:
		return "NS"
	}
	return "U"
}

// throttleNames decodes clock event reasons.
func throttleNames(r uint64) []string {
	names := []struct {
		bit  uint64
		name string
	}{
		{nvml.ClocksEventReasonGpuIdle, "gpu_idle"}, {nvml.ClocksEventReasonApplicationsClocksSetting, "applications_clocks_setting"},
		{nvml.ClocksEventReasonSwPowerCap, "sw_power_cap"}, {nvml.ClocksThrottleReasonHwSlowdown, "hw_slowdown"},
		{nvml.ClocksEventReasonSyncBoost, "sync_boost"}, {nvml.ClocksEventReasonSwThermalSlowdown, "sw_thermal_slowdown"},
		{nvml.ClocksThrottleReasonHwThermalSlowdown, "hw_thermal_slowdown"}, {nvml.ClocksThrottleReasonHwPowerBrakeSlowdown, "hw_power_brake_slowdown"},
		{nvml.ClocksEventReasonDisplayClockSetting, "display_clock_setting"},
	}
	var out []string
	for _, n := range names {
		if r&n.bit != 0 {
			out = append(out, n.name)
		}
	}
	return out
}

// cpuWords is how many 64-bit words cover this machine's CPUs.
func cpuWords() int {
	n := 0
	if data, err := os.ReadFile("/sys/devices/system/cpu/possible"); err == nil {
		s := strings.TrimSpace(string(data))
		if i := strings.LastIndexAny(s, "-,"); i >= 0 {
			s = s[i+1:]
		}
		n, _ = strconv.Atoi(s)
	}
	return n/64 + 1
}

// cpuList turns an affinity bitmask into a list: "0-31,64-95".
func cpuList(mask []uint) string {
	var parts []string
	start := -1
	total := len(mask) * 64
	for cpu := 0; cpu <= total; cpu++ {
		set := cpu < total && mask[cpu/64]&(1<<(uint(cpu)%64)) != 0
		switch {
		case set && start < 0:
			start = cpu
		case !set && start >= 0:
			if start == cpu-1 {
				parts = append(parts, strconv.Itoa(start))
			} else {
				parts = append(parts, fmt.Sprintf("%d-%d", start, cpu-1))
			}
			start = -1
		}
	}
	return strings.Join(parts, ",")
}

// findings lists what deserves an operator's look.
func findings(g report.GPU) []string {
	var out []string
	for _, f := range report.GPUFindings(g) {
		out = append(out, f.Message)
	}
	return out
}
