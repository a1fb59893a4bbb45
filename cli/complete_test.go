package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Shell completion offers what the command takes: lab and runbook ids
// (theirs from --labs too), parser kinds then files, and for -H the
// inventory's hosts and @groups; a prefix narrows them.
func TestCompletion(t *testing.T) {
	env := noEnv(t)
	dir := t.TempDir()
	inv := filepath.Join(dir, "inventory.toml")
	if err := os.WriteFile(inv, []byte("[[host]]\nname = \"gpu[01-02]\"\ngroups = [\"train\"]\n\n[[host]]\nname = \"login01\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lines := func(r result) []string {
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			if !strings.HasPrefix(l, ":") {
				out = append(out, l)
			}
		}
		return out
	}
	for _, c := range []struct {
		args []string
		want string // the completions, one per line
	}{
		{[]string{"lab", "run", "topo"}, "topology-sanity"},
		{[]string{"lab", "show", "health"}, "health-gate"},
		{[]string{"runbook", "run", "hea"}, "health"},
		{[]string{"parse", "nvidia-smi-nvlink"}, "nvidia-smi-nvlink-errors\nnvidia-smi-nvlink-status"},
		{[]string{"catalog", "show", "hami"}, "hami"},
		{[]string{"exec", "--inventory", inv, "-H", ""}, "gpu01\ngpu02\nlogin01\n@train"},
		{[]string{"runbook", "run", "health", "--inventory", inv, "-H", "gpu"}, "gpu01\ngpu02"},
	} {
		r := run(t, env, append([]string{"__complete"}, c.args...)...)
		if got := strings.Join(lines(r), "\n"); got != c.want {
			t.Errorf("gpulab %s<TAB>: %q, want %q\n%s", strings.Join(c.args, " "), got, c.want, r.stderr)
		}
	}
	// After the kind, parse reads a file: the shell completes file names
	// (directive 0, the default), where an id takes none (4).
	if r := run(t, env, "__complete", "parse", "nvidia-smi-topo", ""); !strings.HasPrefix(r.stdout, ":0\n") {
		t.Errorf("parse KIND <TAB> does not complete files:\n%s", r.stdout)
	}
	if r := run(t, env, "__complete", "lab", "run", ""); !strings.Contains(r.stdout, "\n:4\n") {
		t.Errorf("lab run <TAB> offers files:\n%s", r.stdout)
	}
}
