package cli

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// inventory show says a timeout the inventory did not set is the
// built-in default, not [defaults]; one it set is [defaults]'s; and an
// unset connect timeout is ssh_config's ConnectTimeout where it has one,
// as OpenSSH reads it.
func TestInventoryShowSaysWhereTimeoutsComeFrom(t *testing.T) {
	env := noEnv(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "ssh_config")
	writeFile(t, cfg, "Host gpu02\n  ConnectTimeout 7\n")
	inv := filepath.Join(dir, "inventory.toml")
	writeFile(t, inv, "[defaults]\ncommand_timeout = \"5m\"\nssh_config = \""+cfg+"\"\n\n[[host]]\nname = \"gpu[01-02]\"\n")
	r := run(t, env, "inventory", "show", "gpu01", "--inventory", inv)
	for _, want := range []string{`ConnectTimeout +10s +built-in default`, `CommandTimeout +5m0s +` + regexp.QuoteMeta(inv) + ` \[defaults\]`, `InactivityTimeout +2m0s +built-in default`} {
		if !regexp.MustCompile(`(?m)^` + want + ` *$`).MatchString(r.stdout) {
			t.Errorf("inventory show gpu01 lacks %s:\n%s", want, r.stdout)
		}
	}
	r = run(t, env, "inventory", "show", "gpu02", "--inventory", inv)
	if !regexp.MustCompile(`(?m)^ConnectTimeout +7s +` + regexp.QuoteMeta(cfg) + `:2`).MatchString(r.stdout) {
		t.Errorf("inventory show gpu02: ConnectTimeout is not ssh_config's:\n%s", r.stdout)
	}
}

// lab show prints only the constraints a lab states, and "1 group" is
// singular.
func TestLabShowLeavesOutUnstatedConstraints(t *testing.T) {
	env := noEnv(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "l.toml"), `id = "bare"
name = "a lab with one constraint"
goal = "the constraints it states"
plane = "data"
maturity = "draft"
estimate_minutes = 1

[constraints]
hardware = "any GPU"

[[step]]
id = "k"
phase = "observe"
title = "kernel"
command = "uname -s"

[step.metrics]
linux = "stdout.startsWith('Linux')"

[[criterion]]
id = "linux"
description = "Linux"
expr = "metrics.linux"
impact = "critical"
`)
	r := run(t, env, "--labs", dir, "lab", "show", "bare")
	if r.code != 0 || !strings.Contains(r.stdout, "Constraints\n  hardware:   any GPU\n") || strings.Contains(r.stdout, "MIG:") || strings.Contains(r.stdout, "workload:") {
		t.Errorf("lab show bare: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	inv := filepath.Join(dir, "inventory.toml")
	writeFile(t, inv, "[groups]\nall = \"gpu01\"\n\n[[host]]\nname = \"gpu01\"\n")
	run(t, env, "inventory", "check", inv).expect(t, 0, "(1 host, 1 group, 0 kube contexts)", "")
}
