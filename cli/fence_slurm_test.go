package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/fence"
	"github.com/gpulab/gpulab/sim"
)

// The loop in Slurm, on the simulated fleet's controller (its inventory
// names dgx01 as the login host): the sick host is drained with a reason
// gpulab owns, as sinfo -R on any host shows; a second fence changes
// nothing; a drain another tool set (NHC's) is neither fenced over nor
// released; the release is held while the checks fail and done with
// --force, and sinfo shows the node idle again.
func TestFenceLoopInSlurm(t *testing.T) {
	f, files := simFleet(t, sim.Config{Hosts: 3, Seed: 1})
	sick, healthy := sickAndHealthy(t, f)
	env := noEnv(t)
	env["GPULAB_RESULTS"] = t.TempDir()
	inv := []string{"--inventory", files.Inventory}
	login := append([]string{"exec", "-H", f.Hosts()[0].Name}, inv...)

	plan := fenceRun(t, env, 0, append([]string{"fence", "--reason", "XID 79: GPU fell off the bus", "-H", sick}, inv...)...)
	if len(plan.Plan) != 1 || len(plan.Plan[0].Changes) != 1 || plan.Plan[0].Changes[0].Op != fence.OpDrain {
		t.Fatalf("dry run = %+v: want one drain", plan)
	}
	if r := run(t, env, append([]string{"fence", "--reason", "x", "--taint", "a/b:NoSchedule", "-H", sick}, inv...)...); r.code != ExitUsage || !strings.Contains(r.stderr, "--taint is Kubernetes'") {
		t.Errorf("--taint in Slurm: exit %d %s", r.code, r.stderr)
	}
	done := fenceRun(t, env, 0, append([]string{"fence", "--reason", "XID 79: GPU fell off the bus", "--apply", "--bug-report", "-H", sick}, inv...)...)
	if done.Results[0].Outcome != fence.Done || done.Record == "" {
		t.Fatalf("fence --apply = %+v", done)
	}
	// The simulated hosts have no nvidia-bug-report.sh: the record says
	// so, and the fence goes on.
	rec, err := fence.OpenRecord(filepath.Dir(filepath.Dir(done.Record)), filepath.Base(done.Record))
	if err != nil || len(rec.Evidence) != 1 || rec.Evidence[0].BugReport == nil || rec.Evidence[0].BugReport.Problem != "nvidia-bug-report.sh is not on the host" {
		t.Errorf("the record's bug report: %v, %+v", err, rec)
	}
	r := run(t, env, append(login, "--", "scontrol", "show", "node", sick)...)
	if !strings.Contains(r.stdout, "State=IDLE+DRAIN") || !strings.Contains(r.stdout, "Reason=gpulab: XID 79: GPU fell off the bus (record ") {
		t.Errorf("scontrol show node %s after the fence:\n%s%s", sick, r.stdout, r.stderr)
	}
	if r := run(t, env, append(login, "--", "sinfo")...); !strings.Contains(r.stdout, "drain "+sick) {
		t.Errorf("sinfo after the fence does not show %s drained:\n%s", sick, r.stdout)
	}
	// The drained node is the one @slurm:state=drain selects, as the
	// controller says it now.
	sel := run(t, env, append([]string{"exec", "-H", "@slurm:state=drain", "--json"}, append(inv, "--", "hostname")...)...)
	if sel.code != 0 || strings.Count(sel.stdout, `"host": "`) != 1 || !strings.Contains(sel.stdout, `"host": "`+sick+`"`) {
		t.Errorf("exec -H @slurm:state=drain: exit %d\n%s%s", sel.code, sel.stdout, sel.stderr)
	}
	if all := run(t, env, append([]string{"exec", "-H", "@slurm:partition=gpu"}, append(inv, "--", "true")...)...); all.code != 0 || !strings.Contains(all.stderr, "3 hosts: 3 ok") {
		t.Errorf("exec -H @slurm:partition=gpu: exit %d %s", all.code, all.stderr)
	}
	if again := fenceRun(t, env, 0, append([]string{"fence", "--reason", "again", "--apply", "-H", sick}, inv...)...); again.Results[0].Outcome != fence.Unchanged {
		t.Errorf("a second fence = %+v, want unchanged", again.Results[0])
	}

	if l := run(t, env, append([]string{"fence", "list", "--slurm", "--json"}, inv...)...); l.code != 0 || strings.Count(l.stdout, `"node": `) != 1 ||
		!strings.Contains(l.stdout, `"node": "`+sick+`"`) || !strings.Contains(l.stdout, filepath.Base(done.Record)) {
		t.Errorf("fence list --slurm: exit %d\n%s%s", l.code, l.stdout, l.stderr)
	}

	other := healthy[0]
	if r := run(t, env, append(login, "--", "scontrol", "update", "NodeName="+other, "State=DRAIN", "Reason=NHC: check_fs_mount /scratch")...); r.code != 0 {
		t.Fatalf("NHC's drain: exit %d %s", r.code, r.stderr)
	}
	foreign := fenceRun(t, env, 1, append([]string{"release", "--apply", "-H", other}, inv...)...)
	if foreign.Results[0].Outcome != fence.Refused || !strings.Contains(foreign.Results[0].Detail, "NHC: check_fs_mount") {
		t.Errorf("release of NHC's drain = %+v, want refused naming it", foreign.Results[0])
	}
	if over := fenceRun(t, env, 1, append([]string{"fence", "--reason", "x", "--apply", "-H", other}, inv...)...); over.Results[0].Outcome != fence.Refused {
		t.Errorf("fence over NHC's drain = %+v, want refused", over.Results[0])
	}

	// Released together with a healthy host fenced under another record:
	// each is judged against its own record, and each record keeps its
	// release.
	maint := fenceRun(t, env, 0, append([]string{"fence", "--reason", "firmware", "--apply", "-H", healthy[1]}, inv...)...)
	held := fenceRun(t, env, 1, append([]string{"release", "--apply", "-H", sick + "," + healthy[1]}, inv...)...)
	outcome := map[string]fence.Outcome{}
	for _, r := range held.Results {
		outcome[r.Node] = r.Outcome
	}
	if outcome[sick] != fence.Refused || held.Held[sick] == "" || outcome[healthy[1]] != fence.Done || len(held.Records) != 2 {
		t.Errorf("release of the sick host and a healthy one = %+v, want the sick one held, the other released, two records", held)
	}
	for _, dir := range []string{done.Record, maint.Record} {
		if rec, err := fence.OpenRecord(filepath.Dir(filepath.Dir(dir)), filepath.Base(dir)); err != nil || len(rec.Releases) != 1 {
			t.Errorf("record %s after the release: %v, %+v", dir, err, rec)
		}
	}
	// Where this machine has no record of the fence, every check must
	// pass: the sick host stays held, and says why.
	elsewhere := map[string]string{"HOME": env["HOME"], "GPULAB_RESULTS": t.TempDir()}
	strict := fenceRun(t, elsewhere, 1, append([]string{"release", "--apply", "-H", sick}, inv...)...)
	if !strings.Contains(strict.Held[sick], "no evidence of its fence here") {
		t.Errorf("release with no record here = %+v, want held, saying there is no evidence to compare with", strict)
	}
	forced := fenceRun(t, env, 0, append([]string{"release", "--apply", "--force", "-H", sick}, inv...)...)
	if forced.Results[0].Outcome != fence.Done {
		t.Fatalf("release --force = %+v", forced.Results[0])
	}
	r = run(t, env, append(login, "--", "scontrol", "show", "node", sick)...)
	if !strings.Contains(r.stdout, "State=IDLE ") || strings.Contains(r.stdout, "Reason=") {
		t.Errorf("scontrol show node %s after the release:\n%s", sick, r.stdout)
	}
}
