package step

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/step/parse"
)

// The driver writes "GPU has fallen off the bus" beside its Xid 79: one
// event, counted once. A GPU that fell off the bus with no Xid is counted
// on its own (real kernel logs of both kinds).
func TestXidRecentCountsFallenOffBusOnce(t *testing.T) {
	for file, want := range map[string]string{
		"rtx5090-xid79-fallen-off-bus-gsp-rc-no-timestamps.txt": "1 hardware Xid event(s)",
		"fallen-off-bus-no-xid-multiline-drv570.txt":            "1 GPU(s) fallen off the bus without an Xid",
	} {
		data, err := os.ReadFile("../testdata/fixtures/dmesg-xid/" + file)
		if err != nil {
			t.Fatal(err)
		}
		k, err := parse.ParseDmesgXid(string(data))
		if err != nil {
			t.Fatal(err)
		}
		v := JudgeOutput("dmesg-xid", Read("dmesg", "dmesg-xid", CommandResult{}, k, nil))["xid-recent"]
		if v.Status != Fail || !strings.HasPrefix(v.Summary, want) {
			t.Errorf("%s: %s %q, want FAIL %q", file, v.Status, v.Summary, want)
		}
	}
}

// NCCL_IB_HCA against a real `rdma link` output: prefixes, '=' exact,
// ports, '^' exclusion, a name that matches nothing, a device that is down.
func TestNCCLEnvRule(t *testing.T) {
	data, err := os.ReadFile("../testdata/fixtures/rdma-link/moc-gpu-node-roce-6links-trailing-space.txt")
	if err != nil {
		t.Fatal(err)
	}
	links, _ := parse.ParseRdmaLink(string(data))
	for _, tc := range []struct{ hca, want string }{
		{"mlx5_2,mlx5_3:1", "PASS NCCL_IB_HCA name devices that are up"},
		{"mlx5", "PASS NCCL_IB_HCA name devices that are up"},
		{"^mlx5_0", "PASS NCCL_IB_HCA name devices that are up"},
		{"=mlx5", `FAIL NCCL_IB_HCA==mlx5: no device "mlx5" on this host`},
		{"mlx5_2,mlx4_0", `FAIL NCCL_IB_HCA=mlx5_2,mlx4_0: no device "mlx4_0" on this host`},
		{"mlx5_0", "FAIL NCCL_IB_HCA=mlx5_0: mlx5_0 is not up"},
	} {
		n := &parse.NCCL{Env: map[string]string{"NCCL_IB_HCA": tc.hca}}
		v := ncclEnv([]Input{{Step: "nccl", Value: n}, {Step: "rdma", Value: links}, {Step: "links", Value: []parse.Link{}}}, nil)
		if got := string(v.Status) + " " + v.Summary; !strings.HasPrefix(got, tc.want) {
			t.Errorf("NCCL_IB_HCA=%s: %s, want %s", tc.hca, got, tc.want)
		}
	}
}

// A rule that judges a failed command itself (ran, driver-loaded) says
// FAIL only for a command that ran on the host and exited non-zero
// (output-matches says UNKNOWN for that too); a host never reached, a connection lost, a timeout, a
// stopped run or a step refused before it ran are no evidence: UNKNOWN,
// with the way to the evidence.
func TestFailureRulesNeedACommandThatRan(t *testing.T) {
	checks := []Check{
		{ID: "ran", Rule: "ran", Uses: []string{"s"}},
		{ID: "match", Rule: "output-matches", Uses: []string{"s"}, With: map[string]any{"pattern": "^ok$"}},
		{ID: "driver", Rule: "driver-loaded", Uses: []string{"s"}},
	}
	for _, tc := range []struct {
		in   Input
		want Status
	}{
		{Input{Step: "s", Class: orchestrator.Exit, ExitCode: 9, Problem: "exited 9: NVIDIA-SMI has failed"}, Fail},
		{Input{Step: "s", Class: orchestrator.Unreachable, ExitCode: -1, Problem: "did not run: host unreachable"}, Unknown},
		{Input{Step: "s", Class: orchestrator.Error, ExitCode: -1, Problem: "did not run: host error (ssh_config line 3)"}, Unknown},
		{Input{Step: "s", Class: orchestrator.Lost, ExitCode: -1, Problem: "lost: connection reset"}, Unknown},
		{Input{Step: "s", Class: orchestrator.TimeoutCommand, ExitCode: -1, Problem: "timeout: 60s"}, Unknown},
		{Input{Step: "s", Class: orchestrator.Cancelled, ExitCode: -1, Problem: "was skipped (dangerous, not confirmed)"}, Unknown},
	} {
		for _, c := range checks {
			v := Judge(c, []Input{tc.in})
			want := tc.want
			if c.Rule == "output-matches" && tc.in.Class == orchestrator.Exit {
				// What a failed command printed, or did not, is no
				// evidence of what is there (a command whose silence is
				// the answer ends in "; true").
				want = Unknown
				if !strings.Contains(v.Summary, "no evidence either way") {
					t.Errorf("output-matches on a failed command: %q", v.Summary)
				}
				if v.Status == want {
					continue
				}
			}
			if v.Status != want {
				t.Errorf("%s on a %s step: %s %q, want %s", c.Rule, tc.in.Class, v.Status, v.Summary, want)
			}
			if want == Unknown && (v.Hint == "" || !strings.HasPrefix(v.Summary, "no evidence")) {
				t.Errorf("%s on a %s step: UNKNOWN %q with hint %q: want \"no evidence\" and a way to it", c.Rule, tc.in.Class, v.Summary, v.Hint)
			}
		}
	}
}

// TestUnreadOutputIsNoEvidence gives every rule what its parser makes of
// output that is not its command's (empty, an error message, a shell's
// complaint): where the parser says so, no rule may judge its zero value
// (no Xid, no link, nothing pending) as a PASS or a FAIL.
func TestUnreadOutputIsNoEvidence(t *testing.T) {
	junk := []string{"", "error: You must be logged in to the server (Unauthorized)\n", "bash: line 1: rdma: command not found\n", "\x00\x01garbage\n"}
	judged := 0
	for _, name := range RuleNames() {
		r, _ := LookupRule(name)
		if len(r.Inputs) != 1 || r.Inputs[0] == "*" || r.Inputs[0] == ProbeInput {
			continue // the probe's snapshot is decoded by remote.Decode, not a parser
		}
		k, ok := parse.Lookup(r.Inputs[0])
		if !ok {
			t.Fatalf("rule %s reads parser %q, which does not exist", name, r.Inputs[0])
		}
		for _, out := range junk {
			v, err := k.Parse(out)
			if err == nil {
				continue // the parser takes it as its command's output; its rules judge it
			}
			judged++
			got := Judge(Check{ID: name, Rule: name, Uses: []string{"s"}}, []Input{{Step: "s", Ran: true, Output: out, Class: orchestrator.OK, Value: v, ParseErr: err}})
			if got.Status != Unknown || !strings.HasPrefix(got.Summary, "no evidence") || got.Hint == "" {
				t.Errorf("rule %s on %q (%s: %v): %s %q hint %q, want UNKNOWN, no evidence, with a way to it", name, out, r.Inputs[0], err, got.Status, got.Summary, got.Hint)
			}
		}
	}
	if judged < 20 {
		t.Fatalf("only %d rule/output pairs judged: the sweep lost its rules or parsers", judged)
	}
}

// meshAndBrokenMesh is a real 8-GPU NV12 full mesh (a fixture) and the
// same mesh with the GPU3–GPU5 link down.
func meshAndBrokenMesh(t *testing.T) (good, broken *parse.Topo) {
	t.Helper()
	text, err := os.ReadFile("../testdata/fixtures/nvidia-smi-topo-m/a100-8gpu-nv12-17nic-mlx5-bond.txt")
	if err != nil {
		t.Fatal(err)
	}
	good, err = parse.ParseTopo(string(text))
	if err != nil {
		t.Fatal(err)
	}
	b := *good
	b.Links = map[string]map[string]string{}
	for a, row := range good.Links {
		b.Links[a] = maps.Clone(row)
	}
	b.Links["GPU3"]["GPU5"], b.Links["GPU5"]["GPU3"] = "SYS", "SYS"
	return good, &b
}

// TestPartlyReadOutputDoesNotPass: a rule that passes on the part of an
// output its parser could read says UNKNOWN (the rest could hold the
// failure); a failure it found in that part stands, saying what was not read.
func TestPartlyReadOutputDoesNotPass(t *testing.T) {
	good, broken := meshAndBrokenMesh(t)
	c := Check{ID: "mesh", Rule: "nvlink-mesh", Uses: []string{"topo"}}
	whole := Judge(c, []Input{{Step: "topo", Ran: true, Value: good}})
	if whole.Status != Pass {
		t.Fatalf("the whole output: %s %q, want PASS (the fixture is a full mesh)", whole.Status, whole.Summary)
	}
	lost := errors.New("line 12: line not understood: \"GPU8\\tX\"")
	part := Judge(c, []Input{{Step: "topo", Ran: true, Value: good, ParseErr: lost}})
	if part.Status != Unknown || !strings.Contains(part.Summary, "could not be read") || !strings.Contains(part.Summary, "line 12") {
		t.Errorf("part of the output: %s %q, want UNKNOWN naming what was not read", part.Status, part.Summary)
	}
	fail := Judge(c, []Input{{Step: "topo", Ran: true, Value: broken, ParseErr: lost}})
	if fail.Status != Fail || !slices.ContainsFunc(fail.Evidence, func(e Evidence) bool { return strings.Contains(e.Fact, "could not be read") }) {
		t.Errorf("a failure in the part read: %s %q %+v, want FAIL with the unread part in its evidence", fail.Status, fail.Summary, fail.Evidence)
	}
}

// TestCutOutputDoesNotPass: output cut at the limit is read only to the
// cut; what passed on its beginning is UNKNOWN (the Xid could come after
// 16 MiB of harmless lines), what failed on it still fails.
func TestCutOutputDoesNotPass(t *testing.T) {
	good, broken := meshAndBrokenMesh(t)
	c := Check{ID: "mesh", Rule: "nvlink-mesh", Uses: []string{"topo"}}
	const cut = "stdout cut at 16.0 MiB of 17.0 MiB"
	v := Judge(c, []Input{{Step: "topo", Ran: true, Value: good, Cut: cut}})
	if v.Status != Unknown || !strings.Contains(v.Summary, "cut at the limit ("+cut+")") || !strings.Contains(v.Summary, "holds only for the part read") {
		t.Errorf("a cut output: %s %q, want UNKNOWN saying it was cut", v.Status, v.Summary)
	}
	if v := Judge(c, []Input{{Step: "topo", Ran: true, Value: broken, Cut: cut}}); v.Status != Fail {
		t.Errorf("a failure in the part kept: %s %q, want FAIL", v.Status, v.Summary)
	}
	// A pattern not found in the part kept may be in the part cut: no
	// FAIL for its absence; a match in the part kept still passes.
	m := Check{ID: "m", Rule: "output-matches", Uses: []string{"s"}, With: map[string]any{"pattern": "^ALL-LINKS-VERIFIED$"}}
	if v := Judge(m, []Input{{Step: "s", Ran: true, Output: "link 1 ok\n", Cut: cut}}); v.Status != Unknown || !strings.Contains(v.Summary, "in the part kept") {
		t.Errorf("no match in a cut output: %s %q, want UNKNOWN (the match may be in the part cut)", v.Status, v.Summary)
	}
}

// TestOutputMatchesNeedsACommandThatSucceeded: the pattern in the output of
// a command that failed is no PASS; a pattern that matches the empty
// string (it would pass on any output) is refused before any run.
func TestOutputMatchesNeedsACommandThatSucceeded(t *testing.T) {
	c := Check{ID: "m", Rule: "output-matches", Uses: []string{"s"}, With: map[string]any{"pattern": "links up"}}
	v := Judge(c, []Input{{Step: "s", Output: "4 links up\nerror: link 5 timed out\n", Class: orchestrator.Exit, ExitCode: 1, Problem: "exited 1"}})
	if v.Status != Unknown || !strings.Contains(v.Summary, "exited 1") {
		t.Errorf("match in a failed command's output: %s %q, want UNKNOWN saying it exited 1", v.Status, v.Summary)
	}
	if v := Judge(c, []Input{{Step: "s", Ran: true, Output: "4 links up\n", Class: orchestrator.OK}}); v.Status != Pass || v.Evidence[0].Line != 1 {
		t.Errorf("match in a command that succeeded: %s %q %+v, want PASS at line 1", v.Status, v.Summary, v.Evidence)
	}
	if v := Judge(c, []Input{{Step: "s", Output: "The connection to the server 127.0.0.1:6443 was refused\n", Class: orchestrator.Exit, ExitCode: 1, Problem: "exited 1"}}); v.Status != Unknown || !strings.Contains(v.Summary, "no evidence either way") {
		t.Errorf("no match in a failed command's output: %s %q, want UNKNOWN (the command said nothing of what is there)", v.Status, v.Summary)
	}
	r, _ := LookupRule("output-matches")
	for _, with := range []map[string]any{{}, {"pattern": ""}, {"pattern": "x*"}, {"pattern": "^"}, {"pattern": "(a|)"}, {"pattern": "("}, {"pattern": "ok", "absent": "PASS"}} {
		if err := r.CheckWith(with); err == nil {
			t.Errorf("with %v accepted, want refused", with)
		}
	}
	if err := r.CheckWith(map[string]any{"pattern": "^ok$", "absent": "WARN"}); err != nil {
		t.Errorf("a sound pattern refused: %v", err)
	}
}

// TestUnreadGPUsAreNotHealthy: a GPU with ECC on whose counter reads N/A,
// and a GPU whose CPU affinity reads N/A or names CPUs numactl did not
// list, are GPUs whose state is not known: the check is UNKNOWN, never a
// PASS that counts them as "ECC off" or "local".
func TestUnreadGPUsAreNotHealthy(t *testing.T) {
	on, off := "Enabled", "Disabled"
	q := &parse.Query{GPUs: []parse.QueryGPU{
		{BusID: "00000000:07:00.0", ECCCurrent: &on, Fields: map[string]string{"ECC Errors/Volatile/DRAM Uncorrectable": "0"}},
		{BusID: "00000000:0F:00.0", ECCCurrent: &on, Fields: map[string]string{"ECC Errors/Volatile/DRAM Uncorrectable": "N/A"}},
	}}
	ecc := Check{ID: "ecc", Rule: "ecc-uncorrected", Uses: []string{"q"}}
	if v := Judge(ecc, []Input{{Step: "q", Ran: true, Value: q}}); v.Status != Unknown || !strings.Contains(v.Summary, "could not be read") {
		t.Errorf("ECC on, counter N/A: %s %q, want UNKNOWN", v.Status, v.Summary)
	}
	q.GPUs[1].ECCCurrent = &off
	if v := Judge(ecc, []Input{{Step: "q", Ran: true, Value: q}}); v.Status != Pass {
		t.Errorf("ECC off, counter N/A: %s %q, want PASS (nothing to count)", v.Status, v.Summary)
	}

	// Every uncorrectable count counts: SRAM as much as DRAM; a GPU
	// without its ECC mode printed and a counter N/A is not "ECC off".
	for _, tc := range []struct {
		name   string
		fields map[string]string
		ecc    *string
		want   Status
	}{
		{"SRAM uncorrectable", map[string]string{"ECC Errors/Volatile/DRAM Uncorrectable": "0", "ECC Errors/Volatile/SRAM Uncorrectable": "5"}, &on, Fail},
		{"SRAM N/A with ECC on", map[string]string{"ECC Errors/Volatile/DRAM Uncorrectable": "0", "ECC Errors/Volatile/SRAM Uncorrectable": "N/A"}, &on, Unknown},
		{"no ECC mode printed, counter N/A", map[string]string{"ECC Errors/Volatile/DRAM Uncorrectable": "N/A"}, nil, Unknown},
		{"a GPU without ECC", map[string]string{"ECC Mode/Current": "N/A", "ECC Errors/Volatile/DRAM Uncorrectable": "N/A"}, nil, Unknown}, // nothing counted at all
		{"older driver, double bit total", map[string]string{"ECC Errors/Volatile/Double Bit/Total": "0"}, &on, Pass},
		{"newer driver, SRAM split", map[string]string{"ECC Errors/Volatile/DRAM Uncorrectable": "0", "ECC Errors/Volatile/SRAM Uncorrectable Parity": "0", "ECC Errors/Volatile/SRAM Uncorrectable SEC-DED": "2"}, &on, Fail},
		{"SRAM printed, DRAM not (cut)", map[string]string{"ECC Errors/Volatile/SRAM Uncorrectable": "0"}, &on, Unknown},
	} {
		q := &parse.Query{GPUs: []parse.QueryGPU{{BusID: "00000000:07:00.0", ECCCurrent: tc.ecc, Fields: tc.fields}}}
		if v := Judge(ecc, []Input{{Step: "q", Ran: true, Value: q}}); v.Status != tc.want {
			t.Errorf("%s: %s %q, want %s", tc.name, v.Status, v.Summary, tc.want)
		}
	}

	aff := Check{ID: "aff", Rule: "affinity-numa", Uses: []string{"topo", "numa"}}
	two := &parse.NUMA{Nodes: []parse.NUMANode{{Node: 0, CPUs: []int{0, 1, 2, 3}}, {Node: 1, CPUs: []int{4, 5, 6, 7}}}}
	topo := func(affinity ...string) *parse.Topo {
		t := &parse.Topo{}
		for i, a := range affinity {
			g := parse.TopoGPU{Name: fmt.Sprintf("GPU%d", i)}
			if a != "N/A" {
				g.CPUAffinity = &a
			}
			t.GPUs = append(t.GPUs, g)
		}
		return t
	}
	for _, tc := range []struct {
		name string
		topo *parse.Topo
		numa *parse.NUMA
		want Status
	}{
		{"every GPU local", topo("0-3", "4-7"), two, Pass},
		{"one affinity N/A", topo("0-3", "N/A"), two, Unknown},
		{"CPUs in no node listed (numactl cut)", topo("0-3", "4-7,12-15"), two, Unknown},
		{"a GPU spanning nodes", topo("0-5", "N/A"), two, Warn},
		{"one node, affinity N/A", topo("N/A"), &parse.NUMA{Nodes: two.Nodes[:1]}, Pass},
	} {
		if v := Judge(aff, []Input{{Step: "topo", Ran: true, Value: tc.topo}, {Step: "numa", Ran: true, Value: tc.numa}}); v.Status != tc.want {
			t.Errorf("%s: %s %q, want %s", tc.name, v.Status, v.Summary, tc.want)
		}
	}
}

// TestDamagedTopologyRowIsNoLinkDown: a row of the matrix cut short in the
// middle of the output (not only its last line), or with a cell lost, was
// read as a GPU with few links: "GPU3: 2 NVLink peers (NVLink down)", a
// false FAIL. Its links were never read: the mesh is UNKNOWN.
func TestDamagedTopologyRowIsNoLinkDown(t *testing.T) {
	text, err := os.ReadFile("../testdata/fixtures/nvidia-smi-topo-m/hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt")
	if err != nil {
		t.Fatal(err)
	}
	gpu3 := regexp.MustCompile(`(?m)^GPU3\s.*$`)
	row := gpu3.FindString(string(text))
	f := strings.Fields(row)
	for name, damaged := range map[string]string{
		"cut mid-row":  "GPU3    NV12    NV12    ",
		"a cell lost":  strings.Join(append(slices.Clone(f[:3]), f[4:]...), "\t"),
		"a cell blank": strings.Replace(row, f[2], "", 1),
	} {
		topo, perr := parse.ParseTopo(gpu3.ReplaceAllLiteralString(string(text), damaged))
		if perr == nil {
			t.Fatalf("%s: the parser did not notice", name)
		}
		v := Judge(Check{ID: "mesh", Rule: "nvlink-mesh", Uses: []string{"topo"}}, []Input{Read("topo", "nvidia-smi-topo", CommandResult{}, topo, perr)})
		if v.Status != Unknown {
			t.Errorf("%s: %s %q, want UNKNOWN (the row's links were never read)", name, v.Status, v.Summary)
		}
	}
}

// TestCutLastGPUSectionIsNoHealth: nvidia-smi -q cut inside its last GPU's
// ECC block (GPU 8's DRAM count never printed) read as "no uncorrectable
// ECC error". The parser says the last section ended early, and no check
// passes on it.
func TestCutLastGPUSectionIsNoHealth(t *testing.T) {
	text, err := os.ReadFile("../testdata/fixtures/nvidia-smi-q/a100-sxm4-40gb-8gpu-drv535-full-a.txt")
	if err != nil {
		t.Fatal(err)
	}
	full := string(text)
	if _, err := parse.ParseQuery(full); err != nil {
		t.Fatalf("the whole output: %v", err)
	}
	cut := full[:strings.LastIndex(full, "DRAM Uncorrectable")]
	q, perr := parse.ParseQuery(cut)
	if perr == nil || !strings.Contains(perr.Error(), "the output was cut") {
		t.Fatalf("cut in the last GPU's section: %v, want the cut said", perr)
	}
	for _, rule := range []string{"ecc-uncorrected", "remapped-rows", "pcie-width"} {
		v := Judge(Check{ID: rule, Rule: rule, Uses: []string{"q"}}, []Input{Read("q", "nvidia-smi-q", CommandResult{}, q, perr)})
		if v.Status == Pass {
			t.Errorf("%s on a cut output: PASS %q", rule, v.Summary)
		}
	}
}

// TestCheckWithRefusesWhatARuleDoesNotRead: a with table the rule would
// ignore (a typo, an array for a string, a key on a rule that reads none)
// is refused at load, for the check would pass without demanding it.
func TestCheckWithRefusesWhatARuleDoesNotRead(t *testing.T) {
	for _, c := range []struct {
		rule string
		with map[string]any
		says string
	}{
		{"mig-expected", map[string]any{"expected": "7g.40gb"}, "reads no with.expected"},
		{"mig-expected", map[string]any{"expect": []any{"3g.20gb", "3g.20gb"}}, "is an array, want a string"},
		{"mig-expected", map[string]any{"expect": "3g.20gb,,1g.5gb"}, "empty profile"},
		{"nvlink-mesh", map[string]any{"expect": int64(12)}, "is a number"},
		{"nvlink-mesh", map[string]any{"expects": "NV18"}, "reads no with.expects"},
		{"nvlink-mesh", map[string]any{"expect": "12"}, "not an NVLink code"},
		{"ran", map[string]any{"pattern": "ok"}, "reads no with table"},
		{"node-allocatable", map[string]any{"resource": true}, "is a boolean"},
	} {
		err := CheckWith(c.rule, c.with)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s with %v: %v, want refused saying %q", c.rule, c.with, err, c.says)
		}
	}
	for _, c := range []struct {
		rule string
		with map[string]any
	}{
		{"mig-expected", map[string]any{"expect": "3g.20gb,3g.20gb"}},
		{"nvlink-mesh", map[string]any{"expect": "NV12"}},
		{"ran", nil},
		{"output-matches", map[string]any{"pattern": "nvidia", "absent": "WARN"}},
		{"node-allocatable", map[string]any{"resource": "nvidia.com/gpu"}},
	} {
		if err := CheckWith(c.rule, c.with); err != nil {
			t.Errorf("%s with %v refused: %v", c.rule, c.with, err)
		}
	}
}

// TestFailedSchedulingInWordsIsNoPass: a FailedScheduling event whose
// message is not in the "0/N nodes are available" shape is a pod that
// waits all the same.
func TestFailedSchedulingInWordsIsNoPass(t *testing.T) {
	text := `LAST SEEN   TYPE      REASON             OBJECT        MESSAGE
2m          Warning   FailedScheduling   pod/train-0   running PreFilter plugin "VolumeBinding": persistentvolumeclaim "data" not found
1m          Warning   FailedScheduling   pod/train-1   pod has unbound immediate PersistentVolumeClaims. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.
30s         Warning   FailedScheduling   pod/old       skip schedule deleting pod: default/old
`
	evs, err := parse.ParseGetEvents(text)
	if err != nil {
		t.Fatal(err)
	}
	v := Judge(Check{ID: "pending", Rule: "pending-reasons"}, []Input{{Step: "events", Ran: true, Class: orchestrator.OK, Value: evs}})
	if v.Status != Fail || !strings.Contains(v.Summary, "2 FailedScheduling") || len(v.Evidence) != 2 {
		t.Errorf("%s %q %v, want FAIL naming the 2 events that keep pods waiting", v.Status, v.Summary, v.Evidence)
	}
	evs, _ = parse.ParseGetEvents("LAST SEEN   TYPE      REASON             OBJECT        MESSAGE\n30s         Warning   FailedScheduling   pod/old       skip schedule deleting pod: default/old\n")
	if v := Judge(Check{ID: "pending", Rule: "pending-reasons"}, []Input{{Step: "events", Ran: true, Class: orchestrator.OK, Value: evs}}); v.Status != Pass {
		t.Errorf("a pod skipped as it was deleted: %s %q, want PASS", v.Status, v.Summary)
	}
}

// TestNCCLEnvNeedsAnInfoLog: a log that shows no NCCL initialisation
// (NCCL_DEBUG=VERSION prints the version alone) says nothing of the
// environment.
func TestNCCLEnvNeedsAnInfoLog(t *testing.T) {
	n, err := parse.ParseNCCL("node1:1234:1234 [0] NCCL INFO NCCL version 2.19.3+cuda12.3\n")
	if err != nil {
		t.Fatal(err)
	}
	in := []Input{{Step: "log", Ran: true, Class: orchestrator.OK, Value: n}, {Step: "rdma", Ran: true, Class: orchestrator.OK, Value: []parse.RdmaLink{}}, {Step: "ip", Ran: true, Class: orchestrator.OK, Value: []parse.Link{}}}
	if v := Judge(Check{ID: "env", Rule: "nccl-env"}, in); v.Status != Unknown {
		t.Errorf("a version-only log: %s %q, want UNKNOWN", v.Status, v.Summary)
	}
}

// TestNoNvidiaSMIIsNotAFallenGPU: exit 127 (command not found) says the
// driver is not installed, with its own hint, not the module-or-bus advice.
func TestNoNvidiaSMIIsNotAFallenGPU(t *testing.T) {
	c := Check{ID: "driver", Rule: "driver-loaded", Hint: "the kernel module is not loaded or the GPU fell off the bus"}
	v := Judge(c, []Input{{Step: "smi", Class: orchestrator.Exit, ExitCode: 127, Output: "bash: line 1: nvidia-smi: command not found\n", Problem: "exited 127"}})
	if v.Status != Fail || !strings.Contains(v.Summary, "not installed") || strings.Contains(v.Hint, "fell off the bus") {
		t.Errorf("exit 127: %s %q hint %q, want FAIL saying nvidia-smi is not installed, with its own hint", v.Status, v.Summary, v.Hint)
	}
	v = Judge(c, []Input{{Step: "smi", Class: orchestrator.Exit, ExitCode: 9, Output: "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", Problem: "exited 9"}})
	if v.Status != Fail || !strings.Contains(v.Hint, "fell off the bus") {
		t.Errorf("exit 9: %s %q hint %q, want FAIL with the module-or-bus hint", v.Status, v.Summary, v.Hint)
	}
}

// Xid 63 announces a row remap the driver recorded (NVIDIA: IGNORE,
// IGNORE): the remapped-rows check judges the remap's state, so the Xid
// check passes and names it in its evidence (a real A100 kernel log); a
// catalog code beside it still counts.
func TestXidRecentLeavesRowRemapsToTheirCheck(t *testing.T) {
	data, err := os.ReadFile("../testdata/fixtures/dmesg-xid/xid63-row-remapper-a100.txt")
	if err != nil {
		t.Fatal(err)
	}
	k, err := parse.ParseDmesgXid(string(data))
	if err != nil {
		t.Fatal(err)
	}
	v := JudgeOutput("dmesg-xid", Read("dmesg", "dmesg-xid", CommandResult{}, k, nil))["xid-recent"]
	if v.Status != Pass || !strings.Contains(v.Summary, "1 row remap record(s) (Xid 63)") || len(v.Evidence) == 0 ||
		!strings.Contains(v.Evidence[0].Fact, "remapped-rows check judges") {
		t.Errorf("Xid 63 alone: %s %q %+v, want PASS naming the remap", v.Status, v.Summary, v.Evidence)
	}
	k2, _ := parse.ParseDmesgXid(string(data) + "\nNVRM: Xid (PCI:0000:10:1c): 109, pid=1, Ch 00000008, errorString CTX SWITCH TIMEOUT\n")
	if v := JudgeOutput("dmesg-xid", Read("dmesg", "dmesg-xid", CommandResult{}, k2, nil))["xid-recent"]; v.Status != Fail || !strings.HasPrefix(v.Summary, "1 hardware Xid event(s)") {
		t.Errorf("Xid 63 and 109: %s %q, want FAIL for the 109 (NVIDIA: RESET_GPU)", v.Status, v.Summary)
	}
}
