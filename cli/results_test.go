package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpulab/gpulab/labs"
)

// results compare: every row of a multi-host baseline is marked; a run
// compared with itself (by any of its names) is refused; one argument
// gets an error that says what the arguments are. results list --lab
// with a typo offers the lab it probably meant.
func TestResultsCompareAndLabQuery(t *testing.T) {
	results := t.TempDir()
	env := noEnv(t)
	env["GPULAB_RESULTS"] = results
	var dirs []string
	for i, hosts := range [][]string{{"gpu01", "gpu02"}, {"gpu01", "gpu02"}} {
		r := &labs.Record{Schema: labs.RecordSchema, Lab: []string{"exclusive-baseline", "mig-isolation"}[i], Complete: true, Passed: true,
			Started: time.Date(2026, 11, 29, 10, i, 0, 0, time.UTC), Result: labs.ResultRow{P99: "p99"}}
		for j, h := range hosts {
			r.Hosts = append(r.Hosts, labs.HostRecord{Host: h, Passed: true, Metrics: map[string]any{"p99": float64(100 * (i + 1) * (j + 1))}})
		}
		dir := r.Dir(results)
		if err := r.Write(dir, ""); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	r := run(t, env, "results", "compare", dirs[0], dirs[1])
	t.Logf("\n%s", r.stdout)
	if n := strings.Count(r.stdout, "(baseline)"); r.code != 0 || n != 2 {
		t.Errorf("compare: exit %d, %d rows marked (baseline), want 0 and 2:\n%s%s", r.code, n, r.stdout, r.stderr)
	}
	// Each row says its run, first: two runs of one lab read the same
	// but for it.
	if !strings.HasPrefix(r.stdout, "RUN ") || !strings.Contains(r.stdout, "\n20261129-100000 (baseline)  exclusive-baseline") || !regexp.MustCompile(`\n20261129-100100 +mig-isolation`).MatchString(r.stdout) {
		t.Errorf("compare's rows do not start with their run:\n%s", r.stdout)
	}
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.Contains(l, "mig-isolation") && !strings.Contains(l, "  2  ") {
			t.Errorf("a row of the run is not compared with the baseline's same host (coefficient 2): %s", l)
		}
	}

	rel, _ := filepath.Rel(results, dirs[1])
	for _, same := range [][]string{{dirs[1], dirs[1]}, {dirs[1], rel}, {dirs[0], dirs[1], filepath.Base(dirs[1]) + string(os.PathSeparator)}} {
		r := run(t, env, append([]string{"results", "compare"}, same...)...)
		r.expect(t, 2, "", "are the same run, "+dirs[1]+": compare a run with another, not with itself")
		if r.stdout != "" {
			t.Errorf("compare %v printed a table:\n%s", same, r.stdout)
		}
	}
	svg := filepath.Join(t.TempDir(), "charts")
	run(t, env, "results", "compare", dirs[0], dirs[0], "--svg", svg).expect(t, 2, "", "not with itself")
	if _, err := os.Stat(svg); !os.IsNotExist(err) {
		t.Errorf("a refused comparison drew its charts: %v", err)
	}
	r = run(t, env, "results", "compare", rel)
	r.expect(t, 2, "", "results compare: want a BASELINE record and at least one RUN to compare with it, got the baseline '"+rel+"' alone")
	r.expect(t, 2, "", "e.g. gpulab results compare exclusive-baseline/")
	r.expect(t, 2, "", "gpulab results list shows the runs")
	run(t, env, "results", "compare").expect(t, 2, "", "got no record")

	run(t, env, "results", "list", "--lab", "mig-isolaton").expect(t, 2, "", `--lab "mig-isolaton": no lab has that ID: did you mean "mig-isolation"?`)
	run(t, env, "results", "list", "--lab", "chartlb").expect(t, 2, "", `--lab "chartlb": no lab has that ID: the labs are exclusive-baseline, hami-sharing,`)
	// A lab with no record yet, or a record of a lab gpulab no longer
	// has: not a typo.
	run(t, env, "results", "list", "--lab", "health-gate").expect(t, 0, "no lab record in "+results+" matches the query", "")
	r = run(t, env, "results", "list", "--lab", "mig-isolation")
	r.expect(t, 0, "mig-isolation", "")
}
