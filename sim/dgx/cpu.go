package dgx

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpulab/gpulab/sim/spec"
)

func init() {
	tools["numactl"] = numactl
	tools["lscpu"] = lscpu
}

// Memory per NUMA node (1 TiB over 8 nodes, less what firmware keeps).
const (
	nodeSizeMB = 128825
	nodeFreeMB = 126361
)

// numaDistance is the NPS4 distance of a 2-socket EPYC Rome: 10 local,
// 12 within the socket, 32 across.
func numaDistance(a, b int) int {
	switch {
	case a == b:
		return 10
	case a/(spec.NUMACount/spec.Sockets) == b/(spec.NUMACount/spec.Sockets):
		return 12
	}
	return 32
}

// numaHardware is numactl --hardware of the host.
func numaHardware() string {
	var cpus [][]int
	var size, free []int
	dist := make([][]int, spec.NUMACount)
	for n := 0; n < spec.NUMACount; n++ {
		cpus = append(cpus, spec.NodeCPUs(n))
		size, free = append(size, nodeSizeMB), append(free, nodeFreeMB-37*n)
		for m := 0; m < spec.NUMACount; m++ {
			dist[n] = append(dist[n], numaDistance(n, m))
		}
	}
	return numaText(cpus, size, free, dist)
}

// numaText is numactl --hardware in the layout of
// testdata/fixtures/numactl-hardware/asus-esc8000a-e12-2node-epyc9374f.txt.
func numaText(cpus [][]int, size, free []int, dist [][]int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "available: %d nodes (0-%d)\n", len(cpus), len(cpus)-1)
	for n, cs := range cpus {
		var words []string
		for _, c := range cs {
			words = append(words, strconv.Itoa(c))
		}
		fmt.Fprintf(&b, "node %d cpus: %s\nnode %d size: %d MB\nnode %d free: %d MB\n", n, strings.Join(words, " "), n, size[n], n, free[n])
	}
	b.WriteString("node distances:\nnode")
	for n := range cpus {
		fmt.Fprintf(&b, "%4d", n)
	}
	b.WriteString("\n")
	for a, row := range dist {
		fmt.Fprintf(&b, "%3d:", a)
		for _, d := range row {
			fmt.Fprintf(&b, "%4d", d)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// numactl answers --hardware (-H) and --show (-s); running a command
// under a policy is the shell's business, not simulated here.
func numactl(_ context.Context, _ *Host, t *term, args []string) int {
	a := flags(args[1:])
	switch {
	case len(a) == 1 && (a[0] == "--hardware" || a[0] == "-H"):
		t.print(numaHardware())
		return 0
	case len(a) == 1 && (a[0] == "--show" || a[0] == "-s"):
		nodes := "0 1 2 3 4 5 6 7"
		var cpus []string
		for c := 0; c < spec.Threads; c++ {
			cpus = append(cpus, strconv.Itoa(c))
		}
		t.printf("policy: default\npreferred node: current\nphyscpubind: %s \ncpubind: %s \nnodebind: %s \nmembind: %s \n",
			strings.Join(cpus, " "), nodes, nodes, nodes)
		return 0
	}
	return t.fail(1, "usage: numactl [--all | -a] [--interleave= | -i <nodes>] [--preferred= | -p <node>]\n"+
		"               [--physcpubind= | -C <cpus>] [--cpunodebind= | -N <nodes>]\n"+
		"               [--membind= | -m <nodes>] [--localalloc | -l] command args ...\n"+
		"       numactl [--show | -s]\n       numactl [--hardware | -H]\n")
}

// cpuRow is one row of lscpu -e for CPU c (thread), EPYC 7742: 4 cores
// share an L3 (a CCX), the sibling thread is 128 above its core.
func cpuRow(c int) []string {
	core := c % (spec.Threads / 2)
	socket := core / spec.CoresPerSocket
	node := core / spec.CoresPerNode
	return []string{strconv.Itoa(c), strconv.Itoa(node), strconv.Itoa(socket), strconv.Itoa(core),
		fmt.Sprintf("%d:%d:%d:%d", core, core, core, core/4), "yes", "2250.0000", "1500.0000", "1500.0000"}
}

var lscpuColumns = []string{"CPU", "NODE", "SOCKET", "CORE", "L1d:L1i:L2:L3", "ONLINE", "MAXMHZ", "MINMHZ", "MHZ"}

// lscpuTable is lscpu -e: util-linux's table, numbers right-aligned and
// the cache column left-aligned, each as wide as its widest cell, as in
// testdata/fixtures/lscpu-e/asus-esc8000a-e12-2socket-epyc9374f.txt.
func lscpuTable(header []string, rows [][]string) string {
	width := make([]int, len(header))
	for k, hd := range header {
		width[k] = len(hd)
		for _, r := range rows {
			width[k] = max(width[k], len(r[k]))
		}
	}
	line := func(cells []string) string {
		var parts []string
		for k, c := range cells {
			if header[k] == "L1d:L1i:L2:L3" {
				parts = append(parts, fmt.Sprintf("%-*s", width[k], c))
			} else {
				parts = append(parts, fmt.Sprintf("%*s", width[k], c))
			}
		}
		return strings.Join(parts, " ") + "\n"
	}
	var b strings.Builder
	b.WriteString(line(header))
	for _, r := range rows {
		b.WriteString(line(r))
	}
	return b.String()
}

// lscpu answers lscpu -e (the table) and plain lscpu: the latter in
// util-linux 2.37's grouped layout (Ubuntu 22.04), which no recording in
// testdata shows; the figures are an EPYC 7742's.
func lscpu(_ context.Context, _ *Host, t *term, args []string) int {
	a := flags(args[1:])
	switch {
	case len(a) == 1 && (a[0] == "-e" || a[0] == "--extended"):
		var rows [][]string
		for c := 0; c < spec.Threads; c++ {
			rows = append(rows, cpuRow(c))
		}
		t.print(lscpuTable(lscpuColumns, rows))
		return 0
	case len(a) == 0:
		t.print(lscpuSummary())
		return 0
	}
	return t.fail(1, fmt.Sprintf("lscpu: unrecognized option '%s'\nTry 'lscpu --help' for more information.\n", a[0]))
}

func lscpuSummary() string {
	var b strings.Builder
	kv := func(indent int, k, v string) {
		fmt.Fprintf(&b, "%-25s%s\n", strings.Repeat("  ", indent)+k+":", v)
	}
	kv(0, "Architecture", "x86_64")
	kv(1, "CPU op-mode(s)", "32-bit, 64-bit")
	kv(1, "Address sizes", "43 bits physical, 48 bits virtual")
	kv(1, "Byte Order", "Little Endian")
	kv(0, "CPU(s)", strconv.Itoa(spec.Threads))
	kv(1, "On-line CPU(s) list", fmt.Sprintf("0-%d", spec.Threads-1))
	kv(0, "Vendor ID", "AuthenticAMD")
	kv(1, "Model name", "AMD EPYC 7742 64-Core Processor")
	kv(2, "CPU family", "23")
	kv(2, "Model", "49")
	kv(2, "Thread(s) per core", "2")
	kv(2, "Core(s) per socket", strconv.Itoa(spec.CoresPerSocket))
	kv(2, "Socket(s)", strconv.Itoa(spec.Sockets))
	kv(2, "Stepping", "0")
	kv(2, "Frequency boost", "enabled")
	kv(2, "CPU max MHz", "2250.0000")
	kv(2, "CPU min MHz", "1500.0000")
	kv(2, "BogoMIPS", "4491.63")
	kv(0, "Virtualization features", "")
	kv(1, "Virtualization", "AMD-V")
	kv(0, "Caches (sum of all)", "")
	kv(1, "L1d", "4 MiB (128 instances)")
	kv(1, "L1i", "4 MiB (128 instances)")
	kv(1, "L2", "64 MiB (128 instances)")
	kv(1, "L3", "512 MiB (32 instances)")
	kv(0, "NUMA", "")
	kv(1, "NUMA node(s)", strconv.Itoa(spec.NUMACount))
	for n := 0; n < spec.NUMACount; n++ {
		c := spec.NodeCPUs(n)
		kv(1, fmt.Sprintf("NUMA node%d CPU(s)", n), fmt.Sprintf("%d-%d,%d-%d", c[0], c[spec.CoresPerNode-1], c[spec.CoresPerNode], c[len(c)-1]))
	}
	return b.String()
}
