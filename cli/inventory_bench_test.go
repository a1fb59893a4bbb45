package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkInventoryCheck5000 is `gpulab inventory check FILE` on an
// inventory of 5,000 hosts (one [[host]] table each, with an address,
// labels and groups, as a site's generated inventory is), every host
// resolved through ssh_config as a run would: the target is under a
// second per check (go test -run '^$' -bench InventoryCheck ./cli).
func BenchmarkInventoryCheck5000(b *testing.B) {
	dir := b.TempDir()
	var inv strings.Builder
	inv.WriteString("[defaults]\nuser = \"ops\"\n\n")
	for i := range 5000 {
		fmt.Fprintf(&inv, "[[host]]\nname = \"gpu%04d\"\naddress = \"10.%d.%d.%d\"\ngroups = [\"rack%02d\"]\nlabels = { gpu = \"a100\", zone = \"z%d\" }\n\n", i, i/65536, i/256%256, i%256, i/100, i%4)
	}
	inv.WriteString("[groups]\na100 = \"@gpu=a100\"\nz0-but-rack00 = \"@zone=z0!@rack00\"\n")
	file := filepath.Join(dir, "inventory.toml")
	if err := os.WriteFile(file, []byte(inv.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	env := Env{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(k string) string {
		if k == "HOME" {
			return dir
		}
		return ""
	}}
	b.ResetTimer()
	for b.Loop() {
		if code := Main([]string{"inventory", "check", file}, env); code != 0 {
			b.Fatalf("inventory check: exit %d", code)
		}
	}
}
