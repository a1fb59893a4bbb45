package runbooks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuiltinRunbooks(t *testing.T) {
	rbs, err := Load(nil)
	if err != nil {
		t.Fatalf("built-in runbooks do not load: %v", err)
	}
	for _, id := range []string{"health", "nccl-slow", "topology"} {
		rb, ok := Find(rbs, id)
		if !ok || len(rb.Checks) == 0 {
			t.Errorf("built-in %s missing or without checks", id)
		}
		for _, s := range rb.Steps {
			if s.Dangerous {
				t.Errorf("built-in %s step %s changes hosts", id, s.ID)
			}
		}
	}
}

const goodRunbook = `id = "mine"
title = "Mine"
plane = "data"
symptom = "x"

[[step]]
id = "topo"
command = "nvidia-smi topo -m"
parser = "nvidia-smi-topo"

[[check]]
id = "mesh"
title = "Mesh"
rule = "nvlink-mesh"
uses = ["topo"]
`

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	if _, err := Load([]string{write("ok.toml", goodRunbook)}); err != nil {
		t.Errorf("good runbook: %v", err)
	}
	tests := []struct{ src, want string }{
		{strings.Replace(goodRunbook, `rule = "nvlink-mesh"`, `rule = "nope"`, 1), `bad.toml:14:1: check "mesh": no rule "nope" (rules: `},
		{strings.Replace(goodRunbook, `uses = ["topo"]`, `uses = ["numa"]`, 1), `bad.toml:15:9: check "mesh" uses step "numa", which this runbook does not have`},
		{strings.Replace(goodRunbook, `parser = "nvidia-smi-topo"`, `parser = "nvidia-smi"`, 1), `check "mesh": rule nvlink-mesh wants nvidia-smi-topo output for its input 1, step "topo" parses nvidia-smi`},
		{strings.Replace(goodRunbook, `parser = "nvidia-smi-topo"`, `parser = "xml"`, 1), `bad.toml:9:1: step "topo": no parser "xml"`},
		{strings.Replace(goodRunbook, `plane = "data"`, `plane = "gpu"`, 1), `bad.toml:3:1: plane "gpu": want control, data or workload`},
		{goodRunbook + "danger = true\n", `unknown key "danger"`},
		{strings.Replace(goodRunbook, `parser = "nvidia-smi-topo"`, "parser = \"nvidia-smi-topo\"\ntimeout = \"2562047h\"", 1), `bad.toml:10:1: step "topo" timeout 2562047h: want 1s to 24h`},
		{strings.Replace(goodRunbook, `parser = "nvidia-smi-topo"`, "parser = \"nvidia-smi-topo\"\ntimeout = \"1ms\"", 1), `bad.toml:10:1: step "topo" timeout 1ms: want 1s to 24h`},
		{strings.Replace(goodRunbook, `parser = "nvidia-smi-topo"`, "parser = \"nvidia-smi-topo\"\ntimeout = \"0s\"", 1), `bad.toml:10:12: duration "0s" must be positive`},
		{strings.Replace(goodRunbook, `id = "mine"`, `id = "health"`, 1), `runbook "health" is already defined in builtin/health.toml`},
		{goodRunbook[:strings.Index(goodRunbook, "[[check]]")], `runbook "mine" has no [[check]]: its steps' output would reach no verdict`},
		{strings.Replace(goodRunbook, `title = "`, `title = "tab\there `, 1), `bad.toml:2:1: runbook "mine": title has the control character U+0009 (character 4)`},
	}
	probeBook := `id = "deep"
title = "Deep"
plane = "data"
symptom = "x"

[[step]]
id = "probe"
probe = true
window = "2s"
timeout = "60s"

[[check]]
id = "gen"
title = "Gen"
rule = "probe-check"
with = { check = "pcie-gen" }
uses = ["probe"]
`
	if _, err := Load([]string{write("deep.toml", probeBook)}); err != nil {
		t.Errorf("probe runbook: %v", err)
	}
	os.Remove(filepath.Join(dir, "deep.toml"))
	tests = append(tests, []struct{ src, want string }{
		{strings.Replace(probeBook, "probe = true", "probe = true\ncommand = \"nvidia-smi\"", 1), `step "probe" runs gpulab's probe (probe = true): it takes no command`},
		{strings.Replace(probeBook, `window = "2s"`, `window = "2m"`, 1), `step "probe" window 2m0s: between 0 (one reading) and 1m0s`},
		{strings.Replace(probeBook, `check = "pcie-gen"`, `check = "pcie-gne"`, 1), `check "gen": with.check "pcie-gne": the checks a probe step makes are nvlink-down, gpu-missing,`},
		{strings.Replace(probeBook, `check = "pcie-gen"`, `check = "xid"`, 1), `a probe step does not read the kernel log; judge a dmesg-xid step with rule xid-recent`},
		{strings.Replace(probeBook, "probe = true", "parser = \"nvidia-smi\"\nprobe = true", 1), `its input is the probe's snapshot, not parser "nvidia-smi"`},
		{strings.Replace(probeBook, "probe = true", `command = "cat x"`, 1), `check "gen": rule probe-check wants gpulab-probe output for its input 1, step "probe" parses`},
		{strings.Replace(probeBook, "probe = true", "command = \"cat x\"\nparser = \"gpulab-probe\"", 1), `gpulab-probe is the input of a probe step (probe = true), not a parser`},
	}...)
	for _, tt := range tests {
		_, err := Load([]string{write("bad.toml", tt.src)})
		if err == nil || !strings.Contains(strings.ReplaceAll(err.Error(), dir+"/", ""), tt.want) {
			t.Errorf("Load = %v, want %q", err, tt.want)
		}
	}
}

func TestParamErrors(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "p.toml"), []byte(`id = "p"
title = "p"
plane = "data"

[[param]]
name = "Log-File"

[[step]]
id = "s"
command = "cat {{log}}"
`), 0o644)
	_, err := Load([]string{dir})
	for _, want := range []string{"p.toml:6:1: parameter name \"Log-File\" is missing, malformed", "p.toml:10:1: step \"s\" uses {{log}}, which is not a [[param]] of this runbook"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("load error lacks %q: %v", want, err)
		}
	}
}

// The loader refuses a parameter that may hold any text where only a
// plain token is safe, at the command's file:line, and a declaration it
// cannot use.
func TestParamPlacementErrors(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "p.toml"), []byte(`id = "p"
title = "p"
plane = "data"

[[param]]
name = "image"

[[param]]
name = "n"
type = "integer"

[[param]]
name = "ns"
type = "name"
default = "Team A"

[[step]]
id = "s"
command = "kubectl create -f - <<'EOF'\nimage: {{image}}\nEOF"
`), 0o644)
	_, err := Load([]string{dir})
	for _, want := range []string{
		`p.toml:19:1: step "s" puts {{image}} inside quotes, a heredoc or beside quoted text, where shell quoting cannot protect the command: give parameter image a type`,
		`p.toml:10:1: parameter n: type "integer": want one of image, int, name, number, path, string, url`,
		`p.toml:15:1: parameter ns: default: "Team A" is not a Kubernetes name`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("load error lacks %q: %v", want, err)
		}
	}
}
