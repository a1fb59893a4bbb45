package cli

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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

// hostMounts follows the pods of ns from now on and returns a function
// that waits (30 s at most) until n node pods were seen, and says for
// each whether it mounted the host's / read-only.
func hostMounts(t *testing.T, cp *kubetest.ControlPlane, ns string) func(n int) map[string]bool {
	t.Helper()
	w, err := cp.Client.CoreV1().Pods(ns).Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	var mu sync.Mutex
	seen := map[string]bool{}
	more := make(chan struct{}, 1)
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			for _, c := range p.Spec.Containers {
				for _, m := range c.VolumeMounts {
					if m.MountPath == "/host" {
						mu.Lock()
						seen[p.Name] = m.ReadOnly
						mu.Unlock()
						select {
						case more <- struct{}{}:
						default:
						}
					}
				}
			}
		}
	}()
	return func(n int) map[string]bool {
		deadline := time.After(30 * time.Second)
		for {
			mu.Lock()
			m := maps.Clone(seen)
			mu.Unlock()
			if len(m) >= n {
				return m
			}
			select {
			case <-more:
			case <-deadline:
				t.Errorf("waited 30s for the watch to show %d node pods: saw %v", n, m)
				return m
			}
		}
	}
}

// The host's / is read-only in the node pods unless the run asks:
// --writable-host, a lab whose step needs it (refused without the flag,
// saying which step), and push, which writes the host by purpose and
// takes an absolute --dest. The file pushed is on every node, whole, with
// its mode, read back through the API server.
func TestKubeTransportWritesTheHostOnlyWhenAsked(t *testing.T) {
	cp, f, _ := kubeSimFleet(t, sim.Config{Hosts: 2})
	env := noEnv(t)
	kube := []string{"--via", "kube", "--kubeconfig", cp.Kubeconfig, "-H", "*"}
	mounts := hostMounts(t, cp, metav1.NamespaceDefault)
	readOnly := func(what string, want bool) {
		t.Helper()
		m := mounts(len(f.Hosts()))
		for pod, ro := range m {
			if ro != want {
				t.Errorf("%s: pod %s mounted the host's / read-only=%v, want %v", what, pod, ro, want)
			}
		}
		if len(m) != len(f.Hosts()) {
			t.Errorf("%s: %d node pods seen (%v), want one a node", what, len(m), m)
		}
	}

	run(t, env, append(append([]string{"exec"}, kube...), "--", "true")...).expect(t, 0, "", "2 hosts: 2 ok")
	readOnly("exec", true)

	mounts = hostMounts(t, cp, metav1.NamespaceDefault)
	run(t, env, append(append([]string{"exec", "--writable-host"}, kube...), "--", "true")...).expect(t, 0, "", "2 hosts: 2 ok")
	readOnly("exec --writable-host", false)

	dir := t.TempDir()
	script := filepath.Join(dir, "healthcheck.sh")
	body := "#!/bin/sh\necho healthy\n"
	if err := os.WriteFile(script, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "give --dest an absolute path"},
		{[]string{"--dest", "bin/"}, "give --dest an absolute path"},
	} {
		r := run(t, env, append(append([]string{"push", script}, kube...), tc.args...)...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("push --via kube %v: exit %d, want %d saying %q\n%s", tc.args, r.code, ExitUsage, tc.want, r.stderr)
		}
	}
	r := run(t, env, "push", script, "--writable-host", "--inventory", "x", "-H", "*")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "--writable-host is for --via kube") {
		t.Errorf("push --writable-host over SSH: exit %d\n%s", r.code, r.stderr)
	}

	mounts = hostMounts(t, cp, metav1.NamespaceDefault)
	run(t, env, append(append([]string{"push", script}, kube...), "--dest", "/tmp/", "--mode", "0755")...).expect(t, 0, "/tmp/healthcheck.sh", "2 hosts: 2 ok")
	readOnly("push", false)
	back := run(t, env, append(append([]string{"exec", "--no-fold"}, kube...), "--", "stat -c %a /tmp/healthcheck.sh && /tmp/healthcheck.sh")...)
	if back.code != 0 || strings.Count(back.stdout, ": 755\n") != 2 || strings.Count(back.stdout, ": healthy\n") != 2 {
		t.Errorf("the pushed file read back: exit %d\n%s\n%s", back.code, back.stdout, back.stderr)
	}
	// Again: the nodes have it, nothing is sent; --json says how the
	// nodes were reached.
	again := run(t, env, append(append([]string{"push", script, "--json"}, kube...), "--dest", "/tmp/", "--mode", "0755")...)
	if again.code != 0 || strings.Count(again.stdout, `"skipped": true`) != 2 || strings.Count(again.stdout, `"transport": "kube"`) != 2 || strings.Count(again.stdout, `"context": "kubetest"`) != 2 {
		t.Errorf("the same push again, --json: exit %d\n%s\n%s", again.code, again.stdout, again.stderr)
	}
	// A directory reached through a link: the file lands in the link's
	// target, and that is the path reported.
	run(t, env, append(append([]string{"exec", "--writable-host"}, kube...), "--", "mkdir -p /opt/real && ln -sfn real /opt/lnk")...).expect(t, 0, "", "2 hosts: 2 ok")
	run(t, env, append(append([]string{"push", script}, kube...), "--dest", "/opt/lnk/")...).expect(t, 0, "/opt/real/healthcheck.sh", "2 hosts: 2 ok")
	if r := run(t, env, append(append([]string{"push", script, "--no-sftp"}, kube...), "--dest", "/tmp/")...); r.code != ExitUsage || !strings.Contains(r.stderr, "--no-sftp is an SSH setting") {
		t.Errorf("push --via kube --no-sftp: exit %d\n%s", r.code, r.stderr)
	}

	lab := filepath.Join(dir, "labs")
	if err := os.Mkdir(lab, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lab, "writer.toml"), []byte(writerLab), 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(t, env, append([]string{"lab", "run", "writer", "--labs", lab, "--no-probe", "--yes"}, kube...)...)
	if r.code != ExitUsage || !strings.Contains(r.stderr, `step "mark" needs the host's / writable`) || !strings.Contains(r.stderr, "--writable-host") {
		t.Errorf("lab needing writable-host, without the flag: exit %d\n%s", r.code, r.stderr)
	}
	mounts = hostMounts(t, cp, metav1.NamespaceDefault)
	r = run(t, env, append([]string{"lab", "run", "writer", "--labs", lab, "--no-probe", "--yes", "--writable-host"}, kube...)...)
	if r.code != 0 {
		t.Errorf("lab needing writable-host, with the flag: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	readOnly("lab run --writable-host", false)
	if left := podsLeft(t, cp, metav1.NamespaceDefault); len(left) != 0 {
		t.Errorf("node pods left: %v", left)
	}
}

const writerLab = `id = "writer"
name = "A lab whose setup writes the host"
goal = "Shows that a step that writes the host's / asks for it, and gets it only when the operator allows it."
plane = "data"
maturity = "draft"
estimate_minutes = 1
cost = "One file in /tmp per node."
stop_loss = "Remove /tmp/gpulab-writer-mark."

[[step]]
id = "mark"
phase = "setup"
title = "Write a mark"
command = "echo written > /tmp/gpulab-writer-mark"
needs = ["writable-host"]

[[step]]
id = "read"
phase = "check"
title = "Read the mark back"
command = "cat /tmp/gpulab-writer-mark"

[step.metrics]
written = "stdout == 'written\\n'"

[[step]]
id = "unmark"
phase = "cleanup"
title = "Remove the mark"
command = "rm -f /tmp/gpulab-writer-mark"

[[criterion]]
id = "written"
description = "The mark was written and read back"
expr = "metrics.written"
impact = "critical"
`
