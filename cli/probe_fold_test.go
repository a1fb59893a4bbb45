package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/probes/report"
)

// The folded probe output on outliers the simulated machine cannot show
// by its faults: a GPU missing (one fell off the bus) and another driver.
// The snapshots are a real probe run's (--local --mock dgxa100), edited.
func TestProbeFoldOutliers(t *testing.T) {
	r := run(t, noEnv(t), "probe", "--local", "--mock", "dgxa100", "--json")
	base, err := probeJSON(r.stdout)
	if err != nil || r.code != 0 || len(base) != 1 || base[0].Snapshot == nil {
		t.Fatalf("probe --local --mock dgxa100 --json: exit %d, %v\n%s", r.code, err, r.stderr)
	}
	snap := func(edit func(*report.Snapshot)) *report.Snapshot {
		var s report.Snapshot
		data, _ := json.Marshal(base[0].Snapshot)
		json.Unmarshal(data, &s)
		if edit != nil {
			edit(&s)
		}
		return &s
	}
	var results []app.ProbeResult
	for _, h := range []string{"n1", "n2", "n3", "n4", "n5"} {
		results = append(results, app.ProbeResult{Host: h, Class: "ok", Snapshot: snap(nil)})
	}
	results[1].Snapshot = snap(func(s *report.Snapshot) {
		s.GPUs = s.GPUs[:7]
		var topo []report.TopoLink
		for _, l := range s.Topology {
			if l.A != 7 && l.B != 7 {
				topo = append(topo, l)
			}
		}
		s.Topology = topo
	})
	results[3].Snapshot = snap(func(s *report.Snapshot) { s.DriverVersion = "550.54.15" })
	// Hosts that gave no snapshot fold by class, their errors under them.
	results = append(results, app.ProbeResult{Host: "n6", Class: "auth", Error: "dial 10.0.0.6:22: authentication as ops failed"},
		app.ProbeResult{Host: "n7", Class: "auth", Error: "dial 10.0.0.7:22: authentication as ops failed"})
	var out bytes.Buffer
	if err := printProbes(&out, results, true); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	t.Logf("\n%s", got)
	for _, want := range []string{
		"\n---------------- n[1,3,5] (3 hosts)\ndriver ",
		"\n---------------- n2 (1 host): differs from n[1,3,5]\n",
		"\n---------------- n4 (1 host): differs from n[1,3,5]\n",
		"\n+ driver 550.54.15, ",
		"\nn[6-7]: auth\n  n6: dial 10.0.0.6:22: authentication as ops failed\n  n7: dial 10.0.0.7:22: authentication as ops failed\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("folded output lacks %q", want)
		}
	}
	// n4's driver and n2's missing GPU are the fleet's drift; n2's bus
	// still holds the GPU NVML lost: flagged for it.
	if total := probeTotal(results); total != "7 hosts: 4 ok, 1 flagged (n2), 2 failed: 2 auth (n[6-7]), drift in driver (n4), GPUs (n2)" {
		t.Errorf("the hosts counted: %q", total)
	}
	n2 := got[strings.Index(got, "n2 (1 host)"):strings.Index(got, "n4 (1 host)")]
	if !strings.Contains(n2, "\n- 7 ") || strings.Count(n2, "\n+") != 1 || !strings.Contains(n2, "\n+ finding: 8 NVIDIA GPU(s) on the PCI bus, NVML sees 7 (action: reboot)\n") || strings.Contains(n2, "\n- 6 ") {
		t.Errorf("n2's diff should remove GPU 7's row and add the bus's finding only:\n%s", n2)
	}
	n4 := got[strings.Index(got, "n4 (1 host)"):]
	if strings.Count(n4, "\n-") != 1 || strings.Count(n4, "\n+") != 1 {
		t.Errorf("n4's diff should change the driver line only:\n%s", n4)
	}
}

// BenchmarkProbeFold1000 folds 1,000 hosts' snapshots, ten of them with an
// NVLink down (one group of outliers, one diff).
func BenchmarkProbeFold1000(b *testing.B) {
	var env = map[string]string{"HOME": b.TempDir()}
	var out, errOut bytes.Buffer
	if code := Main([]string{"probe", "--local", "--mock", "dgxa100", "--json"}, Env{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return env[k] }}); code != 0 {
		b.Fatalf("probe --local: exit %d: %s", code, errOut.String())
	}
	base, err := probeJSON(out.String())
	if err != nil {
		b.Fatal(err)
	}
	results := make([]app.ProbeResult, 1000)
	for i := range results {
		var s report.Snapshot
		data, _ := json.Marshal(base[0].Snapshot)
		json.Unmarshal(data, &s)
		if i%100 == 7 {
			s.GPUs[0].NVLinks[0].Active = false
		}
		results[i] = app.ProbeResult{Host: fmt.Sprintf("gpu%04d", i+1), Class: "ok", Snapshot: &s}
	}
	for b.Loop() {
		if err := printProbes(io.Discard, results, true); err != nil {
			b.Fatal(err)
		}
	}
}
