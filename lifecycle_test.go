package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpulab/gpulab/internal/kubetest"
	"github.com/gpulab/gpulab/internal/testreq"
	"github.com/gpulab/gpulab/sim"
)

// The host lifecycle, through the real binary: every command that takes
// -H, on a selection of two healthy simulated hosts and one bad host, for
// every way a host can fail. Whatever happened to the bad host, it is
// named in the text and in --json with its class, the exit status is not
// 0, nothing says the selection passed, and there is exactly one result per
// selected host, in selection order.

// lifecycleSeed picks the fleet's sick host; the selection leaves it out,
// so that only the bad host can make a run fail.
const lifecycleSeed = 7

// badClass is one way the bad host fails.
type badClass struct {
	name  string // the subtest
	class string // what gpulab must call it
	// cfg makes the fleet's third healthy host bad (sim.Config Drop, Hang,
	// Die); block, when set, is an ssh_config block for "badhost" (an
	// ad-hoc name, so that ssh_config decides how it is reached), given
	// the fleet.
	cfg   func(c *sim.Config, bad string)
	block func(f *sim.Fleet, healthy []string, bad string) string
	// flags are the class's own (the operator's --timeout, which caps
	// every command: a runbook's and a lab's steps too).
	flags []string
}

func lifecycleClasses() []badClass {
	port := func(f *sim.Fleet, name string) int {
		for _, h := range f.Hosts() {
			if h.Name == name {
				return h.Port
			}
		}
		panic("no host " + name)
	}
	return []badClass{
		{name: "unresolvable-config", class: "error", block: func(*sim.Fleet, []string, string) string {
			return "Host badhost\n  HostName 127.0.0.1\n  IdentitiesOnly perhaps\n"
		}},
		// A .onion name is never sent to DNS (RFC 7686; Go's resolver
		// answers it at once, GODEBUG=netdns=go below): a name that does
		// not resolve, with no packet leaving the machine.
		{name: "dns-failure", class: "unreachable", block: func(*sim.Fleet, []string, string) string {
			return "Host badhost\n  HostName gpulab-lifecycle-test.onion\n"
		}},
		{name: "connection-refused", class: "refused", cfg: func(c *sim.Config, bad string) { c.Drop = []string{bad} }},
		{name: "auth-failure", class: "auth", cfg: func(c *sim.Config, bad string) { c.Deny = []string{bad} }},
		// The bad host's port, looked up in known_hosts under a healthy
		// host's name: the key it shows is not the one on record.
		{name: "changed-host-key", class: "hostkey-changed", block: func(f *sim.Fleet, healthy []string, bad string) string {
			return fmt.Sprintf("Host badhost\n  HostName 127.0.0.1\n  Port %d\n  HostKeyAlias %s\n", port(f, bad), healthy[0])
		}},
		{name: "hang", class: "timeout-connect", cfg: func(c *sim.Config, bad string) { c.Hang = []string{bad} }},
		{name: "killed-mid-command", class: "lost", cfg: func(c *sim.Config, bad string) { c.Die = []string{bad} }},
		// Logged in, and every command hangs, silent: a hung nvidia-smi.
		// --timeout caps every command, so the run ends in seconds; a
		// simulated healthy host answers in milliseconds, far below it.
		{name: "hang-mid-command", class: "timeout-command", cfg: func(c *sim.Config, bad string) { c.Stall = []string{bad} }, flags: []string{"--timeout", "10s"}},
	}
}

// lifecycleHost is one host's entry in a command's --json, whatever the
// command: its name and class (or, for a lab record, how it ended).
type lifecycleHost struct {
	Host  string `json:"host"`
	Class string `json:"class"`
	Err   string `json:"error"`
}

// lifecycleCommand is one command that takes -H, with how to read its
// --json.
type lifecycleCommand struct {
	name string
	args func(file string) []string
	// hosts reads the per-host results and says whether the document
	// claims the selection passed.
	hosts func(t *testing.T, stdout string) (hosts []lifecycleHost, passed bool)
}

func lifecycleCommands() []lifecycleCommand {
	list := func(key string) func(t *testing.T, stdout string) ([]lifecycleHost, bool) {
		return func(t *testing.T, stdout string) ([]lifecycleHost, bool) {
			t.Helper()
			var doc map[string]json.RawMessage
			if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
				t.Fatalf("--json: %v\n%s", err, stdout)
			}
			var hs []lifecycleHost
			if err := json.Unmarshal(doc[key], &hs); err != nil {
				t.Fatalf("--json %q: %v\n%s", key, err, stdout)
			}
			var worst string
			_ = json.Unmarshal(doc["worst"], &worst)
			var passed bool
			_ = json.Unmarshal(doc["passed"], &passed)
			// counts (exec's by class, probe's by outcome) claim a pass
			// when "ok" is the only one with hosts.
			var counts map[string]int
			_ = json.Unmarshal(doc["counts"], &counts)
			allOK := counts["ok"] > 0
			for k, n := range counts {
				allOK = allOK && (k == "ok" || n == 0)
			}
			return hs, passed || worst == "PASS" || worst == "ok" || allOK
		}
	}
	return []lifecycleCommand{
		{"exec", func(string) []string { return []string{"exec", "--json", "--", "true"} }, list("hosts")},
		{"push", func(file string) []string { return []string{"push", file, "--json"} }, list("hosts")},
		{"probe", func(string) []string { return []string{"probe", "--json"} }, list("hosts")},
		{"runbook run", func(string) []string { return []string{"runbook", "run", "topology", "--json"} }, list("hosts")},
		{"lab run", func(string) []string { return []string{"lab", "run", "topology-sanity", "--json"} }, list("hosts")},
		{"cluster reconcile", func(string) []string { return []string{"cluster", "reconcile", "--json"} }, list("hosts")},
	}
}

func TestEveryHostAnswersOnce(t *testing.T) {
	bin := gpulabBinary(t)
	cp := kubetest.Start(t) // cluster reconcile reads a real API server
	// Learn the fleet's names and which host is sick (the seed decides).
	names, sick := fleetPlan(t)
	var healthy []string
	for _, n := range names {
		if n != sick {
			healthy = append(healthy, n)
		}
	}
	for _, n := range names {
		cp.AddNode(t, kubetest.GPUNode(n, 8))
	}
	pushFile := filepath.Join(t.TempDir(), "payload.txt")
	if err := os.WriteFile(pushFile, []byte("gpulab lifecycle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bc := range lifecycleClasses() {
		t.Run(bc.name, func(t *testing.T) {
			t.Parallel()
			cfg := sim.Config{Hosts: len(names), Seed: lifecycleSeed}
			bad := healthy[2]
			if bc.cfg != nil {
				bc.cfg(&cfg, bad)
			}
			f, err := sim.Start(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			dir := t.TempDir()
			files, err := f.WriteInventory(filepath.Join(dir, "inventory.toml"))
			if err != nil {
				t.Fatal(err)
			}
			selected := bad
			sshConfig := files.SSHConfig
			if bc.block != nil {
				selected = "badhost"
				base, err := os.ReadFile(files.SSHConfig)
				if err != nil {
					t.Fatal(err)
				}
				sshConfig = filepath.Join(dir, "ssh_config")
				if err := os.WriteFile(sshConfig, append([]byte(bc.block(f, healthy, bad)), base...), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			selection := []string{healthy[0], healthy[1], selected}
			common := append([]string{"-H", strings.Join(selection, ","), "--inventory", files.Inventory, "-F", sshConfig, "--connect-timeout", "1s"}, bc.flags...)
			env := []string{"HOME=" + dir, "GODEBUG=netdns=go", "GPULAB_RESULTS=" + filepath.Join(dir, "results"), "KUBECONFIG=" + cp.Kubeconfig}
			for _, c := range lifecycleCommands() {
				t.Run(strings.ReplaceAll(c.name, " ", "-"), func(t *testing.T) {
					noun := strings.Fields(c.name)
					args := slices.Concat(noun, common, c.args(pushFile)[len(noun):])
					r := runLifecycle(t, bin, env, args...)
					if r.code == 0 || r.code == 2 {
						t.Errorf("gpulab %s --json: exit %d with %s %s, want a failure's (1 or 3)\n%s\n%s", c.name, r.code, selected, bc.class, r.stdout, r.stderr)
					}
					hosts, passed := c.hosts(t, r.stdout)
					if passed {
						t.Errorf("gpulab %s --json says the selection passed with %s %s:\n%s", c.name, selected, bc.class, r.stdout)
					}
					var got []string
					for _, h := range hosts {
						got = append(got, h.Host)
					}
					if !slices.Equal(got, selection) {
						t.Fatalf("gpulab %s --json lists hosts %q, want exactly the selection %q, once each, in order\n%s", c.name, got, selection, r.stderr)
					}
					if b := hosts[2]; b.Class != bc.class || b.Err == "" {
						t.Errorf("gpulab %s --json: %s is %q (%q), want class %q with its error\n%s", c.name, selected, b.Class, b.Err, bc.class, r.stderr)
					}
					// A script reading --json, and its operator reading
					// stderr, learn the same: the bad host with its class.
					if !slices.ContainsFunc(strings.Split(r.stderr, "\n"), func(l string) bool {
						return strings.Contains(l, selected) && strings.Contains(l, bc.class)
					}) {
						t.Errorf("gpulab %s --json: stderr does not name %s with its class %s:\n%s", c.name, selected, bc.class, r.stderr)
					}
					// The same run as text: the bad host is named with its
					// class, and nothing says the selection passed.
					text := runLifecycle(t, bin, env, slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "--json" })...)
					all := text.stdout + text.stderr
					if text.code != r.code {
						t.Errorf("gpulab %s: exit %d as text, %d with --json", c.name, text.code, r.code)
					}
					named := slices.ContainsFunc(strings.Split(all, "\n"), func(l string) bool {
						return strings.Contains(l, selected) && strings.Contains(l, bc.class)
					})
					if !named {
						t.Errorf("gpulab %s: the text does not name %s with its class %s:\n%s", c.name, selected, bc.class, all)
					}
					for _, claim := range []string{"PASSED", "3 hosts: 3 ok", "3 hosts: 3 PASS"} {
						if strings.Contains(all, claim) {
							t.Errorf("gpulab %s says %q with %s %s:\n%s", c.name, claim, selected, bc.class, all)
						}
					}
				})
			}
		})
	}
}

// fleetPlan starts the test's fleet once to learn its host names and the
// sick one.
func fleetPlan(t *testing.T) (names []string, sick string) {
	t.Helper()
	f, err := sim.Start(context.Background(), sim.Config{Hosts: 4, Seed: lifecycleSeed})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, h := range f.Hosts() {
		names = append(names, h.Name)
		if h.Sick {
			sick = h.Name
		}
	}
	return names, sick
}

// runLifecycle runs the binary with env only (no operator's HOME or
// agent), under a safety net that fails the test rather than hang it: a
// run here takes seconds, so two minutes is no measurement.
func runLifecycle(t *testing.T, bin string, env []string, args ...string) gpulabRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, bin, args...)
	c.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	var out, errOut strings.Builder
	c.Stdout, c.Stderr = &out, &errOut
	err := c.Run()
	if ctx.Err() != nil {
		t.Fatalf("gpulab %s did not finish within 2 minutes\n%s\n%s", strings.Join(args, " "), out.String(), errOut.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return gpulabRun{code: code, stdout: out.String(), stderr: errOut.String()}
}

// The workbench counts as the command line does: on a fleet where one
// host refuses connections, the Fleet's probe line, the Runbooks tab's
// head and the Labs tab's verdict say what gpulab probe, gpulab runbook
// run and gpulab lab run say of the same hosts.
func TestWorkbenchCountsMatchTheCommandLine(t *testing.T) {
	tmux := testreq.Tool(t, "tmux", "the workbench is driven in it (apt-get install tmux)")
	bin := gpulabBinary(t)
	names, sick := fleetPlan(t)
	bad := ""
	for _, n := range names {
		if n != sick {
			bad = n
		}
	}
	f, err := sim.Start(context.Background(), sim.Config{Hosts: len(names), Seed: lifecycleSeed, Drop: []string{bad}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	dir := t.TempDir()
	files, err := f.WriteInventory(filepath.Join(dir, "inventory.toml"))
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + dir, "GPULAB_RESULTS=" + filepath.Join(dir, "results")}
	sel := []string{"--inventory", files.Inventory, "-H", "@dgx"}
	counts := func(args ...string) string {
		t.Helper()
		r := runLifecycle(t, bin, env, append(args, sel...)...)
		for _, l := range strings.Split(r.stdout+r.stderr, "\n") {
			if _, rest, ok := strings.Cut(l, "4 hosts: "); ok && strings.Contains(rest, bad) {
				return rest
			}
		}
		t.Fatalf("gpulab %s printed no summary naming %s:\n%s\n%s", strings.Join(args, " "), bad, r.stdout, r.stderr)
		return ""
	}
	probe := counts("probe")
	runbook := counts("runbook", "run", "topology")
	if !strings.Contains(probe, "1 failed: 1 refused ("+bad+")") || !strings.Contains(runbook, "not reached: 1 refused ("+bad+")") {
		t.Fatalf("the command line's counts: probe %q, runbook %q", probe, runbook)
	}

	s := newTmux(t, tmux, 200, 50, strings.Join(env, " ")+" SSH_AUTH_SOCK= "+bin+" --inventory "+files.Inventory)
	screenWait(t, s, nil, "CONTROL PLANE")
	s.keys("3")
	screenWait(t, s, nil, "4 hosts: dgx[01-04]")
	s.keys("p")
	screenWait(t, s, nil, "$ gpulab probe done", "4/4  "+probe)
	s.keys("4", "End")
	screenWait(t, s, nil, "▶ topology ")
	s.keys("Enter")
	screenWait(t, s, nil, "done 4/4  "+runbook)
	s.keys("5", "End")
	screenWait(t, s, nil, "▶ topology-sanity ")
	s.keys("Enter")
	screenWait(t, s, regexp.MustCompile(`PASSED`), "INCOMPLETE: not every host ran to the end: 1 refused ("+bad+")", "record: ")
	s.keys("q")
	screenWait(t, s, nil, "EXIT=0")
}
