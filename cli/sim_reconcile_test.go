package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/sim"
)

// The simulated fleet reconciles as a real one would: the probe, pushed
// over SSH to each simulated host, sees a process per GPU of the training
// and inference pods bound there (in their pods' cgroups), nothing on the
// notebooks' GPUs, and a process outside Kubernetes on the sick host; the
// simulated cluster, read with client-go, says which pod holds what. So
// the demo's reconciliation shows GPUs busy, allocated and idle, and used
// without an allocation.
func TestSimReconciles(t *testing.T) {
	f, files := simFleet(t, sim.Config{Hosts: 4, Seed: 1})
	sick, _ := sickAndHealthy(t, f)
	r := run(t, noEnv(t), "probe", "--inventory", files.Inventory, "-H", "@dgx", "--json")
	probes, err := probeJSON(r.stdout)
	if err != nil || r.code != 1 || len(probes) != 4 { // 1: the sick host is flagged
		t.Fatalf("probe --json: exit %d, %v\n%s\n%s", r.code, err, r.stdout, r.stderr)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	client, err := f.KubeClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := cluster.Read(ctx, client, "", cluster.Scheduling)
	if err != nil {
		t.Fatal(err)
	}
	snaps := map[string]cluster.NodeProbe{}
	for _, p := range probes {
		snaps[p.Host] = cluster.NodeProbe{Host: p.Host, Snapshot: p.Snapshot, Err: p.Error}
	}
	rec := cluster.Reconcile(objs, snaps)
	u := rec.Totals.Usage
	if u.Busy.GPUs == 0 || u.Idle.GPUs == 0 || u.Allocated.GPUs != u.Busy.GPUs+u.Idle.GPUs || rec.Totals.NotProbed != 0 {
		t.Errorf("usage %+v, not probed %d: want busy and idle GPUs, every one accounted for", u, rec.Totals.NotProbed)
	}
	for _, p := range rec.Pods {
		notebook := strings.HasPrefix(p.Name, "notebook-")
		if notebook != (p.State == cluster.PodIdle) {
			t.Errorf("pod %s/%s: %s (%s); want idle exactly for the notebooks", p.Namespace, p.Name, p.State, p.Reason)
		}
	}
	if len(rec.Unallocated) != 1 || rec.Unallocated[0].Node != sick || rec.Unallocated[0].PID != 4242 {
		t.Errorf("unallocated %+v, want the sick host %s's stray process", rec.Unallocated, sick)
	}
}
