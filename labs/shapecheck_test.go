package labs

import (
	"strings"
	"testing"
)

// shapeLab is a lab whose one step reads nvidia-smi topo -m and samples,
// with the metrics given.
func shapeLab(metrics string) string {
	return `id = "x"
name = "x"
goal = "x"
plane = "data"
maturity = "draft"
estimate_minutes = 5

[[step]]
id = "topo"
phase = "observe"
command = "nvidia-smi topo -m"
parser = "nvidia-smi-topo"
sample = "1s"
[step.metrics]
` + metrics + `
[[criterion]]
id = "a"
description = "a"
expr = "metrics.gpus > 0"
impact = "critical"
`
}

// lab check holds every key an expression reads to what the step's
// parser writes: a key out cannot have is an error at the metric's key,
// naming the keys there are, not an UNKNOWN "no such key" at run time.
func TestLabCheckHoldsKeysToTheParsersShape(t *testing.T) {
	_, err := Parse("lab.toml", []byte(shapeLab(`gpus = "size(out.gpu)"
first = "out.gpus.name"
wrong = "out.gpus.uuid"
uuids = "out.gpus.all(g, g.uuid != '')"
util = "samples.map(s, s.gpu)"
st = "checks['nvlink-mesh'].stat"
rule = "checks['nic-nearst'].status"
`)))
	if err == nil {
		t.Fatal("a lab reading keys nvidia-smi-topo never writes loaded")
	}
	for _, want := range []string{
		`lab.toml:15:1: metric gpus: out.gpu: out has no key "gpu": did you mean "gpus"? (its keys: columns, gpus, links, nics) (gpulab parse nvidia-smi-topo --shape)`,
		`lab.toml:16:1: metric first: out.gpus.name: out.gpus is a list(object), with no keys of its own: take one of them (out.gpus[0].name) or each (out.gpus.all(x, x.name ...))`,
		// A key the list's items lack too is said so, never out.gpus[0].uuid.
		`lab.toml:17:1: metric wrong: out.gpus.uuid: out.gpus is a list(object), and its items have no key "uuid" either (their keys: cpu_affinity, gpu_numa_id, name, numa_affinity)`,
		`lab.toml:18:1: metric uuids: g.uuid: g has no key "uuid" (its keys: cpu_affinity, gpu_numa_id, name, numa_affinity)`,
		// A loop's variable is pointed to its own variable's help, not the parser's.
		`lab.toml:19:1: metric util: s.gpu: s has no key "gpu": did you mean "gpus"? (its keys: at, gpus, processes, t) (docs/labs.md, Reference, says what samples holds)`,
		`lab.toml:20:1: metric st: checks["nvlink-mesh"].stat: checks["nvlink-mesh"] has no key "stat"`,
		// checks holds the rules that judge the step's parser's output.
		`lab.toml:21:1: metric rule: checks["nic-nearst"]: checks has no key "nic-nearst": did you mean "nic-nearest"? (its keys: nic-nearest, nvlink-mesh) (checks holds the runbooks' rules that judge the step's output, its parser nvidia-smi-topo's)`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, err)
		}
	}

	// What the output has, read every way CEL reads it, loads.
	if _, err := Parse("lab.toml", []byte(shapeLab(`gpus = "size(out.gpus)"
named = "out.gpus.exists(g, g.name == 'GPU0')"
affinity = "has(out.gpus[0].cpu_affinity) ? out.gpus[0].cpu_affinity : ''"
link = "out.links['GPU0']['GPU1']"
each = "out.links.all(a, out.links[a].all(b, out.links[a][b] != ''))"
mem = "samples.map(s, s.gpus.map(g, g.index))"
st = "checks['nvlink-mesh'].status"
`))); err != nil {
		t.Errorf("a lab reading what nvidia-smi-topo writes did not load:\n%v", err)
	}
}
