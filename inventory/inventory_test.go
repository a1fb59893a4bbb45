package inventory

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpulab/gpulab/internal/tomlpos"
)

func loadExample(t *testing.T) *Inventory {
	t.Helper()
	inv, err := Load("../inventory.toml")
	if err != nil {
		t.Fatalf("the documented example inventory.toml does not load: %v", err)
	}
	return inv
}

func TestExampleInventory(t *testing.T) {
	inv := loadExample(t)
	if got := len(inv.Hosts); got != 16 {
		t.Errorf("example has %d hosts, want 16 (8+4+1+1+2)", got)
	}
	h, ok := inv.Host("gpu010")
	if !ok {
		t.Fatal("gpu010 (from gpu[009-012]) is missing")
	}
	if h.Address != "gpu010.a100.example.net" || h.Labels["mig"] != "enabled" || h.Source != "../inventory.toml:52:1" || h.Expect != (Expect{}) {
		t.Errorf("gpu010 = %+v, want address from {name}, label mig=enabled, source line 52, no expect", h)
	}
	if g, _ := inv.Host("gpu003"); g.Expect != (Expect{GPUs: 8, IBPorts: 8, IBRateGbps: 200}) {
		t.Errorf("gpu003 expect = %+v", g.Expect)
	}
	if got := strings.Join(h.Groups, ","); got != "a100,gpus,infer,lab" {
		t.Errorf("gpu010 groups = %q, want a100,gpus,infer,lab", got)
	}
	if d := inv.Defaults; d.ConnectTimeout.Duration != 10*time.Second || d.InactivityTimeout.Duration != 2*time.Minute || d.Concurrency != 64 || d.User != "ops" {
		t.Errorf("defaults = %+v", d)
	}
	if got := FoldNames(inv.Groups["a100-whole"]); got != "gpu[001-008]" {
		t.Errorf("@a100-whole = %q, want gpu[001-008]", got)
	}
	if len(inv.Kube) != 1 || FoldNames(inv.Kube[0].NodeNames) != "gpu[001-012],h200-01" {
		t.Errorf("kube = %+v, want lab with nodes gpu[001-012],h200-01", inv.Kube)
	}
}

func TestSelect(t *testing.T) {
	inv := loadExample(t)
	tests := []struct{ expr, want string }{
		{"gpu[001-003]", "gpu[001-003]"},
		{"@a100", "gpu[001-012]"},
		{"@a100!gpu[002-011]", "gpu[001,012]"},
		{"@a100&@rack=r13", "gpu[009-012]"},
		{"@gpu=a100-80gb", "dgx-[01-02],gpu[001-008]"},
		{"@train^gpu[007-010]", "gpu[001-006,009-010]"},
		{"*!@gpus", "bastion"},
		{"@all!@gpus", "bastion"},
		{"gpu001,newhost[1-2]", "gpu001,newhost[1-2]"},
		{" @dc2 , h200-01 ", "dgx-[01-02],h200-01"},
		{"@rack=nope", ""},
	}
	for _, tt := range tests {
		hosts, err := inv.Select(tt.expr)
		if err != nil {
			t.Errorf("Select(%q) error: %v", tt.expr, err)
			continue
		}
		if got := FoldNames(Names(hosts)); got != tt.want {
			t.Errorf("Select(%q) = %q, want %q", tt.expr, got, tt.want)
		}
	}
	hosts, _ := inv.Select("newhost1,gpu002")
	if hosts[0].Name != "gpu002" || hosts[1].Adhoc != true || hosts[1].Address != "newhost1" {
		t.Errorf("Select(newhost1,gpu002) = %+v, want inventory hosts first, then ad-hoc ones", hosts)
	}
}

func TestSelectErrors(t *testing.T) {
	inv := loadExample(t)
	tests := []struct{ expr, want string }{
		{"", "empty host expression"},
		{"@nope", "unknown group @nope (groups: a100, a100-whole, dc2, gpus, infer, lab, train)"},
		{"!gpu01", "'!' needs a set to remove from"},
		{"gpu01,,gpu02", `column 7: missing a host or group before ","`},
		{"@gpu=日本,,gpu02", `column 9: missing a host or group before ","`}, // columns in characters
		{"gpu[01-", "'[' is never closed"},
		{"@=x", "want @key=value"},
	}
	for _, tt := range tests {
		_, err := inv.Select(tt.expr)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Select(%q) error = %v, want it to contain %q", tt.expr, err, tt.want)
		}
	}
	if _, err := Empty().Select("@x"); err == nil || !strings.Contains(err.Error(), "defines no groups") {
		t.Errorf("Empty().Select(@x) error = %v, want 'defines no groups'", err)
	}
}

// TestSelectLimits: a host expression names at most MaxHosts hosts. A node
// set over it is refused with its size before it is expanded (sizes no
// expansion could reach are exact), a union that crosses it is refused as it
// does, and the terms together are charged against MaxGroupNames, a node
// set before it is expanded.
func TestSelectLimits(t *testing.T) {
	inv := loadExample(t)
	tests := []struct{ expr, want string }{
		{"a[0-999]b[0-999]", `host expression "a[0-999]b[0-999]": node set "a[0-999]b[0-999]" names 1000000 hosts, more than the 65536 a host expression may name`},
		{"gpu001,n[0-999999999999999999]", `host expression "gpu001,n[0-999999999999999999]": node set "n[0-999999999999999999]" names 1000000000000000000 hosts, more than the 65536`},
		{"a[1-40000],b[1-40000]!a[1-40000]", `host expression "a[1-40000],b[1-40000]!a[1-40000]" names at least 80000 hosts, more than the 65536 a host expression may name`},
	}
	for _, tt := range tests {
		if _, err := inv.Select(tt.expr); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Select(%q) error = %v, want it to contain %q", tt.expr, err, tt.want)
		}
	}
	max := fmt.Sprintf("n[1-%d]", MaxHosts)
	if hosts, err := inv.Select(max + "!n1,gpu001"); err != nil || len(hosts) != MaxHosts {
		t.Errorf("Select(%s!n1,gpu001) = %d hosts, %v; want %d", max, len(hosts), err, MaxHosts)
	}

	// 64 node sets of MaxHosts names are MaxGroupNames: one more is refused.
	expr := strings.Repeat(max+"!"+max+",", MaxGroupNames/MaxHosts/2) + "x[1-2]"
	if _, err := inv.Select(expr); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("its terms name more than %d hosts in all", MaxGroupNames)) {
		t.Errorf("Select(%.40s...) = %v, want the terms over MaxGroupNames", expr, err)
	}

	budget := 10
	_, err := inv.evaluate("gpu[001-008],n[1-1000]", inv.groupRef, false, &budget)
	if !errors.Is(err, errNamesBudget) || budget != -1 {
		t.Errorf("evaluate with 10 names left: %v, %d left; want errNamesBudget with n[1-1000] charged before it is expanded (-1 left)", err, budget)
	}
	budget = 10
	if set, err := inv.evaluate("gpu[001-008],bastion,h200-01", inv.groupRef, true, &budget); err != nil || len(set) != 10 || budget != 0 {
		t.Errorf("evaluate of 10 names with 10 left = %d names, %v, %d left", len(set), err, budget)
	}
	budget = 10
	if _, err := inv.evaluate("gpu[001-008],@dc2,h200-01", inv.groupRef, true, &budget); !errors.Is(err, errNamesBudget) {
		t.Errorf("evaluate of 11 names with 10 left: %v, want errNamesBudget", err)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"unknown key", "[defaults]\nuser = \"a\"\nusr = \"b\"\n",
			[]string{`inv.toml:3:1: unknown key "usr" (expected in defaults: command_timeout, concurrency, connect_timeout, identity_file, inactivity_timeout, jump, known_hosts, port, ssh_config, user)`}},
		{"unknown host key", "[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\nlables = {x = \"y\"}\n",
			[]string{`inv.toml:5:1: unknown key "lables"`}},
		{"bare number duration", "[defaults]\nconnect_timeout = 10\n",
			[]string{`inv.toml:2:19: want a duration in quotes such as "30s"`}},
		{"bad duration", "[defaults]\ncommand_timeout = \"ten\"\n",
			[]string{`inv.toml:2:20: "ten" is not a duration`}},
		{"wrong type", "[defaults]\nport = \"22\"\n",
			[]string{`inv.toml:2:1: key "defaults.port": wrong type: want integer, found string`}},
		{"syntax", "[[host]]\nname = \"a\n",
			[]string{`inv.toml:2:`}},
		{"no name", "[[host]]\naddress = \"x\"\n",
			[]string{`inv.toml:1:1: host has no name`}},
		{"bad node set", "[[host]]\nname = \"gpu[3-1]\"\n",
			[]string{`inv.toml:2:1: node set "gpu[3-1]": column 5: range "3-1": 3 is greater than 1`}},
		{"duplicate", "[[host]]\nname = \"gpu[1-3]\"\n[[host]]\nname = \"gpu2\"\n",
			[]string{`inv.toml:4:1: host "gpu2" is already defined at inv.toml:1:1`}},
		{"shared address", "[[host]]\nname = \"gpu[1-3]\"\naddress = \"10.0.0.1\"\n",
			[]string{`inv.toml:3:1: address "10.0.0.1" is shared by 3 hosts; use {name}`}},
		{"port range", "[[host]]\nname = \"a\"\nport = 70000\n",
			[]string{`inv.toml:3:1: port 70000 is out of range`}},
		{"largest port", "[[host]]\nname = \"a\"\nport = 9223372036854775807\n",
			[]string{`inv.toml:3:1: port 9223372036854775807 is out of range (want 1-65535)`}},
		{"port zero", "[defaults]\nport = 0\n[[host]]\nname = \"a\"\nport = -22\n",
			[]string{`inv.toml:2:1: port 0 is out of range`, `inv.toml:5:1: port -22 is out of range`}},
		{"concurrency", "[defaults]\nconcurrency = 9223372036854775807\n",
			[]string{`inv.toml:2:1: concurrency 9223372036854775807: want 1 to 4096 hosts at once`}},
		{"concurrency zero", "[defaults]\nconcurrency = 0\n",
			[]string{`inv.toml:2:1: concurrency 0: want 1 to 4096`}},
		{"negative concurrency", "[defaults]\nconcurrency = -3\n",
			[]string{`inv.toml:2:1: concurrency -3: want 1 to 4096`}},
		{"timeouts", "[defaults]\nconnect_timeout = \"1ms\"\ncommand_timeout = \"2562047h\"\ninactivity_timeout = \"25h\"\n",
			[]string{`inv.toml:2:1: connect_timeout 1ms: want 1s to 5m`, `inv.toml:3:1: command_timeout 2562047h: want 1s to 24h`, `inv.toml:4:1: inactivity_timeout 25h: want 1s to 24h`}},
		{"bad label", "[[host]]\nname = \"a\"\nlabels = { gpu = \"a 100\" }\n",
			[]string{`inv.toml:3:12: label gpu="a 100"`}},
		{"bad jump", "[[host]]\nname = \"a\"\njump = \"b;rm -rf /\"\n",
			[]string{`inv.toml:3:1: jump "b;rm -rf /": want [user@]host[:port]`}},
		{"unknown group", "[[host]]\nname = \"a\"\n[groups]\ng = \"@h\"\n",
			[]string{`inv.toml:4:1: group "g": host expression "@h": unknown group @h`}},
		{"group not in inventory", "[[host]]\nname = \"a\"\n[groups]\ng = \"a,b\"\n",
			[]string{`inv.toml:4:1: group "g": host expression "a,b": host "b" is not in the inventory`}},
		{"group cycle", "[[host]]\nname = \"a\"\n[groups]\ng = \"@h\"\nh = \"@g\"\n",
			[]string{`inv.toml:5:1: group "h": groups refer to each other in a cycle: @g -> @h -> @g`}},
		{"kube", "[[kube]]\ncontext = \"x\"\n[[kube]]\nname = \"k\"\nnodes = \"@none\"\n",
			[]string{`inv.toml:1:1: kube context has no name`, `inv.toml:5:1: host expression "@none": unknown group @none`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("inv.toml", []byte(tt.src))
			if err == nil {
				t.Fatalf("Parse accepted %q", tt.src)
			}
			var pe *tomlpos.Error
			if !errors.As(err, &pe) {
				t.Errorf("Parse error %v is not a *tomlpos.Error", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Parse error =\n%v\nwant it to contain\n%s", err, w)
				}
			}
		})
	}
}

func TestLocate(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"HOME": dir}
	_, err := Locate(func(k string) string { return env[k] })
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), dir+"/.config/gpulab/inventory.toml") {
		t.Errorf("Locate with nothing there = %v, want ErrNotFound naming where it looked", err)
	}
	env[EnvInventory] = "../inventory.toml"
	if p, err := Locate(func(k string) string { return env[k] }); err != nil || p != "../inventory.toml" {
		t.Errorf("Locate with %s set = %q, %v", EnvInventory, p, err)
	}
	if _, err := Load(dir + "/missing.toml"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Load(missing) = %v, want 'does not exist'", err)
	}
}

// TestLocateEnvMissing: $GPULAB_INVENTORY naming a file that does not
// exist is an error that names the variable and the path, as --inventory
// FILE's is, even when the default location has an inventory: it is never
// passed over for the next place, nor taken for "no inventory".
func TestLocateEnvMissing(t *testing.T) {
	dir := t.TempDir()
	def := filepath.Join(dir, ".config", "gpulab", "inventory.toml")
	if err := os.MkdirAll(filepath.Dir(def), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(def, []byte("[[host]]\nname = \"gpu01\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "typo.toml")
	env := map[string]string{"HOME": dir, EnvInventory: missing}
	p, err := Locate(func(k string) string { return env[k] })
	want := fmt.Sprintf("$%s: inventory %q does not exist", EnvInventory, missing)
	if err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), want) {
		t.Errorf("Locate with %s=%s = %q, %v; want an error containing %q, not ErrNotFound", EnvInventory, missing, p, err, want)
	}
	delete(env, EnvInventory)
	if p, err := Locate(func(k string) string { return env[k] }); err != nil || p != def {
		t.Errorf("Locate without %s = %q, %v; want %s", EnvInventory, p, err, def)
	}
}

// TestLoadLimits: an inventory too large or nested too deeply is refused
// before it is parsed, naming the file, with an error that wraps
// tomlpos.ErrLimit.
func TestLoadLimits(t *testing.T) {
	dir := t.TempDir()
	big := []byte("[defaults]\nuser = \"ops\"\n" + strings.Repeat("# padding\n", tomlpos.MaxFileSize/10))
	deep := []byte("[defaults]\nuser = \"ops\"\nx = " + strings.Repeat("{a=", 4000) + "1" + strings.Repeat("}", 4000) + "\n")
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"big.toml", big, "big.toml: the file is 8388624 bytes (8.0 MiB), more than the 8 MiB gpulab reads"},
		{"deep.toml", deep, "deep.toml:3:"},
	}
	for _, tt := range tests {
		path := filepath.Join(dir, tt.name)
		if err := os.WriteFile(path, tt.data, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path); !errors.Is(err, tomlpos.ErrLimit) || !strings.Contains(err.Error(), filepath.Join(dir, tt.want)) {
			t.Errorf("Load(%s) = %v, want an error that contains %q and wraps tomlpos.ErrLimit", tt.name, err, tt.want)
		}
	}
}

// TestParseManyProblems: thousands of problems in a file are reported as
// the first tomlpos.MaxProblems and a count of the others.
func TestParseManyProblems(t *testing.T) {
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, "[[host]]\nname = \"h%d\"\nport = -%d\n", i, i+1)
	}
	_, err := Parse("inv.toml", []byte(b.String()))
	if err == nil {
		t.Fatal("Parse accepted 3000 negative ports")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != tomlpos.MaxProblems+1 || lines[len(lines)-1] != "inv.toml: and 2950 more problems" {
		t.Errorf("Parse error has %d lines ending %q, want %d ending %q", len(lines), lines[len(lines)-1], tomlpos.MaxProblems+1, "inv.toml: and 2950 more problems")
	}
	if !strings.HasPrefix(lines[0], "inv.toml:3:1: port -1 is out of range") {
		t.Errorf("Parse error starts %q, want the first host's port at inv.toml:3:1", lines[0])
	}
}

// TestParseGroupLimits: chains of groups, cycles and groups that name the
// same hosts over and over are resolved once each, and stop at
// MaxGroupDepth and MaxGroupNames with an error at the group.
func TestParseGroupLimits(t *testing.T) {
	chain := func(n int, last string) string {
		var b strings.Builder
		b.WriteString("[[host]]\nname = \"h[1-65536]\"\n[groups]\n")
		for i := range n - 1 {
			fmt.Fprintf(&b, "g%d = \"@g%d\"\n", i, i+1)
		}
		fmt.Fprintf(&b, "g%d = %q\n", n-1, last)
		return b.String()
	}
	deep := make([]string, MaxGroupDepth+1)
	for i := range deep {
		deep[i] = fmt.Sprintf("@g%d", i)
	}
	tooDeep := fmt.Sprintf(`inv.toml:4:1: group "g0": groups name groups more than %d deep: %s`, MaxGroupDepth, strings.Join(deep, " -> "))
	repeated := "[[host]]\nname = \"h[1-65536]\"\n[groups]\nall = \"" + strings.Repeat("*,", 64) + "*\"\n"
	declared := "[[host]]\nname = \"h[1-65536]\"\ngroups = [" + strings.Repeat("\"a\",", 64) + "\"b\"]\n"
	tests := []struct {
		name, src, want string
	}{
		{"chain of 4000", chain(4000, "h1"), tooDeep},
		{"cycle of 4000", chain(4000, "@g0"), tooDeep},
		{"cycle", chain(3, "@g0"), `inv.toml:6:1: group "g2": groups refer to each other in a cycle: @g0 -> @g1 -> @g2 -> @g0`},
		{"expression", repeated, fmt.Sprintf(`inv.toml:4:1: group "all": groups and kube contexts name more than %d hosts in all`, MaxGroupNames)},
		{"host.groups", declared, fmt.Sprintf(`inv.toml:3:1: groups and kube contexts name more than %d hosts in all`, MaxGroupNames)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("inv.toml", []byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse error = %.2000v, want it to contain %s", err, tt.want)
			}
			if n := strings.Count(err.Error(), "\n") + 1; n > tomlpos.MaxProblems+1 {
				t.Errorf("Parse reported %d problems", n)
			}
		})
	}
	if _, err := Parse("inv.toml", []byte(chain(MaxGroupDepth, "h1"))); err != nil {
		t.Errorf("Parse of groups %d deep = %v, want it accepted", MaxGroupDepth, err)
	}
}

// FuzzParse feeds arbitrary files to the loader: it must return an inventory
// or an error, never panic, and a returned inventory must select itself.
func FuzzParse(f *testing.F) {
	f.Add("[[host]]\nname = \"gpu[1-4]\"\ngroups = [\"g\"]\n[groups]\nh = \"@g!gpu2\"\n")
	f.Add("[defaults]\nport = 22\n[[kube]]\nname = \"k\"\nnodes = \"*\"\n")
	f.Fuzz(func(t *testing.T, src string) {
		inv, err := Parse("fuzz.toml", []byte(src))
		if err != nil {
			return
		}
		if len(inv.Hosts) == 0 {
			return
		}
		hosts, err := inv.Select("*")
		if err != nil || len(hosts) != len(inv.Hosts) {
			t.Fatalf("Select(*) = %d hosts, %v; want all %d", len(hosts), err, len(inv.Hosts))
		}
	})
}

// TestParseHostLimit: the hosts of all [[host]] entries together are at
// most MaxHosts. The entry that crosses the limit is the one reported, with
// the sizes, and the entries after it are not expanded: a copy of the
// first entry after it would otherwise be thousands of duplicates.
func TestParseHostLimit(t *testing.T) {
	src := "[[host]]\nname = \"a[1-30000]\"\n[[host]]\nname = \"b[1-30000]\"\n" +
		"[[host]]\nname = \"c[1-30000]\"\n[[host]]\nname = \"a[1-30000]\"\n[[host]]\nname = \"x\"\nport = 0\n"
	_, err := Parse("inv.toml", []byte(src))
	want := []string{
		`inv.toml:6:1: node set "c[1-30000]" names 30000 hosts, which brings the inventory to 90000, more than the 65536 hosts an inventory may hold`,
		"inv.toml:11:1: port 0 is out of range (want 1-65535)",
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Errorf("Parse error = %.2000v\nwant exactly:\n%s", err, strings.Join(want, "\n"))
	}

	tests := []struct{ src, want string }{
		{"[[host]]\nname = \"n-[000000-099999]\"\n[[host]]\nname = \"m\"\n",
			`inv.toml:2:1: node set "n-[000000-099999]" names 100000 hosts, more than the 65536 an inventory may hold`},
		// Sizes no expansion could reach: counted, never expanded.
		{"[[host]]\nname = \"a[1-10]\"\n[[host]]\nname = \"b[0-999999999999999]\"\n",
			`inv.toml:4:1: node set "b[0-999999999999999]" names 1000000000000000 hosts, which brings the inventory to 1000000000000010, more than the 65536 hosts`},
		{"[[host]]\nname = \"a[1-10]\"\n[[host]]\nname = \"b[0-999999999]c[0-999999999]d[0-99]\"\n",
			`inv.toml:4:1: node set "b[0-999999999]c[0-999999999]d[0-99]" names more than 18446744073709551614 hosts, which brings the inventory to more than 18446744073709551614, more than the 65536 hosts`},
	}
	for _, tt := range tests {
		_, err := Parse("inv.toml", []byte(tt.src))
		if err == nil || err.Error() != tt.want && !strings.HasPrefix(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%q) error = %.2000v\nwant one problem: %s", tt.src, err, tt.want)
		}
	}

	// Exactly MaxHosts hosts load, with groups of all of them (64 such
	// groups fit in MaxGroupNames).
	src = fmt.Sprintf("[[host]]\nname = \"a[1-%d]\"\ngroups = [\"a\"]\n[[host]]\nname = \"b[1-%d]\"\ngroups = [\"b\"]\n[groups]\nall = \"@a,@b\"\n", MaxHosts/2, MaxHosts/2)
	inv, err := Parse("inv.toml", []byte(src))
	if err != nil || len(inv.Hosts) != MaxHosts || len(inv.Groups["all"]) != MaxHosts || MaxGroupNames/MaxHosts != 64 {
		t.Errorf("Parse of %d hosts in 64 groups: %.2000v", MaxHosts, err)
	}
}

// TestParseRefusesHostileNames: addresses, users, names used as addresses
// and jump specs reach a shell through an ssh_config's ProxyCommand (%h,
// %r, %n); they are held to a host name's and a user name's characters,
// at file:line:col, naming the key and the characters.
func TestParseRefusesHostileNames(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"address", "[[host]]\nname = \"h1\"\n\n\naddress = \"x$(touch /tmp/pwnA)\"\n",
			[]string{`inv.toml:5:1: host "h1": address "x$(touch /tmp/pwnA)" holds characters a host name cannot ('$', '(', ' ', '/', ')'): OpenSSH refuses it too`}},
		{"address template", "[[host]]\nname = \"h[1-2]\"\naddress = \"{name}`id`.lab\"\n",
			[]string{"inv.toml:3:1: host \"h[1-2]\": address \"{name}`id`.lab\" holds characters a host name cannot ('`'): OpenSSH refuses it too"}},
		{"address braces", "[[host]]\nname = \"h1\"\naddress = \"{nam}.lab\"\n",
			[]string{`inv.toml:3:1: host "h1": address "{nam}.lab" holds characters a host name cannot ('{', '}'): OpenSSH refuses it too`}},
		{"address option", "[[host]]\nname = \"h1\"\naddress = \"-oProxyCommand=id\"\n",
			[]string{`inv.toml:3:1: host "h1": address "-oProxyCommand=id" starts with '-' and holds characters a host name cannot ('='): OpenSSH refuses it too`}},
		{"address not refused by OpenSSH", "[[host]]\nname = \"h1\"\naddress = \"h*.lab\"\n",
			[]string{`inv.toml:3:1: host "h1": address "h*.lab" holds characters a host name cannot ('*')` + "\n"}},
		{"address with a newline", "[[host]]\nname = \"h1\"\naddress = \"a\\nb\"\n",
			[]string{`inv.toml:3:1: host "h1": address "a\nb" holds characters a host name cannot ('\n'): OpenSSH refuses it too`}},
		{"user", "[[host]]\nname = \"h1\"\nuser = \"r$(touch /tmp/pwnU)\"\n",
			[]string{`inv.toml:3:1: host "h1": user "r$(touch /tmp/pwnU)" holds characters a user name cannot ('$', '(', ' ', '/', ')'): OpenSSH refuses it too`}},
		{"user option", "[[host]]\nname = \"h1\"\nuser = \"-l\"\n",
			[]string{`inv.toml:3:1: host "h1": user "-l" starts with '-', which a user name cannot: OpenSSH refuses it too`}},
		{"defaults user", "[defaults]\nuser = \"ops;id\"\n",
			[]string{`inv.toml:2:1: [defaults] user "ops;id" holds characters a user name cannot (';'): OpenSSH refuses it too`}},
		{"name as address", "[[host]]\nname = \"-oProxyCommand[1-2]\"\n",
			[]string{`inv.toml:2:1: host "-oProxyCommand[1-2]": name "-oProxyCommand[1-2]" starts with '-', which a host name cannot: OpenSSH refuses it too`}},
		{"name", "[[host]]\nname = \"h$(id)\"\naddress = \"10.0.0.1\"\n",
			[]string{`inv.toml:2:1: node set "h$(id)": column 2: '$' cannot appear in a host name`}},
		{"jump user", "[[host]]\nname = \"h1\"\njump = \"ops@bastion,r$(id)@gw:2222\"\n",
			[]string{`inv.toml:3:1: jump "ops@bastion,r$(id)@gw:2222": want [user@]host[:port], comma-separated for a chain: user "r$(id)" holds characters a user name cannot ('$', '(', ')'): OpenSSH refuses it too`}},
		{"jump host", "[defaults]\njump = \"ops@-oProxyCommand=id\"\n",
			[]string{`inv.toml:2:1: jump "ops@-oProxyCommand=id": want [user@]host[:port], comma-separated for a chain: host "-oProxyCommand=id" starts with '-' and holds characters a host name cannot ('=')`}},
		{"jump port", "[[host]]\nname = \"h1\"\njump = \"gw:22x\"\n",
			[]string{`inv.toml:3:1: jump "gw:22x": want [user@]host[:port], comma-separated for a chain: port "22x": want 1-65535`}},
		{"jump empty hop", "[[host]]\nname = \"h1\"\njump = \"gw,\"\n",
			[]string{`inv.toml:3:1: jump "gw,": want [user@]host[:port], comma-separated for a chain: a hop is empty`}},
		{"jump empty user", "[[host]]\nname = \"h1\"\njump = \"@gw\"\n",
			[]string{`inv.toml:3:1: jump "@gw": want [user@]host[:port], comma-separated for a chain: user "" is empty`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("inv.toml", []byte(tt.src))
			if err == nil {
				t.Fatalf("Parse accepted %q", tt.src)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error()+"\n", w) {
					t.Errorf("Parse error =\n%v\nwant it to contain\n%s", err, w)
				}
			}
		})
	}

	good := `[defaults]
user = "svc.gpu-lab_01"
jump = "ops@bastion.example.net:2222,jo+admin@corp.example@gw2,[fe80::1%eth0]:22,[2001:db8::7],2001:db8::8"
[[host]]
name = "gpu[01-02]"
address = "{name}.a100_lab.example.net"
user = "alice@example.com"
[[host]]
name = "v6"
address = "fe80::1%eth0"
jump = "none"
[[host]]
name = "v6b"
address = "[2001:db8::1]"
`
	inv, err := Parse("inv.toml", []byte(good))
	if err != nil {
		t.Fatalf("Parse refused good names: %v", err)
	}
	if h, _ := inv.Host("gpu02"); h.Address != "gpu02.a100_lab.example.net" || h.User != "alice@example.com" {
		t.Errorf("gpu02 = %+v", h)
	}
}

// Only keeps the hosts given (ad-hoc ones become hosts), groups and
// labels cut down to them: the workbench opened with -H works on it.
func TestOnly(t *testing.T) {
	inv, err := Parse("inv.toml", []byte(`
[[host]]
name = "gpu[01-04]"
groups = ["train"]
labels = { rack = "r1" }
`))
	if err != nil {
		t.Fatal(err)
	}
	hs, err := inv.Select("gpu[02-03],login7")
	if err != nil {
		t.Fatal(err)
	}
	only := inv.Only(hs)
	if got := fmt.Sprint(Names(only.Hosts)); got != "[gpu02 gpu03 login7]" {
		t.Errorf("Only(...).Hosts = %s", got)
	}
	for expr, want := range map[string]string{"*": "[gpu02 gpu03 login7]", "@train": "[gpu02 gpu03]", "@rack=r1": "[gpu02 gpu03]", "login7": "[login7]"} {
		got, err := only.Select(expr)
		if err != nil || fmt.Sprint(Names(got)) != want {
			t.Errorf("Only(...).Select(%q) = %v, %v; want %s", expr, Names(got), err, want)
		}
	}
	if len(inv.Hosts) != 4 {
		t.Errorf("Only changed the inventory it was called on: %d hosts", len(inv.Hosts))
	}
}

// expect = { ... } is checked as the rest of a host's table: a bad value
// names its key and place; an unknown key is refused.
func TestExpectRefused(t *testing.T) {
	for _, c := range []struct{ toml, want string }{
		{"[[host]]\nname = \"a\"\nexpect = { gpus = -1 }\n", "expect.gpus = -1: want 1 to 1024"},
		{"[[host]]\nname = \"a\"\nexpect = { ib_ports = 65 }\n", "expect.ib_ports = 65: want 1 to 64"},
		{"[[host]]\nname = \"a\"\nexpect = { nics = 2 }\n", "nics"},
	} {
		path := filepath.Join(t.TempDir(), "inventory.toml")
		if err := os.WriteFile(path, []byte(c.toml), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "inventory.toml:3") {
			t.Errorf("%q: %v, want %q at line 3", c.toml, err, c.want)
		}
	}
}
