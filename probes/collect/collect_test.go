package collect

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gpulab/gpulab/probes/nvmlsim"
	"github.com/gpulab/gpulab/probes/report"
)

func newDGX(t *testing.T) *dgxa100.Server {
	t.Helper()
	s := dgxa100.New()
	if r := s.Init(); r != nvml.SUCCESS {
		t.Fatalf("mock Init: %v", r)
	}
	return s
}

func errorFor(s *report.Snapshot, field string) *report.FieldError {
	for i := range s.Errors {
		if s.Errors[i].Field == field {
			return &s.Errors[i]
		}
	}
	return nil
}

// The mock implements identity, memory and MIG; everything else panics in
// it, and each must end up as a recorded error, not a crash.
func TestCollectDGXA100(t *testing.T) {
	s := Collect(newDGX(t), Options{Host: "dgx-a100-mock", ProbeVersion: "test"})
	if len(s.GPUs) != 8 || s.DriverVersion != "550.54.15" || s.CUDADriverVersion != "12.4" || s.NVMLVersion != "12.550.54.15" {
		t.Fatalf("snapshot = %d GPUs, driver %q, cuda %q, nvml %q", len(s.GPUs), s.DriverVersion, s.CUDADriverVersion, s.NVMLVersion)
	}
	g := s.GPUs[3]
	if g.Index != 3 || !strings.Contains(g.Name, "A100-SXM4-40GB") || !strings.HasPrefix(g.UUID, "GPU-") || g.PCIBusID == "" || g.Memory == nil || g.Memory.TotalMiB != 40960 {
		t.Errorf("gpu 3 = %+v, memory %+v", g, g.Memory)
	}
	if g.MIG.Current != "disabled" || g.TemperatureC != nil {
		t.Errorf("gpu 3 mig %+v temperature %v", g.MIG, g.TemperatureC)
	}
	e := errorFor(s, "gpu[3].temperature_c")
	if e == nil || e.Code != "PANIC" || e.GPU == nil || *e.GPU != 3 {
		t.Errorf("unimplemented temperature recorded as %+v, want a PANIC entry for gpu 3", e)
	}
	if s.Schema != report.Schema || s.Host != "dgx-a100-mock" || s.DurationMS <= 0 {
		t.Errorf("header = %+v", s)
	}
	if _, err := json.Marshal(s); err != nil {
		t.Fatal(err)
	}
}

// fill gives a mock device what the DGX A100 mock lacks, as on a real HGX:
// 12 NVLinks to each peer, ECC on, a compute process in a pod.
func fill(d *server.Device, idx int, all []nvml.Device) {
	d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return uint32(30 + idx), nvml.SUCCESS }
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	d.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return 400000, nvml.SUCCESS }
	d.GetCurrPcieLinkGenerationFunc = func() (int, nvml.Return) { return 4, nvml.SUCCESS }
	d.GetMaxPcieLinkGenerationFunc = func() (int, nvml.Return) { return 4, nvml.SUCCESS }
	d.GetCurrPcieLinkWidthFunc = func() (int, nvml.Return) {
		if idx == 5 {
			return 8, nvml.SUCCESS // a downtrained link
		}
		return 16, nvml.SUCCESS
	}
	d.GetMaxPcieLinkWidthFunc = func() (int, nvml.Return) { return 16, nvml.SUCCESS }
	d.GetEccModeFunc = func() (nvml.EnableState, nvml.EnableState, nvml.Return) {
		return nvml.FEATURE_ENABLED, nvml.FEATURE_ENABLED, nvml.SUCCESS
	}
	d.GetTotalEccErrorsFunc = func(t nvml.MemoryErrorType, c nvml.EccCounterType) (uint64, nvml.Return) {
		if t == nvml.MEMORY_ERROR_TYPE_UNCORRECTED && idx == 2 && c == nvml.VOLATILE_ECC {
			return 1, nvml.SUCCESS
		}
		return 0, nvml.SUCCESS
	}
	d.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 0, idx == 2, false, nvml.SUCCESS }
	d.GetNvLinkStateFunc = func(link int) (nvml.EnableState, nvml.Return) {
		if link >= 12 {
			return 0, nvml.ERROR_INVALID_ARGUMENT
		}
		return nvml.FEATURE_ENABLED, nvml.SUCCESS
	}
	d.GetNvLinkVersionFunc = func(int) (uint32, nvml.Return) { return 3, nvml.SUCCESS }
	d.GetNvLinkRemotePciInfoFunc = func(link int) (nvml.PciInfo, nvml.Return) {
		// 12 links to an NVSwitch-like peer: here, links go to GPU idx^1.
		return all[idx^1].(*server.Device).GetPciInfo()
	}
	d.GetTopologyCommonAncestorFunc = func(nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) { return nvml.TOPOLOGY_SYSTEM, nvml.SUCCESS }
	bus := uint32(0x10 + idx)
	d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
		p := nvml.PciInfo{Bus: bus}
		for k, c := range fmt.Sprintf("00000000:%02X:00.0", bus) {
			p.BusId[k] = int8(c)
		}
		return p, nvml.SUCCESS
	}
	d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		if idx != 1 {
			return nil, nvml.SUCCESS
		}
		return []nvml.ProcessInfo{{Pid: 4242, UsedGpuMemory: 20 << 30, GpuInstanceId: 0xFFFFFFFF, ComputeInstanceId: 0xFFFFFFFF}}, nvml.SUCCESS
	}
	d.GetGraphicsRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.SUCCESS }
}

func TestCollectWithOverrides(t *testing.T) {
	s := newDGX(t)
	for i, d := range s.Devices {
		fill(d.(*server.Device), i, s.Devices)
	}
	proc := t.TempDir()
	os.MkdirAll(filepath.Join(proc, "4242"), 0o755)
	os.WriteFile(filepath.Join(proc, "4242", "comm"), []byte("vllm\n"), 0o644)
	os.WriteFile(filepath.Join(proc, "4242", "cgroup"), []byte("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod3b1f4a2c_8d7e_4f1a_9b2c_1234567890ab.slice/cri-containerd-4f2e9c1d0b3a5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f.scope\n"), 0o644)
	snap := Collect(s, Options{ProcRoot: proc, Now: stepClock()})
	g := snap.GPUs[0]
	if g.TemperatureC == nil || *g.TemperatureC != 30 || len(g.NVLinks) != 12 || !g.NVLinks[0].Active || g.NVLinks[0].Version != 3 {
		t.Errorf("gpu 0: temp %v, nvlinks %+v", g.TemperatureC, g.NVLinks)
	}
	if g.PowerW != nil {
		t.Errorf("power refused by NVML must be absent, got %v", *g.PowerW)
	}
	if e := errorFor(snap, "gpu[0].power_w"); e == nil || e.Code != "NOT_SUPPORTED" {
		t.Errorf("NOT_SUPPORTED power recorded as %+v", e)
	}
	if g.PowerLimitW == nil || *g.PowerLimitW != 400 {
		t.Errorf("power limit = %v", g.PowerLimitW)
	}
	if f := strings.Join(snap.GPUs[5].Findings, ";"); !strings.Contains(f, "PCIe link downtrained: x8 of x16") {
		t.Errorf("gpu 5 findings = %q", f)
	}
	if f := strings.Join(snap.GPUs[2].Findings, ";"); !strings.Contains(f, "row remaps pending") || !strings.Contains(f, "1 uncorrected ECC") {
		t.Errorf("gpu 2 findings = %q", f)
	}
	levels := map[[2]int]string{}
	for _, l := range snap.Topology {
		levels[[2]int{l.A, l.B}] = l.Level
	}
	if levels[[2]int{0, 1}] != "NV12" || levels[[2]int{0, 2}] != "SYS" || len(snap.Topology) != 28 {
		t.Errorf("topology 0-1 %q, 0-2 %q, %d pairs", levels[[2]int{0, 1}], levels[[2]int{0, 2}], len(snap.Topology))
	}
	if len(snap.Processes) != 1 {
		t.Fatalf("processes = %+v", snap.Processes)
	}
	p := snap.Processes[0]
	if p.GPU != 1 || p.PID != 4242 || p.Name != "vllm" || p.UsedMiB != 20480 || p.PodUID != "3b1f4a2c-8d7e-4f1a-9b2c-1234567890ab" || p.GPUInstanceID != nil {
		t.Errorf("process = %+v", p)
	}
}

func TestCollectMIG(t *testing.T) {
	s := newDGX(t)
	d := s.Devices[0].(*server.Device)
	if r, _ := d.SetMigMode(nvml.DEVICE_MIG_ENABLE); r != nvml.SUCCESS {
		t.Fatal(r)
	}
	info, _ := d.GetGpuInstanceProfileInfo(nvml.GPU_INSTANCE_PROFILE_3_SLICE)
	for range 2 {
		gi, r := d.CreateGpuInstance(&info)
		if r != nvml.SUCCESS {
			t.Fatal(r)
		}
		ciInfo, _ := gi.GetComputeInstanceProfileInfo(nvml.COMPUTE_INSTANCE_PROFILE_1_SLICE, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
		if _, r := gi.CreateComputeInstance(&ciInfo); r != nvml.SUCCESS {
			t.Fatal(r)
		}
	}
	one, _ := d.GetGpuInstanceProfileInfo(nvml.GPU_INSTANCE_PROFILE_1_SLICE)
	gi, _ := d.CreateGpuInstance(&one)
	full, _ := gi.GetComputeInstanceProfileInfo(nvml.COMPUTE_INSTANCE_PROFILE_1_SLICE, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
	gi.CreateComputeInstance(&full)

	snap := Collect(s, Options{})
	m := snap.GPUs[0].MIG
	if m.Current != "enabled" || len(m.GPUInstances) != 3 {
		t.Fatalf("mig = %+v", m)
	}
	var profiles []string
	for _, g := range m.GPUInstances {
		profiles = append(profiles, g.Profile)
		for _, c := range g.ComputeInstances {
			profiles = append(profiles, c.Profile)
		}
	}
	if got := strings.Join(profiles, ","); got != "3g.20gb,1c.3g.20gb,3g.20gb,1c.3g.20gb,1g.5gb,1g.5gb" {
		t.Errorf("MIG profiles = %s", got)
	}
	if snap.GPUs[1].MIG.Current != "disabled" || len(snap.GPUs[1].MIG.GPUInstances) != 0 {
		t.Errorf("gpu 1 mig = %+v", snap.GPUs[1].MIG)
	}
}

// stepClock advances 1 ms per call, so durations are positive and stable.
func stepClock() func() time.Time {
	t := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Millisecond); return t }
}

func TestMissingSymbolIsNotCalled(t *testing.T) {
	s := newDGX(t)
	called := false
	for _, d := range s.Devices {
		d.(*server.Device).GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { called = true; return 1, nvml.SUCCESS }
	}
	s.LookupSymbolFunc = func(sym string) error {
		if strings.HasPrefix(sym, "nvmlDeviceGetTemperature") {
			return os.ErrNotExist
		}
		return nil
	}
	snap := Collect(s, Options{})
	if called {
		t.Error("an entry point the driver lacks was called")
	}
	if e := errorFor(snap, "gpu[0].temperature_c"); e == nil || e.Code != "MISSING_SYMBOL" {
		t.Errorf("missing symbol recorded as %+v", e)
	}
}

func TestSimulatedDGXA100(t *testing.T) {
	s := nvmlsim.DGXA100()
	s.Init()
	snap := Collect(s, Options{})
	for _, l := range snap.Topology {
		if l.Level != "NV12" || l.P2P["nvlink"] != "OK" {
			t.Errorf("GPU%d-GPU%d: %+v, want NV12 through NVSwitch", l.A, l.B, l)
		}
	}
	g := snap.GPUs[2]
	if g.PCIBusID != "00000000:47:00.0" || g.NUMANode == nil || *g.NUMANode != 1 || g.CPUAffinity != "16-31,144-159" || g.ECC.Volatile == nil {
		t.Errorf("gpu 2 = %+v", g)
	}
	for _, e := range snap.Errors {
		if e.Code == "PANIC" {
			t.Errorf("the simulated DGX A100 leaves %s unanswered: %s", e.Field, e.Message)
		}
	}
}

func TestOtherMocks(t *testing.T) {
	for name, s := range map[string]interface {
		nvml.Interface
	}{"dgxh100": dgxh100.New(), "dgxh200": dgxh200.New()} {
		if r := s.Init(); r != nvml.SUCCESS {
			t.Fatalf("%s Init: %v", name, r)
		}
		snap := Collect(s, Options{})
		if len(snap.GPUs) != 8 || !strings.Contains(snap.GPUs[0].Name, strings.ToUpper(name[3:])) || snap.GPUs[0].Memory == nil {
			t.Errorf("%s: %d GPUs, first %+v", name, len(snap.GPUs), snap.GPUs[0])
		}
	}
}

// xidSet is an NVML event set that delivers one Xid 79 on the device it
// was registered for, then times out.
type xidSet struct {
	mock.EventSet
	dev  nvml.Device
	sent bool
}

func TestWaitXIDs(t *testing.T) {
	s := nvmlsim.DGXA100()
	s.Init()
	set := &xidSet{}
	set.FreeFunc = func() nvml.Return { return nvml.SUCCESS }
	set.WaitFunc = func(ms uint32) (nvml.EventData, nvml.Return) {
		if set.sent || set.dev == nil {
			time.Sleep(time.Duration(ms) * time.Millisecond)
			return nvml.EventData{}, nvml.ERROR_TIMEOUT
		}
		set.sent = true
		return nvml.EventData{Device: set.dev, EventType: nvml.EventTypeXidCriticalError, EventData: 79}, nvml.SUCCESS
	}
	s.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) { return set, nvml.SUCCESS }
	for i, d := range s.Devices {
		dev := d
		d.(*server.Device).RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return {
			if i == 5 {
				set.dev = dev
			}
			return nvml.SUCCESS
		}
	}
	snap := Collect(s, Options{})
	WaitXIDs(s, snap, 300*time.Millisecond)
	if len(snap.XIDs) != 1 || snap.XIDs[0].Code != 79 || snap.XIDs[0].GPU == nil || *snap.XIDs[0].GPU != 5 || snap.XIDs[0].Known || snap.XIDs[0].Source != "nvml-event" {
		// (undecoded: gpulab decodes it as it reads the snapshot)
		t.Errorf("xids = %+v", snap.XIDs)
	}
	// A driver without event support is an error entry, not a failure.
	bare := newDGX(t)
	snap = Collect(bare, Options{})
	WaitXIDs(bare, snap, 100*time.Millisecond)
	if e := errorFor(snap, "xid_events"); e == nil || e.Code != "PANIC" {
		t.Errorf("event set on a mock without events: %+v", e)
	}
}

// ReadKmsgXIDs on /dev/kmsg-style records built from a real Xid line.
func TestReadKmsgXIDs(t *testing.T) {
	s := nvmlsim.DGXA100()
	s.Init()
	snap := Collect(s, Options{})
	path := filepath.Join(t.TempDir(), "kmsg")
	os.WriteFile(path, []byte("6,1001,2000,-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module\n4,1002,2001,-;NVRM: Xid (PCI:0000:47:00): 79, pid=1896, GPU has fallen off the bus.\n4,1003,2002,-;NVRM: Xid (PCI:0000:ff:00): 999, pid=1, something new\n"), 0o644)
	ReadKmsgXIDs(snap, path)
	if len(snap.XIDs) != 2 || snap.XIDs[0].GPU == nil || *snap.XIDs[0].GPU != 2 || snap.XIDs[1].Known || snap.XIDs[1].GPU != nil {
		t.Errorf("kmsg xids = %+v", snap.XIDs)
	}
	ReadKmsgXIDs(snap, filepath.Join(t.TempDir(), "absent"))
	if e := errorFor(snap, "xids.kmsg"); e == nil {
		t.Errorf("an unreadable kernel log is not recorded")
	}
}
