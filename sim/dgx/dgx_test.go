package dgx

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gpulab/gpulab/runbooks"
	"github.com/gpulab/gpulab/sim/spec"
	"github.com/gpulab/gpulab/step"
	"github.com/gpulab/gpulab/step/parse"
)

// recordedAt is when the recorded nvidia-smi -q was taken.
var recordedAt = time.Date(2024, time.January, 4, 14, 41, 13, 0, time.UTC)

func testHost(f spec.Faults) *Host {
	h := New("dgx-a100-01", 0, f)
	h.Now = func() time.Time { return recordedAt }
	h.Boot = recordedAt.Add(-DefaultUptime)
	h.Pace = time.Microsecond
	return h
}

func run(t *testing.T, h *Host, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code, ok := h.Run(context.Background(), IO{Stdout: &o, Stderr: &e}, args)
	if !ok {
		t.Fatalf("%v: the host does not know %s", args, args[0])
	}
	return o.String(), e.String(), code
}

// sickOf returns the sick host's faults of a seed's plan.
func sickOf(seed int64) spec.Faults {
	sick, faults := Plan(seed, 4)
	return faults[sick]
}

func TestRecordedCopies(t *testing.T) {
	testdata := filepath.Join("..", "..", "testdata", "fixtures")
	index := func(path, prefix string) map[string]string {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rows := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n")[1:] {
			file, _, _ := strings.Cut(l, "\t")
			rows[prefix+file] = prefix + l
		}
		return rows
	}
	want := index(filepath.Join(testdata, "INDEX.tsv"), "")
	for k, v := range index(filepath.Join(testdata, "workloads", "INDEX.tsv"), "workloads/") {
		want[k] = v
	}
	ours, err := recorded.ReadFile("recorded/INDEX.tsv")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(ours)), "\n")
	header, _ := os.ReadFile(filepath.Join(testdata, "INDEX.tsv"))
	if lines[0] != strings.SplitN(string(header), "\n", 2)[0] {
		t.Errorf("recorded/INDEX.tsv header %q differs from testdata's", lines[0])
	}
	listed := map[string]bool{}
	for _, l := range lines[1:] {
		file, _, _ := strings.Cut(l, "\t")
		listed[file] = true
		if want[file] != l {
			t.Errorf("recorded/INDEX.tsv row for %s is not testdata's:\n got %q\nwant %q", file, l, want[file])
		}
		copyData, err := recorded.ReadFile("recorded/" + file)
		orig, err2 := os.ReadFile(filepath.Join(testdata, file))
		if err != nil || err2 != nil || !bytes.Equal(copyData, orig) {
			t.Errorf("recorded/%s is not byte-identical to testdata/fixtures/%s (%v, %v)", file, file, err, err2)
		}
	}
	fs.WalkDir(recorded, "recorded", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && p != "recorded/INDEX.tsv" && !listed[strings.TrimPrefix(p, "recorded/")] {
			t.Errorf("%s is embedded but not in recorded/INDEX.tsv", p)
		}
		return nil
	})
}

// The healthy host's nvidia-smi -q is the recording, but for the fields a
// DGX must say otherwise: its bus ids (GPU line, Bus, Bus Id, Board ID) and
// persistence mode; the timestamp is the host's clock.
func TestHealthyQueryIsTheRecording(t *testing.T) {
	got, _, code := run(t, testHost(spec.Faults{}), "nvidia-smi", "-q")
	want := recording(recQuery)
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	if code != 0 || len(g) != len(w) {
		t.Fatalf("nvidia-smi -q: exit %d, %d lines, recording %d", code, len(g), len(w))
	}
	varied := regexp.MustCompile(`^(GPU 0000|\s+(Bus|Bus Id|Board ID|Persistence Mode)\s+:)`)
	gpu, differ := -1, 0
	for i := range w {
		if strings.HasPrefix(w[i], "GPU 0000") {
			gpu++
		}
		if g[i] == w[i] {
			continue
		}
		differ++
		bus := spec.BusIDs[max(gpu, 0)]
		ok := varied.MatchString(w[i]) && (strings.HasSuffix(g[i], fmt.Sprintf("%02X:00.0", bus)) ||
			strings.HasSuffix(g[i], fmt.Sprintf(": 0x%02X", bus)) || strings.HasSuffix(g[i], fmt.Sprintf(": %#x", bus<<8)) ||
			strings.HasSuffix(g[i], ": Enabled"))
		if !ok {
			t.Errorf("line %d (GPU%d) differs from the recording:\n got %q\nwant %q", i+1, gpu, g[i], w[i])
		}
	}
	if differ != 5*spec.GPUs {
		t.Errorf("%d lines differ from the recording, want %d (5 per GPU)", differ, 5*spec.GPUs)
	}
	q, err := parse.ParseQuery(got)
	if err != nil {
		t.Fatal(err)
	}
	for i, gq := range q.GPUs {
		if *gq.Serial != spec.Serials[i] || gq.UUID != spec.UUIDs[i] || *gq.TemperatureC != spec.TemperatureC[i] ||
			*gq.PowerDrawW != float64(spec.PowerMilliW[i])/1000 || gq.BusID != spec.BusID(i) || *gq.MemoryUsedMiB != spec.MemoryUsedMiB {
			t.Errorf("GPU%d of -q disagrees with spec: %s %s %dC %vW %s", i, *gq.Serial, gq.UUID, *gq.TemperatureC, *gq.PowerDrawW, gq.BusID)
		}
	}
}

// firstCommand is the first simple command of a runbook step's shell line,
// without redirections: "dmesg -T 2>/dev/null || journalctl ..." is dmesg -T.
func firstCommand(line string) []string {
	for _, sep := range []string{"||", "&&", ";", "|"} {
		line, _, _ = strings.Cut(line, sep)
	}
	var args []string
	for _, w := range strings.Fields(line) {
		if !strings.Contains(w, ">") {
			args = append(args, w)
		}
	}
	return args
}

// judge runs a runbook's steps on h and returns each check's verdict.
func judge(t *testing.T, h *Host, rb runbooks.Runbook, replace map[string][]string) map[string]step.Verdict {
	t.Helper()
	inputs := map[string]step.Input{}
	for _, s := range rb.Steps {
		if s.Probe { // the probe's collector over this host's simulated NVML
			inputs[s.ID] = step.Input{Step: s.ID, Ran: true, Value: windowedProbe(t, h.Faults)}
			continue
		}
		args := firstCommand(s.Command)
		if r, ok := replace[s.ID]; ok {
			args = r
		}
		out, _, code := run(t, h, args...)
		in := step.Input{Step: s.ID, Ran: code == 0, Output: out, ExitCode: code}
		k, _ := parse.Lookup(s.Parser)
		v, err := k.Parse(out)
		if err != nil {
			t.Errorf("%s: %v does not parse as %s: %v", h.Name, args, s.Parser, err)
		}
		in.Value, in.ParseErr = v, err
		inputs[s.ID] = in
	}
	out := map[string]step.Verdict{}
	for _, c := range rb.Checks {
		var in []step.Input
		for _, u := range c.Uses {
			in = append(in, inputs[u])
		}
		out[c.ID] = step.Judge(c, in)
	}
	return out
}

func builtin(t *testing.T, id string) runbooks.Runbook {
	t.Helper()
	rbs, err := runbooks.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	rb, ok := runbooks.Find(rbs, id)
	if !ok {
		t.Fatalf("no built-in runbook %q", id)
	}
	return rb
}

func TestRunbookChecksHealthy(t *testing.T) {
	h := testHost(spec.Faults{})
	kernelAlt := map[string][]string{"kernel": {"journalctl", "-k", "--no-pager", "-q", "-n", "20000"}}
	for _, tc := range []struct {
		runbook string
		replace map[string][]string
	}{{"topology", nil}, {"health", nil}, {"health", kernelAlt}, {"mig-layout", nil}} {
		for id, v := range judge(t, h, builtin(t, tc.runbook), tc.replace) {
			want := step.Pass
			if tc.runbook == "mig-layout" && id == "layout" {
				want = step.Unknown // nvidia-smi mig -lgi exits 6 without MIG
			}
			if id == "nvlink-fabric" {
				want = step.Skipped // an A100 has no NVLink fabric state
			}
			if v.Status != want {
				t.Errorf("healthy host, %s/%s = %s (%s), want %s", tc.runbook, id, v.Status, v.Summary, want)
			}
		}
	}
}

func TestRunbookChecksSick(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		f := sickOf(seed)
		h := testHost(f)
		pair := f.NVLinkDown[0]
		var ecc int
		for g := range f.ECC {
			ecc = g
		}
		checks := judge(t, h, builtin(t, "topology"), nil)
		for id, v := range judge(t, h, builtin(t, "health"), nil) {
			checks[id] = v
		}
		want := map[string]step.Status{"nvlink-mesh": step.Fail, "nic-nearest": step.Pass, "cpu-affinity": step.Pass,
			"driver": step.Pass, "persistence": step.Pass, "ecc": step.Fail,
			"remapped-rows": step.Warn, // the rule's verdict for a pending (not failed) remap
			"xid":           step.Fail, "pcie-width": step.Pass, "clock-events": step.Pass, "recovery": step.Pass,
			"nvml-hung": step.Pass, "pcie-gen": step.Pass, "pcie-replays": step.Pass, "thermal-margin": step.Pass, "power-cap": step.Pass}
		for id, st := range want {
			if checks[id].Status != st {
				t.Errorf("seed %d: %s = %s (%s), want %s", seed, id, checks[id].Status, checks[id].Summary, st)
			}
		}
		if s := checks["nvlink-mesh"].Summary; !strings.Contains(s, fmt.Sprintf("GPU%d–GPU%d SYS", pair[0], pair[1])) {
			t.Errorf("seed %d: nvlink-mesh says %q, want the pair GPU%d–GPU%d", seed, s, pair[0], pair[1])
		}
		if s := facts(checks["ecc"]); !strings.Contains(s, fmt.Sprintf("GPU%d (%s)", ecc, spec.BusID(ecc))) {
			t.Errorf("seed %d: ecc evidence %q does not name GPU%d", seed, s, ecc)
		}
		if s := facts(checks["remapped-rows"]); !strings.Contains(s, fmt.Sprintf("GPU%d (%s): row remap pending", ecc, spec.BusID(ecc))) {
			t.Errorf("seed %d: remapped-rows evidence %q does not name GPU%d", seed, s, ecc)
		}
		xid := facts(checks["xid"])
		for _, x := range f.XIDs {
			if !strings.Contains(xid, fmt.Sprintf("Xid %d on %s", x.Code, spec.KernelBusID(x.GPU))) {
				t.Errorf("seed %d: xid evidence %q lacks Xid %d on GPU%d", seed, xid, x.Code, x.GPU)
			}
		}
		if !strings.Contains(xid, "Xid 79") || !strings.Contains(xid, "Xid 48") {
			t.Errorf("seed %d: xid evidence %q lacks Xid 79 or 48", seed, xid)
		}
	}
}

func facts(v step.Verdict) string {
	var f []string
	for _, e := range v.Evidence {
		f = append(f, e.Fact)
	}
	return strings.Join(f, "; ")
}

func TestPlan(t *testing.T) {
	if sick, f := Plan(1, 0); sick != -1 || f != nil {
		t.Errorf("Plan(1, 0) = %d, %v", sick, f)
	}
	sicks, pairs, eccs := map[int]bool{}, map[[2]int]bool{}, map[int]bool{}
	for seed := int64(0); seed < 40; seed++ {
		for _, n := range []int{1, 3, 7} {
			sick, faults := Plan(seed, n)
			again, faults2 := Plan(seed, n)
			if sick != again || !reflect.DeepEqual(faults, faults2) {
				t.Fatalf("Plan(%d, %d) is not deterministic", seed, n)
			}
			if len(faults) != n || sick < 0 || sick >= n {
				t.Fatalf("Plan(%d, %d) = sick %d of %d", seed, n, sick, len(faults))
			}
			for i, f := range faults {
				if i != sick && !reflect.DeepEqual(f, spec.Faults{}) {
					t.Errorf("Plan(%d, %d): host %d is not healthy: %+v", seed, n, i, f)
				}
			}
			f := faults[sick]
			if err := f.Validate(); err != nil {
				t.Errorf("Plan(%d, %d): %v", seed, n, err)
			}
			codes := map[int]bool{}
			for _, x := range f.XIDs {
				codes[x.Code] = true
			}
			p := f.NVLinkDown[0]
			if len(f.NVLinkDown) != 1 || spec.SamePCIeSwitch(p[0], p[1]) || len(f.ECC) != 1 || len(f.RemapPending) != 1 ||
				f.ECCFor(f.RemapPending[0]).VolatileUncorrected == 0 || !codes[79] || !codes[48] || len(f.MIG) < 1 || len(f.MIG) > 2 {
				t.Errorf("Plan(%d, %d) sick host: %+v", seed, n, f)
			}
			if n == 7 {
				sicks[sick], pairs[p], eccs[f.RemapPending[0]] = true, true, true
			}
		}
	}
	if len(sicks) < 4 || len(pairs) < 6 || len(eccs) < 4 {
		t.Errorf("40 seeds chose %d sick hosts, %d pairs, %d ECC GPUs: seeds do not vary the plan", len(sicks), len(pairs), len(eccs))
	}
}

func TestRunUnknownAndTools(t *testing.T) {
	h := testHost(spec.Faults{})
	for _, args := range [][]string{nil, {}, {"uname"}, {"hostname"}, {"nvidia-smi-foo"}, {"/usr/bin/nvidia-smi"}} {
		if _, ok := h.Run(context.Background(), IO{}, args); ok {
			t.Errorf("Run(%q) ok, want not found", args)
		}
	}
	tools := h.Tools()
	if !sort.StringsAreSorted(tools) {
		t.Errorf("Tools() not sorted: %v", tools)
	}
	for _, want := range []string{"all_reduce_perf", "dcgmi", "dmesg", "gpu_burn", "ibv_devinfo", "ip", "journalctl", "kubectl",
		"lscpu", "lspci", "numactl", "nvidia-container-cli", "nvidia-ctk", "nvidia-smi", "rdma", "vllm"} {
		if i := sort.SearchStrings(tools, want); i == len(tools) || tools[i] != want {
			t.Errorf("Tools() lacks %s: %v", want, tools)
		}
	}
}

// Errors as the real tools give them: their words, their exit status.
func TestToolErrors(t *testing.T) {
	h := testHost(spec.Faults{})
	for _, tc := range []struct {
		args []string
		code int
		says string // in stdout or stderr
	}{
		{[]string{"nvidia-smi", "--bogus"}, 2, "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help."},
		{[]string{"nvidia-smi", "-q", "-i"}, 2, "Invalid combination"},
		{[]string{"nvidia-smi", "-i", "9"}, 6, "No devices were found"},
		{[]string{"nvidia-smi", "-q", "-d", "BOGUS"}, 2, "Invalid combination"},
		{[]string{"nvidia-smi", "--query-gpu=index,fan.speedz", "--format=csv"}, 2, `Field "fan.speedz" is not a valid field to query.`},
		{[]string{"nvidia-smi", "--query-gpu=index"}, 2, "--format"},
		{[]string{"nvidia-smi", "topo", "-x"}, 2, "Invalid combination"},
		{[]string{"nvidia-smi", "mig", "-lgi"}, 6, "No MIG-enabled devices found."},
		{[]string{"nvidia-smi", "nvlink"}, 2, "Invalid combination"},
		{[]string{"dmesg", "--bogus"}, 1, "dmesg: unrecognized option '--bogus'"},
		{[]string{"journalctl", "-k", "-o", "xml"}, 1, "Unknown output format 'xml'."},
		{[]string{"all_reduce_perf", "-b", "8", "-e", "8G", "-g", "9"}, 2, "Test CUDA failure common.cu:892 'invalid device ordinal'"},
		{[]string{"vllm", "bench", "serve", "--bogus"}, 2, "unrecognized arguments: --bogus"},
		{[]string{"gpu_burn", "abc"}, 1, "Syntax error near: abc"},
		{[]string{"kubectl", "get", "nodes"}, 1, "The connection to the server localhost:8080 was refused"},
		{[]string{"dcgmi", "diag"}, 1, "-r/--run"},
		{[]string{"lspci", "-k"}, 1, "invalid option"},
	} {
		out, errOut, code := run(t, h, tc.args...)
		if code != tc.code || !strings.Contains(out+errOut, tc.says) {
			t.Errorf("%v: exit %d, %q; want %d and %q", tc.args, code, out+errOut, tc.code, tc.says)
		}
	}
}

// firstWrite signals the first write to it; its writes never block.
type firstWrite struct {
	buf  bytes.Buffer
	once chan struct{}
}

func (w *firstWrite) Write(p []byte) (int, error) {
	select {
	case <-w.once:
	default:
		close(w.once)
	}
	return w.buf.Write(p)
}

// A cancelled context stops a long tool: with an hour between its lines,
// nothing but the cancellation can end it.
func TestCancelStopsLongTools(t *testing.T) {
	f := sickOf(1)
	for _, tc := range []struct {
		args  []string
		early bool   // it prints before its first pause
		end   string // what only a finished run prints
	}{
		{[]string{"all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "8"}, true, "# Avg bus bandwidth"},
		{[]string{"gpu_burn", "60"}, true, "Tested"},
		{[]string{"vllm", "bench", "serve", "--model", "m", "--num-prompts", "10"}, true, "Serving Benchmark Result"},
		{[]string{"dcgmi", "diag", "-r", "3"}, false, "Successfully ran diagnostic"},
	} {
		h := New("dgx", 0, f)
		h.Pace = time.Hour
		ctx, cancel := context.WithCancel(context.Background())
		w := &firstWrite{once: make(chan struct{})}
		done := make(chan int)
		go func() {
			code, _ := h.Run(ctx, IO{Stdout: w}, tc.args)
			done <- code
		}()
		if tc.early {
			<-w.once
		}
		cancel()
		if code := <-done; code != ExitCancelled || strings.Contains(w.buf.String(), tc.end) {
			t.Errorf("%v cancelled: exit %d, output %q", tc.args, code, w.buf.String())
		}
	}
}

// Every answer parses with gpulab's own parsers, on a healthy host and a
// sick one.
func TestAnswersParse(t *testing.T) {
	for _, f := range []spec.Faults{{}, sickOf(1), sickOf(2)} {
		h := testHost(f)
		for _, tc := range []struct {
			kind string
			args []string
		}{
			{"nvidia-smi", []string{"nvidia-smi"}},
			{"nvidia-smi-L", []string{"nvidia-smi", "-L"}},
			{"nvidia-smi-q", []string{"nvidia-smi", "-q"}},
			{"nvidia-smi-topo", []string{"nvidia-smi", "topo", "-m"}},
			{"nvidia-smi-nvlink-status", []string{"nvidia-smi", "nvlink", "--status"}},
			{"nvidia-smi-nvlink-status", []string{"nvidia-smi", "nvlink", "-s", "-i", "1"}},
			{"nvidia-smi-nvlink-errors", []string{"nvidia-smi", "nvlink", "-e"}},
			{"numactl-hardware", []string{"numactl", "--hardware"}},
			{"lscpu-e", []string{"lscpu", "-e"}},
			{"lspci-tv", []string{"lspci", "-tv"}},
			{"ip-br-link", []string{"ip", "-br", "link"}},
			{"rdma-link", []string{"rdma", "link"}},
			{"ibv-devinfo", []string{"ibv_devinfo"}},
			{"dmesg-xid", []string{"dmesg"}},
			{"dmesg-xid", []string{"dmesg", "-T"}},
			{"dmesg-xid", []string{"dmesg", "--ctime"}},
			{"dmesg-xid", []string{"dmesg", "-x", "--time-format", "iso"}},
			{"dmesg-xid", []string{"journalctl", "-k", "--no-pager", "-q", "-n", "20000"}},
			{"dmesg-xid", []string{"journalctl", "-k", "--no-pager", "-o", "short-precise"}},
			{"dmesg-xid", []string{"journalctl", "-k", "-o", "short-iso"}},
			{"dcgmi-diag", []string{"dcgmi", "diag", "-r", "1"}},
			{"dcgmi-diag", []string{"dcgmi", "diag", "-r", "3"}},
			{"nccl-tests", []string{"all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "8"}},
			{"gpu-burn", []string{"gpu_burn", "-d", "-tc", "30"}},
			{"vllm-bench-serve", []string{"vllm", "bench", "serve", "--backend", "vllm", "--base-url", "http://10.0.0.1:8000", "--model", "m",
				"--dataset-name", "random", "--random-input-len", "1024", "--random-output-len", "128", "--num-prompts", "200", "--seed", "0"}},
		} {
			out, errOut, code := run(t, h, tc.args...)
			k, _ := parse.Lookup(tc.kind)
			if _, err := k.Parse(out); err != nil || code != 0 {
				t.Errorf("%v (faults %v): exit %d (%s), %s parser: %v", tc.args, f.NVLinkDown, code, errOut, tc.kind, err)
			}
		}
		if f.MIG != nil {
			for _, kind := range []string{"lgi", "lgip", "lci", "lcip"} {
				out, _, code := run(t, h, "nvidia-smi", "mig", "-"+kind)
				k, _ := parse.Lookup("nvidia-smi-mig-" + kind)
				if _, err := k.Parse(out); err != nil || code != 0 {
					t.Errorf("nvidia-smi mig -%s: exit %d, %v\n%s", kind, code, err, out)
				}
			}
		}
	}
}

// scanLines counts the lines of s that match re.
func scanLines(s string, re *regexp.Regexp) int {
	n := 0
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if re.MatchString(sc.Text()) {
			n++
		}
	}
	return n
}

func TestLspciNearNICs(t *testing.T) {
	out, _, _ := run(t, testHost(spec.Faults{}), "lspci", "-tv")
	tree, err := parse.ParseLspciTree(out)
	if err != nil {
		t.Fatal(err)
	}
	near := map[string][]string{}
	for _, n := range tree.Near {
		near[n.GPU] = n.NICs
	}
	for g := 0; g < spec.GPUs; g++ {
		nic := fmt.Sprintf("0000:%02x:00.0", spec.NICs[g/2].Bus)
		if got := near[strings.ToLower(spec.BusID(g)[4:])]; len(got) != 1 || got[0] != nic {
			t.Errorf("GPU%d's nearest NICs in lspci -tv: %v, want %s", g, got, nic)
		}
	}
	plain, _, _ := run(t, testHost(spec.Faults{}), "lspci")
	if n := scanLines(plain, regexp.MustCompile(`^[0-9a-f]{2}:00\.0 3D controller: NVIDIA Corporation GA100 \[A100 SXM4 40GB\] \(rev a1\)$`)); n != spec.GPUs {
		t.Errorf("lspci lists %d A100s, want %d:\n%s", n, spec.GPUs, plain)
	}
}

// nvidia-smi -q -d keeps the sections asked for, faults included.
func TestQueryDisplay(t *testing.T) {
	f := sickOf(1)
	ecc := f.RemapPending[0]
	out, _, code := run(t, testHost(f), "nvidia-smi", "-q", "-d", "ECC,PAGE_RETIREMENT")
	q, err := parse.ParseQuery(out)
	if code != 0 || err != nil || len(q.GPUs) != spec.GPUs || q.GPUs[ecc].BusID != spec.BusID(ecc) {
		t.Fatalf("-q -d ECC,PAGE_RETIREMENT: exit %d, %v\n%s", code, err, out)
	}
	g := q.GPUs[ecc]
	if g.Fields["ECC Errors/Volatile/DRAM Uncorrectable"] != fmt.Sprint(f.ECCFor(ecc).VolatileUncorrected) ||
		g.RemappedRows == nil || !*g.RemappedRows.Pending || g.Fields["Product Name"] != "" || g.Fields["Temperature/GPU Current Temp"] != "" {
		t.Errorf("-q -d ECC,PAGE_RETIREMENT kept %v", g.Fields)
	}
}

// A GPU that fell off the bus (gpu_lost): nvidia-smi names it on stderr
// as the driver says it, shows the others and exits 15 (a step that
// exits non-zero is no evidence: the health runbook's nvidia-smi checks
// are UNKNOWN, never PASS over the seven GPUs it could read).
func TestLostGPUInNvidiaSMI(t *testing.T) {
	h := testHost(spec.Faults{GPULost: []int{3}})
	out, errOut, code := run(t, h, "nvidia-smi", "-L")
	if code != 15 || strings.Count(out, "\n") != 7 || strings.Contains(out, "GPU 3:") ||
		errOut != "Unable to determine the device handle for GPU0000:4E:00.0: GPU is lost.  Reboot the system to recover this GPU\n" {
		t.Errorf("nvidia-smi -L: exit %d\n%s\nstderr %q", code, out, errOut)
	}
	if out, _, code := run(t, h, "nvidia-smi", "-q"); code != 15 || strings.Count(out, "\nGPU 0000") != 7 {
		t.Errorf("nvidia-smi -q: exit %d, %d GPU blocks", code, strings.Count(out, "\nGPU 0000"))
	}
	if _, _, code := run(t, h, "nvidia-smi", "-q", "-Z"); code != smiInvalidArg {
		t.Errorf("a bad option with a lost GPU: exit %d, want %d", code, smiInvalidArg)
	}
	if out, _, code := run(t, h, "nvidia-smi"); code != 15 || strings.Contains(out, "00000000:4E:00.0") || !strings.Contains(out, "00000000:47:00.0") {
		t.Errorf("nvidia-smi: exit %d\n%s", code, out)
	}
}
