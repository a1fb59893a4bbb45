package report

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

// sickSnapshot is an 8-GPU snapshot with one of each finding the
// snapshot's own counters give, and an Xid 79 and 63 from the kernel log.
func sickSnapshot() *Snapshot {
	s := &Snapshot{NVML: NVMLState{Available: true}, ProbeVersion: "test", XIDHistory: true}
	for i := range 8 {
		g := GPU{Index: i, UUID: "GPU-" + string(rune('a'+i)), PCIBusID: "00000000:0" + string(rune('1'+i)) + ":00.0",
			PCIe:         PCIe{GenCurrent: ptr(4), GenMax: ptr(4), WidthCurrent: ptr(16), WidthMax: ptr(16)},
			ECC:          ECC{Volatile: &ECCCounts{}},
			RemappedRows: &RemappedRows{}}
		s.GPUs = append(s.GPUs, g)
		for j := i + 1; j < 8; j++ {
			s.Topology = append(s.Topology, TopoLink{A: i, B: j, Level: "NV12"})
		}
	}
	s.Topology[0].Level = "SYS" // GPU0–GPU1
	s.GPUs[2].PCIe.WidthCurrent = ptr(8)
	s.GPUs[3].RemappedRows = &RemappedRows{Uncorrected: 1, Pending: true}
	s.GPUs[4].RemappedRows = &RemappedRows{Failure: true}
	s.GPUs[5].ECC.Volatile = &ECCCounts{Uncorrected: 2}
	s.Errors = []FieldError{
		{Field: "gpu[7].temperature", GPU: ptr(7), Code: "GPU_IS_LOST", Message: "GPU is lost"},
		{Field: "gpu[7].power", GPU: ptr(7), Code: "GPU_IS_LOST", Message: "GPU is lost"},
		{Field: "gpu[1].ecc.volatile", GPU: ptr(1), Code: "NOT_SUPPORTED"},
	}
	s.XIDs = []XIDEvent{
		{Code: 79, PCIBusID: "0000:07:00", Source: "kmsg", XIDInfo: DecodeXID(79)},
		{Code: 63, GPU: ptr(3), Source: "kmsg", XIDInfo: DecodeXID(63)},
		{Code: 999, PCIBusID: "0000:08:00", Source: "kmsg", XIDInfo: DecodeXID(999)},
	}
	return s
}

// Each finding names its check, its GPUs by index, UUID and bus id, its
// evidence and an action; Flags are their messages; Xid 63 is left out
// for the GPU whose remap state was read; an unknown code's action is
// unknown, never guessed.
func TestFindings(t *testing.T) {
	s := sickSnapshot()
	fs := Findings(s)
	var checks []string
	for _, f := range fs {
		checks = append(checks, f.Check)
		if f.Message == "" || len(f.Evidence) == 0 || !slices.Contains(Actions, f.Action) {
			t.Errorf("%s: message %q, evidence %q, action %q", f.Check, f.Message, f.Evidence, f.Action)
		}
	}
	want := []string{"nvlink-down", "gpu-lost", "pcie-width", "row-remap-pending", "row-remap-failed", "ecc-uncorrected", "xid", "xid"}
	if !slices.Equal(checks, want) {
		t.Fatalf("checks %v, want %v", checks, want)
	}
	if got := fs[0].Entities; len(got) != 6 || got[0] != (Entity{"GPU", "0"}) || got[1] != (Entity{"GPU_UUID", "GPU-a"}) || got[3] != (Entity{"GPU", "1"}) {
		t.Errorf("nvlink-down entities %v, want both GPUs by index, UUID and bus id", got)
	}
	// NVML's GPU_IS_LOST, once for the GPU, with the calls that said it.
	if lost := fs[1]; lost.Message != "GPU7: the GPU is lost: NVML returns GPU_IS_LOST (it fell off the bus or hung): drain the node and reboot it" ||
		lost.Action != ActionReboot || !lost.Fatal || len(lost.Evidence) != 2 || lost.Entities[1] != (Entity{"GPU_UUID", "GPU-h"}) {
		t.Errorf("gpu-lost: %+v", lost)
	}
	x79, x999 := fs[6], fs[7]
	if x79.Message != "Xid 79 on 0000:07:00" || !x79.Fatal || x79.Action != ActionReboot || x79.Codes[0] != "79" ||
		len(x79.Entities) != 3 || x79.Entities[0] != (Entity{"GPU", "6"}) {
		t.Errorf("Xid 79: %+v, want fatal, reboot (NVIDIA: RESTART_BM), on GPU6 found by its bus id", x79)
	}
	if x999.Action != ActionUnknown || x999.Fatal || x999.Entities[0] != (Entity{"GPU", "7"}) {
		t.Errorf("Xid 999 (no catalog lists it): %+v, want action unknown", x999)
	}
	if flags := Flags(s); len(flags) != len(fs) || flags[3] != "GPU3: row remaps pending: reset the GPU to apply them" {
		t.Errorf("Flags %q: want the findings' messages", flags)
	}
}

// The actions map one to one onto NVSentinel's RecommendedAction; every
// resolution bucket in NVIDIA's Xid catalog maps to an action, XID_154
// (the recovery action it names) alone to unknown.
func TestActionsMapping(t *testing.T) {
	seen := map[string]Action{}
	for _, a := range Actions {
		n := a.NVSentinelAction()
		if prev, dup := seen[n]; dup {
			t.Errorf("%s and %s both map to NVSentinel's %s", prev, a, n)
		}
		seen[n] = a
		if a != ActionUnknown && (n == "UNKNOWN" || a.GpudAction() == "") {
			t.Errorf("%s: NVSentinel %q, gpud %q", a, n, a.GpudAction())
		}
	}
	for _, code := range KnownXIDs() {
		b := DecodeXID(code).Immediate
		if b == "" {
			continue
		}
		if a := xidAction(b); (a == ActionUnknown) != (b == "XID_154") {
			t.Errorf("Xid %d: bucket %s maps to %s", code, b, a)
		}
	}
	// NVIDIA's published resolution for a sample of codes.
	for code, want := range map[int]Action{13: ActionCheckApp, 48: ActionResetGPU, 79: ActionReboot, 63: ActionNone, 95: ActionResetGPU, 119: ActionResetGPU, 154: ActionUnknown} {
		if got := xidAction(DecodeXID(code).Immediate); got != want {
			t.Errorf("Xid %d (%s): %s, want %s", code, DecodeXID(code).Immediate, got, want)
		}
	}
}

// Health events: one per finding, then one healthy event per check the
// snapshot holds the evidence for and found nothing by; none for a check
// without its evidence, none for an unknown finding, none without NVML.
func TestHealthEvents(t *testing.T) {
	at := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	s := sickSnapshot()
	evs := HealthEvents("dgx01", s, at)
	var unhealthy, healthy []string
	for _, e := range evs {
		if e.IsHealthy {
			healthy = append(healthy, e.CheckName)
		} else {
			unhealthy = append(unhealthy, e.CheckName)
		}
		if e.NodeName != "dgx01" || e.GeneratedTimestamp != "2026-12-06T03:00:00Z" || e.Metadata["gpulab.schema"] != HealthEventsSchema || e.ProcessingStrategy != "" {
			t.Errorf("event %+v", e)
		}
	}
	if !slices.Equal(unhealthy, []string{"GpulabNvlinkDown", "GpulabGpuLost", "GpulabPcieWidth", "GpulabRowRemapPending", "GpulabRowRemapFailed", "GpulabEccUncorrected", "GpulabXid", "GpulabXid"}) ||
		!slices.Equal(healthy, []string{"GpulabGpuMissing", "GpulabGpuUnreadable", "GpulabResetRequired", "GpulabPageRetirementPending", "GpulabNvmlHung"}) {
		t.Errorf("unhealthy %v\nhealthy %v", unhealthy, healthy)
	}
	if evs[0].RecommendedAction != "COMPONENT_RESET" || evs[0].ErrorCode[0] != "DCGM_FR_NVLINK_DOWN" || !evs[0].IsFatal {
		t.Errorf("nvlink-down event: %+v", evs[0])
	}

	// A healthy host without its Xid history read, and one GPU's ECC
	// counters refused: neither check is called clean.
	h := sickSnapshot()
	h.Topology[0].Level = "NV12"
	h.GPUs[2].PCIe.WidthCurrent = ptr(16)
	h.GPUs[3].RemappedRows, h.GPUs[4].RemappedRows = &RemappedRows{}, &RemappedRows{}
	h.GPUs[5].ECC.Volatile = nil
	h.XIDs, h.XIDHistory = nil, false
	h.Errors = []FieldError{{Field: "xids.kmsg", Code: "NO_PERMISSION", Message: "open /dev/kmsg: permission denied"}}
	h.Simulated = true
	for _, e := range HealthEvents("dgx02", h, at) {
		if !e.IsHealthy || e.ProcessingStrategy != "STORE_ONLY" {
			t.Errorf("healthy host: %+v", e)
		}
		if c := e.Metadata["gpulab.check"]; c == "xid" || c == "xid-history" || c == "ecc-uncorrected" {
			t.Errorf("a check without its evidence is reported: %+v", e)
		}
	}
	if evs := HealthEvents("x", &Snapshot{NVML: NVMLState{Error: "no driver"}}, at); len(evs) != 0 {
		t.Errorf("no NVML: %d events", len(evs))
	}
}

// Every check Findings makes is a check HealthEvents can call clean, or
// an unknown one: a check missing from probeChecks would never be cleared.
func TestEveryCheckCanClear(t *testing.T) {
	for _, f := range Findings(sickSnapshot()) {
		if !slices.ContainsFunc(probeChecks, func(c probeCheck) bool { return c.name == f.Check }) {
			t.Errorf("check %s is not in probeChecks", f.Check)
		}
	}
	for _, c := range probeChecks {
		if n := CheckName(c.name); !strings.HasPrefix(n, "Gpulab") || strings.Contains(n, "-") {
			t.Errorf("CheckName(%s) = %s", c.name, n)
		}
	}
}
