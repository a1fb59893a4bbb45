package cli

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/labs"
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
	closeFleet := o.fleetOptions(&opts, r, inv, t.TempDir(), nil, w.labKube(ctx), nil)
	defer closeFleet()
	fr := opts.LabRunner.(*app.Workbench)
	c, problem := fr.Kube(fr.Fleet.Targets)
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

// A lab run in the demo, whose inventory is temporary, writes a Reproduce
// line that works once the demo is gone: gpulab sim serve with the demo's
// seed and hosts serves the same fleet, and the lab run on its inventory
// finds the same verdicts. A lab that reads the demo's simulated cluster
// (which sim serve does not serve) is reproduced in gpulab demo itself.
func TestDemoRecordReproducesLater(t *testing.T) {
	const seed = 3
	env := map[string]string{"HOME": t.TempDir()}
	demo := &demoFlags{hosts: 2, seed: seed}
	f, files := simFleet(t, sim.Config{Hosts: demo.hosts, Seed: seed})
	o := &options{inventory: files.Inventory, env: Env{Getenv: func(k string) string { return env[k] }}}
	inv, err := o.loadInventory(false)
	if err != nil {
		t.Fatal(err)
	}
	r, err := o.newRunner(&sshFlags{hosts: "*"})
	if err != nil {
		t.Fatal(err)
	}
	var opts tui.Options
	defer o.fleetOptions(&opts, r, inv, t.TempDir(), o.reproduce(inv.File, &sshFlags{}, nil), nil, demo)()
	ls, err := o.loadLabs()
	if err != nil {
		t.Fatal(err)
	}
	runLab := func(id string) *labs.Record {
		l, _ := labs.Find(ls, id)
		events := make(chan app.LabUpdate)
		go opts.LabRunner.RunLab(t.Context(), l, []int{0, 1}, app.LabRunOptions{Params: map[string]string{}}, events)
		var rec *labs.Record
		for u := range events {
			if u.Record != nil {
				rec = u.Record
			}
		}
		return rec
	}
	rec := runLab("topology-sanity")
	md := rec.Markdown()
	want := "- Reproduce: `gpulab sim serve --seed 3 --hosts 2 --inventory-out sim-inventory.toml` (the same SIMULATED fleet: same seed, same hosts; the run's own inventory was temporary), then in another terminal `gpulab lab run topology-sanity -H 'dgx[01-02]' --inventory sim-inventory.toml`\n"
	if !strings.Contains(md, want) || strings.Contains(md, files.Inventory) {
		t.Fatalf("the record's Reproduce line, want\n%s\nin:\n%s", want, md)
	}
	// Reproduced: a fleet as sim serve starts it (another process's, so
	// other ports and keys), the lab run as the record says.
	_, later := simFleet(t, sim.Config{Hosts: demo.hosts, Seed: seed})
	args := append([]string{"-H", "dgx[01-02]"}, rec.Reproduce...)
	args[slices.Index(args, "sim-inventory.toml")] = later.Inventory
	again := labScores(t, env, "topology-sanity", args)
	for _, h := range rec.Hosts {
		for _, s := range h.Scores {
			if got := again[h.Host][s.ID]; got != string(s.Status) {
				t.Errorf("%s %s: %s in the demo, %s reproduced", h.Host, s.ID, s.Status, got)
			}
		}
	}
	if sick, _ := sickAndHealthy(t, f); again[sick]["nvlink-mesh"] != "FAIL" {
		t.Errorf("the reproduced run does not find the demo's sick host %s: %v", sick, again)
	}

	l, _ := labs.Find(ls, "pending-explained")
	if !l.ReadsCluster() {
		t.Fatal("pending-explained reads no cluster: pick another lab for this test")
	}
	repro, fleet := opts.LabRunner.(*app.Workbench).ReproduceFor(l, map[string]string{"team": "a"})
	rec = &labs.Record{Lab: l.ID, Reproduce: repro, ReproduceFleet: fleet, Hosts: []labs.HostRecord{{Host: "dgx01"}}}
	want = "- Reproduce: `gpulab demo --seed 3 --hosts 2`, then run pending-explained on dgx01 in its Labs tab"
	if md := rec.Markdown(); !strings.Contains(md, want) {
		t.Errorf("a lab that reads the demo's cluster: want %q in:\n%s", want, md)
	}
}
