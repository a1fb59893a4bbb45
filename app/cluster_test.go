package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/internal/kubetest"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/orchestrator"
)

// A lab's cluster is the [[kube]] table whose nodes its hosts are,
// connected with client-go (a real API server answers); hosts of no table
// have none; a table whose kubeconfig cannot be loaded is a problem that
// names the table and the inventory.
func TestFleetCluster(t *testing.T) {
	cp := kubetest.Start(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "inventory.toml")
	text := fmt.Sprintf("[[host]]\nname = \"h1\"\n[[host]]\nname = \"h2\"\n[[host]]\nname = \"h3\"\n"+
		"[[kube]]\nname = \"lab\"\nkubeconfig = %q\ncontext = \"kubetest\"\nnodes = \"h1\"\n"+
		"[[kube]]\nname = \"broken\"\nkubeconfig = \"missing.kubeconfig\"\nnodes = \"h2\"\n", cp.Kubeconfig)
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	inv, err := inventory.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": dir}
	getenv := func(k string) string { return env[k] }
	r := &Fleet{Inv: inv}
	c, problem := r.Cluster(getenv, []orchestrator.Target{{Name: "h1"}})
	if c == nil || problem != "" || c.Context != "kubetest" {
		t.Fatalf("h1's cluster: %+v, %q", c, problem)
	}
	if _, err := c.Kube.Discovery().ServerVersion(); err != nil {
		t.Errorf("the client does not reach the API server: %v", err)
	}
	if c, problem := r.Cluster(getenv, []orchestrator.Target{{Name: "h3"}}); c != nil || problem != "" {
		t.Errorf("h3 belongs to no cluster: %+v, %q", c, problem)
	}
	c, problem = r.Cluster(getenv, []orchestrator.Target{{Name: "h2"}})
	if c != nil || !strings.Contains(problem, "kube context broken of "+file) || !strings.Contains(problem, "missing.kubeconfig") {
		t.Errorf("h2's broken cluster: %+v, %q", c, problem)
	}
}
