package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpulab/gpulab/fence"
	"github.com/gpulab/gpulab/internal/kubetest"
	"github.com/gpulab/gpulab/sim"
)

func nodeNow(t *testing.T, cp *kubetest.ControlPlane, name string) *corev1.Node {
	t.Helper()
	n, err := cp.Client.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

type fenceJSON struct {
	Action  string            `json:"action"`
	DryRun  bool              `json:"dry_run"`
	Plan    []fence.Plan      `json:"plan"`
	Results []fence.Result    `json:"results"`
	Held    map[string]string `json:"held"`
	Record  string            `json:"record"`
	Records []string          `json:"records"`
}

func fenceRun(t *testing.T, env map[string]string, want int, args ...string) fenceJSON {
	t.Helper()
	r := run(t, env, append(args, "--json")...)
	var out fenceJSON
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != want {
		t.Fatalf("gpulab %s: exit %d (want %d), %v\n%s\n%s", strings.Join(args, " "), r.code, want, err, r.stdout, r.stderr)
	}
	return out
}

// The loop end to end, as an operator runs it, on a simulated fleet
// whose hosts are a real API server's nodes: the sick host is planned
// (nothing changes), fenced with its evidence kept (the failing checks,
// each step's output), fenced again (nothing changes, said so), listed,
// not released while its checks still fail, released with --force, and
// the record holds it all. A healthy host fenced for maintenance is
// released after its checks pass.
func TestFenceLoopEndToEnd(t *testing.T) {
	cp, f, files := kubeSimFleet(t, sim.Config{Hosts: 3, Seed: 1})
	sick, healthy := sickAndHealthy(t, f)
	env := noEnv(t)
	results := t.TempDir()
	env["GPULAB_RESULTS"] = results
	// The simulated fleet's hosts are nodes of its Slurm cluster too:
	// --kubernetes fences in the API server's cluster only (see
	// TestFenceInBothClusters).
	hosts := []string{"--inventory", files.Inventory, "--kubeconfig", cp.Kubeconfig, "--context", "kubetest", "--kubernetes", "-H", sick}

	plan := fenceRun(t, env, 0, append([]string{"fence", "--reason", "XID 79: GPU fell off the bus"}, hosts...)...)
	if !plan.DryRun || len(plan.Plan) != 1 || len(plan.Plan[0].Changes) != 3 || len(plan.Results) != 0 {
		t.Fatalf("dry run = %+v: want a plan of 3 changes, nothing done", plan)
	}
	if n := nodeNow(t, cp, sick); n.Spec.Unschedulable || fence.ReadFence(n) != nil {
		t.Fatal("a dry run changed the node")
	}
	if entries, _ := os.ReadDir(results); len(entries) != 0 {
		t.Errorf("a dry run wrote under the results directory: %v", entries)
	}

	done := fenceRun(t, env, 0, append([]string{"fence", "--reason", "XID 79: GPU fell off the bus", "--apply"}, hosts...)...)
	if len(done.Results) != 1 || done.Results[0].Outcome != fence.Done || done.Record == "" {
		t.Fatalf("fence --apply = %+v", done)
	}
	id := filepath.Base(done.Record)
	n := nodeNow(t, cp, sick)
	if got := fence.ReadFence(n); !n.Spec.Unschedulable || got == nil || got.Record != id {
		t.Fatalf("after fence --apply: unschedulable %v, fence %+v, want record %s", n.Spec.Unschedulable, got, id)
	}
	rec, err := fence.OpenRecord(results, id)
	if err != nil {
		t.Fatal(err)
	}
	checkFenceRecord(t, rec, sick)

	again := fenceRun(t, env, 0, append([]string{"fence", "--reason", "again", "--apply"}, hosts...)...)
	if again.Results[0].Outcome != fence.Unchanged || again.Record != "" {
		t.Errorf("a second fence = %+v: want unchanged, no record", again)
	}
	l := run(t, env, "fence", "list", "--kubeconfig", cp.Kubeconfig, "--json")
	if l.code != 0 || !strings.Contains(l.stdout, `"node": "`+sick+`"`) || !strings.Contains(l.stdout, id) {
		t.Errorf("fence list: exit %d\n%s%s", l.code, l.stdout, l.stderr)
	}

	rel := append([]string{"release", "--apply"}, hosts[:len(hosts)-2]...)
	held := fenceRun(t, env, 1, append(rel, "-H", sick)...)
	if held.Results[0].Outcome != fence.Refused || !strings.Contains(held.Held[sick], "xid") {
		t.Errorf("release of a host still sick = %+v: want held, naming the xid check", held)
	}
	if !nodeNow(t, cp, sick).Spec.Unschedulable {
		t.Fatal("a held release uncordoned the node")
	}
	forced := fenceRun(t, env, 0, append(rel, "-H", sick, "--force")...)
	if forced.Results[0].Outcome != fence.Done {
		t.Fatalf("release --force = %+v", forced)
	}
	if n := nodeNow(t, cp, sick); n.Spec.Unschedulable || len(n.Spec.Taints) != 0 || fence.ReadFence(n) != nil {
		t.Errorf("after release: unschedulable %v, taints %v", n.Spec.Unschedulable, n.Spec.Taints)
	}
	rec, err = fence.OpenRecord(results, id)
	if err != nil || len(rec.Releases) != 2 || len(rec.Releases[0].Held) != 1 || !rec.Releases[1].Force {
		t.Fatalf("the record's releases: %+v, %v: want one held, one forced", rec.Releases, err)
	}

	maint := []string{"--inventory", files.Inventory, "--kubeconfig", cp.Kubeconfig, "--context", "kubetest", "--kubernetes", "-H", healthy[0]}
	fenceRun(t, env, 0, append([]string{"fence", "--reason", "firmware update", "--apply"}, maint...)...)
	ok := fenceRun(t, env, 0, append([]string{"release", "--apply"}, maint...)...)
	if ok.Results[0].Outcome != fence.Done || len(ok.Held) != 0 {
		t.Errorf("release of a healthy host = %+v: want released after its checks", ok)
	}

	// Two gpulab runs fence one node at once: each plans, gathers its
	// evidence, and writes from the version it read; one wins, the other
	// writes nothing and names the winner's record.
	both := []string{"--inventory", files.Inventory, "--kubeconfig", cp.Kubeconfig, "--context", "kubetest", "--kubernetes", "-H", healthy[1], "--apply", "--json"}
	outs := make(chan result, 2)
	for _, who := range []string{"first", "second"} {
		go func() { outs <- runInput(t, env, "", append([]string{"fence", "--reason", who}, both...)...) }()
	}
	var won, lost int
	for range 2 {
		r := <-outs
		var rep fenceJSON
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.Results) != 1 {
			t.Fatalf("a concurrent fence: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
		}
		switch res := rep.Results[0]; {
		case res.Outcome == fence.Done && r.code == 0:
			won++
		case res.Outcome == fence.Changed && r.code == 1 && strings.Contains(res.Detail, "fenced meanwhile by"),
			res.Outcome == fence.Unchanged && r.code == 0 && strings.Contains(res.Detail, "already fenced by gpulab"):
			lost++
		default:
			t.Errorf("a concurrent fence: exit %d, %+v", r.code, res)
		}
	}
	if won != 1 || lost != 1 {
		t.Errorf("two fences at once: %d won, %d lost; want one each", won, lost)
	}
}

// checkFenceRecord: the record holds the sick host's evidence (its
// failing checks, with facts; each step's output in a file) and the
// action, complete.
func checkFenceRecord(t *testing.T, rec *fence.Record, sick string) {
	t.Helper()
	if !rec.Complete || rec.Reason != "XID 79: GPU fell off the bus" || len(rec.Evidence) != 1 || len(rec.Results) != 1 {
		t.Fatalf("record %+v", rec)
	}
	ev := rec.Evidence[0]
	if ev.Host != sick || ev.Runbook != "health" || !strings.Contains(strings.Join(ev.Failing(), ","), "xid") {
		t.Errorf("evidence %s, runbook %s, failing %v: want %s's xid check", ev.Host, ev.Runbook, ev.Failing(), sick)
	}
	kept := 0
	for _, s := range ev.Steps {
		if s.File == "" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(rec.Dir(), s.File))
		if err != nil || len(data) != s.Bytes {
			t.Errorf("step %s's output %s: %d bytes, %v; the record says %d", s.ID, s.File, len(data), err, s.Bytes)
		}
		kept++
	}
	if kept < 3 {
		t.Errorf("only %d steps' outputs kept: %+v", kept, ev.Steps)
	}
	md, err := os.ReadFile(filepath.Join(rec.Dir(), "record.md"))
	if err != nil || !strings.Contains(string(md), "| xid | FAIL |") {
		t.Errorf("record.md does not show the failing xid check (%v):\n%s", err, md)
	}
}

// A host that is a node of a Kubernetes cluster (a real API server) and
// of a Slurm cluster (the simulated fleet's controller) is fenced in
// both, under one record: the plan has a plan for each, the node is
// cordoned and tainted and drained, fence list shows it in each, and the
// release (forced: the host is sick) undoes both, into the same record.
func TestFenceInBothClusters(t *testing.T) {
	cp, f, files := kubeSimFleet(t, sim.Config{Hosts: 2, Seed: 1})
	sick, healthy := sickAndHealthy(t, f)
	env := noEnv(t)
	results := t.TempDir()
	env["GPULAB_RESULTS"] = results
	hosts := []string{"--inventory", files.Inventory, "--kubeconfig", cp.Kubeconfig, "--context", "kubetest", "-H", sick}
	login := []string{"exec", "--inventory", files.Inventory, "-H", f.Hosts()[0].Name, "--", "scontrol", "show", "node", sick}

	plan := run(t, env, append([]string{"fence", "--reason", "XID 79"}, hosts...)...)
	if plan.code != 0 || !strings.Contains(plan.stdout, "fence plan for kubernetes context kubetest and slurm, scontrol on "+f.Hosts()[0].Name) ||
		!strings.Contains(plan.stdout, sick+" (kubernetes):\n  cordon") || !strings.Contains(plan.stdout, sick+" (slurm):\n  drain") ||
		!strings.Contains(plan.stderr, "fence plan: 2 plans to change") {
		t.Fatalf("the plan in both: exit %d\n%s%s", plan.code, plan.stdout, plan.stderr)
	}
	done := fenceRun(t, env, 0, append([]string{"fence", "--reason", "XID 79", "--apply"}, hosts...)...)
	if len(done.Results) != 2 || done.Results[0].In != fence.InKubernetes || done.Results[1].In != fence.InSlurm ||
		done.Results[0].Outcome != fence.Done || done.Results[1].Outcome != fence.Done {
		t.Fatalf("fence --apply in both = %+v", done)
	}
	id := filepath.Base(done.Record)
	if got := fence.ReadFence(nodeNow(t, cp, sick)); got == nil || got.Record != id {
		t.Errorf("the Kubernetes node's fence: %+v, want record %s", got, id)
	}
	if r := run(t, env, login...); !strings.Contains(r.stdout, "State=IDLE+DRAIN") || !strings.Contains(r.stdout, "(record "+id+")") {
		t.Errorf("the Slurm node after the fence:\n%s%s", r.stdout, r.stderr)
	}
	rec, err := fence.OpenRecord(results, id)
	if err != nil || len(rec.Plan) != 2 || len(rec.Results) != 2 || len(rec.Evidence) != 1 || !strings.Contains(rec.Target, " and slurm") {
		t.Fatalf("the record of a fence in both: %v, %+v", err, rec)
	}
	for _, list := range [][]string{{"fence", "list", "--kubeconfig", cp.Kubeconfig}, {"fence", "list", "--slurm", "--inventory", files.Inventory}} {
		if l := run(t, env, list...); l.code != 0 || !strings.Contains(l.stdout, sick) || !strings.Contains(l.stdout, id) {
			t.Errorf("gpulab %s: exit %d\n%s%s", strings.Join(list, " "), l.code, l.stdout, l.stderr)
		}
	}
	both := []string{"fence", "list", "--inventory", files.Inventory, "--kubeconfig", cp.Kubeconfig}
	if l := run(t, env, both...); l.code != 0 || !regexp.MustCompile(`(?m)^`+sick+` +kubernetes .*`+id).MatchString(l.stdout) ||
		!regexp.MustCompile(`(?m)^`+sick+` +slurm .*`+id).MatchString(l.stdout) {
		t.Errorf("fence list in both clusters: exit %d\n%s%s", l.code, l.stdout, l.stderr)
	}
	if l := run(t, env, append(both, "--kubernetes", "--json")...); l.code != 0 || strings.Count(l.stdout, `"in": "kubernetes"`) != 1 || strings.Contains(l.stdout, `"in": "slurm"`) {
		t.Errorf("fence list --kubernetes: exit %d\n%s%s", l.code, l.stdout, l.stderr)
	}

	rel := fenceRun(t, env, 0, append([]string{"release", "--apply", "--force"}, hosts...)...)
	if len(rel.Results) != 2 || rel.Results[0].Outcome != fence.Done || rel.Results[1].Outcome != fence.Done || len(rel.Records) != 1 {
		t.Fatalf("release in both = %+v", rel)
	}
	if n := nodeNow(t, cp, sick); n.Spec.Unschedulable || fence.ReadFence(n) != nil {
		t.Errorf("the Kubernetes node after the release: unschedulable %v, taints %v", n.Spec.Unschedulable, n.Spec.Taints)
	}
	if r := run(t, env, login...); strings.Contains(r.stdout, "DRAIN") || strings.Contains(r.stdout, "gpulab:") {
		t.Errorf("the Slurm node after the release:\n%s", r.stdout)
	}
	if rec, err := fence.OpenRecord(results, id); err != nil || len(rec.Releases) != 1 || len(rec.Releases[0].Results) != 2 {
		t.Errorf("the record's release: %v, %+v", err, rec)
	}
	if r := run(t, env, append([]string{"fence", "--reason", "x", "--slurm", "--kubernetes"}, hosts...)...); r.code != ExitUsage {
		t.Errorf("--slurm with --kubernetes: exit %d %s", r.code, r.stderr)
	}
	notHalfFenced(t, cp, env, files, sick, healthy)
	twoRecords(t, cp, env, results, hosts)
}

// notHalfFenced: a host Slurm has among hosts it has not gets its Slurm
// plan all the same; with the API server down, the Slurm side is not
// fenced alone.
func notHalfFenced(t *testing.T, cp *kubetest.ControlPlane, env map[string]string, files sim.Files, sick string, healthy []string) {
	t.Helper()
	data, err := os.ReadFile(files.Inventory)
	if err != nil {
		t.Fatal(err)
	}
	some := filepath.Join(t.TempDir(), "some.toml")
	text := strings.Replace(string(data), `nodes = "@dgx"`, `nodes = "`+sick+`"`, 1)
	if err := os.WriteFile(some, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	mixed := fenceRun(t, env, 0, "fence", "--reason", "x", "--inventory", some, "--kubeconfig", cp.Kubeconfig, "--context", "kubetest", "-H", sick+","+healthy[0])
	var got []string
	for _, p := range mixed.Plan {
		got = append(got, p.Node+" "+p.In)
	}
	var want []string // in the fleet's order, a Slurm plan for the host Slurm has
	for _, h := range slices.Sorted(slices.Values([]string{sick, healthy[0]})) {
		want = append(want, h+" kubernetes")
		if h == sick {
			want = append(want, h+" slurm")
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("plans with one host in Slurm: %v, want %v", got, want)
	}

	// A [[kube]] table naming the sick host, [slurm] the healthy one: one
	// plan each, nothing refused; fence list reads the table's cluster.
	split := filepath.Join(t.TempDir(), "split.toml")
	text = strings.Replace(string(data), `nodes = "@dgx"`, `nodes = "`+healthy[0]+`"`, 1) +
		fmt.Sprintf("\n[[kube]]\nname = \"kt\"\nkubeconfig = %q\ncontext = \"kubetest\"\nnodes = %q\n", cp.Kubeconfig, sick)
	if err := os.WriteFile(split, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	apart := fenceRun(t, env, 0, "fence", "--reason", "x", "--inventory", split, "-H", sick+","+healthy[0])
	got = got[:0]
	for _, p := range apart.Plan {
		got = append(got, p.Node+" "+p.In)
	}
	if want := []string{sick + " kubernetes", healthy[0] + " slurm"}; !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Errorf("plans with a [[kube]] table and [slurm] each naming one host: %v, want %v", got, want)
	}
	if l := run(t, env, "fence", "list", "--inventory", split); l.code != 0 || !strings.Contains(l.stdout, "no node of context kubetest and slurm on ") {
		t.Errorf("fence list with a [[kube]] table: exit %d\n%s%s", l.code, l.stdout, l.stderr)
	}

	cp.StopAPIServer(t)
	half := fenceRun(t, env, 1, "fence", "--reason", "x", "--apply", "--inventory", files.Inventory, "--kubeconfig", cp.Kubeconfig, "--context", "kubetest", "-H", sick)
	cp.StartAPIServer(t)
	if len(half.Results) != 2 || half.Results[0].Outcome != fence.Failed || half.Results[1].Outcome != fence.Refused ||
		!strings.Contains(half.Results[1].Detail, "not fenced in slurm alone") || half.Record != "" {
		t.Errorf("a fence with the API server down = %+v: want the Kubernetes node not read, the Slurm one refused, no record", half)
	}
	if r := run(t, env, "exec", "--inventory", files.Inventory, "-H", "dgx01", "--", "scontrol", "show", "node", sick); strings.Contains(r.stdout, "DRAIN") {
		t.Errorf("the Slurm node was drained alone:\n%s", r.stdout)
	}
}

// twoRecords: a node fenced in Kubernetes under one record and in Slurm
// under another is released into each record with its own plan.
func twoRecords(t *testing.T, cp *kubetest.ControlPlane, env map[string]string, results string, hosts []string) {
	t.Helper()
	a := fenceRun(t, env, 0, append([]string{"fence", "--reason", "a", "--apply", "--kubernetes"}, hosts...)...)
	b := fenceRun(t, env, 0, append([]string{"fence", "--reason", "b", "--apply", "--slurm"}, hosts...)...)
	rel := fenceRun(t, env, 0, append([]string{"release", "--apply", "--force"}, hosts...)...)
	if len(rel.Records) != 2 {
		t.Fatalf("release of a node under two records = %+v", rel)
	}
	for _, c := range []struct {
		dir, in string
	}{{a.Record, fence.InKubernetes}, {b.Record, fence.InSlurm}} {
		rec, err := fence.OpenRecord(results, filepath.Base(c.dir))
		if err != nil || len(rec.Releases) != 1 || len(rec.Releases[0].Results) != 1 || rec.Releases[0].Results[0].In != c.in {
			t.Errorf("record %s after the release: %v, %+v: want its %s plan only", c.dir, err, rec.Releases, c.in)
		}
	}
}
