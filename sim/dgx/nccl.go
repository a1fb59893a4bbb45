package dgx

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/gpulab/gpulab/sim/spec"
)

func init() {
	tools["all_reduce_perf"] = allReducePerf
}

// ncclRow is a recorded all_reduce_perf row of 8x A100-SXM4-40GB.
type ncclRow struct {
	size              int64
	oopTime, oopAlgbw float64
	ipTime, ipAlgbw   float64
}

// allReduceRecorded are the rows of the recorded all_reduce_perf run on
// 8x A100-SXM4-40GB over NVSwitch (recorded/workloads/nccl-tests/
// all_reduce_1node-8xA100-40GB-...superbench.txt): time and algorithm
// bandwidth by size; bus bandwidth is algbw*2*(n-1)/n.
func allReduceRecorded() []ncclRow {
	var rows []ncclRow
	for _, l := range strings.Split(recording(recAllReduce8), "\n") {
		f := strings.Fields(l)
		if len(f) != 12 || f[2] != "float" {
			continue
		}
		size, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || size == 0 {
			continue
		}
		num := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
		rows = append(rows, ncclRow{size: size, oopTime: num(f[4]), oopAlgbw: num(f[5]), ipTime: num(f[8]), ipAlgbw: num(f[9])})
	}
	return rows
}

// ncclTime is the time (us) of an all-reduce of size bytes: the recorded
// one, interpolated (log-log) between recorded sizes, extrapolated at the
// ends at constant bandwidth or latency.
func ncclTime(rows []ncclRow, size int64, inPlace bool) float64 {
	t := func(r ncclRow) float64 {
		if inPlace {
			return r.ipTime
		}
		return r.oopTime
	}
	k := sort.Search(len(rows), func(i int) bool { return rows[i].size >= size })
	switch {
	case k < len(rows) && rows[k].size == size:
		return t(rows[k])
	case k == 0:
		return t(rows[0])
	case k == len(rows):
		last := rows[len(rows)-1]
		return t(last) * float64(size) / float64(last.size)
	}
	a, b := rows[k-1], rows[k]
	f := math.Log(float64(size)/float64(a.size)) / math.Log(float64(b.size)/float64(a.size))
	return math.Exp(math.Log(t(a)) + f*(math.Log(t(b))-math.Log(t(a))))
}

// parseSize reads nccl-tests' sizes: "8", "128K", "8M", "8G".
func parseSize(s string) (int64, bool) {
	mult := int64(1)
	switch strings.ToUpper(s[len(s)-1:]) {
	case "K":
		mult = 1 << 10
	case "M":
		mult = 1 << 20
	case "G":
		mult = 1 << 30
	}
	if mult > 1 {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n * mult, err == nil && n >= 0
}

// ncclArgs are the options of all_reduce_perf the simulation honours.
type ncclArgs struct {
	min, max   int64
	factor     int64
	gpus       int
	iters, wup int
	check      int
}

func parseNCCLArgs(args []string) (ncclArgs, error) {
	a := ncclArgs{min: 32 << 20, max: 32 << 20, factor: 2, gpus: 1, iters: 20, wup: 1, check: 1}
	for k := 1; k < len(args); k++ {
		opt := args[k]
		if k+1 >= len(args) {
			return a, fmt.Errorf("option requires an argument -- '%s'", strings.TrimLeft(opt, "-"))
		}
		v := args[k+1]
		k++
		var ok bool
		switch opt {
		case "-b", "--minbytes":
			a.min, ok = parseSize(v)
		case "-e", "--maxbytes":
			a.max, ok = parseSize(v)
		case "-f", "--stepfactor":
			a.factor, ok = parseSize(v)
			ok = ok && a.factor > 1
		case "-g", "--ngpus":
			var n int64
			n, ok = parseSize(v)
			a.gpus = int(n)
		case "-n", "--iters":
			var n int64
			n, ok = parseSize(v)
			a.iters = int(n)
		case "-w", "--warmup_iters":
			var n int64
			n, ok = parseSize(v)
			a.wup = int(n)
		case "-c", "--check":
			var n int64
			n, ok = parseSize(v)
			a.check = int(n)
		case "-t", "--nthreads", "-d", "--datatype", "-o", "--op", "-a", "--average", "-z", "--blocking", "-G", "--cudagraph":
			ok = true
		default:
			return a, fmt.Errorf("invalid option -- '%s'", strings.TrimLeft(opt, "-"))
		}
		if !ok {
			return a, fmt.Errorf("invalid value %q for %s", v, opt)
		}
	}
	return a, nil
}

// allReducePerf runs nccl-tests' all_reduce_perf on the host's GPUs, in
// the output format of nccl-tests 2.19.4 (testdata/fixtures/workloads/
// nccl-tests/all_reduce_1node-8xA100-SXM4-80GB-nccltests2.19.4.txt), with
// the times of the recorded 8x A100-40GB run. With an NVLink down the
// bus bandwidth falls in proportion to the links the weakest GPU has left
// (NCCL's rings through the NVSwitches run at its pace). A row streams
// every pace; a cancelled context stops the run between rows.
func allReducePerf(ctx context.Context, h *Host, t *term, args []string) int {
	a, err := parseNCCLArgs(args)
	if err != nil {
		t.eprintf("%s: %s\n", args[0], err)
		return 1
	}
	pid := 21000 + 37*h.Index
	if a.gpus < 1 || a.gpus > spec.GPUs {
		t.printf("%s: Test CUDA failure common.cu:892 'invalid device ordinal'\n .. %s pid %d: Test failure common.cu:842\n", h.Name, h.Name, pid)
		return 2
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# nccl-tests version 2.19.4 nccl-headers=21903 nccl-library=21903\n# Collective test starting: all_reduce_perf\n")
	fmt.Fprintf(&b, "# nThread 1 nGpus %d minBytes %d maxBytes %d step: %d(factor) warmup iters: %d iters: %d agg iters: 1 validation: %d graph: 0 unalign: 0\n#\n# Using devices\n",
		a.gpus, a.min, a.max, a.factor, a.wup, a.iters, a.check)
	for g := 0; g < a.gpus; g++ {
		fmt.Fprintf(&b, "#  Rank %2d Group  0 Pid %6d on %10s device %2d [%s] %s\n", g, pid, h.Name, g, spec.KernelBusID(g), GPUName)
	}
	b.WriteString("#\n" +
		"#                                                              out-of-place                       in-place          \n" +
		"#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong \n" +
		"#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         \n")
	t.print(b.String())
	rows := allReduceRecorded()
	slow := 1.0
	for g := 0; g < a.gpus; g++ {
		slow = min(slow, float64(h.Faults.ActiveLinks(g))/spec.LinksPerGPU)
	}
	busFactor := 2 * float64(a.gpus-1) / float64(a.gpus)
	var sum float64
	var n int
	for size := a.min; size <= a.max; size *= a.factor {
		if !h.wait(ctx, 1) {
			return ExitCancelled
		}
		count := size / 4
		cells := []string{fmt.Sprintf("%12d  %12d  %8s  %6s  %6d", size, count, "float", "sum", -1)}
		for _, inPlace := range []bool{false, true} {
			us := ncclTime(rows, size, inPlace) / slow
			if a.gpus == 1 {
				us = ncclTime(rows, 8, inPlace) / 4 // a copy in place, no peers
			}
			algbw := float64(size) / us / 1e3
			busbw := algbw * busFactor
			if !inPlace {
				sum += busbw
				n++
			}
			cells = append(cells, fmt.Sprintf("%7.2f  %6.2f  %6.2f  %6d", us, algbw, busbw, 0))
		}
		t.print(strings.Join(cells, "  ") + "\n")
		if a.factor <= 1 || size == 0 {
			break
		}
	}
	avg := 0.0
	if n > 0 {
		avg = sum / float64(n)
	}
	t.printf("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : %.6g \n#\n# Collective test concluded: all_reduce_perf\n#\n", avg)
	return 0
}
