package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A --mock-faults file that is not what the simulated machine takes is
// refused naming its place in the file (line, column), the path in the
// file's own terms (host, key, GPU index, list index) and what the place
// takes, never a Go type; the flags it needs are named, and on a
// simulated fleet it is refused before the file is read.
func TestMockFaultsErrors(t *testing.T) {
	env := noEnv(t)
	faults := filepath.Join(t.TempDir(), "faults.json")
	args := []string{"probe", "-H", "gpu[01-02]", "--mock", "dgxa100", "--mock-faults", faults}
	for _, tc := range []struct{ file, want string }{
		{`{"gpu01": {"ecc": {"0": 5}}}`, `:1:25: host "gpu01", ecc."0": want an object with keys among volatile_uncorrected, aggregate_uncorrected, volatile_corrected, aggregate_corrected, not the number 5`},
		{"{\n  \"gpu02\": {\n    \"ecc\": {\"3\": {\"volatile_uncorrected\": 2.5}}}}", `:3:43: host "gpu02", ecc."3".volatile_uncorrected: want a whole number, 0 or more, not the number 2.5`},
		{`{"gpu01": {"ecc": {"x": {}}}}`, `:1:20: host "gpu01", ecc: key "x" is not a GPU index`},
		{`{"gpu01": {"nvlink_down": [[0, 1, 2]]}}`, `host "gpu01", nvlink_down[0]: want a pair of GPU indexes such as [0, 1], not a list of more`},
		{`{"gpu01": {"xids": [{"gpu": 1, "code": 79}, {"gpu": "1"}]}}`, `host "gpu01", xids[1].gpu: want a whole number, not the string "1"`},
		{`{"gpu01": {"nvlink_dwn": []}}`, `host "gpu01": unknown key "nvlink_dwn" (did you mean "nvlink_down"?); the keys here are machine, nvlink_down, ecc,`},
		{`{"gpu01": {"utilization": {"1": -3}}}`, `utilization."1": want a whole number from 0 to 4294967295, not the number -3`},
		// Numbers encoding/json takes as no integer: placed, and worded
		// by what is wrong with them (1e9 is in range; 1e400 fits no type).
		{`{"gpu01": {"utilization": {"1": 1e9}}}`, `:1:33: host "gpu01", utilization."1": write 1e9 as 1000000000: a whole number here takes no exponent or fraction`},
		{`{"gpu01": {"utilization": {"1": 1e400}}}`, `:1:33: host "gpu01", utilization."1": want a whole number from 0 to 4294967295, not the number 1e400`},
		{`[{"gpu01": {}}]`, `:1:1: want an object of host name to faults, such as {"gpu04": `},
		{`{"gpu01": {}, "gpu01": {}}`, `:1:24: host "gpu01" is named twice`},
		{`{"gpu01": {"ecc": {"9": {}}}}`, `:1:11: host "gpu01": ecc: GPU 9: a DGX A100 has GPUs 0-7`},
		// Maps keyed by name take any name; Validate judges it.
		{`{"gpu01": {"ib": {"mlx5_9": {"down": true}}}}`, `host "gpu01": ib: "mlx5_9": the simulated HCAs are mlx5_0 to mlx5_3`},
	} {
		writeFile(t, faults, tc.file)
		r := run(t, env, args...)
		r.expect(t, 2, "", "gpulab: --mock-faults: "+faults+":")
		r.expect(t, 2, "", tc.want)
		if strings.Contains(r.stderr, "Go struct") || strings.Contains(r.stderr, "spec.") {
			t.Errorf("%s: the error names Go types:\n%s", tc.file, r.stderr)
		}
	}

	run(t, env, "probe", "--local", "--mock", "dgxa100", "--mock-faults", faults).expect(t, 2, "",
		"--mock-faults gives each host -H selects its own simulated faults (keyed by host name), so it needs -H HOSTS and --mock dgxa100, not --local")
	run(t, env, "probe", "-H", "gpu01", "--mock-faults", faults).expect(t, 2, "", "--mock-faults needs --mock dgxa100: the faults are those of the simulated DGX A100")

	// A simulated fleet: refused up front, with what to do instead, even
	// with a faults file that would not pass.
	inv := filepath.Join(t.TempDir(), "inventory.toml")
	writeFile(t, inv, "simulated = true\n[[host]]\nname = \"dgx01\"\naddress = \"127.0.0.1\"\n")
	writeFile(t, faults, `{"dgx01": {"ecc": {"0": 5}}}`)
	r := run(t, env, "probe", "--inventory", inv, "-H", "dgx01", "--mock", "dgxa100", "--mock-faults", faults)
	r.expect(t, 2, "", "--mock and --mock-faults: "+inv+" is a simulated fleet (gpulab sim): each host's probe simulates a DGX A100 already, with the faults the fleet gave it; run without --mock and --mock-faults")
	if strings.Contains(r.stderr, "ecc") {
		t.Errorf("the faults file was read before the fleet was found simulated:\n%s", r.stderr)
	}
}

// Every faults example the check pages show (docs/checks/*.md, the json
// blocks) is taken by sim serve --faults and --mock-faults as written.
func TestDocumentedKnobsAreAccepted(t *testing.T) {
	pages, _ := filepath.Glob(filepath.Join("..", "docs", "checks", "*.md"))
	n := 0
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, block := range strings.Split(string(b), "```json\n")[1:] {
			body, _, _ := strings.Cut(block, "```")
			file := filepath.Join(t.TempDir(), "faults.json")
			writeFile(t, file, body)
			if _, err := parseHostFaults("--faults", file, []string{"dgx02"}, "the fleet's hosts"); err != nil {
				t.Errorf("%s: the example is refused: %v\n%s", page, err, body)
			}
			n++
		}
	}
	if n < 4 {
		t.Errorf("%d examples found in docs/checks, want the ib, host, fabric and xid pages'", n)
	}
}
