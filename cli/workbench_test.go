package cli

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/internal/sshtest"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/orchestrator"
)

// The workbench takes -H, -F and --known-hosts as exec does: hosts known
// only to an ssh_config are its fleet, without an inventory, and commands
// reach them (real sshd).
func TestWorkbenchAdhocHosts(t *testing.T) {
	f := sshtest.Start(t, 2, sshtest.Options{})
	cfg := sshConfigFor(t, f, f.KnownHosts)
	env := noEnv(t)
	o := &options{env: Env{Getenv: func(k string) string { return env[k] }}}
	w := &workbench{ssh: &sshFlags{hosts: "gpu[01-02]", sshConfig: cfg}}
	inv, r, err := w.fleet(o, inventory.Empty())
	if err != nil || r == nil {
		t.Fatalf("fleet(-H gpu[01-02] -F %s) = %v, %v", cfg, r, err)
	}
	defer r.Keys.Close()
	if got := inventory.Names(inv.Hosts); fmt.Sprint(got) != "[gpu01 gpu02]" {
		t.Errorf("the workbench's hosts = %v, want [gpu01 gpu02]", got)
	}
	fr := &app.Workbench{Fleet: r}
	for i, h := range fr.Hosts() {
		if want := fmt.Sprintf("%s:%d", f.Servers[i].Addr, f.Servers[i].Port); h.Address != want || h.Err != "" {
			t.Errorf("host %s at %q (%s), want %s from -F", h.Name, h.Address, h.Err, want)
		}
	}
	events := make(chan orchestrator.Event, 64)
	go func() {
		for range events {
		}
	}()
	for _, hr := range fr.Run(context.Background(), "echo hi", events) {
		if hr.Class != orchestrator.OK || len(hr.Steps) != 1 || string(hr.Steps[0].Stdout) != "hi\n" {
			t.Errorf("%s: %s %s %+v", hr.Host, hr.Class, hr.Err, hr.Steps)
		}
	}
	w.ssh.hosts = "gpu01!gpu01"
	if _, _, err := w.fleet(o, inventory.Empty()); err == nil || !strings.Contains(err.Error(), `-H "gpu01!gpu01" selects no host`) {
		t.Errorf("fleet(-H gpu01!gpu01) = %v, want selects no host", err)
	}

	// On a terminal it opens (and quits on q): no "unknown shorthand
	// flag", no demo.
	env["NO_COLOR"] = "1"
	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Main([]string{"-H", "gpu01", "-F", cfg, "--known-hosts", f.KnownHosts}, Env{Stdin: strings.NewReader("q"), Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return env[k] }, IsTerminal: true})
	}()
	select {
	case code := <-done:
		if code != 0 || strings.Contains(out.String(), "SIMULATED") {
			t.Errorf("gpulab -H gpu01 -F %s: exit %d (want 0, not the demo)\nstderr:\n%s", cfg, code, errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("gpulab -H gpu01 did not quit on q")
	}
	r2 := run(t, noEnv(t), "-H", "gpu01")
	r2.expect(t, 2, "", "the workbench needs a terminal")
}

// A record's Reproduce arguments: the files the run read (absolute), the
// connection flags given, the parameters set.
func TestReproduceArgs(t *testing.T) {
	o := &options{labs: []string{"/l/lab.toml"}}
	got := o.reproduce("/i/inventory.toml", &sshFlags{sshConfig: "/c/ssh_config", knownHosts: "/k/known_hosts", user: "ops", port: 2222}, []string{"image=x:1"})
	want := "[--inventory /i/inventory.toml -F /c/ssh_config --known-hosts /k/known_hosts -l ops -p 2222 --labs /l/lab.toml --set image=x:1]"
	if fmt.Sprint(got) != want {
		t.Errorf("reproduce = %v, want %s", got, want)
	}
	if got := app.SetArgs(map[string]string{"b": "2", "a": "1"}); fmt.Sprint(got) != "[--set a=1 --set b=2]" {
		t.Errorf("SetArgs = %v", got)
	}
}

// An empty -H is a usage error, not the demo.
func TestWorkbenchEmptyHosts(t *testing.T) {
	run(t, noEnv(t), "-H", "").expect(t, 2, "", "-H is empty: which hosts?")
	run(t, noEnv(t), "-H", "  ").expect(t, 2, "", "-H is empty")
}
