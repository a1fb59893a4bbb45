package cli

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/labs"
	"github.com/gpulab/gpulab/landscape"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/runbooks"
	"github.com/gpulab/gpulab/sim"
	"github.com/gpulab/gpulab/tui"
)

// The loop from the workbench, on the simulated fleet's Slurm controller:
// F on the sick host asks why, shows the plan (a drain, nothing done
// yet), y gathers the evidence and drains it, and the simulated sinfo
// shows it; R shows the release plan, and y holds it while its checks
// still fail.
func TestWorkbenchFencesTheSickHost(t *testing.T) {
	f, files := simFleet(t, sim.Config{Hosts: 3, Seed: 1})
	sick, _ := sickAndHealthy(t, f)
	env := noEnv(t)
	results := t.TempDir()
	m := simWorkbench(t, env, files.Inventory, results, nil)
	press := func(keys ...string) tea.Cmd {
		var cmd tea.Cmd
		for _, k := range keys {
			switch k {
			case "enter":
				m, cmd = m.Update(tea.KeyMsg{Type: tea.KeyEnter})
			case "down":
				m, cmd = m.Update(tea.KeyMsg{Type: tea.KeyDown})
			default:
				m, cmd = m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)})
			}
		}
		return cmd
	}
	press("3")
	for i := range f.Hosts() {
		if f.Hosts()[i].Name == sick {
			break
		}
		press("down")
	}
	press("F", "XID 79: GPU fell off the bus")
	cmd := press("enter")
	m = driveUntil(t, m, cmd, func(v string) bool { return strings.Contains(v, "y: gather the evidence") })
	if v := m.View(); !strings.Contains(v, "Fence "+sick+" in slurm, scontrol on dgx01") || !strings.Contains(v, "drain      scontrol update NodeName="+sick) {
		t.Fatalf("the confirmation does not show the plan:\n%s", v)
	}
	if out := run(t, env, "exec", "--inventory", files.Inventory, "-H", "dgx01", "--", "sinfo", "-R"); strings.Contains(out.stdout, sick) {
		t.Fatalf("the plan alone drained %s:\n%s", sick, out.stdout)
	}
	cmd = press("y")
	m = driveUntil(t, m, cmd, func(v string) bool { return strings.Contains(v, "esc closes") })
	if v := m.View(); !strings.Contains(v, sick+": fenced (drain)") || !strings.Contains(v, "record: "+results) {
		t.Fatalf("after y:\n%s", v)
	}
	if out := run(t, env, "exec", "--inventory", files.Inventory, "-H", "dgx01", "--", "sinfo", "-R"); !strings.Contains(out.stdout, "gpulab: XID 79: GPU ") {
		t.Errorf("sinfo -R after the fence:\n%s", out.stdout)
	}
	cmd = press("esc")
	m = driveUntil(t, m, cmd, func(v string) bool { return strings.Contains(v, "DRAIN") })
	if v := m.View(); !regexp.MustCompile(`(?m)^. ` + sick + ` .* DRAIN +.*slurm IDLE\+DRAIN: "gpulab: XID 79`).MatchString(v) {
		t.Errorf("the Fleet does not show %s drained, with the reason:\n%s", sick, v)
	}
	cmd = press("R")
	m = driveUntil(t, m, cmd, func(v string) bool { return strings.Contains(v, "y: run the health runbook again") })
	cmd = press("y")
	m = driveUntil(t, m, cmd, func(v string) bool { return strings.Contains(v, "esc closes") })
	if v := m.View(); !strings.Contains(v, sick+": refused: held: ") {
		t.Errorf("the release of a host still sick:\n%s", v)
	}
}

// From the Runbooks tab: health runs, the cursor goes to a check that
// failed, F fences its hosts with the check as the reason, the plan is
// shown, and y drains them.
func TestRunbooksTabFencesAFailedCheck(t *testing.T) {
	f, files := simFleet(t, sim.Config{Hosts: 2, Seed: 1})
	sick, _ := sickAndHealthy(t, f)
	rbs, _ := runbooks.Load(nil)
	m := simWorkbench(t, noEnv(t), files.Inventory, t.TempDir(), nil)
	key := func(k tea.KeyMsg) tea.Cmd {
		var cmd tea.Cmd
		m, cmd = m.Update(k)
		return cmd
	}
	runes := func(s string) tea.KeyMsg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)} }
	cursorLine := func() string { return regexp.MustCompile(`(?m)^.*▶.*$`).FindString(m.View()) }
	key(runes("4"))
	for i := 0; !strings.Contains(cursorLine(), "health"); i++ {
		if i > len(rbs) {
			t.Fatalf("no health runbook in the list:\n%s", m.View())
		}
		key(tea.KeyMsg{Type: tea.KeyUp})
	}
	m = driveUntil(t, m, key(tea.KeyMsg{Type: tea.KeyEnter}), func(v string) bool { return strings.Contains(v, "2/2 hosts") })
	for i := 0; !strings.Contains(cursorLine(), "FAIL"); i++ {
		if i > 40 {
			t.Fatalf("no FAIL under the cursor:\n%s", m.View())
		}
		key(tea.KeyMsg{Type: tea.KeyDown})
	}
	key(runes("F"))
	if v := m.View(); !strings.Contains(v, "reason: runbook health: ") {
		t.Fatalf("F on a failed check:\n%s", v)
	}
	m = driveUntil(t, m, key(tea.KeyMsg{Type: tea.KeyEnter}), func(v string) bool { return strings.Contains(v, "y: gather the evidence") })
	m = driveUntil(t, m, key(runes("y")), func(v string) bool { return strings.Contains(v, "esc closes") })
	if v := m.View(); !strings.Contains(v, sick+": fenced (drain)") {
		t.Errorf("after y:\n%s", v)
	}
}

// simWorkbench is the workbench on the simulated fleet of inventory,
// its hosts reached as gpulab reaches any (@dgx), at 140x40, its fence
// records under results; its connections close when the test ends. With
// simCluster, it is the demo's: the fleet's simulated cluster is the
// Cluster tab's and the one its hosts are nodes of (Init starts the
// tab's following it).
func simWorkbench(t *testing.T, env map[string]string, inventoryFile, results string, simCluster func(context.Context) (*cluster.Client, error)) tea.Model {
	t.Helper()
	o := &options{env: Env{Getenv: func(k string) string { return env[k] }}}
	inv, err := inventory.Load(inventoryFile)
	if err != nil {
		t.Fatal(err)
	}
	r, err := o.runnerOn(inv, &sshFlags{hosts: "@dgx"})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := landscape.Builtin()
	ls, _ := labs.Load(nil)
	rbs, _ := runbooks.Load(nil)
	lipgloss.SetColorProfile(termenv.Ascii)
	opts := tui.Options{Catalog: c, Inventory: inv, Labs: ls, Runbooks: rbs, Styles: tui.DefaultStyles(), Simulated: simCluster != nil}
	var kube func([]orchestrator.Target) (*cluster.Client, string)
	if simCluster != nil {
		var stop func()
		opts.Clusters, stop = app.Clusters(t.Context(), app.ClusterSpec{Inventory: inv, Getenv: o.getenv, Simulated: simCluster, SimulatedName: sim.KubeContext})
		t.Cleanup(stop)
		kube = (&workbench{cluster: simCluster}).labKube(t.Context())
	}
	t.Cleanup(o.fleetOptions(&opts, r, inv, results, nil, kube, nil))
	m, _ := tui.New(opts).Update(tea.WindowSizeMsg{Width: 140, Height: 40})
	return m
}

// The loop as gpulab demo shows it, whose hosts are nodes of the
// simulated Kubernetes cluster and of the simulated Slurm controller:
// F on the flagged host in the Fleet plans both, y fences both under one
// record; the Cluster tab shows the node cordoned and fenced by gpulab,
// kubectl and sinfo on the hosts say so; from the Cluster tab, a healthy
// node fenced for maintenance is released once its checks pass, and the
// sick one's release is held.
func TestDemoLoopInTheWorkbench(t *testing.T) {
	f, files := simFleet(t, sim.Config{Hosts: 3, Seed: 1})
	sick, healthy := sickAndHealthy(t, f)
	env := noEnv(t)
	d := newDriver(t, simWorkbench(t, env, files.Inventory, t.TempDir(), demoCluster(t.Context(), f)))
	d.start(d.m.Init()) // the Cluster tab follows the cluster from here
	shown := func(want ...string) func(string) bool {
		return func(v string) bool {
			for _, w := range want {
				if !strings.Contains(v, w) {
					return false
				}
			}
			return true
		}
	}
	onHost := func(args ...string) string {
		return run(t, env, append([]string{"exec", "--inventory", files.Inventory, "-H", "dgx01", "--"}, args...)...).stdout
	}
	// confirm plans with the reason typed (none: a release), then applies.
	confirm := func(reason string) {
		t.Helper()
		if reason != "" {
			d.press(reason, "enter")
		}
		d.until(nil, shown("y: "))
		d.press("y")
		d.until(nil, shown("esc closes"))
	}

	d.press("3")
	for _, h := range f.Hosts() {
		if h.Name == sick {
			break
		}
		d.press("down")
	}
	d.press("F", "XID 79: GPU fell off the bus", "enter")
	d.until(nil, shown("y: gather the evidence"))
	if v := d.m.View(); !strings.Contains(v, "Fence "+sick+" in kubernetes context simulated and slurm, scontrol on dgx01") ||
		!strings.Contains(v, sick+" (kubernetes):") || !strings.Contains(v, sick+" (slurm):") {
		t.Fatalf("the plan in both clusters:\n%s", v)
	}
	confirm("")
	if v := d.m.View(); !strings.Contains(v, sick+" (kubernetes): fenced (cordon, taint, annotate)") || !strings.Contains(v, sick+" (slurm): fenced (drain)") {
		t.Fatalf("after y:\n%s", v)
	}
	if out := onHost("kubectl", "get", "nodes"); !strings.Contains(out, sick+"   Ready,SchedulingDisabled") {
		t.Errorf("kubectl get nodes after the fence:\n%s", out)
	}
	if out := onHost("sinfo", "-R"); !strings.Contains(out, "gpulab: XID 79") {
		t.Errorf("sinfo -R after the fence:\n%s", out)
	}
	d.press("esc", "7")
	d.until(nil, shown("⛔ fenced by gpulab: "+sick, "Ready,SchedulingDisabled!"))

	// From the Cluster tab: the nodes' list, a healthy node fenced for
	// maintenance, then released (its checks pass).
	d.press("right")
	cursorOn := func(node string) {
		t.Helper()
		for i := 0; !regexp.MustCompile(`(?m)^▶ ` + node + ` `).MatchString(d.m.View()); i++ {
			if i > 20 {
				t.Fatalf("the cursor never reached %s:\n%s", node, d.m.View())
			}
			d.press("down")
		}
	}
	cursorOn(healthy[0])
	d.press("F")
	confirm("firmware update")
	d.press("esc")
	d.until(nil, shown("⛔ fenced by gpulab: "+strings.Join(slices.Sorted(slices.Values([]string{sick, healthy[0]})), ", ")))
	d.press("R")
	confirm("")
	if v := d.m.View(); !strings.Contains(v, healthy[0]+" (kubernetes): released") || !strings.Contains(v, healthy[0]+" (slurm): released") {
		t.Fatalf("the release of a healthy node from the Cluster tab:\n%s", v)
	}
	if out := onHost("kubectl", "get", "nodes"); strings.Contains(out, healthy[0]+"   Ready,SchedulingDisabled") {
		t.Errorf("kubectl get nodes after the release:\n%s", out)
	}
	d.press("esc")
	d.until(nil, shown("⛔ fenced by gpulab: "+sick+" since "))
	cursorOn(sick)
	d.press("R")
	confirm("")
	if v := d.m.View(); !strings.Contains(v, sick+" (kubernetes): refused: held: ") {
		t.Errorf("the release of the sick node:\n%s", v)
	}
}
