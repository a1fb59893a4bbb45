package parse

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.json from the parsers' output")

const fixtures = "../../testdata/fixtures"

// TestGolden parses every fixture of every kind and compares the JSON with
// testdata/golden/KIND/FILE.json (go test ./runbooks/parse -update rewrites
// them; review the diff). Errors are part of the golden: a damaged fixture
// must keep failing the same way.
func TestGolden(t *testing.T) {
	for _, k := range Kinds() {
		for _, dir := range k.Fixtures {
			files, _ := filepath.Glob(filepath.Join(fixtures, dir, "*"))
			if len(files) == 0 {
				t.Errorf("%s: no fixtures in %s", k.Name, dir)
			}
			for _, f := range files {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				v, perr := k.Parse(string(data))
				got := map[string]any{"value": v}
				if perr != nil {
					got["error"] = strings.Split(perr.Error(), "\n")
				}
				out, _ := json.MarshalIndent(got, "", "  ")
				golden := filepath.Join("testdata", "golden", k.Name, filepath.Base(f)+".json")
				if *update {
					os.MkdirAll(filepath.Dir(golden), 0o755)
					os.WriteFile(golden, append(out, '\n'), 0o644)
					continue
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Errorf("%s: %v (go test ./runbooks/parse -update)", golden, err)
					continue
				}
				if string(want) != string(out)+"\n" {
					t.Errorf("%s %s differs from %s", k.Name, filepath.Base(f), golden)
				}
			}
		}
	}
}

func fixture(t *testing.T, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtures, dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
