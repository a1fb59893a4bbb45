package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHostileFiles runs the real binary on small TOML files that used to
// cost minutes and gigabytes (inline tables 4,000 deep, arrays 100,000
// deep, a cycle of 4,000 groups, thousands of unknown keys) and on a 100 MB
// inventory, and on small inventories and host expressions that name
// millions of hosts. Each must be refused with a clear error naming
// file:line:col, exit 2 for a file over gpulab's limits on TOML (or a host
// expression over gpulab's limit on hosts) and 1 for an invalid one. A
// group of 400,000 label selectors over 65,536 hosts is valid and must load.
// The 60 s deadline only detects a hang; a pass takes milliseconds a file.
func TestHostileFiles(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "gpulab")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	write := func(name, content string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	inline := "x = " + strings.Repeat("{a=", 4000) + "1" + strings.Repeat("}", 4000) + "\n"
	arrays := "x = " + strings.Repeat("[", 100000) + "1" + strings.Repeat("]", 100000) + "\n"
	deep := write("inline.toml", inline)
	deepArrays := write("arrays.toml", arrays)
	rbDir := filepath.Dir(write("runbooks/inline.toml", inline))

	var cycle strings.Builder
	cycle.WriteString("[[host]]\nname = \"gpu[1-8]\"\n[groups]\n")
	for i := range 3999 {
		fmt.Fprintf(&cycle, "g%d = \"@g%d\"\n", i, i+1)
	}
	cycle.WriteString("g3999 = \"@g0\"\n")
	groups := write("groups.toml", cycle.String())

	var unknown strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&unknown, "[[host]]\nname = \"gpu%d\"\nx%d = %s1%s\n", i, i, strings.Repeat("[", 60), strings.Repeat("]", 60))
	}
	unknownKeys := write("unknown.toml", unknown.String())

	var million strings.Builder // 156 bytes, four million hosts
	for i := range 4 {
		fmt.Fprintf(&million, "[[host]]\nname = \"n%d-[0000000-0999999]\"\n", i+1)
	}
	millions := write("millions.toml", million.String())
	inv := write("inv.toml", "[[host]]\nname = \"x\"\n")

	// 400,000 label selectors over 65,536 hosts: a pass over the hosts
	// each would be 26 billion steps.
	labels := write("labels.toml", "[[host]]\nname = \"n[1-65536]\"\nlabels = { a = \"c\" }\n[groups]\ng = \""+strings.Repeat("@a=b,", 400000)+"@a=c\"\n")

	big := filepath.Join(dir, "big.toml")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(100 << 20); err != nil { // sparse: refused by its size, unread
		t.Fatal(err)
	}
	f.Close()

	nested := "nested more than 64 levels deep"
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"inventory, inline tables", []string{"inventory", "check", deep}, 2, []string{deep + ":1:195: " + nested}},
		{"lab, inline tables", []string{"lab", "check", deep}, 2, []string{deep + ":1:195: " + nested}},
		{"catalog, inline tables", []string{"catalog", "check", deep}, 2, []string{deep + ":1:195: " + nested}},
		{"runbooks, inline tables", []string{"runbook", "list", "--runbooks", rbDir}, 2, []string{filepath.Join(rbDir, "inline.toml") + ":1:195: " + nested}},
		{"inventory, arrays", []string{"inventory", "check", deepArrays}, 2, []string{deepArrays + ":1:69: " + nested}},
		{"lab, arrays", []string{"lab", "check", deepArrays}, 2, []string{deepArrays + ":1:69: " + nested}},
		{"catalog, arrays", []string{"catalog", "check", deepArrays}, 2, []string{deepArrays + ":1:69: " + nested}},
		{"inventory, 100 MB", []string{"inventory", "check", big}, 2, []string{big + ": the file is 104857600 bytes (100.0 MiB), more than the 8 MiB gpulab reads"}},
		{"inventory in use, 100 MB", []string{"inventory", "list", "--inventory", big}, 2, []string{big + ": the file is 104857600 bytes"}},
		{"lab, 100 MB", []string{"lab", "check", big}, 2, []string{big + ": the file is 104857600 bytes"}},
		{"cycle of 4000 groups", []string{"inventory", "check", groups}, 2, []string{groups + `:4:1: group "g0": groups name groups more than 32 deep: @g0 -> @g1 -> `}},
		{"four node sets of a million", []string{"inventory", "check", millions}, 2, []string{millions + `:2:1: node set "n1-[0000000-0999999]" names 1000000 hosts, more than the 65536 an inventory may hold`}},
		{"a million ad-hoc hosts", []string{"inventory", "list", "--inventory", inv, "-H", "a[0-999]b[0-999]"}, 2, []string{`host expression "a[0-999]b[0-999]": node set "a[0-999]b[0-999]" names 1000000 hosts`}},
		{"400,000 label selectors", []string{"inventory", "check", labels}, 0, nil},
		{"3000 unknown keys", []string{"inventory", "check", unknownKeys}, 2, []string{unknownKeys + `:3:1: unknown key "x0"`, unknownKeys + ": and 2950 more problems"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stderr := runBounded(t, bin, dir, tt.args...)
			if code != tt.code {
				t.Errorf("gpulab %s: exit %d, want %d\nstderr: %.2000s", strings.Join(tt.args, " "), code, tt.code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("gpulab %s: stderr does not say %q:\n%.2000s", strings.Join(tt.args, " "), w, stderr)
				}
			}
			if lines := strings.Count(stderr, "\n"); lines > 60 {
				t.Errorf("gpulab %s printed %d lines of errors; want at most 50 problems and a count", strings.Join(tt.args, " "), lines)
			}
		})
	}
}

// runBounded runs bin with args and returns its exit code and stderr; a
// run still going after 60 s is killed and fails the test as a hang.
func runBounded(t *testing.T, bin, home string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	cmd.WaitDelay = 5 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("gpulab %s hangs: still running after 60 s (killed)", strings.Join(args, " "))
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("gpulab %s: %v", strings.Join(args, " "), err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}
