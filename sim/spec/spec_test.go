package spec

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    Faults
		want string // substring of the error; "" for none
	}{
		{"healthy", Faults{}, ""},
		{"pair out of range", Faults{NVLinkDown: [][2]int{{0, 8}}}, "GPU 8"},
		{"pair of one GPU", Faults{NVLinkDown: [][2]int{{2, 2}}}, "is one GPU"},
		{"ecc gpu", Faults{ECC: map[int]ECCCounts{-1: {}}}, "ecc: GPU -1"},
		{"remap gpu", Faults{RemapPending: []int{9}}, "remap_pending: GPU 9"},
		{"xid code", Faults{XIDs: []XID{{GPU: 1, Code: 0}}}, "positive code"},
		{"sxid switch", Faults{SXids: []SXID{{Switch: 6, Code: 24007}}}, "sxids: NVSwitch 6: a DGX A100 has NVSwitches 0-5"},
		{"sxid code", Faults{SXids: []SXID{{Switch: 1, Code: -3}}}, "sxids: SXid -3"},
		{"kernel line", Faults{KernelLog: []KernelLine{{Text: "a\nb"}}}, "kernel_log[0]: want one line of text"},
		{"kernel level", Faults{KernelLog: []KernelLine{{Text: "x", Level: "loud"}}}, `kernel_log[0]: level "loud": want one of emerg`},
		{"unknown profile", Faults{MIG: map[int][]string{0: {"3g.40gb"}}}, `no MIG profile "3g.40gb"`},
		{"too many", Faults{MIG: map[int][]string{0: {"3g.20gb", "3g.20gb", "3g.20gb"}}}, "at most 2"},
		{"no room", Faults{MIG: map[int][]string{0: {"4g.20gb", "3g.20gb", "1g.5gb"}}}, "no room left for 1g.5gb"},
		{"fits", Faults{MIG: map[int][]string{0: {"4g.20gb", "3g.20gb"}}}, ""},
		{"pcie gen 5", Faults{PCIeGen: map[int]int{0: 5}}, "pcie_gen: GPU 0: generation 5: an A100's link trains at 1-4"},
		{"pcie gen gpu", Faults{PCIeGen: map[int]int{8: 2}}, "pcie_gen: GPU 8"},
		{"replays gpu", Faults{PCIeReplays: map[int]uint64{-2: 1}}, "pcie_replays: GPU -2"},
		{"throttle reason", Faults{Throttle: map[int][]string{1: {"hw_slowdwn"}}}, `throttle: GPU 1: "hw_slowdwn": the reasons are hw_slowdown,`},
		{"too hot", Faults{TemperatureC: map[int]int{1: 120}}, "shuts down at 92"},
		{"power over", Faults{PowerLimitW: map[int]int{1: 500}}, "100-400 W"},
		{"recovery", Faults{RecoveryAction: map[int]string{1: "node_reboot"}}, `recovery_action: GPU 1: "node_reboot": the simulated driver can ask for gpu_reset, drain_and_reset`},
		{"vbios", Faults{VBIOS: "92.00.36.00.04; rm -rf /"}, "dotted hex"},
		{"hang", Faults{NVMLHang: map[int]string{1: "nvmlInit"}}, `nvml_hang: GPU 1: "nvmlInit": the calls that can hang are`},
		{"state knobs", Faults{PCIeGen: map[int]int{5: 2}, Throttle: map[int][]string{2: {"sw_power_cap"}}, PowerLimitW: map[int]int{2: 250},
			RecoveryAction: map[int]string{3: "gpu_reset"}, VBIOS: "92.00.36.00.02", NVMLHang: map[int]string{6: "nvmlDeviceGetPowerUsage"}}, ""},
	} {
		err := tc.f.Validate()
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestPlaceMIG(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		// As recorded: testdata/fixtures/nvidia-smi-mig-lgi/a100-40gb-2x-3g.20gb.txt.
		{[]string{"3g.20gb", "3g.20gb"}, "1:3g.20gb@4:4 2:3g.20gb@0:4"},
		{[]string{"7g.40gb"}, "0:7g.40gb@0:8"},
		{[]string{"1g.5gb", "1g.5gb", "1g.5gb"}, "7:1g.5gb@6:1 8:1g.5gb@5:1 9:1g.5gb@4:1"},
		{[]string{"2g.10gb", "2g.10gb", "2g.10gb", "1g.5gb"}, "3:2g.10gb@4:2 4:2g.10gb@2:2 5:2g.10gb@0:2 7:1g.5gb@6:1"},
	} {
		gis, err := PlaceMIG(tc.in)
		var got []string
		for i, g := range gis {
			if g.Device != i {
				t.Errorf("%v: instance %d is device %d", tc.in, g.ID, g.Device)
			}
			got = append(got, g.String())
		}
		if err != nil || strings.Join(got, " ") != tc.want {
			t.Errorf("PlaceMIG(%q) = %q, %v, want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestLinksDown(t *testing.T) {
	f := Faults{NVLinkDown: [][2]int{{1, 6}, {3, 6}}}
	for gpu, want := range map[int][]int{1: {1, 7}, 3: {3, 9}, 6: {1, 3, 7, 9}, 0: nil} {
		if got := f.LinksDown(gpu); !reflect.DeepEqual(got, want) {
			t.Errorf("LinksDown(%d) = %v, want %v", gpu, got, want)
		}
	}
	if !f.PairDown(6, 1) || f.PairDown(1, 3) || f.ActiveLinks(6) != 8 || f.LinkUp(1, 7) || !f.LinkUp(1, 2) {
		t.Errorf("PairDown/ActiveLinks/LinkUp disagree with LinksDown")
	}
}

func TestLayout(t *testing.T) {
	if got := CPUList(0); got != "48-63,176-191" {
		t.Errorf("CPUList(0) = %q", got)
	}
	if got := CPUList(4); got != "112-127,240-255" {
		t.Errorf("CPUList(4) = %q", got)
	}
	seen := map[int]bool{}
	for n := 0; n < NUMACount; n++ {
		for _, c := range NodeCPUs(n) {
			if seen[c] {
				t.Fatalf("CPU %d in two nodes", c)
			}
			seen[c] = true
		}
	}
	if len(seen) != Threads {
		t.Errorf("the nodes hold %d CPUs, want %d", len(seen), Threads)
	}
	if BusID(3) != "00000000:4E:00.0" || KernelBusID(3) != "0000:4e:00" {
		t.Errorf("bus ids %s %s", BusID(3), KernelBusID(3))
	}
	uuidRE := regexp.MustCompile(`^MIG-[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	a, b := MIGUUID(UUIDs[0], 1, 0), MIGUUID(UUIDs[0], 2, 0)
	if !uuidRE.MatchString(a) || !uuidRE.MatchString(b) || a == b || a != MIGUUID(UUIDs[0], 1, 0) || a == MIGUUID(UUIDs[1], 1, 0) {
		t.Errorf("MIG UUIDs %s %s", a, b)
	}
	// The recorded MIG UUID is kept (the derivation did not change).
	if a != "MIG-"+uuidOf(strings.ReplaceAll(strings.TrimPrefix(UUIDs[0], "GPU-"), "-", "")+"/1/0") {
		t.Errorf("MIG UUID %s", a)
	}
}

// The recorded machine keeps the recording's serials and UUIDs; each
// named machine's GPUs have their own, well formed, and no two GPUs of a
// 1,000-host fleet share either.
func TestIdentityPerMachine(t *testing.T) {
	if UUID("", 3) != UUIDs[3] || Serial("", 3) != Serials[3] {
		t.Errorf("the recorded machine's GPU 3 is %s %s", UUID("", 3), Serial("", 3))
	}
	uuidRE := regexp.MustCompile(`^GPU-[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	serialRE := regexp.MustCompile(`^\d{13}$`)
	uuids, serials := map[string]string{}, map[string]string{}
	for h := range 1000 {
		m := fmt.Sprintf("dgx%04d", h)
		for g := range GPUs {
			u, s := UUID(m, g), Serial(m, g)
			if !uuidRE.MatchString(u) || !serialRE.MatchString(s) {
				t.Fatalf("%s GPU %d: UUID %q, serial %q", m, g, u, s)
			}
			if other, ok := uuids[u]; ok {
				t.Fatalf("%s GPU %d has the UUID of %s", m, g, other)
			}
			if other, ok := serials[s]; ok {
				t.Fatalf("%s GPU %d has the serial of %s", m, g, other)
			}
			uuids[u], serials[s] = fmt.Sprintf("%s GPU %d", m, g), fmt.Sprintf("%s GPU %d", m, g)
		}
	}
	if UUID("dgx01", 0) != UUID("dgx01", 0) || UUID("dgx01", 0) == UUIDs[0] {
		t.Error("a machine's UUID is not stable, or is the recording's")
	}
}

func TestFaultsJSON(t *testing.T) {
	f := Faults{NVLinkDown: [][2]int{{1, 6}}, ECC: map[int]ECCCounts{3: {VolatileUncorrected: 2}}, RemapPending: []int{3},
		XIDs: []XID{{GPU: 3, Code: 48, Message: "m", SecondsAfterBoot: 1.5}}, MIG: map[int][]string{2: {"3g.20gb"}},
		Processes:   []Process{{GPU: 1, PID: 4242, Name: "python", UsedMiB: 512, Cgroup: "0::/system.slice/x.service"}},
		Utilization: map[int]uint32{1: 87}}
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var back Faults
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back, f) {
		t.Errorf("round trip of %s = %+v, %v", data, back, err)
	}
	if string(mustJSON(t, Faults{})) != "{}" {
		t.Errorf("a healthy machine's faults are %s, want {}", mustJSON(t, Faults{}))
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestProcessFaults(t *testing.T) {
	gi := func(i int) *int { return &i }
	mig := map[int][]string{2: {"3g.20gb", "3g.20gb"}}
	for _, tc := range []struct {
		name string
		f    Faults
		want string // substring of the error; "" for none
	}{
		{"plain", Faults{Processes: []Process{{GPU: 0, PID: 42, Name: "python", UsedMiB: 100}}}, ""},
		{"gpu range", Faults{Processes: []Process{{GPU: 8, PID: 42, Name: "python"}}}, "PID 42: GPU 8"},
		{"pid", Faults{Processes: []Process{{GPU: 1, Name: "python"}}}, "PID > 0"},
		{"name", Faults{Processes: []Process{{GPU: 1, PID: 7, Name: "a/b"}}}, `name "a/b"`},
		{"long name", Faults{Processes: []Process{{GPU: 1, PID: 7, Name: "sixteen-letters!"}}}, "1-15 characters"},
		{"twice, two names", Faults{Processes: []Process{{GPU: 1, PID: 7, Name: "a"}, {GPU: 2, PID: 7, Name: "b"}}}, "PID 7 is listed twice"},
		{"twice, one process", Faults{Processes: []Process{{GPU: 1, PID: 7, Name: "a"}, {GPU: 2, PID: 7, Name: "a"}}}, ""},
		{"too much memory", Faults{Processes: []Process{{GPU: 1, PID: 7, Name: "a", UsedMiB: 40000}, {GPU: 1, PID: 8, Name: "b", UsedMiB: 1000}}}, "GPU 1: its processes use 41000 MiB"},
		{"instance without MIG", Faults{Processes: []Process{{GPU: 1, PID: 7, Name: "a", GPUInstance: gi(1)}}}, "not in MIG mode"},
		{"MIG without instance", Faults{MIG: mig, Processes: []Process{{GPU: 2, PID: 7, Name: "a"}}}, "say which gpu_instance"},
		{"no such instance", Faults{MIG: mig, Processes: []Process{{GPU: 2, PID: 7, Name: "a", GPUInstance: gi(5)}}}, "no GPU instance 5"},
		{"compute instance", Faults{MIG: mig, Processes: []Process{{GPU: 2, PID: 7, Name: "a", GPUInstance: gi(1), ComputeInstance: gi(1)}}}, "compute instance 0 only"},
		{"in an instance", Faults{MIG: mig, Processes: []Process{{GPU: 2, PID: 7, Name: "a", GPUInstance: gi(2)}}}, ""},
		{"utilization gpu", Faults{Utilization: map[int]uint32{9: 10}}, "utilization: GPU 9"},
		{"utilization range", Faults{Utilization: map[int]uint32{1: 101}}, "101%"},
	} {
		err := tc.f.Validate()
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestWriteProc(t *testing.T) {
	f := Faults{Processes: []Process{
		{GPU: 0, PID: 4242, Name: "python", Cgroup: "0::/system.slice/train.service"},
		{GPU: 1, PID: 7, Name: "bare"},
	}}
	dir := t.TempDir()
	if err := f.WriteProc(dir); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{"4242/comm": "python\n", "4242/cgroup": "0::/system.slice/train.service\n", "7/comm": "bare\n", "7/cgroup": "0::/\n"} {
		if got, err := os.ReadFile(filepath.Join(dir, file)); err != nil || string(got) != want {
			t.Errorf("%s = %q, %v, want %q", file, got, err, want)
		}
	}
	if got := f.MemoryUsedMiB(0); got != MemoryUsedMiB {
		t.Errorf("MemoryUsedMiB(0) with a process of 0 MiB = %d, want %d", got, MemoryUsedMiB)
	}
}
