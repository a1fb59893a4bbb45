package parse

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixtureIndex reads testdata/fixtures/INDEX.tsv and the indexes of its
// folders (workloads/INDEX.tsv): file → hardware, source.
func fixtureIndex(t *testing.T) map[string][2]string {
	ix := map[string][2]string{}
	indexes, _ := filepath.Glob(filepath.Join(fixtures, "*", "INDEX.tsv"))
	for _, index := range append([]string{filepath.Join(fixtures, "INDEX.tsv")}, indexes...) {
		data, err := os.ReadFile(index)
		if err != nil {
			t.Fatal(err)
		}
		prefix, _ := filepath.Rel(fixtures, filepath.Dir(index))
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n")[1:] {
			f := strings.Split(line, "\t")
			if len(f) >= 4 {
				ix[filepath.ToSlash(filepath.Join(prefix, f[0]))] = [2]string{f[2], f[3]}
			}
		}
	}
	return ix
}

// exampleFor picks a kind's example: of its fixtures that are in the
// index and parse without a problem, the one with the shortest output
// that still fills every list it has (the first by name among equals).
func exampleFor(t *testing.T, k Kind, ix map[string][2]string) (Example, bool) {
	var best Example
	var bestEmpty int
	found := false
	for _, dir := range k.Fixtures {
		files, _ := filepath.Glob(filepath.Join(fixtures, dir, "*"))
		for _, f := range files {
			rel := dir + "/" + filepath.Base(f)
			meta, indexed := ix[rel]
			if !indexed {
				continue
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			v, perr := k.Parse(string(data))
			if perr != nil {
				continue
			}
			raw, err := json.MarshalIndent(v, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			empty := bytes.Count(raw, []byte("[]")) + bytes.Count(raw, []byte("null"))
			if !found || empty < bestEmpty || empty == bestEmpty && len(raw) < len(best.Value) {
				best, bestEmpty, found = Example{Fixture: rel, Hardware: meta[0], Source: meta[1], Value: raw}, empty, true
			}
		}
	}
	return best, found
}

// TestExamplesAreCurrent: every kind has an example from a real, indexed
// fixture, and it is what the parser makes of that fixture today
// (go test ./step/parse -update rewrites them).
func TestExamplesAreCurrent(t *testing.T) {
	ix := fixtureIndex(t)
	for _, k := range Kinds() {
		want, ok := exampleFor(t, k, ix)
		if !ok {
			t.Errorf("%s: none of its fixtures (%v) parses cleanly and is in INDEX.tsv", k.Name, k.Fixtures)
			continue
		}
		path := filepath.Join("examples", k.Name+".json")
		if *update {
			out, _ := json.MarshalIndent(want, "", "  ")
			if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, ok := k.Example()
		if !ok {
			t.Errorf("%s: no example in %s (go test ./step/parse -update)", k.Name, path)
			continue
		}
		var a, b bytes.Buffer
		json.Compact(&a, got.Value)
		json.Compact(&b, want.Value)
		if got.Fixture != want.Fixture || got.Source != want.Source || got.Hardware != want.Hardware || a.String() != b.String() {
			t.Errorf("%s: %s is not what the parser makes of %s today (go test ./step/parse -update, and review the diff)", k.Name, path, want.Fixture)
		}
	}
}
