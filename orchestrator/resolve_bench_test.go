package orchestrator_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/orchestrator"
)

// largeFleet writes the files of an n-host fleet as gpulab sim serve
// writes them: an ssh_config of a Host block per host and a Host * block,
// and an inventory naming it.
func largeFleet(b testing.TB, n int) (*inventory.Inventory, string) {
	dir := b.TempDir()
	var cfg, inv strings.Builder
	cfg.WriteString("# a large fleet\n")
	fmt.Fprintf(&inv, "[defaults]\nssh_config = %q\n", filepath.Join(dir, "ssh_config"))
	for i := range n {
		fmt.Fprintf(&cfg, "Host dgx%05d\n  HostName 127.0.0.1\n  Port %d\n", i, 20000+i%40000)
		fmt.Fprintf(&inv, "\n[[host]]\nname = \"dgx%05d\"\naddress = \"127.0.0.1\"\nport = %d\n", i, 20000+i%40000)
	}
	fmt.Fprintf(&cfg, "Host *\n  User gpulab\n  IdentityFile %s\n  IdentitiesOnly yes\n  StrictHostKeyChecking yes\n", filepath.Join(dir, "key"))
	for name, data := range map[string]string{"ssh_config": cfg.String(), "inventory.toml": inv.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	i, err := inventory.Load(filepath.Join(dir, "inventory.toml"))
	if err != nil {
		b.Fatal(err)
	}
	return i, dir
}

// BenchmarkResolveLargeFleet resolves every host of a 5,000-host fleet
// through its 5,001-block ssh_config, as gpulab inventory check does (the
// resolver built once, each host resolved): it should cost O(hosts +
// blocks), not their product.
func BenchmarkResolveLargeFleet(b *testing.B) {
	inv, dir := largeFleet(b, 5000)
	b.ResetTimer()
	for b.Loop() {
		r, err := orchestrator.NewResolver(inv, "", orchestrator.Overrides{}, dir, "nobody")
		if err != nil {
			b.Fatal(err)
		}
		for _, h := range inv.Hosts {
			if _, err := r.Resolve(h); err != nil {
				b.Fatal(err)
			}
		}
	}
}
