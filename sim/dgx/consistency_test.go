package dgx

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpulab/gpulab/probes/collect"
	"github.com/gpulab/gpulab/probes/nvmlsim"
	"github.com/gpulab/gpulab/probes/report"
	"github.com/gpulab/gpulab/sim/spec"
	"github.com/gpulab/gpulab/step/parse"
)

// windowedProbe is what gpulab's probe reports for the machine with
// faults f: the collector over probes/nvmlsim's NVML mock, a sampling
// window of twenty readings, Xids read from NVML events.
func windowedProbe(t *testing.T, f spec.Faults) *report.Snapshot {
	t.Helper()
	s := nvmlsim.DGXA100With(f)
	if r := s.Init(); r != nvml.SUCCESS {
		t.Fatal(r)
	}
	// The machine's own /proc and pstore, as the probe's --mock writes
	// them: never this machine's.
	o := collect.Options{ProcRoot: filepath.Join(t.TempDir(), "proc"), PstoreDir: filepath.Join(t.TempDir(), "pstore"),
		IBDir: filepath.Join(t.TempDir(), "infiniband"), ReadSys: f.SysReader(),
		PCIDir: filepath.Join(t.TempDir(), "pci"), FabricManagerLog: filepath.Join(t.TempDir(), "fabricmanager.log"),
		// What the simulated fleet's inventory says each host has.
		Expect: &report.Expect{GPUs: spec.GPUs, IBPorts: len(spec.NICs), IBRateGbps: spec.IBRateGbps}}
	for _, d := range []string{o.ProcRoot, o.PstoreDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := errors.Join(f.WriteProc(o.ProcRoot), f.WritePstore(o.PstoreDir), f.WriteIB(o.IBDir), f.WritePCI(o.PCIDir), f.WriteFabricManager(o.ProcRoot, o.FabricManagerLog)); err != nil {
		t.Fatal(err)
	}
	snap := collect.Collect(s, o)
	collect.Sample(s, snap, o, 20*time.Millisecond, time.Millisecond)
	collect.WaitXIDs(s, snap, 10*time.Millisecond)
	return snap
}

// must returns a parser's value, failing the test on its error.
func must[T any](t *testing.T) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// agreement is one host's tools and probe, compared.
type agreement struct {
	t    *testing.T
	name string
	h    *Host
	f    spec.Faults
	snap *report.Snapshot
	topo *parse.Topo
}

func (a *agreement) out(args ...string) string {
	o, _, _ := run(a.t, a.h, args...)
	return o
}

// Each fault reads the same in every tool and in the probe, for several
// plans (and a healthy host).
func TestToolsAgreeWithTheProbe(t *testing.T) {
	cases := []spec.Faults{{}, stateFaults}
	for seed := int64(1); seed <= 6; seed++ {
		cases = append(cases, sickOf(seed))
	}
	for n, f := range cases {
		a := &agreement{t: t, name: fmt.Sprintf("case %d (%v)", n, f.NVLinkDown), h: testHost(f), f: f, snap: windowedProbe(t, f)}
		a.topo = must[*parse.Topo](t)(parse.ParseTopo(a.out("nvidia-smi", "topo", "-m")))
		a.nvlink()
		a.gpus()
		a.mig()
		a.xids()
		a.dcgm()
		a.state()
	}
}

// stateFaults turns every state knob but the hang (nvidia-smi would hang
// with it, as the real one does).
var stateFaults = spec.Faults{PCIeGen: map[int]int{5: 2}, Utilization: map[int]uint32{5: 95}, PCIeReplays: map[int]uint64{5: 40},
	Throttle: map[int][]string{2: {"hw_slowdown", "hw_thermal_slowdown"}}, TemperatureC: map[int]int{2: 87},
	PowerLimitW: map[int]int{4: 250}, RecoveryAction: map[int]string{3: "drain_and_reset", 1: "gpu_reset"}, VBIOS: "92.00.36.00.02",
	NVLinkFabric: map[int]string{0: "in_progress", 6: "failed"}}

// state: PCIe generation, temperature, power limit, reset status,
// replays, VBIOS and clock-event reasons in -q and the probe.
func (a *agreement) state() {
	t, name, f, snap := a.t, a.name, a.f, a.snap
	q := must[*parse.Query](t)(parse.ParseQuery(a.out("nvidia-smi", "-q")))
	for g, p := range snap.GPUs {
		qg := q.GPUs[g]
		if *qg.PCIeGenCurrent != *p.PCIe.GenCurrent || *qg.PCIeGenMax != *p.PCIe.GenMax || *p.PCIe.GenCurrent != f.LinkGen(g) {
			t.Errorf("%s: GPU%d PCIe gen: -q %d of %d, probe %d of %d", name, g, *qg.PCIeGenCurrent, *qg.PCIeGenMax, *p.PCIe.GenCurrent, *p.PCIe.GenMax)
		}
		if *qg.PowerLimitW != *p.PowerLimitW || qg.Fields["GPU Power Readings/Default Power Limit"] != fmt.Sprintf("%.2f W", *p.PowerDefaultLimitW) {
			t.Errorf("%s: GPU%d power limit: -q %v (default %s), probe %v of %v", name, g, *qg.PowerLimitW, qg.Fields["GPU Power Readings/Default Power Limit"], *p.PowerLimitW, *p.PowerDefaultLimitW)
		}
		if qg.Fields["Temperature/GPU Slowdown Temp"] != fmt.Sprintf("%d C", *p.SlowdownC) || qg.Fields["VBIOS Version"] != p.VBIOSVersion {
			t.Errorf("%s: GPU%d slowdown %s VBIOS %s, probe %d %s", name, g, qg.Fields["Temperature/GPU Slowdown Temp"], qg.Fields["VBIOS Version"], *p.SlowdownC, p.VBIOSVersion)
		}
		fabric := map[string]string{"not_supported": "N/A", "in_progress": "In Progress", "not_started": "Not Started", "completed": "Completed"}
		if p.Fabric == nil || qg.Fields["Fabric/State"] != fabric[p.Fabric.State] || p.Fabric.Status == "UNKNOWN" != (qg.Fields["Fabric/Status"] == "Unknown Error") {
			t.Errorf("%s: GPU%d fabric: -q %s (%s), probe %+v", name, g, qg.Fields["Fabric/State"], qg.Fields["Fabric/Status"], p.Fabric)
		}
		reset := qg.Fields["GPU Reset Status/Reset Required"] == "Yes"
		drain := qg.Fields["GPU Reset Status/Drain and Reset Recommended"] == "Yes"
		if reset != (p.RecoveryAction != "none") || drain != (p.RecoveryAction == "drain_and_reset") {
			t.Errorf("%s: GPU%d reset status: -q reset %v drain %v, probe %s", name, g, reset, drain, p.RecoveryAction)
		}
		if qg.Fields["PCI/Replays Since Reset"] != fmt.Sprint(*p.PCIe.Replays+*p.Window.ReplaysDelta) {
			t.Errorf("%s: GPU%d replays: -q %s, probe %d then +%d", name, g, qg.Fields["PCI/Replays Since Reset"], *p.PCIe.Replays, *p.Window.ReplaysDelta)
		}
		var active []string
		for _, r := range spec.ThrottleReasons {
			if p.Window.ClockEvents[r] > 0 {
				active = append(active, r)
			}
		}
		var qActive []string
		for key, r := range map[string]string{"SW Power Cap": "sw_power_cap", "HW Slowdown": "hw_slowdown", "HW Thermal Slowdown": "hw_thermal_slowdown",
			"HW Power Brake Slowdown": "hw_power_brake_slowdown", "SW Thermal Slowdown": "sw_thermal_slowdown"} {
			if qg.Fields["Clocks Event Reasons/"+key] == "Active" {
				qActive = append(qActive, r)
			}
		}
		slices.Sort(active)
		slices.Sort(qActive)
		if !slices.Equal(active, qActive) {
			t.Errorf("%s: GPU%d clock events: -q %v, probe %v", name, g, qActive, active)
		}
	}
}

// nvlink: the topology matrix, nvlink --status and the probe.
func (a *agreement) nvlink() {
	t, name, f, snap, topo := a.t, a.name, a.f, a.snap, a.topo
	for _, l := range snap.Topology {
		x, y := fmt.Sprintf("GPU%d", l.A), fmt.Sprintf("GPU%d", l.B)
		if topo.Links[x][y] != l.Level || topo.Links[y][x] != l.Level {
			t.Errorf("%s: %s-%s is %s/%s in topo -m, %s in the probe", name, x, y, topo.Links[x][y], topo.Links[y][x], l.Level)
		}
	}
	status := must[[]parse.NVLinkGPU](t)(parse.ParseNVLinkStatus(a.out("nvidia-smi", "nvlink", "--status")))
	for g, sg := range status {
		var text, probed []int
		for _, l := range sg.Links {
			if l.Inactive {
				text = append(text, l.Link)
			}
		}
		for _, l := range snap.GPUs[g].NVLinks {
			if !l.Active {
				probed = append(probed, l.Link)
			}
		}
		if !reflect.DeepEqual(text, probed) || !reflect.DeepEqual(text, f.LinksDown(g)) {
			t.Errorf("%s: GPU%d links down: nvlink --status %v, probe %v, faults %v", name, g, text, probed, f.LinksDown(g))
		}
	}
	var notNV [][2]int
	for _, l := range snap.Topology {
		if !strings.HasPrefix(l.Level, "NV") {
			notNV = append(notNV, [2]int{l.A, l.B})
		}
	}
	if !reflect.DeepEqual(notNV, f.NVLinkDown) {
		t.Errorf("%s: pairs off NVLink in the probe %v, faults %v", name, notNV, f.NVLinkDown)
	}

}

// gpus: ECC, remapped rows, identity, readings, affinity, MIG mode in -q,
// --query-gpu, topo -m and the probe.
func (a *agreement) gpus() {
	t, name, f, snap, topo := a.t, a.name, a.f, a.snap, a.topo
	q := must[*parse.Query](t)(parse.ParseQuery(a.out("nvidia-smi", "-q")))
	csv := strings.Split(strings.TrimSpace(a.out("nvidia-smi", "--query-gpu=index,uuid,pci.bus_id,ecc.errors.uncorrected.volatile.total,mig.mode.current", "--format=csv,noheader")), "\n")
	for g, p := range snap.GPUs {
		qg := q.GPUs[g]
		unc, _ := strconv.ParseUint(qg.Fields["ECC Errors/Volatile/DRAM Uncorrectable"], 10, 64)
		row := strings.Split(csv[g], ", ")
		if unc != p.ECC.Volatile.Uncorrected || row[3] != fmt.Sprint(unc) || unc != f.ECCFor(g).VolatileUncorrected {
			t.Errorf("%s: GPU%d uncorrected ECC: -q %d, --query-gpu %s, probe %d", name, g, unc, row[3], p.ECC.Volatile.Uncorrected)
		}
		if *qg.RemappedRows.Pending != p.RemappedRows.Pending || p.RemappedRows.Pending != f.Pending(g) ||
			*qg.RemappedRows.Uncorrectable != p.RemappedRows.Uncorrected {
			t.Errorf("%s: GPU%d remap: -q %+v, probe %+v", name, g, qg.RemappedRows, p.RemappedRows)
		}
		if qg.BusID != p.PCIBusID || row[2] != p.PCIBusID || qg.UUID != p.UUID || row[1] != p.UUID || *qg.Serial != p.Serial {
			t.Errorf("%s: GPU%d identity: -q %s %s, csv %s %s, probe %s %s", name, g, qg.BusID, qg.UUID, row[2], row[1], p.PCIBusID, p.UUID)
		}
		if *qg.TemperatureC != int(*p.TemperatureC) || *qg.PowerDrawW != *p.PowerW || *qg.MemoryUsedMiB != int(p.Memory.UsedMiB) {
			t.Errorf("%s: GPU%d readings: -q %dC %vW %dMiB, probe %dC %vW %dMiB", name, g,
				*qg.TemperatureC, *qg.PowerDrawW, *qg.MemoryUsedMiB, *p.TemperatureC, *p.PowerW, p.Memory.UsedMiB)
		}
		gpu := topo.GPUs[g]
		if *gpu.CPUAffinity != p.CPUAffinity || *gpu.NUMAAffinity != *p.NUMANode {
			t.Errorf("%s: GPU%d affinity: topo -m %s node %d, probe %s node %d", name, g, *gpu.CPUAffinity, *gpu.NUMAAffinity, p.CPUAffinity, *p.NUMANode)
		}
		wantMIG := map[bool]string{true: "Enabled", false: "Disabled"}[p.MIG.Current == "enabled"]
		if *qg.MIGCurrent != wantMIG || row[4] != wantMIG {
			t.Errorf("%s: GPU%d MIG: -q %s, csv %s, probe %s", name, g, *qg.MIGCurrent, row[4], p.MIG.Current)
		}
	}

}

// mig: the layout in mig -lgi, nvidia-smi -L, the table's MIG devices and the probe.
func (a *agreement) mig() {
	t, name, snap := a.t, a.name, a.snap
	var probeGIs, lgiGIs, listDevs, tableDevs []string
	for _, p := range snap.GPUs {
		for _, gi := range p.MIG.GPUInstances {
			probeGIs = append(probeGIs, fmt.Sprintf("GPU%d %s id%d p%d %d:%d", p.Index, gi.Profile, gi.ID, gi.ProfileID, gi.PlacementStart, gi.PlacementSize))
			listDevs = append(listDevs, fmt.Sprintf("GPU%d %s %s", p.Index, gi.Profile, gi.ComputeInstances[0].DeviceUUID))
			tableDevs = append(tableDevs, fmt.Sprintf("GPU%d GI%d CI%d", p.Index, gi.ID, gi.ComputeInstances[0].ID))
		}
	}
	if lgiOut, _, code := run(t, a.h, "nvidia-smi", "mig", "-lgi"); code == 0 {
		lgi := must[*parse.MIGTable[parse.MIGInstance]](t)(parse.ParseMIGInstances(lgiOut, false))
		for _, r := range lgi.Rows {
			lgiGIs = append(lgiGIs, fmt.Sprintf("GPU%d %s id%d p%d %d:%d", r.GPU, strings.TrimPrefix(r.Name, "MIG "), r.InstanceID, r.ProfileID, r.PlacementStart, r.PlacementSize))
		}
	}
	sort.Strings(probeGIs)
	sort.Strings(lgiGIs)
	if !reflect.DeepEqual(probeGIs, lgiGIs) {
		t.Errorf("%s: GPU instances: mig -lgi %q, probe %q", name, lgiGIs, probeGIs)
	}
	list := must[*parse.SMIList](t)(parse.ParseSMIList(a.out("nvidia-smi", "-L")))
	var fromList []string
	for _, g := range list.GPUs {
		for _, m := range g.MIGDevices {
			fromList = append(fromList, fmt.Sprintf("GPU%d %s %s", g.Index, m.Profile, m.UUID))
		}
	}
	if strings.Join(fromList, ",") != strings.Join(listDevs, ",") {
		t.Errorf("%s: MIG devices: -L %q, probe %q", name, fromList, listDevs)
	}
	table := must[*parse.SMI](t)(parse.ParseSMI(a.out("nvidia-smi")))
	var fromTable []string
	for _, m := range table.MIGDevices {
		fromTable = append(fromTable, fmt.Sprintf("GPU%d GI%d CI%d", m.GPU, m.GI, m.CI))
	}
	if strings.Join(fromTable, ",") != strings.Join(tableDevs, ",") {
		t.Errorf("%s: MIG devices: table %q, probe %q", name, fromTable, tableDevs)
	}

}

// xids: the kernel log and the probe's NVML events.
func (a *agreement) xids() {
	t, name, f, snap := a.t, a.name, a.f, a.snap
	klog := must[*parse.KernelLog](t)(parse.ParseDmesgXid(a.out("dmesg", "-T")))
	var fromLog, fromProbe []string
	for _, x := range klog.XIDs {
		fromLog = append(fromLog, fmt.Sprintf("%d@%s", x.XID, x.PCI))
	}
	for _, x := range snap.XIDs {
		fromProbe = append(fromProbe, fmt.Sprintf("%d@%s", x.Code, spec.KernelBusID(*x.GPU)))
	}
	if strings.Join(fromLog, ",") != strings.Join(fromProbe, ",") || len(fromLog) != len(f.XIDs) {
		t.Errorf("%s: Xids: dmesg %v, probe %v", name, fromLog, fromProbe)
	}

}

// dcgm: the GPUs dcgmi diag fails are the ECC and remap ones.
func (a *agreement) dcgm() {
	t, name, f := a.t, a.name, a.f
	diag := must[*parse.DCGMDiag](t)(parse.ParseDCGMDiag(a.out("dcgmi", "diag", "-r", "2")))
	for _, tt := range diag.Tests {
		for g := 0; g < spec.GPUs; g++ {
			bad := tt.Name == "software" && f.Pending(g) || tt.Name == "memory" && f.ECCFor(g).VolatileUncorrected > 0
			if (tt.GPUs[fmt.Sprintf("GPU%d", g)] == "Fail") != bad {
				t.Errorf("%s: dcgmi diag %s on GPU%d: %s", name, tt.Name, g, tt.GPUs[fmt.Sprintf("GPU%d", g)])
			}
		}
	}
}

// The sick host's all-reduce is visibly slower than a healthy host's, and
// the healthy one's is the recording's (8x A100-40GB through NVSwitch).
func TestAllReduceBandwidth(t *testing.T) {
	bw := func(f spec.Faults) *parse.NCCLTests {
		out, _, code := run(t, testHost(f), "all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "8")
		r := must[*parse.NCCLTests](t)(parse.ParseNCCLTests(out))
		if code != 0 || !r.Complete || len(r.Rows) != 31 {
			t.Fatalf("all_reduce_perf: exit %d, complete %v, %d rows", code, r.Complete, len(r.Rows))
		}
		return r
	}
	healthy, sick := bw(spec.Faults{}), bw(sickOf(1))
	rec := must[*parse.NCCLTests](t)(parse.ParseNCCLTests(recording(recAllReduce8)))
	if *healthy.PeakBusBW != *rec.PeakBusBW {
		t.Errorf("healthy peak bus bandwidth %v, the recording's %v", *healthy.PeakBusBW, *rec.PeakBusBW)
	}
	if *sick.PeakBusBW > 0.9**healthy.PeakBusBW {
		t.Errorf("sick peak bus bandwidth %v is not visibly below the healthy %v", *sick.PeakBusBW, *healthy.PeakBusBW)
	}
}
