package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestXIDTable(t *testing.T) {
	want := []int{13, 31, 32, 43, 45, 48, 61, 62, 63, 64, 68, 69, 74, 79, 92, 94, 95, 119, 120, 154}
	for _, c := range want {
		if info := DecodeXID(c); !info.Known || info.Meaning == "" || info.Action == "" {
			t.Errorf("DecodeXID(%d) = %+v, want a meaning and an action", c, info)
		}
	}
	if got := len(KnownXIDs()); got != len(want) {
		t.Errorf("KnownXIDs has %d codes, want %d", got, len(want))
	}
	for _, c := range []int{0, 1, 109, 145, 149, 999} {
		if info := DecodeXID(c); info.Known || info.Meaning != "" {
			t.Errorf("DecodeXID(%d) = %+v: an unknown code must not be guessed", c, info)
		}
	}
	if !DecodeXID(79).Hardware || DecodeXID(13).Hardware {
		t.Errorf("79 must be flagged hardware, 13 not")
	}
}

// The kernel-log reader against real Xid lines in every prefix style.
func TestParseKmsgXIDsFixtures(t *testing.T) {
	tests := []struct {
		file  string
		codes string // codes in order
		pci   string // first event's PCI bus id
	}{
		{"dmesg-T-8x-a100-xid119-gsp-timeout-banners.txt", "119,119", "0001:6c:00"},
		{"dmesg-ctime-xid13-xid109-ctx-switch-timeout.txt", "13,13,13,109", "0000:cb:00"},
		{"fallen-off-bus-no-xid-multiline-drv570.txt", "", ""},
		{"journal-kernel-xid45-caused-by-xid149-145-nvlink.txt", "", "0000:dc:00"},
		{"old-driver-xid32-xid31-2015.txt", "32,32,31", "0000:01:00"},
		{"rtx5090-xid79-fallen-off-bus-gsp-rc-no-timestamps.txt", "79", "0000:06:00"},
		{"talos-8x-a100-sxid24007-xid62-xid45.txt", "", "0000:48:00"},
		{"xid63-row-remapper-a100.txt", "63", "0000:10:1c"},
	}
	for _, tt := range tests {
		data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "fixtures", "dmesg-xid", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		evs := ParseKmsgXIDs(string(data))
		var codes []string
		for _, e := range evs {
			codes = append(codes, itoa(e.Code))
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
		if tt.file == "fallen-off-bus-no-xid-multiline-drv570.txt" && len(evs) != 0 {
			t.Errorf("%s has no Xid line but parsed %v", tt.file, evs)
		}
	}
	ev := ParseKmsgXIDs("NVRM: Xid (PCI:0000:06:00): 79, GPU has fallen off the bus.")[0]
	if !ev.Known || !ev.Hardware || ev.Message != "GPU has fallen off the bus." {
		t.Errorf("xid 79 = %+v", ev)
	}
	if ev := ParseKmsgXIDs("NVRM: Xid (PCI:0000:dc:00): 149, pid=1, name=x, NVLINK")[0]; ev.Known {
		t.Errorf("xid 149 is not in the table but decoded as %+v", ev)
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

// The one count of a probe run: a host without NVML or without a
// snapshot failed, a host with findings is flagged, not ok, and so is one
// whose NVML answers with no GPU.
func TestTotal(t *testing.T) {
	one := []GPU{{Index: 0}}
	healthy := &Snapshot{NVML: NVMLState{Available: true}, GPUs: one}
	noNVML := &Snapshot{NVML: NVMLState{Available: false, Error: "libnvidia-ml.so.1 not found"}}
	gpu := 0
	flagged := &Snapshot{NVML: NVMLState{Available: true}, GPUs: one, XIDs: []XIDEvent{{Code: 79, GPU: &gpu}}}
	noGPU := &Snapshot{NVML: NVMLState{Available: true}}
	// g printed a whole snapshot and was lost before its probe ended:
	// no evidence, failed for that, never ok.
	got := Total([]string{"a", "b", "c", "d", "e", "f", "g", "h"}, []*Snapshot{healthy, noNVML, flagged, nil, nil, nil, healthy, noGPU}, []string{"ok", "exit", "ok", "refused", "refused", "ok", "lost", "ok"})
	if want := "8 hosts: 1 ok, 2 flagged (c,h), 5 failed: 1 no NVML (b), 2 refused (d,e), 1 no snapshot (f), 1 lost (g)"; got != want {
		t.Errorf("Total = %q, want %q", got, want)
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
