package parse

import (
	"embed"
	"encoding/json"
)

// examples holds, for each kind, what it makes of one real output from
// testdata/fixtures (written by go test ./step/parse -update, kept
// current by TestExamplesAreCurrent), so that gpulab parse KIND --shape
// can show a lab author real values, not only their types.
//
//go:embed examples/*.json
var examples embed.FS

// Example is a kind's output for one real fixture, and where the fixture
// came from (testdata/fixtures/INDEX.tsv).
type Example struct {
	Fixture  string          `json:"fixture"` // under testdata/fixtures
	Hardware string          `json:"hardware"`
	Source   string          `json:"source"`
	Value    json.RawMessage `json:"value"`
}

// Example is the kind's example, or false when it has none.
func (k Kind) Example() (Example, bool) {
	data, err := examples.ReadFile("examples/" + k.Name + ".json")
	if err != nil {
		return Example{}, false
	}
	var e Example
	if json.Unmarshal(data, &e) != nil {
		return Example{}, false
	}
	return e, true
}
