package cli

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpulab/gpulab/internal/kubetest"
	"github.com/gpulab/gpulab/sim"
)

// kubeSimFleet is a simulated fleet reachable both ways: over SSH (its
// inventory) and as a real API server's nodes, whose kubelet endpoints
// are the fleet's hosts.
func kubeSimFleet(t *testing.T, cfg sim.Config) (*kubetest.ControlPlane, *sim.Fleet, sim.Files) {
	t.Helper()
	cp := kubetest.Start(t)
	cfg.Kubelet = &sim.KubeletConfig{ClientCA: cp.KubeletClientCA}
	f, files := simFleet(t, cfg)
	for _, h := range f.Hosts() {
		cp.AddNode(t, sim.NodeOf(h))
	}
	return cp, f, files
}

// podsLeft names the pods in namespace ns.
func podsLeft(t *testing.T, cp *kubetest.ControlPlane, ns string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := cp.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range l.Items {
		names = append(names, p.Name+" ("+string(p.Status.Phase)+")")
	}
	return names
}

// The same simulated DGX fleet, over SSH and through the API server:
// exec prints the same, the probe flags the same host, the health
// runbook and the health-gate lab give the same verdicts, host by host;
// no node pod is left after any of them.
func TestKubeTransportGivesTheSameVerdicts(t *testing.T) {
	cp, f, files := kubeSimFleet(t, sim.Config{Hosts: 4, Seed: 1})
	sick, _ := sickAndHealthy(t, f)
	env := noEnv(t)
	overSSH := []string{"--inventory", files.Inventory, "-H", "@dgx"}
	throughKube := []string{"--via", "kube", "--kubeconfig", cp.Kubeconfig, "-H", "*"}

	a := run(t, env, append(append([]string{"exec"}, overSSH...), "--", "nvidia-smi", "topo", "-m")...)
	b := run(t, env, append(append([]string{"exec"}, throughKube...), "--", "nvidia-smi", "topo", "-m")...)
	if a.code != 0 || b.code != 0 || a.stdout != b.stdout {
		t.Errorf("exec over SSH (exit %d) and through kube (exit %d) differ:\n--- ssh\n%s\n--- kube\n%s\n%s", a.code, b.code, a.stdout, b.stdout, b.stderr)
	}
	if !strings.Contains(b.stderr, "4 hosts: 4 ok") {
		t.Errorf("exec through kube: stderr %q", b.stderr)
	}
	j := run(t, env, append(append([]string{"exec"}, throughKube...), "--json", "--", "true")...)
	if strings.Count(j.stdout, `"transport": "kube"`) != 4 || strings.Count(j.stdout, `"context": "kubetest"`) != 4 || strings.Count(j.stdout, `"address": "node/dgx`) != 4 {
		t.Errorf("exec --json through kube does not say so for every host:\n%s", j.stdout)
	}

	p := run(t, env, append(append([]string{"probe"}, throughKube...), "--json")...)
	probes, err := probeJSON(p.stdout)
	if err != nil || p.code != 1 || len(probes) != 4 {
		t.Fatalf("probe --via kube --json: exit %d, %v\n%s\n%s", p.code, err, p.stdout, p.stderr)
	}
	for _, pr := range probes {
		if pr.Snapshot == nil || !pr.Snapshot.Simulated {
			t.Fatalf("probe %s through kube: %s %s: no simulated snapshot", pr.Host, pr.Class, pr.Error)
		}
		if flagged := len(pr.Flags) > 0; flagged != (pr.Host == sick) {
			t.Errorf("probe %s through kube: flags %q, want some only on %s", pr.Host, pr.Flags, sick)
		}
	}

	ssh, kube := runbookVerdicts(t, env, "health", overSSH), runbookVerdicts(t, env, "health", throughKube)
	if !maps.EqualFunc(ssh, kube, maps.Equal) {
		t.Errorf("runbook health: over SSH %v\nthrough kube %v", ssh, kube)
	}
	wantVerdicts(t, "runbook health through kube", kube, sick, []string{"ecc", "xid"}, []string{"remapped-rows"})
	ls, lk := labScores(t, env, "health-gate", overSSH), labScores(t, env, "health-gate", throughKube)
	if !maps.EqualFunc(ls, lk, maps.Equal) {
		t.Errorf("lab health-gate: over SSH %v\nthrough kube %v", ls, lk)
	}
	// cluster reconcile with no inventory: the nodes are the hosts.
	rc := run(t, env, "cluster", "reconcile", "--via", "kube", "--kubeconfig", cp.Kubeconfig, "--json")
	var rec struct {
		Hosts []struct{ Host, Node, Unmapped, Class string }
	}
	if err := json.Unmarshal([]byte(rc.stdout), &rec); err != nil || len(rec.Hosts) != 4 {
		t.Fatalf("cluster reconcile --via kube: exit %d, %v\n%s\n%s", rc.code, err, rc.stdout, rc.stderr)
	}
	for _, h := range rec.Hosts {
		if h.Node != h.Host || h.Class != "ok" {
			t.Errorf("cluster reconcile --via kube: %+v, want the host probed and mapped to its node", h)
		}
	}
	if left := podsLeft(t, cp, metav1.NamespaceDefault); len(left) != 0 {
		t.Errorf("node pods left: %v", left)
	}
}

// What --via kube cannot do is said once, before any node is touched:
// a namespace that does not exist, one whose Pod Security refuses the
// node pod (with the label that allows it), SSH's own settings, a
// selector given twice. No pod is made.
func TestKubeTransportRefusesOnce(t *testing.T) {
	cp, _, _ := kubeSimFleet(t, sim.Config{Hosts: 2})
	cp.Namespace(t, "locked")
	ns, err := cp.Client.CoreV1().Namespaces().Get(t.Context(), "locked", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	if _, err := cp.Client.CoreV1().Namespaces().Update(t.Context(), ns, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	env := noEnv(t)
	kube := []string{"exec", "--via", "kube", "--kubeconfig", cp.Kubeconfig, "-H", "*"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--namespace", "nope"}, "namespace nope does not exist in context kubetest"},
		{[]string{"--namespace", "locked"}, "pod-security.kubernetes.io/enforce=privileged"},
		{[]string{"-p", "2222"}, "--port is an SSH setting"},
		{[]string{"-l", "a=b", "--selector", "c=d"}, "the label selector is given twice"},
	} {
		r := run(t, env, append(append(append([]string{}, kube...), tc.args...), "--", "true")...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, tc.want) || strings.Count(r.stderr, "gpulab:") != 1 {
			t.Errorf("%v: exit %d, want %d saying once %q\n%s", tc.args, r.code, ExitUsage, tc.want, r.stderr)
		}
	}
	for _, ns := range []string{metav1.NamespaceDefault, "locked"} {
		if left := podsLeft(t, cp, ns); len(left) != 0 {
			t.Errorf("pods left in %s: %v", ns, left)
		}
	}
}
