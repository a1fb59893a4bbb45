package dgx

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/sim/spec"
)

// The renderers' formats are the recordings': each test here renders the
// values a recording shows and must give back its bytes.

func fixture(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "fixtures", path))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// sameText compares line by line, naming the first difference.
func sameText(t *testing.T, what, got, want string) {
	t.Helper()
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			t.Errorf("%s: line %d\n got %q\nwant %q", what, i+1, gl, wl)
			return
		}
	}
}

func TestTableFormat(t *testing.T) {
	want := fixture(t, "nvidia-smi/a30-drv535-mig-3-devices-87col.txt")
	got := "Thu Nov 21 07:12:15 2024       \n" + smiHeader("535.183.01", "12.2") +
		smiGPURows(gpuRow{Index: 0, Name: "NVIDIA A30", Persistence: "Off", BusID: "00000000:0B:00.0", DispA: "Off", ECC: "On",
			Fan: "N/A", Temp: "47C", Perf: "P0", Power: "32W", Cap: "165W", Used: "50MiB", Total: "24576MiB",
			Util: "N/A", Compute: "Default", MIGMode: "Enabled"}) + "\n" +
		smiMIGTable([]migRow{
			{GPU: 0, GI: 2, CI: 0, Dev: 0, Used: 25, Total: 11968, BAR1: 16383, SM: 28, CE: 2, DEC: 2},
			{GPU: 0, GI: 3, CI: 0, Dev: 1, Used: 12, Total: 5952, BAR1: 8191, SM: 14, CE: 1, DEC: 1},
			{GPU: 0, GI: 4, CI: 0, Dev: 2, Used: 12, Total: 5952, BAR1: 8191, SM: 14, CE: 1, DEC: 1},
		}) + strings.Repeat(" ", 89) + "\n" + smiNoProcesses
	sameText(t, "nvidia-smi (A30, driver 535)", got, want)

	a10g := fixture(t, "nvidia-smi/a10g-drv535-in-pod-empty-processes.txt")
	rows := smiGPURows(gpuRow{Index: 0, Name: "NVIDIA A10G", Persistence: "On", BusID: "00000000:00:1E.0", DispA: "Off", ECC: "0",
		Fan: "0%", Temp: "33C", Perf: "P0", Power: "112W", Cap: "300W", Used: "3032MiB", Total: "23028MiB",
		Util: "95%", Compute: "Default", MIGMode: "N/A"})
	if !strings.Contains(a10g, rows) {
		t.Errorf("the A10G's GPU rows are not rendered as recorded:\n%s", rows)
	}
}

// expandTabs expands tabs to 8-column stops, as the posters of
// space-separated recordings did.
func expandTabs(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		col := 0
		for _, r := range l {
			switch r {
			case '\t':
				n := 8 - col%8
				b.WriteString(strings.Repeat(" ", n))
				col += n
			case '\n':
				b.WriteRune(r)
				col = 0
			default:
				b.WriteRune(r)
				col++
			}
		}
	}
	return b.String()
}

func TestTopoFormat(t *testing.T) {
	got := topoText([]string{"GPU0", "GPU1"}, []string{
		topoGPURow("GPU0", []string{"X", "NV4"}, "0-23", "0"),
		topoGPURow("GPU1", []string{"NV4", "X"}, "0-23", "0")}, nil)
	sameText(t, "topo -m (native tabs)", got, fixture(t, "nvidia-smi-topo-m/2x-rtx3090-NV4-tabs.txt"))

	m := [][]string{ // the ASUS recording's matrix
		{"X", "NODE", "SYS", "SYS", "NODE", "NODE", "SYS", "SYS"},
		{"NODE", "X", "SYS", "SYS", "NODE", "NODE", "SYS", "SYS"},
		{"SYS", "SYS", "X", "NODE", "SYS", "SYS", "NODE", "NODE"},
		{"SYS", "SYS", "NODE", "X", "SYS", "SYS", "NODE", "NODE"},
		{"NODE", "NODE", "SYS", "SYS", "X", "PIX", "SYS", "SYS"},
		{"NODE", "NODE", "SYS", "SYS", "PIX", "X", "SYS", "SYS"},
		{"SYS", "SYS", "NODE", "NODE", "SYS", "SYS", "X", "PIX"},
		{"SYS", "SYS", "NODE", "NODE", "SYS", "SYS", "PIX", "X"},
	}
	cols := []string{"GPU0", "GPU1", "GPU2", "GPU3", "NIC0", "NIC1", "NIC2", "NIC3"}
	var rows []string
	for i, r := range m {
		if i < 4 {
			rows = append(rows, topoGPURow(cols[i], r, []string{"0-31", "0-31", "32-63", "32-63"}[i], []string{"0", "0", "1", "1"}[i]))
		} else {
			rows = append(rows, topoRow(cols[i], r))
		}
	}
	// The poster expanded tabs and trimmed the trailing space of the NIC
	// rows' last " X " (the 17-NIC A100 recording keeps it).
	got = trimRight(expandTabs(topoText(cols, rows, []string{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"})))
	sameText(t, "topo -m (4 NICs, tabs expanded)", got, fixture(t, "nvidia-smi-topo-m/asus-esc8000a-e12-4x-rtx6000ada-4nic-2numa.txt"))
	a100 := fixture(t, "nvidia-smi-topo-m/a100-8gpu-nv12-17nic-mlx5-bond.txt")
	if !strings.Contains(a100, "     X \n") || !strings.HasSuffix(topoRow("NIC1", []string{"SYS", "X"}), "\t X ") {
		t.Errorf("a NIC row does not end in \" X \" as the 17-NIC recording's last one does")
	}
}

func TestMIGFormats(t *testing.T) {
	h := New("dgx", 0, spec.Faults{MIG: map[int][]string{0: {}}})
	sameText(t, "mig -lgip", h.migListGIP([]int{0}), fixture(t, "nvidia-smi-mig-lgip/a100-40gb-drv450-all-free.txt"))

	lgi := migTable([]string{
		"| GPU instances:                                        |",
		"| GPU   Name             Profile  Instance   Placement  |",
		"|                          ID       ID       Start:Size |"}, []string{
		lgiRow(0, "MIG 1g.6gb", 14, 3, 0, 1), lgiRow(0, "MIG 1g.6gb", 14, 4, 1, 1), lgiRow(0, "MIG 2g.12gb", 5, 2, 2, 2)})
	sameText(t, "mig -lgi", lgi, fixture(t, "nvidia-smi-mig-lgi/a30-drv535-3-instances-1g-1g-2g.txt"))

	lci := migTable([]string{
		"| Compute instances:                                                 |",
		"| GPU     GPU       Name             Profile   Instance   Placement  |",
		"|       Instance                       ID        ID       Start:Size |",
		"|         ID                                                         |"}, []string{
		lciRow(0, 13, "MIG 1g.5gb", 0, 0, 0, 1), lciRow(0, 5, "MIG 2g.10gb", 1, 0, 0, 2), lciRow(0, 1, "MIG 3g.20gb", 2, 0, 0, 3)})
	sameText(t, "mig -lci", lci, fixture(t, "nvidia-smi-mig-lci/a100-40gb-3ci-1g-2g-3g.txt"))

	lcip := migTable([]string{
		"| Compute instance profiles:                                                           |",
		"| GPU     GPU       Name             Profile  Instances   Exclusive       Shared       |",
		"|       Instance                       ID     Free/Total     SM       DEC   ENC   OFA  |",
		"|         ID                                                          CE    JPEG       |"}, []string{
		lcipRows(0, 2, "MIG 1c.2g.12gb", 0, false, 0, 2, 14, 2, 0, 0, 2, 0),
		lcipRows(0, 2, "MIG 2g.12gb", 1, true, 0, 1, 28, 2, 0, 0, 2, 0)})
	sameText(t, "mig -lcip", lcip, fixture(t, "nvidia-smi-mig-lcip/a30-drv535-gi2-1c.2g.12gb-and-2g.12gb.txt"))
}

func trimRight(s string) string {
	ls := strings.Split(s, "\n")
	for i, l := range ls {
		ls[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(ls, "\n")
}

func TestHostToolFormats(t *testing.T) {
	want := fixture(t, "lscpu-e/asus-esc8000a-e12-2socket-epyc9374f.txt")
	var rows [][]string
	var header []string
	for _, l := range strings.Split(strings.TrimSuffix(want, "\n"), "\n") {
		if header == nil {
			header = strings.Fields(l)
			continue
		}
		rows = append(rows, strings.Fields(l))
	}
	sameText(t, "lscpu -e", lscpuTable(header, rows), want)

	var cpus [][]int
	for n := 0; n < 2; n++ {
		var cs []int
		for c := 32 * n; c < 32*n+32; c++ {
			cs = append(cs, c)
		}
		cpus = append(cpus, cs)
	}
	got := numaText(cpus, []int{193129, 193477}, []int{186031, 186364}, [][]int{{10, 32}, {32, 10}})
	sameText(t, "numactl --hardware", got, fixture(t, "numactl-hardware/asus-esc8000a-e12-2node-epyc9374f.txt"))
}

func TestNetworkFormats(t *testing.T) {
	want := fixture(t, "ip-br-link/server-cx6-ipoib-ibp-bond-trailing-space.txt")
	var got strings.Builder
	for _, l := range strings.Split(strings.TrimSuffix(want, "\n"), "\n") {
		f := strings.Fields(l)
		got.WriteString(ipBrief(netIf{name: f[0], state: f[1], addr: f[2], flags: strings.Trim(f[3], "<>")}))
	}
	sameText(t, "ip -br link", got.String(), want)

	var blocks []string
	for k, d := range []struct{ fw, guid, mtu string }{
		{"28.41.1000", "9c63:c003:00d4:20f0", "1024 (3)"}, {"28.41.1000", "9c63:c003:00d4:20f1", "1024 (3)"},
		{"28.43.2566", "b8e9:2403:004e:deb0", "4096 (5)"}, {"28.43.2566", "b8e9:2403:004e:deb1", "4096 (5)"},
	} {
		sys := map[bool]string{true: "9c63:c003:00d4:20f0", false: "b8e9:2403:004e:deb0"}[k < 2]
		blocks = append(blocks, ibvBlock(ibvDevice{name: fmt.Sprintf("mlx5_%d", k), fw: d.fw, guid: d.guid, sysGUID: sys, part: 4129,
			board: "MT_0000000834", state: "PORT_DOWN (1)", activeMTU: d.mtu, layer: "Ethernet"}))
	}
	sameText(t, "ibv_devinfo", strings.Join(blocks, "\n"), fixture(t, "ibv_devinfo/asus-esc8000a-e12-4x-cx7-eth-portdown.txt"))
}

func TestLspciTreeFormat(t *testing.T) {
	amd := func(slot, dev string) *pciDev {
		return &pciDev{slot: slot, name: "Advanced Micro Devices, Inc. [AMD] " + dev}
	}
	one := func(slot string, num, sub int, d *pciDev) *pciDev {
		return &pciDev{slot: slot, bus: &pciBus{num: num, sub: sub, devs: []*pciDev{d}}}
	}
	bridge := func(slot string, num, sub int, devs ...*pciDev) *pciDev {
		return &pciDev{slot: slot, bus: &pciBus{num: num, sub: sub, devs: devs}}
	}
	cx7 := "Mellanox Technologies MT2910 Family [ConnectX-7]"
	// The recording's root 0000:20, between two roots drawn only to frame it.
	root20 := &pciBus{num: 0x20, devs: []*pciDev{
		amd("00.0", "Device 14a4"), amd("00.3", "Device 14a6"), amd("01.0", "Device 149f"),
		bridge("01.1", 0x21, 0x21, &pciDev{slot: "00.0", name: cx7}, &pciDev{slot: "00.1", name: cx7}),
		amd("02.0", "Device 149f"), amd("03.0", "Device 149f"),
		one("03.1", 0x22, 0x89, bridge("00.0", 0x23, 0x89,
			bridge("00.0", 0x28, 0x57), bridge("01.0", 0x58, 0x87),
			one("02.0", 0x88, 0x88, &pciDev{slot: "00.0", name: "ASMedia Technology Inc. Device 2426"}),
			one("03.0", 0x89, 0x89, &pciDev{slot: "00.0", name: "ASMedia Technology Inc. Device 2425"}))),
		one("03.2", 0x8a, 0x8a, &pciDev{slot: "00.0", name: "Kingston Technology Company, Inc. KC3000/FURY Renegade NVMe SSD E18"}),
		one("03.4", 0x8b, 0x8e, bridge("00.0", 0x8c, 0x8e,
			one("0c.0", 0x8d, 0x8d, amd("00.0", "Device 43f8")),
			one("0d.0", 0x8e, 0x8e, amd("00.0", "600 Series Chipset SATA Controller")))),
		amd("04.0", "Device 149f"), amd("05.0", "Device 149f"), amd("07.0", "Device 149f"),
		one("07.1", 0x8f, 0x8f, amd("00.0", "Device 14ac")),
	}}
	frame := func(num int) *pciBus { return &pciBus{num: num, devs: []*pciDev{amd("00.0", "Device 14a4")}} }
	got := strings.Split(lspciTree([]*pciBus{frame(0), root20, frame(0xe0)}, true), "\n")
	want := strings.Split(fixture(t, "lspci-tv/puget-wrx90-2x-rtx6000ada-cx7.txt"), "\n")
	sameText(t, "lspci -tv (root 0000:20)", strings.Join(got[1:19], "\n"), strings.Join(want[35:53], "\n"))
}

func TestDCGMFormat(t *testing.T) {
	want := fixture(t, "workloads/dcgmi-diag/dcgm4.4.1-r2-8xB200-slurm-pcie-fail-warning.txt")
	var msg strings.Builder // the Warning, rebuilt from its 45-character rows
	in := false
	for _, l := range strings.Split(want, "\n") {
		switch {
		case strings.HasPrefix(l, "| Warning"):
			in = true
		case in && strings.Contains(l, "GPU0:"):
			in = false
		}
		if in {
			msg.WriteString(l[30:75])
		}
	}
	all := func(r string) []string { return strings.Split(strings.Repeat(r+" ", 8), " ")[:8] }
	got := dcgmTable("4.4.1", "570.172.08", strings.TrimSuffix(strings.Repeat("2901, ", 8), ", "), []dcgmSection{
		{"Deployment", []dcgmTest{{name: "software", result: "Pass", gpus: all("Pass")}}},
		{"Hardware", []dcgmTest{{name: "memory", result: "Pass", gpus: all("Pass")}}},
		{"Integration", []dcgmTest{{name: "pcie", result: "Fail", warnings: []string{strings.TrimRight(msg.String(), " ")}, gpus: all("Pass")}}},
	})
	sameText(t, "dcgmi diag", got, want)
}
