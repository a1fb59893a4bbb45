package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

type result struct {
	code           int
	stdout, stderr string
}

func run(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	return runInput(t, env, "", args...)
}

// runInput runs gpulab with input on its standard input.
func runInput(t *testing.T, env map[string]string, input string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(args, Env{
		Stdin:  strings.NewReader(input),
		Stdout: &out, Stderr: &errOut,
		Getenv: func(k string) string { return env[k] },
	})
	return result{code, out.String(), errOut.String()}
}

func (r result) expect(t *testing.T, code int, stdout, stderr string) {
	t.Helper()
	if r.code != code || !strings.Contains(r.stdout, stdout) || !strings.Contains(r.stderr, stderr) {
		t.Errorf("exit %d, want %d\nstdout (want %q):\n%s\nstderr (want %q):\n%s", r.code, code, stdout, r.stdout, stderr, r.stderr)
	}
}

func noEnv(t *testing.T) map[string]string { return map[string]string{"HOME": t.TempDir()} }

func TestMapAndMatrix(t *testing.T) {
	env := noEnv(t)
	run(t, env, "map").expect(t, 0, "DATA PLANE: How does an abstract request become", "")
	run(t, env, "map", "--plane", "workload").expect(t, 0, "llm-d", "")
	run(t, env, "map", "--plane", "nope").expect(t, 2, "", "--plane \"nope\": want one of: control, data, workload")

	var m struct {
		Planes []struct {
			ID       string `json:"id"`
			Projects []struct{ ID string }
		}
	}
	r := run(t, env, "map", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil || len(m.Planes) != 3 {
		t.Fatalf("map --json: %v\n%s", err, r.stdout)
	}
	total := 0
	for _, p := range m.Planes {
		total += len(p.Projects)
	}
	if total != 25 {
		t.Errorf("map --json lists %d projects, want 25", total)
	}

	r = run(t, env, "matrix", "--filter", "isolation=strong")
	r.expect(t, 0, "MIG (Multi-Instance GPU)", "")
	if strings.Contains(r.stdout, "HAMi") || !strings.Contains(r.stdout, "ISOLATION") {
		t.Errorf("matrix --filter isolation=strong:\n%s", r.stdout)
	}
	var mx struct {
		Projects []struct {
			ID   string `json:"id"`
			Axes map[string]struct {
				Levels []string `json:"levels"`
				Why    string   `json:"why"`
			} `json:"axes"`
		} `json:"projects"`
	}
	r = run(t, env, "matrix", "--plane", "data", "--sort", "isolation", "--desc", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &mx); err != nil {
		t.Fatal(err)
	}
	if len(mx.Projects) != 11 || mx.Projects[0].ID != "dcgm-exporter" || mx.Projects[0].Axes["isolation"].Why == "" {
		t.Errorf("matrix --plane data --sort isolation --desc --json = %d projects starting %q", len(mx.Projects), mx.Projects[0].ID)
	}
	run(t, env, "matrix", "--search", "nvlink", "--why").expect(t, 0, "Fragments: Bandwidth depends on NVLink", "")
	// The reasons are written under their row, not aligned with the table:
	// PROJECT stays as wide as the longest name.
	if head, _, _ := strings.Cut(run(t, env, "matrix", "--why").stdout, "\n"); strings.Index(head, "PLANE") > 40 {
		t.Errorf("matrix --why widens PROJECT: %q", head)
	}
	run(t, env, "matrix", "--plane", "control").expect(t, 0, "HAMi                               data +control", "")
	run(t, env, "matrix", "--search", "zzz").expect(t, 0, "(no project matches)", "")
	run(t, env, "matrix", "--filter", "isolation=bogus").expect(t, 2, "", "axis isolation has levels: none, soft, strong, verifiable")
	run(t, env, "matrix", "--filter", "iso").expect(t, 2, "", "want AXIS=LEVEL")
	// --filter repeated: a project passes each (only the last one counted).
	both := run(t, env, "matrix", "--filter", "isolation=strong", "--filter", "isolation=soft")
	if both.code != 0 || !strings.Contains(both.stdout, "NVIDIA device plugin") || strings.Contains(both.stdout, "KAI Scheduler") || strings.Count(both.stdout, "\n") != 2 {
		t.Errorf("matrix --filter isolation=strong --filter isolation=soft: want only the project that is both:\n%s%s", both.stdout, both.stderr)
	}
	run(t, env, "matrix", "--filter", "isolation=soft", "--filter", "isolation=bogus").expect(t, 2, "", "axis isolation has levels")
	run(t, env, "matrix", "--filter", "plane=workload").expect(t, 2, "", "plane is not an axis: use --plane workload")
	run(t, env, "matrix", "--sort", "nope").expect(t, 2, "", "--sort \"nope\"")
}

func TestCatalogCommands(t *testing.T) {
	env := noEnv(t)
	run(t, env, "catalog", "show", "mig").expect(t, 0, "Fixed profiles and placement rules leave slices", "")
	run(t, env, "catalog", "show", "nope").expect(t, 2, "", `no project "nope"`)
	run(t, env, "catalog", "show").expect(t, 2, "", "want a project id")

	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	writeFile(t, bad, "[[project]]\nid = \"x\"\nname = \"X\"\nplane = \"control\"\nkind = \"k\"\nsummary = \"s\"\nquestions = [\"q\"]\ncolour = \"red\"\n")
	r := run(t, env, "catalog", "check", dir)
	r.expect(t, 2, "", bad+`:8:1: unknown key "colour"`)

	r = run(t, env, "catalog", "check", bad, "--json")
	var out struct {
		OK       bool      `json:"ok"`
		Problems []Problem `json:"problems"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 2 {
		t.Fatalf("catalog check --json: exit %d, %v\n%s", r.code, err, r.stdout)
	}
	if out.OK || len(out.Problems) != 5 || out.Problems[4].Line != 8 || out.Problems[1].Message == "" || out.Problems[0].File != bad ||
		!slices.IsSortedFunc(out.Problems, func(a, b Problem) int { return a.Line - b.Line }) {
		t.Errorf("catalog check --json problems = %+v", out.Problems)
	}
	// The same file is a configuration error for commands that need the catalog.
	run(t, env, "map", "--catalog", dir).expect(t, 2, "", "catalog: "+bad+":8:1")

	good := t.TempDir()
	src, err := os.ReadFile("../landscape/catalog/control.toml")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(good, "mine.toml"), strings.NewReplacer(`id = "kube-scheduler"`, `id = "my-scheduler"`,
		`id = "kueue"`, `id = "my-kueue"`, `id = "volcano"`, `id = "my-volcano"`, `id = "kai-scheduler"`, `id = "my-kai"`,
		`id = "slurm"`, `id = "my-slurm"`, `id = "quota-priority"`, `id = "my-quota"`).Replace(string(src)))
	run(t, env, "catalog", "check", good).expect(t, 0, "ok (catalog now has 31 projects)", "")
	run(t, env, "map", "--catalog", good, "--plane", "control").expect(t, 0, "my-scheduler", "")
}

func TestInventoryCommands(t *testing.T) {
	env := noEnv(t)
	run(t, env, "inventory", "check", "../inventory.toml").expect(t, 0, "../inventory.toml: ok (16 hosts, 7 groups, 1 kube context)", "")
	run(t, env, "inventory", "check").expect(t, 2, "", "no inventory file: looked in \""+env["HOME"]+"/.config/gpulab/inventory.toml\"")
	run(t, env, "inventory", "check", "/nonexistent/inv.toml").expect(t, 2, "", `inventory "/nonexistent/inv.toml" does not exist`)

	broken := filepath.Join(t.TempDir(), "broken.toml")
	writeFile(t, broken, "[defaults]\nuser = \"ops\"\nusr = \"x\"\n[[host]]\nname = \"gpu[01-04\"\n")
	r := run(t, env, "inventory", "check", broken)
	r.expect(t, 2, "", broken+`:3:1: unknown key "usr"`)
	r.expect(t, 2, "", broken+`:5:1: node set "gpu[01-04": column 4: '[' is never closed`)

	inv := []string{"--inventory", "../inventory.toml"}
	run(t, env, append([]string{"inventory", "list", "-H", "@a100!gpu[002-011]", "--fold"}, inv...)...).expect(t, 0, "gpu[001,012]\n", "")
	r = run(t, env, append([]string{"inventory", "list", "-H", "h200-01,newbox"}, inv...)...)
	r.expect(t, 0, "h200-01", "")
	r.expect(t, 0, "newbox (ad-hoc)", "")
	r.expect(t, 0, "2 hosts: h200-01,newbox", "")
	run(t, env, append([]string{"inventory", "list", "-H", "@nope"}, inv...)...).expect(t, 2, "", "unknown group @nope")
	run(t, env, append([]string{"inventory", "list", "-H", "gpu[001-002]!gpu[001-002]"}, inv...)...).expect(t, 2, "", `-H "gpu[001-002]!gpu[001-002]" selects no host`)
	var out struct {
		NodeSet string `json:"nodeset"`
		Count   int    `json:"count"`
		Hosts   []struct {
			Name    string `json:"name"`
			Address string `json:"address"`
		} `json:"hosts"`
	}
	r = run(t, env, append([]string{"inventory", "list", "-H", "@dc2", "--json"}, inv...)...)
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || out.Count != 2 || out.NodeSet != "dgx-[01-02]" || out.Hosts[1].Address != "dgx-02.dc2.example.net" {
		t.Errorf("inventory list --json = %+v, %v", out, err)
	}
	env["GPULAB_INVENTORY"] = "../inventory.toml"
	run(t, env, "inventory", "list", "--fold").expect(t, 0, "bastion,dgx-[01-02],gpu[001-012],h200-01", "")
}

func TestUsageAndWorkbench(t *testing.T) {
	env := noEnv(t)
	run(t, env, "--bogus").expect(t, 2, "", "unknown flag: --bogus")
	run(t, env, "nope").expect(t, 2, "", `unknown command "nope"`)
	run(t, env).expect(t, 2, "", "the workbench needs a terminal")
	run(t, env, "--json").expect(t, 2, "", "--json applies to a command")
	run(t, env, "--help").expect(t, 0, "Exit codes:\n  0    ok\n  1    a check or a host failed (probe: or a host is flagged)\n  2    usage or configuration error", "")
	run(t, env, "matrix", "--help").expect(t, 0, "gpulab matrix --filter isolation=strong", "")
	r := run(t, env, "version", "--json")
	var v struct{ Version, Go string }
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Version == "" || v.Go == "" {
		t.Errorf("version --json = %q, %v", r.stdout, err)
	}
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRunbookCommands(t *testing.T) {
	env := noEnv(t)
	run(t, env, "runbook", "list").expect(t, 0, "nccl-slow           workload  Multi-node NCCL is slow", "")
	run(t, env, "runbook", "show", "nccl-slow").expect(t, 0, "Parameters (--set name=value):\n  nccl_log ", "")
	run(t, env, "runbook", "show", "nope").expect(t, 2, "", `no runbook "nope"`)
	run(t, env, "runbook", "run", "nccl-slow", "-H", "gpu01", "--set", "log=/x").expect(t, 2, "", `--set log: runbook nccl-slow has no parameter "log" (it has nccl_log)`)
	run(t, env, "runbook", "run", "nccl-slow", "-H", "gpu01", "--set", "nccl_log").expect(t, 2, "", `--set "nccl_log": want name=value`)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "bad.toml"), "id = \"x\"\ntitle = \"x\"\nplane = \"data\"\n[[step]]\nid = \"s\"\ncommand = \"cat {{f}}\"\n")
	run(t, env, "runbook", "list", "--runbooks", dir).expect(t, 2, "", "bad.toml:6:1: step \"s\" uses {{f}}")
}

func TestLabCommands(t *testing.T) {
	env := noEnv(t)
	run(t, env, "lab", "list").expect(t, 0, "topology-sanity     data      draft     10   3+0", "")
	run(t, env, "lab", "show", "health-gate").expect(t, 0, "[critical]  remap", "")
	run(t, env, "lab", "show", "nope").expect(t, 2, "", `no lab "nope" (gpulab lab list)`)
	// A near miss names what was probably meant.
	run(t, env, "lab", "show", "topology-sanit").expect(t, 2, "", `no lab "topology-sanit": did you mean "topology-sanity"? (gpulab lab list)`)
	run(t, env, "runbook", "show", "topolgy").expect(t, 2, "", `no runbook "topolgy": did you mean "topology"? (gpulab runbook list)`)
	run(t, env, "parse", "nvidia-smi-topo-m").expect(t, 2, "", `no parser "nvidia-smi-topo-m": did you mean "nvidia-smi-topo"? (kinds: `)
	run(t, env, "parse", "nvidia-smi-nvlink").expect(t, 2, "", `did you mean "nvidia-smi-nvlink-errors" or "nvidia-smi-nvlink-status"?`)
	// What a lab author writes criteria against: the keys and their types,
	// then the output for a real recorded one, with its source.
	run(t, env, "parse", "nvidia-smi-topo", "--shape").expect(t, 0, "out: object\n  gpus: list(object)\n    name: string\n", "")
	run(t, env, "parse", "nvidia-smi-L", "--shape").expect(t, 0, "out for testdata/fixtures/nvidia-smi-L/", "")
	run(t, env, "parse", "nvidia-smi-L", "x.txt", "--shape").expect(t, 2, "", "--shape reads no input")
	shape := run(t, env, "parse", "nvidia-smi-L", "--shape", "--json")
	var sh struct {
		Shape struct {
			Type   string `json:"type"`
			Fields []struct {
				Key string `json:"key"`
			} `json:"fields"`
		} `json:"shape"`
		Example struct {
			Source string          `json:"source"`
			Value  json.RawMessage `json:"value"`
		} `json:"example"`
	}
	if err := json.Unmarshal([]byte(shape.stdout), &sh); err != nil || sh.Shape.Type != "object" || len(sh.Shape.Fields) == 0 || sh.Shape.Fields[0].Key != "gpus" || sh.Example.Source == "" || !strings.Contains(string(sh.Example.Value), `"gpus"`) {
		t.Errorf("parse --shape --json: %v\n%s", err, shape.stdout)
	}
	r := run(t, env, "lab", "show", "topology-sanity", "--json")
	var l struct {
		ID       string `json:"id"`
		Criteria []struct {
			Expr string `json:"expr"`
		} `json:"criteria"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &l); err != nil || l.ID != "topology-sanity" || len(l.Criteria) == 0 || l.Criteria[0].Expr == "" {
		t.Errorf("lab show --json: %v\n%s", err, r.stdout)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "mine.toml"), "id = \"mine\"\nname = \"m\"\ngoal = \"g\"\nplane = \"data\"\nmaturity = \"draft\"\nestimate_minutes = 1\n[[step]]\nid = \"s\"\nphase = \"run\"\ncommand = \"true\"\n[step.metrics]\nok = \"exit_code == 0\"\n[[criterion]]\nid = \"c\"\ndescription = \"d\"\nexpr = \"metrics.ok\"\nimpact = \"major\"\n")
	run(t, env, "lab", "check", dir).expect(t, 0, dir+": ok (10 labs with the built-in ones)", "")
	run(t, env, "lab", "list", "--labs", dir).expect(t, 0, "mine ", "")
	writeFile(t, filepath.Join(dir, "bad.toml"), "id = \"bad\"\nname = \"b\"\ngoal = \"g\"\nplane = \"data\"\nmaturity = \"draft\"\nestimate_minutes = 1\n[[criterion]]\nid = \"c\"\ndescription = \"d\"\nexpr = \"metrics.latency_p99_ms < 200\"\nimpact = \"major\"\n")
	run(t, env, "lab", "check", dir).expect(t, 2, "", "bad.toml:10:1: criterion \"c\" reads metrics.latency_p99_ms, which no step measures")
	run(t, env, "lab", "list", "--labs", dir).expect(t, 2, "", "labs: ")
}

func TestETA(t *testing.T) {
	for _, tc := range []struct {
		el   time.Duration
		est  int
		want string
	}{
		{80 * time.Second, 30, "1m20s of about 30m"},
		{31*time.Minute + 5*time.Second, 30, "31m5s of about 30m, over the estimate"},
		{1500 * time.Millisecond, 90, "2s of about 1h30m"},
	} {
		if got := eta(tc.el, tc.est); got != tc.want {
			t.Errorf("eta(%v, %d) = %q, want %q", tc.el, tc.est, got, tc.want)
		}
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.Local)
	for in, want := range map[string]time.Time{
		"90m":        now.Add(-90 * time.Minute),
		"36h":        now.Add(-36 * time.Hour),
		"7d":         now.AddDate(0, 0, -7),
		"2026-11-01": time.Date(2026, 11, 1, 0, 0, 0, 0, time.Local),
	} {
		if got, err := parseSince(in, now); err != nil || !got.Equal(want) {
			t.Errorf("parseSince(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-5m", "7 days", "2026-13-01", "-1d"} {
		if _, err := parseSince(bad, now); err == nil {
			t.Errorf("parseSince(%q) took it", bad)
		}
	}
}

func TestParseVLLMBenchThroughput(t *testing.T) {
	env := noEnv(t)
	run(t, env, "parse", "list").expect(t, 0, "vllm-bench-throughput     vllm bench throughput (or benchmarks/benchmark_throughput.py)\n", "")
	f := filepath.Join("..", "testdata", "fixtures", "workloads", "vllm-bench-throughput", "vllm_bench_throughput-lfm2.5-350m-H100-with-command-line.txt")
	run(t, env, "parse", "vllm-bench-throughput", f).expect(t, 0, `"output_token_throughput_tps": 18116.77,`, "")
	in := "Processed prompts:  33%|###  | 329/1000\n"
	runInput(t, env, in, "parse", "vllm-bench-throughput").expect(t, 1, `"request_throughput_rps": null`, `standard input (vllm-bench-throughput): no "Throughput: N requests/s, ..." line`)
}

// TestInventoryHostLimit: an inventory whose entries add up to more than
// inventory.MaxHosts hosts is refused at the entry that crosses it, before
// that entry is expanded.
func TestInventoryHostLimit(t *testing.T) {
	env := noEnv(t)
	big := filepath.Join(t.TempDir(), "big.toml")
	writeFile(t, big, "[[host]]\nname = \"n[0-39999]\"\n[[host]]\nname = \"m[0-39999]\"\n[[host]]\nname = \"o[0000000-9999999]\"\n")
	r := run(t, env, "inventory", "check", big)
	r.expect(t, 2, "", big+`:4:1: node set "m[0-39999]" names 40000 hosts, which brings the inventory to 80000, more than the 65536 hosts an inventory may hold`)
	if strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("inventory check: want one problem, got:\n%s", r.stderr)
	}
}

// TestHostExpressionLimit: -H naming more than inventory.MaxHosts hosts is
// a usage error naming the expression and its size, before it is expanded
// and before any host is reached.
func TestHostExpressionLimit(t *testing.T) {
	env := noEnv(t)
	want := `host expression "a[0-999]b[0-999]": node set "a[0-999]b[0-999]" names 1000000 hosts, more than the 65536 a host expression may name`
	run(t, env, "inventory", "list", "--inventory", "../inventory.toml", "-H", "a[0-999]b[0-999]").expect(t, 2, "", want)
	run(t, env, "exec", "--inventory", "../inventory.toml", "-H", "a[0-999]b[0-999]", "--", "true").expect(t, 2, "", want)
	run(t, env, "inventory", "list", "--inventory", "../inventory.toml", "-H", "x[1-40000],y[1-40000]").
		expect(t, 2, "", `host expression "x[1-40000],y[1-40000]" names at least 80000 hosts, more than the 65536`)
}

// TestInventoryCheckRefusesShellInNames: an address or a user that would
// run a command through an ssh_config's ProxyCommand (%h, %r) is refused
// at its line, by inventory check and by any command that loads it.
func TestInventoryCheckRefusesShellInNames(t *testing.T) {
	env := noEnv(t)
	dir := t.TempDir()
	pwnA, pwnU := filepath.Join(dir, "pwnA"), filepath.Join(dir, "pwnU")
	inv := filepath.Join(dir, "inv.toml")
	writeFile(t, inv, fmt.Sprintf("[[host]]\nname = \"h1\"\naddress = \"x$(touch %s)\"\n\n[[host]]\nname = \"h2\"\nuser = \"r$(touch %s)\"\njump = \"ops@bastion\"\n", pwnA, pwnU))
	r := run(t, env, "inventory", "check", inv)
	r.expect(t, 2, "", fmt.Sprintf(`%s:3:1: host "h1": address "x$(touch %s)" holds characters a host name cannot ('$', '(', ' ', '/', ')'): OpenSSH refuses it too`, inv, pwnA))
	r.expect(t, 2, "", fmt.Sprintf(`%s:7:1: host "h2": user "r$(touch %s)" holds characters a user name cannot ('$', '(', ' ', '/', ')'): OpenSSH refuses it too`, inv, pwnU))
	run(t, env, "exec", "--inventory", inv, "-H", "*", "--", "true").expect(t, 2, "", inv+":3:1: host \"h1\": address")
}

// Connection flags are held to the limits the inventory's keys have, as
// usage errors before any host is reached, by every command that takes
// them; values in range pass on (to the missing inventory here).
func TestConnectionFlagsRangeChecked(t *testing.T) {
	env := noEnv(t)
	file := filepath.Join(t.TempDir(), "f")
	writeFile(t, file, "x")
	missing := filepath.Join(t.TempDir(), "inv.toml")
	commands := [][]string{ // the command, then its arguments: flags go between
		{"exec", "-H", "gpu01", "--inventory", missing, "--", "true"},
		{"push", file, "-H", "gpu01", "--inventory", missing},
		{"probe", "-H", "gpu01", "--inventory", missing},
		{"runbook", "run", "health", "-H", "gpu01", "--inventory", missing},
		{"lab", "run", "e2e", "--labs", "../labs/testdata/e2e.toml", "-H", "gpu01", "--inventory", missing},
		{"inventory", "show", "gpu01", "--inventory", missing},
	}
	with := func(c []string, flags ...string) []string {
		n := 1
		if c[0] == "runbook" || c[0] == "lab" || c[0] == "inventory" {
			n = 2
		}
		return append(append(append([]string{}, c[:n]...), flags...), c[n:]...)
	}
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--concurrency", "0"}, "--concurrency 0: want 1 to 4096 hosts at once"},
		{[]string{"--concurrency", "-5"}, "--concurrency -5: want 1 to 4096"},
		{[]string{"--concurrency", "4097"}, "--concurrency 4097: want 1 to 4096"},
		{[]string{"--timeout", "0s"}, "--timeout 0s: want 1s to 24h"},
		{[]string{"--timeout", "25h"}, "--timeout 25h: want 1s to 24h"},
		{[]string{"--connect-timeout", "-1s"}, "--connect-timeout -1s: want 1s to 5m"},
		{[]string{"--connect-timeout", "500ms"}, "--connect-timeout 500ms: want 1s to 5m"},
		{[]string{"--inactivity-timeout", "0s"}, "--inactivity-timeout 0s: want 1s to 24h"},
		{[]string{"-p", "70000"}, "--port 70000 is out of range (want 1-65535)"},
		{[]string{"--port", "0"}, "--port 0 is out of range"},
		{[]string{"-p", "-1"}, "--port -1 is out of range"},
	} {
		for _, c := range commands {
			run(t, env, with(c, tc.flags...)...).expect(t, 2, "", tc.want)
		}
	}
	for _, c := range commands {
		run(t, env, with(c, "--concurrency", "4096", "--timeout", "24h", "--connect-timeout", "1s", "--inactivity-timeout", "1s", "-p", "65535")...).
			expect(t, 2, "", "does not exist")
	}
}

// The top-level help lists every exit code gpulab uses (the constants),
// and so do the README's Commands section and docs/commands.md.
func TestHelpListsEveryExitCode(t *testing.T) {
	r := run(t, noEnv(t), "--help")
	_, help, ok := strings.Cut(r.stdout, "Exit codes:\n")
	help, _, _ = strings.Cut(help, "\n\n")
	if r.code != 0 || !ok {
		t.Fatalf("gpulab --help: exit %d, no \"Exit codes:\" list:\n%s", r.code, r.stdout)
	}
	inHelp := map[string]bool{}
	for _, l := range strings.Split(help, "\n") {
		if f := strings.Fields(l); len(f) > 1 && !strings.HasPrefix(l, "       ") {
			inHelp[f[0]] = true
		}
	}
	for _, doc := range []string{"../README.md", "../docs/commands.md"} {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		_, section, _ := strings.Cut(string(text), "\nExit codes: ")
		section, _, _ = strings.Cut(section, "\n\n")
		inDoc := map[string]bool{}
		for _, m := range regexp.MustCompile(`\*\*(\d+)\*\*`).FindAllStringSubmatch(section, -1) {
			inDoc[m[1]] = true
		}
		for _, code := range []int{ExitOK, ExitFailed, ExitUsage, ExitUnknown, ExitNotSaved, ExitInterrupted} {
			c := strconv.Itoa(code)
			if !inDoc[c] {
				t.Errorf("%s's exit codes do not list %s", doc, c)
			}
		}
		if len(inHelp) != len(inDoc) {
			t.Errorf("gpulab --help lists exit codes %v, %s %v", inHelp, doc, inDoc)
		}
	}
	for _, code := range []int{ExitOK, ExitFailed, ExitUsage, ExitUnknown, ExitNotSaved, ExitInterrupted} {
		if c := strconv.Itoa(code); !inHelp[c] {
			t.Errorf("gpulab --help does not list exit code %s:\n%s", c, help)
		}
	}
}

// TestInventoryEnvMissing: $GPULAB_INVENTORY naming a file that does not
// exist is a configuration error naming the variable and the path (exit
// 2), as --inventory FILE's is, for every command that loads an inventory:
// none runs without it (ad-hoc hosts through DNS, or no hosts at all), and
// the workbench does not fall back to the demo.
func TestInventoryEnvMissing(t *testing.T) {
	env := noEnv(t)
	missing := filepath.Join(env["HOME"], "typo.toml")
	env["GPULAB_INVENTORY"] = missing
	want := fmt.Sprintf("$GPULAB_INVENTORY: inventory %q does not exist", missing)
	local := filepath.Join(t.TempDir(), "f")
	writeFile(t, local, "x")
	for _, args := range [][]string{
		{"inventory", "check"},
		{"inventory", "list"},
		{"inventory", "show", "dgx01"},
		{"exec", "-H", "dgx01", "--", "true"},
		{"push", local, "-H", "dgx01"},
		{"probe", "-H", "dgx01"},
		{"runbook", "run", "topology", "-H", "dgx01"},
		{"lab", "run", "topology-sanity", "-H", "dgx01", "--results", t.TempDir()},
		{"results", "list", "-H", "dgx01", "--results", t.TempDir()},
	} {
		r := run(t, env, args...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, want) {
			t.Errorf("gpulab %s: exit %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, ExitUsage, want, r.stdout, r.stderr)
		}
	}
	// The workbench, on a terminal: it must refuse to open. Should it open
	// all the same, on a buffer for a terminal it may never quit; the test
	// fails after a while rather than wait for it.
	env[EnvFirstFrameExit], env["NO_COLOR"] = "1", "1"
	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Main(nil, Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return env[k] }, IsTerminal: true})
	}()
	select {
	case code := <-done:
		if code != ExitUsage || !strings.Contains(errOut.String(), want) {
			t.Errorf("gpulab (the workbench): exit %d, want %d with %q\nstderr:\n%s", code, ExitUsage, want, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Errorf("gpulab (the workbench) with %s missing opened the workbench; want exit %d with %q", missing, ExitUsage, want)
	}
}

// With --json a check always writes its one document, exit 2: a file that
// is missing, or over gpulab's limits, is a problem like any other (it
// printed nothing on stdout, and scripts read an empty document).
func TestCheckJSONWhateverTheFailure(t *testing.T) {
	env := noEnv(t)
	dir := t.TempDir()
	deep := filepath.Join(dir, "deep.toml")
	writeFile(t, deep, "x = "+strings.Repeat("[", 100)+strings.Repeat("]", 100)+"\n")
	missing := filepath.Join(dir, "missing.toml")
	for _, c := range []struct {
		args []string
		file string // the problem's place ("" when it has none)
		msg  string
	}{
		{[]string{"inventory", "check", missing}, "", "does not exist"},
		{[]string{"inventory", "check"}, "", "no inventory file"},
		{[]string{"inventory", "check", deep}, deep, "nested more than 64 levels"},
		{[]string{"lab", "check", deep}, deep, "nested more than 64 levels"},
		{[]string{"catalog", "check", deep}, deep, "nested more than 64 levels"},
	} {
		r := run(t, env, append(c.args, "--json")...)
		var out struct {
			OK       bool      `json:"ok"`
			Problems []Problem `json:"problems"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != 2 || out.OK || len(out.Problems) != 1 {
			t.Errorf("%v --json: exit %d, %v, %+v\nstdout: %s\nstderr: %s", c.args, r.code, err, out, r.stdout, r.stderr)
			continue
		}
		if p := out.Problems[0]; p.File != c.file || !strings.Contains(p.Message, c.msg) {
			t.Errorf("%v --json: problem %+v, want one in %q saying %q", c.args, p, c.file, c.msg)
		}
	}
}

// With --json every failure is one JSON document on standard output (the
// error, its exit status, its problems), whatever failed and however
// early: a script that parses stdout never reads an empty one.
func TestJSONFailuresAreDocuments(t *testing.T) {
	env := noEnv(t)
	for _, args := range [][]string{
		{"lab", "show", "no-such-lab"},
		{"runbook", "show", "no-such-runbook"},
		{"catalog", "show", "no-such-project"},
		{"parse", "no-such-kind"},
		{"results", "show", "no-such-run"},
		{"cluster", "nodes"},
		{"inventory", "list", "--inventory", "../inventory.toml", "-H", "gpu[01"},
		{"exec", "--no-such-flag"},
	} {
		r := run(t, env, append(args, "--json")...)
		var doc struct {
			Error    string    `json:"error"`
			ExitCode int       `json:"exit_code"`
			Problems []Problem `json:"problems"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code == 0 || doc.ExitCode != r.code || doc.Error == "" || len(doc.Problems) == 0 {
			t.Errorf("gpulab %s --json: exit %d, %v, %+v\nstdout: %q\nstderr: %q", strings.Join(args, " "), r.code, err, doc, r.stdout, r.stderr)
		}
	}
}
