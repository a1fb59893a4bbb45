package report

import (
	"strings"
	"testing"
)

// The host's findings, and when their checks are made: a process in
// state D is a finding only when it held a GPU for the whole window; one
// reading of it, or its files unreadable for the whole window, leaves
// the check unmade (never PASS).
func TestHostFindings(t *testing.T) {
	base := func() *Snapshot {
		return &Snapshot{NVML: NVMLState{Available: true}, GPUs: []GPU{{Index: 3, UUID: "GPU-3"}}, WindowSeconds: 2,
			Processes: []Process{{GPU: 3, PID: 51, UsedMiB: 900}},
			HostState: HostState{ProcScanned: true, Pstore: &Pstore{Records: []PstoreRecord{}}}}
	}
	for _, c := range []struct {
		name  string
		stuck []StuckProcess
		win   float64
		want  string // "check fatal/unknown message-prefix", or "" for none
		made  bool
	}{
		{"held a GPU for the window", []StuckProcess{{PID: 50, Name: "python3", State: "D", Devices: []string{"/dev/nvidia3", "/dev/nvidiactl"}, WholeWindow: true}}, 2,
			"stuck-process pid 50 (python3) in state D holding /dev/nvidia3, /dev/nvidiactl for the whole 2s window", true},
		{"woke up in the window", []StuckProcess{{PID: 50, Name: "python3", State: "D", Devices: []string{"/dev/nvidia3"}}}, 2, "", true},
		{"one reading", []StuckProcess{{PID: 50, Name: "python3", State: "D", Devices: []string{"/dev/nvidia3"}}}, 0, "", false},
		{"unreadable for the window", []StuckProcess{{PID: 60, Name: "x", State: "D", FDsUnread: true, WholeWindow: true}}, 2,
			"stuck-process unknown pid 60 (x) in state D for the whole window", false},
		{"zombie", []StuckProcess{{PID: 51, PPID: 40, Name: "train", State: "Z"}}, 2, "zombie-gpu-process pid 51 (train) on GPU3 is a zombie NVML still lists: its parent (pid 40)", true},
	} {
		s := base()
		s.HostState.Stuck, s.WindowSeconds = c.stuck, c.win
		var got []string
		for _, f := range hostFindings(s) {
			g := f.Check
			if f.Unknown {
				g += " unknown"
			}
			got = append(got, g+" "+f.Message)
		}
		if c.want == "" && len(got) != 0 || c.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0], c.want)) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		if made := CheckMade(s, "stuck-process"); made != c.made {
			t.Errorf("%s: stuck-process made %v, want %v (%s)", c.name, made, c.made, WhyNotMade(s, "stuck-process"))
		}
	}
	s := base()
	s.HostState.Stuck = []StuckProcess{{PID: 50, Name: "python3", State: "D", Devices: []string{"/dev/nvidia3"}, WholeWindow: true}}
	f := hostFindings(s)[0]
	if f.Fatal || f.Action != ActionReboot || len(f.Entities) == 0 || f.Entities[0] != (Entity{"GPU", "3"}) {
		t.Errorf("%+v", f)
	}
	// pstore: a record is a finding; no pstore read is no check made.
	s = base()
	s.HostState.Pstore.Records = []PstoreRecord{{Name: "dmesg-efi-1", Panic: "Kernel panic - not syncing: x"}}
	if f := hostFindings(s); len(f) != 1 || f[0].Message != "1 crash record(s) in pstore from an earlier boot: Kernel panic - not syncing: x" {
		t.Errorf("%+v", f)
	}
	s.HostState.Pstore = nil
	s.Errors = []FieldError{{Field: "host.pstore", Code: "NO_PERMISSION", Message: "open /sys/fs/pstore: permission denied"}}
	if CheckMade(s, "pstore-crash") || !strings.Contains(WhyNotMade(s, "pstore-crash"), "NO_PERMISSION") {
		t.Errorf("pstore unread: made %v, %q", CheckMade(s, "pstore-crash"), WhyNotMade(s, "pstore-crash"))
	}
	s.HostState.ProcScanned = false
	if CheckMade(s, "zombie-gpu-process") {
		t.Error("zombie check made without /proc")
	}
}

// A zombie is a finding only where NVML lists it: with a GPU's process
// list not read (refused, or its GPU hung first), no zombie check is
// made, whatever /proc showed.
func TestZombieNeedsEveryProcessList(t *testing.T) {
	s := &Snapshot{NVML: NVMLState{Available: true}, GPUs: []GPU{{Index: 0}, {Index: 1}}, HostState: HostState{ProcScanned: true}}
	if !CheckMade(s, "zombie-gpu-process") {
		t.Fatalf("every list read: not made: %s", WhyNotMade(s, "zombie-gpu-process"))
	}
	s.Errors = []FieldError{{Field: "gpu[1].processes.compute", GPU: ptr(1), Code: "NO_PERMISSION"}}
	if CheckMade(s, "zombie-gpu-process") || !strings.Contains(WhyNotMade(s, "zombie-gpu-process"), "gpu[1].processes.compute NO_PERMISSION") {
		t.Errorf("GPU1's list refused: made %v, why %q", CheckMade(s, "zombie-gpu-process"), WhyNotMade(s, "zombie-gpu-process"))
	}
	s.Errors, s.GPUs[0].Hung = nil, "nvmlDeviceGetTotalEccErrors"
	if CheckMade(s, "zombie-gpu-process") || !strings.Contains(WhyNotMade(s, "zombie-gpu-process"), "GPU0 hung in nvmlDeviceGetTotalEccErrors") {
		t.Errorf("GPU0 hung: made %v, why %q", CheckMade(s, "zombie-gpu-process"), WhyNotMade(s, "zombie-gpu-process"))
	}
}
