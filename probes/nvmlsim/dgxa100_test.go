package nvmlsim_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpulab/gpulab/probes/collect"
	"github.com/gpulab/gpulab/probes/nvmlsim"
	"github.com/gpulab/gpulab/probes/report"
)

func snapshot(t *testing.T, f nvmlsim.Faults) *report.Snapshot {
	t.Helper()
	s := nvmlsim.DGXA100With(f)
	if r := s.Init(); r != nvml.SUCCESS {
		t.Fatalf("Init: %v", r)
	}
	snap := collect.Collect(s, collect.Options{Host: "sim"})
	for _, e := range snap.Errors {
		if e.Code == "PANIC" {
			t.Errorf("the simulated DGX A100 leaves %s unanswered: %s", e.Field, e.Message)
		}
	}
	return snap
}

var sick = nvmlsim.Faults{
	NVLinkDown:   [][2]int{{1, 6}},
	ECC:          map[int]nvmlsim.ECCCounts{3: {VolatileUncorrected: 2, AggregateUncorrected: 2, VolatileCorrected: 5}},
	RemapPending: []int{3},
	XIDs: []nvmlsim.XID{{GPU: 3, Code: 48, Message: "An uncorrectable double bit error", SecondsAfterBoot: 90},
		{GPU: 5, Code: 79, Message: "GPU has fallen off the bus.", SecondsAfterBoot: 40}},
	MIG: map[int][]string{2: {"3g.20gb", "3g.20gb"}, 7: {"4g.20gb", "2g.10gb", "1g.5gb"}},
}

func TestHealthyIsUnchanged(t *testing.T) {
	snap := snapshot(t, nvmlsim.Faults{})
	if len(snap.GPUs) != 8 || len(snap.Topology) != 28 {
		t.Fatalf("%d GPUs, %d topology pairs", len(snap.GPUs), len(snap.Topology))
	}
	for _, l := range snap.Topology {
		if l.Level != "NV12" || l.P2P["nvlink"] != "OK" {
			t.Errorf("GPU%d-GPU%d: %+v, want NV12", l.A, l.B, l)
		}
	}
	for _, g := range snap.GPUs {
		if len(g.Findings) != 0 || g.MIG.Current != "disabled" || g.RemappedRows == nil || g.RemappedRows.Pending ||
			g.ECC.Volatile == nil || g.ECC.Volatile.Uncorrected != 0 {
			t.Errorf("healthy GPU%d: findings %v, MIG %+v, remap %+v, ECC %+v", g.Index, g.Findings, g.MIG, g.RemappedRows, g.ECC.Volatile)
		}
	}
	g := snap.GPUs[0]
	if g.PCIBusID != "00000000:07:00.0" || *g.NUMANode != 3 || g.CPUAffinity != "48-63,176-191" ||
		g.UUID != "GPU-faae5314-b87e-87c0-400b-b7cfb9e7b310" || *g.TemperatureC != 22 || *g.PowerW != 52.12 {
		t.Errorf("GPU0 = bus %s node %d cpus %s uuid %s %dC %vW", g.PCIBusID, *g.NUMANode, g.CPUAffinity, g.UUID, *g.TemperatureC, *g.PowerW)
	}
	a, b := snapshotJSON(t, nvmlsim.DGXA100()), snapshotJSON(t, nvmlsim.DGXA100With(nvmlsim.Faults{}))
	if a != b {
		t.Errorf("DGXA100() and DGXA100With(Faults{}) differ:\n%s\n%s", a, b)
	}
}

func snapshotJSON(t *testing.T, s interface{ nvml.Interface }) string {
	t.Helper()
	s.Init()
	snap := collect.Collect(s, collect.Options{Now: func() time.Time { return time.Unix(0, 0) }})
	out, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestFaultsShowInTheSnapshot(t *testing.T) {
	snap := snapshot(t, sick)
	for _, g := range []int{1, 6} {
		var down []int
		for _, l := range snap.GPUs[g].NVLinks {
			if !l.Active {
				down = append(down, l.Link)
			}
		}
		if want := []int{1, 7}; !reflect.DeepEqual(down, want) {
			t.Errorf("GPU%d links down %v, want %v (NVSwitch (1+6) mod 6)", g, down, want)
		}
	}
	levels := map[string]string{}
	for _, l := range snap.Topology {
		levels[fmt.Sprintf("%d-%d", l.A, l.B)] = l.Level
	}
	// The collector counts the lower-numbered GPU's active links for a
	// pair through NVSwitches: GPU1 and GPU6 reach their peers over 10.
	for pair, want := range map[string]string{"1-6": "SYS", "0-1": "NV12", "1-2": "NV10", "6-7": "NV10", "0-6": "NV12", "2-3": "NV12"} {
		if levels[pair] != want {
			t.Errorf("GPU%s: %s, want %s", pair, levels[pair], want)
		}
	}
	g3 := snap.GPUs[3]
	if g3.ECC.Volatile.Uncorrected != 2 || g3.ECC.Aggregate.Uncorrected != 2 || g3.ECC.Volatile.Corrected != 5 ||
		!g3.RemappedRows.Pending || g3.RemappedRows.Uncorrected != 1 || len(g3.Findings) != 2 {
		t.Errorf("GPU3 ECC %+v/%+v, remap %+v, findings %v", g3.ECC.Volatile, g3.ECC.Aggregate, g3.RemappedRows, g3.Findings)
	}
	var layouts []string
	for _, g := range snap.GPUs {
		if g.MIG.Current != "enabled" {
			continue
		}
		var gis []string
		for _, gi := range g.MIG.GPUInstances {
			if len(gi.ComputeInstances) != 1 || gi.ComputeInstances[0].Profile != gi.Profile || !strings.HasPrefix(gi.ComputeInstances[0].DeviceUUID, "MIG-") {
				t.Errorf("GPU%d GI %d compute instances %+v", g.Index, gi.ID, gi.ComputeInstances)
			}
			gis = append(gis, fmt.Sprintf("%d:%s@%d:%d/p%d", gi.ID, gi.Profile, gi.PlacementStart, gi.PlacementSize, gi.ProfileID))
		}
		layouts = append(layouts, fmt.Sprintf("GPU%d %s", g.Index, strings.Join(gis, " ")))
	}
	want := []string{"GPU2 1:3g.20gb@4:4/p9 2:3g.20gb@0:4/p9", "GPU7 1:4g.20gb@0:4/p5 3:2g.10gb@4:2/p14 7:1g.5gb@6:1/p19"}
	if !reflect.DeepEqual(layouts, want) {
		t.Errorf("MIG layouts %q, want %q", layouts, want)
	}
}

// Xids reach the probe through an NVML event set, in time order.
func TestXIDEvents(t *testing.T) {
	s := nvmlsim.DGXA100With(sick)
	s.Init()
	snap := collect.Collect(s, collect.Options{})
	collect.WaitXIDs(s, snap, 50*time.Millisecond)
	var got []string
	for _, x := range snap.XIDs {
		if x.GPU == nil {
			t.Fatalf("Xid %d without a GPU", x.Code)
		}
		got = append(got, fmt.Sprintf("%d@GPU%d %s", x.Code, *x.GPU, x.PCIBusID))
	}
	if want := []string{"79@GPU5 00000000:90:00.0", "48@GPU3 00000000:4E:00.0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("xids %q, want %q", got, want)
	}
	healthy := nvmlsim.DGXA100()
	healthy.Init()
	snap = collect.Collect(healthy, collect.Options{})
	collect.WaitXIDs(healthy, snap, 20*time.Millisecond)
	if len(snap.XIDs) != 0 {
		t.Errorf("a healthy machine sent %+v", snap.XIDs)
	}
}
