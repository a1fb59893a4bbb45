package collect

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gpulab/gpulab/probes/report"
)

// TestWaitMSNeverWrapsAround: a deadline already passed stops the wait
// (a negative time left was a 49-day wait as a uint32); a wait is at
// least a millisecond and at most a second.
func TestWaitMSNeverWrapsAround(t *testing.T) {
	for _, c := range []struct {
		left time.Duration
		ms   uint32
		ok   bool
	}{{-3 * time.Millisecond, 0, false}, {0, 0, false}, {300 * time.Microsecond, 1, true}, {40 * time.Millisecond, 40, true}, {5 * time.Second, 1000, true}} {
		if ms, ok := waitMS(c.left); ms != c.ms || ok != c.ok {
			t.Errorf("waitMS(%v) = %d, %v; want %d, %v", c.left, ms, ok, c.ms, c.ok)
		}
	}
}

// The kernel's history, as /dev/kmsg hands it over ("prio,seq,usec,-;"
// then the message, its further lines escaped): an SXid and a GPU
// fallen off the bus with no Xid line are findings, and a history with
// an Xid line the probe cannot read is no history ("no Xid" would be a
// reading nobody made: the xid check is UNKNOWN).
func TestKmsgHistory(t *testing.T) {
	read := func(text string) *report.Snapshot {
		path := filepath.Join(t.TempDir(), "kmsg")
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		s := &report.Snapshot{NVML: report.NVMLState{Available: true}, GPUs: []report.GPU{{Index: 3, PCIBusID: "00000000:B3:00.0"}}}
		ReadKmsgXIDs(s, path)
		return s
	}
	s := read("3,1810,1843308145,-;NVRM: The NVIDIA GPU 0000:b3:00.0\\x0aNVRM: (PCI ID: 10de:26b5) installed in this system has\\x0aNVRM: fallen off the bus and is not responding to commands.\n" +
		"3,1811,1843400000,-;nvidia-nvswitch1: SXid (PCI:0000:aa:00.0): 24007, Fatal, Link 12 sourcetrack timeout error (First)\n" +
		"3,1812,1843400001,-;nvidia-nvswitch1: SXid (PCI:0000:aa:00.0): 24007, Severity 1 Engine instance 12 Sub-engine instance 00\n")
	var got []string
	for _, f := range report.Findings(s) {
		got = append(got, f.Check+": "+f.Message)
	}
	slices.Sort(got)
	want := []string{"xid: SXid 24007 on NVSwitch 0000:aa:00.0", "xid: Xid 79 on GPU3"}
	if !s.XIDHistory || !slices.Equal(got, want) {
		t.Errorf("history %v, findings %q, want %q", s.XIDHistory, got, want)
	}
	s = read("3,1,1,-;NVRM: Xid (PCI:0000:b3:00): 7x9, cut\n")
	if s.XIDHistory || report.CheckMade(s, "xid") || report.KmsgUnread(s) == nil || report.KmsgUnread(s).Code != "PARSE_ERROR" {
		t.Errorf("an unread Xid line: history %v, unread %+v", s.XIDHistory, report.KmsgUnread(s))
	}
}
