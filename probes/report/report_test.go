package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestXIDTable(t *testing.T) {
	curated := []int{13, 31, 32, 43, 45, 48, 61, 62, 63, 64, 68, 69, 74, 79, 92, 94, 95, 119, 120, 154}
	for _, c := range curated {
		if info := DecodeXID(c); !info.Known || info.Meaning == "" || info.Action == "" || info.Immediate == "" {
			t.Errorf("DecodeXID(%d) = %+v, want gpulab's meaning and action, and NVIDIA's resolution", c, info)
		}
	}
	// NVIDIA's catalog holds codes 1 to 172, every one known; past it,
	// nothing is guessed.
	if got := KnownXIDs(); len(got) != 172 || got[0] != 1 || got[171] != 172 {
		t.Errorf("KnownXIDs = %d codes from %v, want 1-172", len(got), got[:min(3, len(got))])
	}
	for _, c := range []int{0, -1, 173, 999} {
		if info := DecodeXID(c); info.Known || info.Meaning != "" || info.Action != "" {
			t.Errorf("DecodeXID(%d) = %+v: a code no catalog lists must not be guessed", c, info)
		}
	}
	if !DecodeXID(79).Hardware || DecodeXID(13).Hardware {
		t.Errorf("79 must be flagged hardware, 13 not")
	}
}

// A sample of codes against NVIDIA's published catalog
// (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html): the
// mnemonic and the immediate and investigatory resolution buckets; the
// action in words follows the immediate bucket, and whether the code
// points past the application follows it too.
func TestXIDCatalogAgainstNVIDIA(t *testing.T) {
	for _, c := range []struct {
		code                               int
		mnemonic, immediate, investigatory string
		hardware                           bool
		action                             string
	}{
		{8, "ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", "RESTART_APP", "CONTACT_SUPPORT", false, "Now: restart the application. Then: collect nvidia-bug-report.sh"},
		{48, "ROBUST_CHANNEL_GPU_ECC_DBE", "WORKFLOW_XID_48", "WORKFLOW_XID_48", true, ""},
		{54, "SILENT_RUNNING_PWR_REDUCED_CLOCKING", "CHECK_MECHANICALS", "CONTACT_SUPPORT", true, "Now: check the board's power cables and seating"},
		{79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "RESTART_BM", "CONTACT_SUPPORT", true, ""},
		{95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "RESET_GPU", "IGNORE (sympathetic)", true, ""},
		{109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "RESET_GPU", "CONTACT_SUPPORT", true, "Now: drain the GPU and reset it. Then: collect nvidia-bug-report.sh and contact NVIDIA support (NVIDIA: RESET_GPU, CONTACT_SUPPORT)"},
		{119, "GSP_RPC_TIMEOUT", "RESET_GPU", "INVESTIGATE_SW", true, ""},
		{149, "NVLINK_NETIR_ERROR", "WORKFLOW_NVLINK5_ERR", "WORKFLOW_NVLINK5_ERR", true, "Now: follow NVIDIA's WORKFLOW_NVLINK5_ERR workflow (NVIDIA: WORKFLOW_NVLINK5_ERR)"},
		{155, "NVLINK_SW_DEFINED_ERROR", "RESET_GPU", "INVESTIGATE_SW_USER", true, ""},
	} {
		info := DecodeXID(c.code)
		if !info.Known || info.Mnemonic != c.mnemonic || info.Immediate != c.immediate || info.Investigatory != c.investigatory || info.Hardware != c.hardware {
			t.Errorf("Xid %d = %+v, want %s, %s then %s, hardware %v", c.code, info, c.mnemonic, c.immediate, c.investigatory, c.hardware)
		}
		if !strings.HasPrefix(info.Action, c.action) {
			t.Errorf("Xid %d's action %q, want it to start %q", c.code, info.Action, c.action)
		}
	}
}

// The kernel-log reader against real Xid lines in every prefix style:
// the GPUs' Xids, the NVSwitches' SXids (their detail lines part of the
// line before), and a GPU fallen off the bus with no Xid line of its own.
func TestParseKmsgXIDsFixtures(t *testing.T) {
	tests := []struct {
		file  string
		codes string // codes in order, an SXid's with S
		pci   string // first event's PCI bus id
	}{
		{"dmesg-T-8x-a100-xid119-gsp-timeout-banners.txt", "119,119", "0001:6c:00"},
		{"dmesg-ctime-xid13-xid109-ctx-switch-timeout.txt", "13,13,13,109", "0000:cb:00"},
		{"fallen-off-bus-no-xid-multiline-drv570.txt", "79", ""},
		{"journal-kernel-xid45-caused-by-xid149-145-nvlink.txt", "", "0000:dc:00"},
		{"old-driver-xid32-xid31-2015.txt", "32,32,31", "0000:01:00"},
		{"rtx5090-xid79-fallen-off-bus-gsp-rc-no-timestamps.txt", "79", "0000:06:00"},
		{"talos-8x-a100-sxid24007-xid62-xid45.txt", "S24007,62,45", "0000:aa:00.0"},
		{"xid63-row-remapper-a100.txt", "63", "0000:10:1c"},
	}
	for _, tt := range tests {
		data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "fixtures", "dmesg-xid", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		evs, unread := ParseKmsgXIDs(string(data))
		var codes []string
		for _, e := range evs {
			c := itoa(e.Code)
			if e.SXid {
				c = "S" + c
			}
			codes = append(codes, c)
			if e.Source != "kmsg" || e.Message == "" {
				t.Errorf("%s: event %+v lacks source or message", tt.file, e)
			}
		}
		got := strings.Join(codes, ",")
		if tt.codes != "" && !strings.HasPrefix(got, tt.codes) {
			t.Errorf("%s: codes %s, want them to start %s", tt.file, got, tt.codes)
		}
		if tt.pci != "" && (len(evs) == 0 || evs[0].PCIBusID != tt.pci) {
			t.Errorf("%s: first event %+v, want PCI %s", tt.file, evs, tt.pci)
		}
		if len(unread) != 0 {
			t.Errorf("%s: lines not read: %q", tt.file, unread)
		}
		if strings.Contains(tt.file, "sxid24007") && !strings.Contains(got, "S24007") {
			t.Errorf("%s: codes %s: the SXid 24007 is not among them", tt.file, got)
		}
	}
	one := func(line string) XIDEvent {
		evs, unread := ParseKmsgXIDs(line)
		if len(evs) != 1 || len(unread) != 0 {
			t.Fatalf("%q: %+v, unread %q", line, evs, unread)
		}
		if evs[0].Known {
			t.Errorf("%q decoded in the probe: the probe carries no catalog", line)
		}
		s := &Snapshot{XIDs: evs}
		DecodeXIDs(s) // as gpulab reads the probe's snapshot
		return s.XIDs[0]
	}
	if ev := one("NVRM: Xid (PCI:0000:06:00): 79, GPU has fallen off the bus."); !ev.Known || !ev.Hardware || ev.Message != "GPU has fallen off the bus." {
		t.Errorf("xid 79 = %+v", ev)
	}
	if ev := one("NVRM: Xid (PCI:0000:dc:00): 149, pid=1, name=x, NVLINK"); !ev.Known || ev.Mnemonic != "NVLINK_NETIR_ERROR" {
		t.Errorf("xid 149 is in NVIDIA's catalog but decoded as %+v", ev)
	}
	if ev := one("NVRM: Xid (PCI:0000:dc:00): 231, pid=1, something new"); ev.Known || ev.Meaning != "" {
		t.Errorf("xid 231 is in no catalog but decoded as %+v", ev)
	}
	// An Xid 79 and the driver's own off-the-bus line are one event.
	if evs, _ := ParseKmsgXIDs("NVRM: GPU 0000:06:00.0: GPU has fallen off the bus.\nNVRM: Xid (PCI:0000:06:00): 79, GPU has fallen off the bus."); len(evs) != 1 {
		t.Errorf("Xid 79 and its off-the-bus line: %+v, want one event", evs)
	}
	if ev := one("nvidia-nvswitch3: SXid (PCI:0000:c6:00.0): 24007, Fatal, Link 28 sourcetrack timeout error (First)\nnvidia-nvswitch3: SXid (PCI:0000:c6:00.0): 24007, Severity 1 Engine instance 28 Sub-engine instance 00"); !ev.SXid || !ev.Hardware || ev.PCIBusID != "0000:c6:00.0" {
		t.Errorf("SXid 24007 = %+v", ev)
	}
	if _, unread := ParseKmsgXIDs("NVRM: Xid (PCI:0000:06:00) 79 cut"); len(unread) != 1 {
		t.Errorf("a cut Xid line: unread %q, want it", unread)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestContainerFromCgroup(t *testing.T) {
	tests := []struct{ name, content, container, pod string }{
		{"cgroup v2, systemd driver, containerd",
			"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod3b1f4a2c_8d7e_4f1a_9b2c_1234567890ab.slice/cri-containerd-4f2e9c1d0b3a5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f.scope\n",
			"4f2e9c1d0b3a5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f", "3b1f4a2c-8d7e-4f1a-9b2c-1234567890ab"},
		{"cgroup v1, cgroupfs driver, docker",
			"12:memory:/kubepods/besteffort/pod0f6c8a3e-2b1d-4c5e-8f9a-0b1c2d3e4f5a/a1b2c3d4e5f60718293a4b5c6d7e8f9012345678901234567890abcdef012345\n11:cpu,cpuacct:/kubepods/besteffort/pod0f6c8a3e-2b1d-4c5e-8f9a-0b1c2d3e4f5a/a1b2c3d4e5f60718293a4b5c6d7e8f9012345678901234567890abcdef012345\n",
			"a1b2c3d4e5f60718293a4b5c6d7e8f9012345678901234567890abcdef012345", "0f6c8a3e-2b1d-4c5e-8f9a-0b1c2d3e4f5a"},
		{"plain docker, no pod",
			"0::/system.slice/docker-9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d.scope\n",
			"9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d", ""},
		{"host process", "0::/user.slice/user-0.slice/session-3.scope\n", "", ""},
		{"garbage", "not a cgroup file", "", ""},
	}
	for _, tt := range tests {
		c, p := ContainerFromCgroup(tt.content)
		if c != tt.container || p != tt.pod {
			t.Errorf("%s: ContainerFromCgroup = %q, %q; want %q, %q", tt.name, c, p, tt.container, tt.pod)
		}
	}
}

// A probe asked for the kernel's Xid history (--kmsg) that could not read
// it is flagged: "no Xid" would be a reading nobody made. On a simulated
// host it is said, not flagged (there is no kernel log of its own to read).
func TestUnreadKmsgIsAFlag(t *testing.T) {
	s := &Snapshot{NVML: NVMLState{Available: true}, GPUs: []GPU{{Index: 0}}, Errors: []FieldError{{Field: "xids.kmsg", Code: "NO_PERMISSION", Message: "open /dev/kmsg: permission denied"}}}
	if f := Flags(s); len(f) != 1 || !strings.Contains(f[0], "Xid history not read (/dev/kmsg: NO_PERMISSION") || OutcomeOf(s, "ok") != Flagged {
		t.Errorf("kmsg unreadable: flags %q, outcome %v", f, OutcomeOf(s, "ok"))
	}
	s.Errors[0].Code = "SIMULATED"
	if f := Flags(s); len(f) != 0 || KmsgUnread(s) == nil {
		t.Errorf("simulated: flags %q, KmsgUnread %v", f, KmsgUnread(s))
	}
}

// An Xid 63 is not a flag of its own where the snapshot read its GPU's
// row-remap state (the remap pending, or failed, is that GPU's finding);
// where it did not, the Xid is the only word of it and stays.
func TestXid63LeavesTheRemapToItsFinding(t *testing.T) {
	gpu := 3
	s := &Snapshot{NVML: NVMLState{Available: true}, GPUs: []GPU{{Index: 3, PCIBusID: "00000000:10:1C.0", RemappedRows: &RemappedRows{}}},
		XIDs: []XIDEvent{{Code: 63, PCIBusID: "0000:10:1c"}, {Code: 63, GPU: &gpu}, {Code: 79, GPU: &gpu}}}
	if got := strings.Join(Flags(s), "; "); got != "Xid 79 on GPU3" {
		t.Errorf("flags %q, want only the Xid 79", got)
	}
	s.GPUs[0].RemappedRows = nil
	if got := Flags(s); len(got) != 3 {
		t.Errorf("flags %q: with the remap state unread, each Xid 63 must stay", got)
	}
}

// The driver's other Xid forms: a MIG instance's ("(PCI:0000:01:00
// GPU-I:05)", open-gpu-kernel-modules' portDbgPrintf), a code with no
// message, an old driver's address without "PCI:"; and an off-the-bus
// line whose address cannot be read is unread, never nothing.
func TestKmsgXidForms(t *testing.T) {
	for _, c := range []struct {
		line, bus, msg string
		code           int
	}{
		{"NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel (0x9). RST: No, D-RST: No", "0000:01:00", "pid=7194, Contained: CE User Channel (0x9). RST: No, D-RST: No", 94},
		{"NVRM: Xid (PCI:0000:01:00 GPU-I:05 GPU-CI:01): 95, pid=1, Uncontained", "0000:01:00", "pid=1, Uncontained", 95},
		{"[  12.5] NVRM: Xid (PCI:0000:01:00): 79", "0000:01:00", "", 79},
		{"NVRM: Xid (0000:01:00): 13, Graphics Exception", "0000:01:00", "Graphics Exception", 13},
		{"NVRM: GPU at 0000:3b:00.0 has fallen off the bus.", "0000:3b:00.0", "GPU has fallen off the bus (no Xid line)", 79},
	} {
		evs, unread := ParseKmsgXIDs(c.line)
		if len(evs) != 1 || len(unread) != 0 || evs[0].Code != c.code || evs[0].PCIBusID != c.bus || evs[0].Message != c.msg {
			t.Errorf("%q: %+v, unread %q", c.line, evs, unread)
		}
	}
	for _, line := range []string{"NVRM: Xid (PCI:0000:01:00 GPU-I:05: 94, cut", "NVRM: GPU ?? has fallen off the bus."} {
		if evs, unread := ParseKmsgXIDs(line); len(evs) != 0 || len(unread) != 1 {
			t.Errorf("%q: %+v, unread %q: want it unread", line, evs, unread)
		}
	}
}

// An NVSwitch's detail lines are its SXid's, whatever other switches
// print between them.
func TestSXidDetailsInterleaved(t *testing.T) {
	log := "nvidia-nvswitch1: SXid (PCI:0000:aa:00.0): 24007, Fatal, Link 12 sourcetrack timeout error (First)\n" +
		"nvidia-nvswitch2: SXid (PCI:0000:ab:00.0): 24007, Fatal, Link 3 sourcetrack timeout error (First)\n" +
		"nvidia-nvswitch1: SXid (PCI:0000:aa:00.0): 24007, Severity 1 Engine instance 12 Sub-engine instance 00\n" +
		"nvidia-nvswitch2: SXid (PCI:0000:ab:00.0): 24007, Data {0x1, 0x2}\n"
	if evs, unread := ParseKmsgXIDs(log); len(evs) != 2 || len(unread) != 0 {
		t.Errorf("%+v, unread %q: want the two switches' SXids", evs, unread)
	}
}
