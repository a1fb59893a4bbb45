package parse

import (
	"strings"
	"testing"
)

func TestDmesgXidFixtures(t *testing.T) {
	k, err := ParseDmesgXid(fixture(t, "dmesg-xid", "talos-8x-a100-sxid24007-xid62-xid45.txt"))
	// The SXid's Data line is its detail, not a second event; 24007 is
	// fatal in the Fabric Manager guide.
	if err != nil || len(k.XIDs) != 4 || !k.XIDs[0].SXid || k.XIDs[0].XID != 24007 || !k.XIDs[0].Known || !k.XIDs[0].Hardware || len(k.XIDs[0].Detail) != 1 {
		t.Fatalf("talos: %v %+v", err, k.XIDs)
	}
	x := k.XIDs[2]
	if x.XID != 45 || *x.PID != 22884 || x.Process != "VLLM::Worker" || x.Time != "2026-04-22T21:25:20.560106789Z" || x.Message != "channel 0x0000000a" || x.Line != 6 {
		t.Errorf("xid 45 = %+v", x)
	}
	if k.GPUs["0000:48:00"] != "GPU-5fc0bcec-c2e1-38dc-8994-2a9f9f3b709e" {
		t.Errorf("gpus = %v", k.GPUs)
	}
	k, _ = ParseDmesgXid(fixture(t, "dmesg-xid", "fallen-off-bus-no-xid-multiline-drv570.txt"))
	if len(k.XIDs) != 0 || len(k.FallenOffBus) != 1 || k.FallenOffBus[0] != "0000:b3:00" {
		t.Errorf("multi-line fallen off the bus without an Xid: %+v", k)
	}
	k, _ = ParseDmesgXid(fixture(t, "dmesg-xid", "gpud-xid13-sm-exceptions-then-xid43-iso-decode.txt"))
	last := k.XIDs[len(k.XIDs)-1]
	if last.XID != 43 || !strings.HasPrefix(last.Time, "2025-01-21T") {
		t.Errorf("iso decode: last = %+v", last)
	}
	k, _ = ParseDmesgXid(fixture(t, "dmesg-xid", "dmesg-ctime-xid13-xid109-ctx-switch-timeout.txt"))
	if x := k.XIDs[3]; x.XID != 109 || !x.Known || x.Mnemonic != "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR" || x.Immediate != "RESET_GPU" || *x.PID != 1797828 {
		t.Errorf("xid 109 must carry NVIDIA's catalog entry (CTXSW timeout, RESET_GPU): %+v", x)
	}
	k, _ = ParseDmesgXid(fixture(t, "dmesg-xid", "rtx5090-xid79-fallen-off-bus-gsp-rc-no-timestamps.txt"))
	if len(k.FallenOffBus) != 1 || k.XIDs[0].XID != 79 || !k.XIDs[0].Hardware {
		t.Errorf("rtx5090: %+v", k)
	}
}

// Syslog files keep Xids behind their own prefix: the dmesg timestamp
// after "kernel:" (Ubuntu 16.04 rsyslog), an RFC 3339 timestamp (rsyslog's
// default on current distributions), a month in the locale's words.
func TestDmesgXidSyslogPrefixes(t *testing.T) {
	k, err := ParseDmesgXid(fixture(t, "dmesg-xid", "syslog-kernel-bracket-ts-xid79-gtx960-ubuntu1604.txt"))
	if err != nil || len(k.XIDs) != 1 || len(k.FallenOffBus) != 1 || k.GPUs["0000:01:00"] == "" {
		t.Fatalf("kernel: [uptime]: %v %+v", err, k)
	}
	if x := k.XIDs[0]; x.XID != 79 || x.Time != "Dec  6 17:49:03" || x.KernelTime != "8659.726062" || x.PCI != "0000:01:00" || x.Message != "GPU has fallen off the bus." || x.Line != 2 {
		t.Errorf("kernel: [uptime]: %+v", x)
	}
	k, err = ParseDmesgXid(fixture(t, "dmesg-xid", "rsyslog-rfc3339-xid79-xid154-rtx4080.txt"))
	if err != nil || len(k.XIDs) != 2 {
		t.Fatalf("RFC 3339: %v %+v", err, k)
	}
	if x := k.XIDs[0]; x.XID != 79 || x.Time != "2026-06-01T15:55:06.218036+03:00" || x.KernelTime != "" || *x.PID != 30393 || x.Process != "Media" {
		t.Errorf("RFC 3339: %+v", x)
	}
	if x := k.XIDs[1]; x.XID != 154 || x.Line != 4 || x.Message != "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)" {
		t.Errorf("RFC 3339: %+v", x)
	}
	k, _ = ParseDmesgXid(fixture(t, "dmesg-xid", "syslog-zh-locale-month-xid79-then-dmesg-rtx4090.txt"))
	if len(k.XIDs) != 2 || k.XIDs[0].Time != "6月 28 02:52:53" || k.XIDs[0].Line != 1 || k.XIDs[1].Time != "1590188.789226" {
		t.Errorf("localized month: %+v", k.XIDs)
	}
	// Other journal and syslog timestamps (journalctl -o short-precise,
	// -o short-iso, rsyslog with UTC "Z").
	for _, l := range []string{
		"Dec 02 10:43:35.123456 gpu-07 kernel: NVRM: Xid (PCI:0000:07:00): 48, An uncorrectable double bit error",
		"2024-12-02T10:43:35+0000 gpu-07 kernel: NVRM: Xid (PCI:0000:07:00): 48, An uncorrectable double bit error",
		"2024-12-02T10:43:35.123456Z gpu-07 kernel: [240314.528856] NVRM: Xid (PCI:0000:07:00): 48, An uncorrectable double bit error",
	} {
		k, err := ParseDmesgXid(l + "\n")
		if err != nil || len(k.XIDs) != 1 || k.XIDs[0].XID != 48 || k.XIDs[0].Message != "An uncorrectable double bit error" || !strings.HasPrefix(l, k.XIDs[0].Time) {
			t.Errorf("%q: %v %+v", l, err, k.XIDs)
		}
	}
}

// A message with many continuation lines is joined in linear work (it was
// joined with += per line: 31 s for one Xid and 1 MiB of " y" lines).
func TestDmesgXidLongMessageLinear(t *testing.T) {
	const xid = "[  1.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus.\n"
	linearWork(t, "continuation lines", 4000, func(n int) {
		k, err := ParseDmesgXid(xid + strings.Repeat(" y\n", n))
		if err != nil || len(k.XIDs) != 1 || len(k.XIDs[0].Message) != len("GPU has fallen off the bus.")+2*n {
			t.Fatalf("%d continuation lines: %v %+v", n, err, k.XIDs)
		}
	})
}

// A log of many lines costs no memory per line: it was split into a slice
// of lines and kept as a slice of messages (4.2 GB for 64 MiB of "y\n").
func TestDmesgXidMemoryPerLine(t *testing.T) {
	text := strings.Repeat("y\n", 100000) + "[  1.0] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n"
	ParseDmesgXid(text)
	got := allocated(func() {
		if k, err := ParseDmesgXid(text); err != nil || len(k.XIDs) != 1 || k.XIDs[0].Line != 100001 {
			t.Fatalf("%v %+v", err, k)
		}
	})
	// Splitting into lines alone costs 8 bytes per input byte here (a
	// 16-byte string header per 2-byte line); the race detector's own
	// allocations stay well under the input's size.
	if got > uint64(len(text)) {
		t.Errorf("parsing %d bytes of lines allocates %d bytes", len(text), got)
	}
}

func FuzzDmesgXid(f *testing.F) {
	f.Add("[ 1.0] NVRM: Xid (PCI:0000:01:00): 79, pid=1, name=x, msg\n               NVRM: more\n")
	f.Add("host: kern: warning: [2026-04-22T21:25:20Z]: NVRM: GPU at PCI:0000:48:00: GPU-1\n")
	f.Add("Dec  2 10:43:35 host kernel: [240314.528856] NVRM: Xid (PCI:0000:07:00): 48, x\n2024-12-02T10:43:35.1+00:00 host kernel: [\n")
	f.Fuzz(func(t *testing.T, s string) {
		if k, _ := ParseDmesgXid(s); k == nil {
			t.Fatal("nil")
		}
	})
}

// TestEveryXidLineIsReadOrRefused: an Xid line in an older or MIG form is
// read; one gpulab cannot read (cut mid-line) is a parse problem, never
// "no Xid".
func TestEveryXidLineIsReadOrRefused(t *testing.T) {
	k, err := ParseDmesgXid("[  100.000001] NVRM: Xid (0000:07:00): 48, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.\n" +
		"[  101.000001] NVRM: Xid (PCI:0000:07:00 GPU-I:01): 79, pid=1234, name=python3, GPU has fallen off the bus.\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(k.XIDs) != 2 || k.XIDs[0].XID != 48 || k.XIDs[0].PCI != "0000:07:00" || k.XIDs[1].XID != 79 || k.XIDs[1].PCI != "0000:07:00" {
		t.Errorf("read %+v, want Xid 48 and 79 on 0000:07:00", k.XIDs)
	}
	if _, err := ParseDmesgXid("[  100.000001] NVRM: Xid (PCI:0000:07:00): \n"); err == nil || !strings.Contains(err.Error(), "Xid line not understood") {
		t.Errorf("a cut Xid line: %v, want a parse problem naming it", err)
	}
}

// An NVSwitch prints an SXid's detail as more SXid lines of the same
// code ("Severity ...", "Data {...}"): four switches, four events.
func TestSXidDetailLinesAreOneEvent(t *testing.T) {
	k, err := ParseDmesgXid(fixture(t, "dmesg-xid", "service-vm-4x-nvswitch-sxid11004-severity-data-lines.txt"))
	if err != nil || len(k.XIDs) != 4 {
		t.Fatalf("%v: %d events, want 4: %+v", err, len(k.XIDs), k.XIDs)
	}
	details := 0
	for _, x := range k.XIDs {
		details += len(x.Detail)
		if !x.SXid || x.XID != 11004 || !x.Known || x.Hardware || !strings.HasPrefix(x.Message, "Non-fatal, Link ") {
			t.Errorf("%+v", x)
		}
	}
	if details != 15 {
		t.Errorf("%d detail lines kept, want the 15 that follow", details)
	}
}

// NVLink5 Xids carry their decode: unit, link, sub-code, NVIDIA's
// resolution for that row.
func TestNVLink5XidLines(t *testing.T) {
	k, err := ParseDmesgXid(fixture(t, "dmesg-xid", "gb200-nvlink5-xid149-netir-link-evt-then-xid154.txt"))
	if err != nil || len(k.XIDs) != 9 {
		t.Fatalf("%v %+v", err, k.XIDs)
	}
	x := k.XIDs[0]
	if x.NVLink == nil || x.NVLink.Unit != "NETIR_LINK_EVT" || *x.NVLink.Link != 1 || !x.NVLink.Decoded || !x.Hardware || x.Immediate != "RESET_GPU" || x.PCI != "0009:01:00" {
		t.Errorf("149: %+v %+v", x, x.NVLink)
	}
	if y := k.XIDs[1]; y.XID != 154 || y.NVLink != nil || !strings.Contains(y.Message, "to 0x4 (Drain and Reset)") {
		t.Errorf("154: %+v", y)
	}
	k, _ = ParseDmesgXid(fixture(t, "dmesg-xid", "gb200-nvlink5-xid145-rlw-rxpipe-xid149-netir-link-minus1.txt"))
	if len(k.XIDs) != 2 || k.XIDs[0].NVLink == nil || k.XIDs[0].NVLink.Link != nil || k.XIDs[1].Hardware || k.XIDs[1].Immediate != "IGNORE" {
		t.Errorf("%+v", k.XIDs)
	}
}

// The host's own faults, read from real logs: a task hung inside the
// NVIDIA driver, EDAC corrected errors on two DIMMs, a global and a
// cgroup OOM kill (the node-problem-detector line that repeats the
// kernel's words is not a kernel line), a fatal machine check.
func TestHostEventsFromRealLogs(t *testing.T) {
	type want struct {
		kind                string
		fatal, gpu, cgroup  bool
		process             string
		pid, count, seconds int
	}
	for _, c := range []struct {
		file string
		want []want
	}{
		{"dmesg-T-xid119-gsp-then-hung-task-nvidia-smi-state-D.txt", []want{{HostHungTask, true, true, false, "nvidia-smi", 1346229, 0, 120}}},
		{"dmesg-rg-oom-global-oom-killed-grep.txt", []want{{HostOOM, false, false, false, "grep", 49358, 0, 0}}},
		{"syslog-aks-memcg-oom-killed-pod-process-npd.txt", []want{{HostOOM, false, false, true, "stress-ng-vm", 183960, 0, 0}}},
		{"dmesg-mce-system-fatal-ue-mail-wrapped.txt", []want{{HostMCE, false, false, false, "", 0, 0, 0}, {HostMCE, true, false, false, "", 0, 0, 0}}},
	} {
		k, err := ParseDmesgXid(fixture(t, "dmesg-xid", c.file))
		if err != nil || len(k.Host) != len(c.want) {
			t.Errorf("%s: %v: %+v", c.file, err, k.Host)
			continue
		}
		for i, w := range c.want {
			h := k.Host[i]
			got := want{h.Kind, h.Fatal, h.GPU, h.Cgroup, h.Process, h.PID, h.Count, h.Seconds}
			if got != w {
				t.Errorf("%s [%d]: %+v, want %+v", c.file, i, got, w)
			}
		}
	}
	k, _ := ParseDmesgXid(fixture(t, "dmesg-xid", "dmesg-edac-sbridge-ce-overflow-two-dimms-mce-logged.txt"))
	ce := map[string]int{}
	mce := 0
	for _, h := range k.Host {
		switch h.Kind {
		case HostEDAC:
			if h.Fatal {
				t.Errorf("a CE line read as uncorrected: %+v", h)
			}
			ce[h.Where] += h.Count
		case HostMCE:
			mce++
		default:
			t.Errorf("unexpected %+v", h)
		}
	}
	if ce["CPU_SrcID#0_Ha#0_Chan#0_DIMM#0"] != 5555+4858+4119+3976 || ce["CPU_SrcID#0_Ha#0_Chan#2_DIMM#0"] != 4223+24245+48 || mce != 2 {
		t.Errorf("EDAC: %v, mce %d", ce, mce)
	}
	// Banners are not faults.
	k, _ = ParseDmesgXid("[    2.122759] EDAC MC: Ver: 3.0.0\n[    2.2] mce: CPU supports 32 MCE banks\n[    3.1] EDAC MC0: Giving out device to module amd64_edac\n[ 4.0] EDAC MC0: 0 CE memory read error on DIMM_A1\n")
	if len(k.Host) != 0 {
		t.Errorf("banners read as faults: %+v", k.Host)
	}
}

// The prefixes of journalctl -o short-monotonic and short-unix, dmesg -x
// with a padded or -T timestamp, and dmesg -r are read; an Xid behind a
// prefix gpulab does not know is a parse problem (UNKNOWN), never "no
// Xid".
func TestKernelLogFormats(t *testing.T) {
	x := "NVRM: Xid (PCI:0000:3b:00): 79, pid=123, name=python, GPU has fallen off the bus."
	for _, l := range []string{
		"[  123.456789] host kernel: " + x,
		"kern  :warn  : [  417.404051] " + x,
		"kern  :warn  : [Mon Jan  2 10:00:00 2024] " + x,
		"1700000000.123456 host kernel: " + x + "\n[ 1.0] foo",
		"<4>" + x + "\n[ 1.0] foo",
		"<4>[  417.404051] " + x,
	} {
		if k, err := ParseDmesgXid(l); err != nil || len(k.XIDs) != 1 || k.XIDs[0].XID != 79 {
			t.Errorf("%q: %v %+v", l, err, k.XIDs)
		}
	}
	if k, err := ParseDmesgXid("weird prefix: " + x + "\n[ 1.0] foo"); err == nil || !strings.Contains(err.Error(), "an Xid line not understood") {
		t.Errorf("an unknown prefix: %v %+v", err, k.XIDs)
	}
}

// Host faults in the forms a review found missed: a hung task whose trace
// the driver's own lines interrupt, machine checks the kernel calls
// exceptions or context corrupt, APEI's {N}[Hardware Error] form, a
// corrected machine check alone, EDAC's older count-less UE line and a
// count too large for a number.
func TestHostEventsOtherForms(t *testing.T) {
	for _, c := range []struct {
		log   string
		kind  string
		fatal bool
	}{
		{"[ 8000.0] INFO: task python3:5123 blocked for more than 122 seconds.\n[ 8000.1] Call Trace:\n[ 8000.2] NVRM: GPU at PCI:0000:3b:00: GPU-11111111-2222-3333-4444-555555555555\n[ 8000.3]  os_acquire_rwlock_write+0x31/0x40 [nvidia]", HostHungTask, true},
		{"[ 10.0] mce: [Hardware Error]: CPU 0: Machine Check Exception: 5 Bank 1: b200000000070005", HostMCE, true},
		{"[ 10.1] mce: [Hardware Error]: Machine check: Processor context corrupt", HostMCE, true},
		{"[ 10.1] {1}[Hardware Error]: event severity: fatal", HostMCE, true},
		{"[ 10.0] mce: [Hardware Error]: Corrected error, no action required.", HostMCE, false},
		{"[ 10.0] EDAC MC0: UE page 0x0, offset 0x0, grain 0, row 2, labels \":\": i5000 UE", HostEDAC, true},
		{"[ 10.0] EDAC MC0: 99999999999999999999 UE memory read error on DIMM_A1", HostEDAC, true},
		{"[ 10.0] Out of memory: Killed process 4242 (my (weird) proc) total-vm:1kB, anon-rss:1kB", HostOOM, false},
	} {
		k, _ := ParseDmesgXid(c.log)
		if len(k.Host) == 0 || k.Host[0].Kind != c.kind || k.Host[0].Fatal != c.fatal {
			t.Errorf("%q: %+v, want %s fatal=%v", c.log, k.Host, c.kind, c.fatal)
		}
		if c.kind == HostOOM && k.Host[0].Process != "my (weird) proc" {
			t.Errorf("OOM victim %q", k.Host[0].Process)
		}
	}
}
