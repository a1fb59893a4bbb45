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
// resolved through an ssh_config of 5,001 Host blocks (one per host and
// Host *, as gpulab sim serve writes), as a run would: the target is
// under a second per check (go test -run '^$' -bench InventoryCheck
// ./cli). Resolution was once quadratic: 31 s for this.
func BenchmarkInventoryCheck5000(b *testing.B) {
	dir := b.TempDir()
	var cfg strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&cfg, "Host gpu%04d\n  Port %d\n  User ops\n\n", i, 20000+i)
	}
	cfg.WriteString("Host *\n  IdentitiesOnly yes\n")
	if err := os.WriteFile(filepath.Join(dir, "ssh_config"), []byte(cfg.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	var inv strings.Builder
	fmt.Fprintf(&inv, "[defaults]\nuser = \"ops\"\nssh_config = %q\n\n", filepath.Join(dir, "ssh_config"))
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
