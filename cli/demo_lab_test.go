package cli

import (
	"context"
	"slices"
	"testing"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/sim"
	"github.com/gpulab/gpulab/tui"
)

// In the demo, a lab's cluster steps read the demo's simulated cluster
// (context "simulated", the one the Cluster tab follows), whose nodes are
// the demo's hosts: pending-explained's why step used to be skipped, "no
// Kubernetes cluster for these hosts".
func TestDemoLabsReadTheSimulatedCluster(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f, files := simFleet(t, sim.Config{Hosts: 2})
	o := &options{inventory: files.Inventory, env: Env{Getenv: func(k string) string { return map[string]string{"HOME": t.TempDir()}[k] }}}
	inv, err := o.loadInventory(false)
	if err != nil {
		t.Fatal(err)
	}
	w := &workbench{simulated: true, cluster: demoCluster(ctx, f)}
	var opts tui.Options
	r, err := o.newRunner(&sshFlags{hosts: "*"})
	if err != nil {
		t.Fatal(err)
	}
	closeFleet := o.fleetOptions(&opts, r, inv, t.TempDir(), nil, w.labKube(ctx))
	defer closeFleet()
	fr := opts.LabRunner.(fleetRunner)
	c, problem := fr.kube(fr.r.targets)
	if c == nil || problem != "" {
		t.Fatalf("the demo's lab runner has no cluster: %q", problem)
	}
	if tab, _ := w.cluster(ctx); c != tab || c.Context != sim.KubeContext {
		t.Errorf("the labs' cluster is %p (context %q), want the tab's %p, context %q", c, c.Context, tab, sim.KubeContext)
	}
	objs, err := cluster.Read(ctx, c, "", cluster.Scheduling)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range f.Hosts() {
		if !slices.ContainsFunc(objs.GPUNodes(), func(n cluster.GPUNode) bool { return n.Name == h.Name }) {
			t.Errorf("host %s is no node of the labs' cluster", h.Name)
		}
	}
}
