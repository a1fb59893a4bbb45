package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/internal/sshtest"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/labs"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/probes/remote"
	"github.com/gpulab/gpulab/runbooks"
	"github.com/gpulab/gpulab/step"
)

// fleetOn is a Fleet of gpu01 (a real sshd, through an ssh_config) and
// broken (whose ssh_config entry cannot be used), as -H would select them.
func fleetOn(t *testing.T) *Fleet {
	t.Helper()
	f := sshtest.Start(t, 1, sshtest.Options{})
	s := f.Servers[0]
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	text := fmt.Sprintf("Host gpu01\n  HostName %s\n  Port %d\n  User %s\n  IdentityFile %s\n  UserKnownHostsFile %s\n\nHost broken\n  ProxyJump gpu01\n  ProxyCommand nc %%h %%p\n",
		s.Addr, s.Port, f.User, f.ClientKey, f.KnownHosts)
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	inv := inventory.Empty()
	hosts, err := inv.Select("gpu01,broken")
	if err != nil {
		t.Fatal(err)
	}
	fl, err := NewFleet(inv, hosts, Reach{SSHConfig: cfg, Home: t.TempDir(), LocalUser: f.User})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fl.Pool())
	return fl
}

// The Runbooks tab's run, as a key press starts it: every chosen host
// answers once, the one that cannot be reached with UNKNOWN and why, the
// other with its verdict from the real host; done is closed at the end.
func TestWorkbenchRunbookEveryHostOnce(t *testing.T) {
	fl := fleetOn(t)
	w := &Workbench{Fleet: fl}
	hosts := w.Hosts()
	if len(hosts) != 2 || hosts[0].Name != "broken" || hosts[0].Err == "" || hosts[1].Name != "gpu01" || hosts[1].Err != "" {
		t.Fatalf("hosts: %+v", hosts)
	}
	rb := runbooks.Runbook{ID: "echo", Title: "echo", Plane: "data",
		Steps:  []runbooks.Step{{ID: "say", Command: "echo {{word}}"}},
		Checks: []step.Check{{ID: "said", Title: "said", Rule: "output-matches", Uses: []string{"say"}, With: map[string]any{"pattern": "^hello$"}}}}
	done := make(chan RunbookHost)
	go w.RunRunbook(context.Background(), rb, []int{0, 1}, map[string]string{"word": "hello"}, done)
	got := map[int]step.Status{}
	for h := range done {
		if _, twice := got[h.Index]; twice {
			t.Errorf("host %d answered twice", h.Index)
		}
		got[h.Index] = h.Run.HostStatus()
		if h.Index == 0 && (h.Run.Class != orchestrator.Error || !strings.Contains(h.Run.Err, "ProxyJump")) {
			t.Errorf("broken: %s %q, want an error naming ProxyJump", h.Run.Class, h.Run.Err)
		}
	}
	if got[0] != step.Unknown || got[1] != step.Pass || len(got) != 2 {
		t.Errorf("statuses %v, want broken UNKNOWN and gpu01 PASS", got)
	}
}

// A probe that cannot be had on this machine fails every host with the
// same local reason, which Probe returns as a LocalError (the command
// line's configuration error) and the workbench shows on each host.
func TestProbeLocalFailure(t *testing.T) {
	fl := fleetOn(t)
	noProbe := errors.New("no probe for this architecture here")
	p := &remote.Prober{Source: func(string) ([]byte, []byte, error) { return nil, nil, noProbe }}
	_, err := fl.Probe(context.Background(), ProbeOptions{Prober: p}, nil)
	var le *LocalError
	if !errors.As(err, &le) || !errors.Is(err, noProbe) {
		t.Fatalf("Probe = %v, want a LocalError wrapping %v", err, noProbe)
	}
	out := (&Workbench{Fleet: fl, Prober: p}).Probe(context.Background(), nil)
	if len(out) != 2 || out[0].Err == "" || !strings.Contains(out[1].Err, noProbe.Error()) {
		t.Errorf("outcomes %+v: want one per host, each with why", out)
	}
}

// A demo's record reproduces with the demo's fleet first; elsewhere with
// the files the run read and its parameters, sorted.
func TestReproduceFor(t *testing.T) {
	ls, err := labs.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	var plain, kube *labs.Lab
	for _, l := range ls {
		switch {
		case l.ReadsCluster() && kube == nil:
			kube = l
		case !l.ReadsCluster() && plain == nil:
			plain = l
		}
	}
	if plain == nil || kube == nil {
		t.Fatal("the built-in labs have no lab that reads a cluster and one that does not")
	}
	params := map[string]string{"b": "2", "a": "1"}
	w := &Workbench{Reproduce: []string{"--inventory", "/i.toml"}}
	if r, f := w.ReproduceFor(plain, params); fmt.Sprint(r, f) != "[--inventory /i.toml --set a=1 --set b=2] []" {
		t.Errorf("outside the demo: %v %v", r, f)
	}
	w.Demo = &Demo{Seed: 7, Hosts: 3}
	if r, f := w.ReproduceFor(plain, params); fmt.Sprint(r, f) != "[--inventory sim-inventory.toml --set a=1 --set b=2] [gpulab sim serve --seed 7 --hosts 3 --inventory-out sim-inventory.toml]" {
		t.Errorf("in the demo: %v %v", r, f)
	}
	if r, f := w.ReproduceFor(kube, params); fmt.Sprint(r, f) != "[] [gpulab demo --seed 7 --hosts 3]" {
		t.Errorf("a cluster lab in the demo: %v %v", r, f)
	}
}

// A lab with a step that needs the host's / writable runs on SSH hosts
// and on nodes whose pods mount it read-write, and is refused, naming the
// step, on a node whose pod mounts it read-only: the command and the
// Labs tab both ask this before any host is touched.
func TestWritesHostRefusesAReadOnlyNode(t *testing.T) {
	l := &labs.Lab{ID: "writer", Steps: []labs.Step{{ID: "look"}, {ID: "mark", Needs: []string{labs.NeedsWritableHost}}}}
	ssh := orchestrator.Target{Name: "gpu01"}
	ro := (&orchestrator.KubeTransport{}).Target("gpu02", false, orchestrator.Target{})
	rw := (&orchestrator.KubeTransport{WritableHost: true}).Target("gpu03", false, orchestrator.Target{})
	if err := WritesHost(l, []orchestrator.Target{ssh, rw}); err != nil {
		t.Errorf("SSH and a writable node: %v", err)
	}
	err := WritesHost(l, []orchestrator.Target{ssh, ro})
	if err == nil || !strings.Contains(err.Error(), `step "mark" needs the host's / writable`) || !strings.Contains(err.Error(), "--writable-host") {
		t.Errorf("a read-only node: %v", err)
	}
	if err := WritesHost(&labs.Lab{ID: "reader", Steps: []labs.Step{{ID: "look"}}}, []orchestrator.Target{ro}); err != nil {
		t.Errorf("a lab that writes nothing, on a read-only node: %v", err)
	}
}
