package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/gpulab/gpulab/sim"
)

// healthEventsSchema compiles docs/health-events.schema.json.
func healthEventsSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("../docs/health-events.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("docs/health-events.schema.json: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("health-events.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("health-events.schema.json")
	if err != nil {
		t.Fatalf("docs/health-events.schema.json: %v", err)
	}
	return s
}

// gpulab probe --output health-events on a simulated fleet, over SSH:
// every line validates against the documented schema; the sick host's
// findings are unhealthy events naming its GPUs, with NVSentinel's
// actions; the healthy hosts' checks are healthy events; every event of
// the simulated fleet is STORE_ONLY; and the schema refuses a line that
// breaks it (the validation is no formality).
func TestProbeHealthEvents(t *testing.T) {
	schema := healthEventsSchema(t)
	f, files := simFleet(t, sim.Config{Hosts: 3, Seed: 1})
	sick, healthy := sickAndHealthy(t, f)
	r := run(t, noEnv(t), "probe", "--inventory", files.Inventory, "-H", "*", "--output", "health-events")
	if r.code != ExitFailed { // the sick host is flagged
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	unhealthy := map[string][]string{}
	clean := map[string][]string{}
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		var v any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("line %d: %v\n%s", n, err, sc.Text())
		}
		if err := schema.Validate(v); err != nil {
			t.Errorf("line %d does not validate: %v\n%s", n, err, sc.Text())
		}
		var e struct {
			CheckName, NodeName, RecommendedAction, ProcessingStrategy string
			IsHealthy                                                  bool
			EntitiesImpacted                                           []struct{ EntityType, EntityValue string }
		}
		_ = json.Unmarshal(sc.Bytes(), &e)
		if e.ProcessingStrategy != "STORE_ONLY" {
			t.Errorf("line %d: a simulated host's event is %q, want STORE_ONLY", n, e.ProcessingStrategy)
		}
		if e.IsHealthy {
			clean[e.NodeName] = append(clean[e.NodeName], e.CheckName)
			continue
		}
		unhealthy[e.NodeName] = append(unhealthy[e.NodeName], e.CheckName+" "+e.RecommendedAction)
		if len(e.EntitiesImpacted) == 0 || e.EntitiesImpacted[0].EntityType != "GPU" {
			t.Errorf("line %d: entities %+v, want the GPUs", n, e.EntitiesImpacted)
		}
	}
	if len(unhealthy) != 1 || !slices.Contains(unhealthy[sick], "GpulabNvlinkDown COMPONENT_RESET") {
		t.Errorf("unhealthy events %v, want the sick host %s's NVLink down, COMPONENT_RESET", unhealthy, sick)
	}
	for _, h := range healthy {
		if !slices.Contains(clean[h], "GpulabNvlinkDown") || !slices.Contains(clean[h], "GpulabEccUncorrected") || slices.Contains(clean[h], "GpulabXid") {
			t.Errorf("%s's healthy events %v: want its NVLink and ECC checks clean, no word on an Xid history nobody read", h, clean[h])
		}
	}
	// The schema refuses what breaks it: an action outside NVSentinel's
	// enum, a healthy event that is fatal, a simulated event that may act.
	for _, bad := range []string{
		`"recommendedAction":"COMPONENT_RESET"` + "|" + `"recommendedAction":"REPLACE_GPU"`,
		`"processingStrategy":"STORE_ONLY"` + "|" + `"processingStrategy":"EXECUTE_REMEDIATION"`,
		`"version":1` + "|" + `"version":2`,
	} {
		from, to, _ := strings.Cut(bad, "|")
		line := ""
		for l := range strings.Lines(r.stdout) {
			if strings.Contains(l, from) {
				line = l
				break
			}
		}
		if line == "" {
			t.Fatalf("no line holds %s", from)
		}
		var v any
		if err := json.Unmarshal([]byte(strings.Replace(line, from, to, 1)), &v); err != nil {
			t.Fatal(err)
		}
		if schema.Validate(v) == nil {
			t.Errorf("the schema accepts %s", to)
		}
	}
	run(t, noEnv(t), "probe", "--local", "--mock", "dgxa100", "--output", "yaml").expect(t, ExitUsage, "", `--output "yaml": text, json or health-events`)
	run(t, noEnv(t), "probe", "--local", "--mock", "dgxa100", "--output", "health-events", "--json").expect(t, ExitUsage, "", "--json and --output health-events: give one of them")
}
