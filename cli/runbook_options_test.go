package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/internal/sshtest"
)

// gpulab runbook run's three steps, without cobra: Complete refuses a
// parameter the runbook does not have, Validate a bad flag, and Run on a
// real sshd host with no GPU tools prints the driver's FAIL (nvidia-smi
// ran and is not there), the checks it could not decide UNKNOWN, and
// returns the failure exit status.
func TestRunbookRunOptionsWithoutCobra(t *testing.T) {
	env := noEnv(t)
	o := &options{env: Env{Getenv: func(k string) string { return env[k] }}}
	ro := &runbookRunOptions{options: o, set: []string{"nope=1"}}
	if err := ro.Complete([]string{"health"}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("Complete(health --set nope=1) = %v, want an error naming nope", err)
	}
	ro.set = nil
	if err := ro.Complete([]string{"health"}); err != nil || ro.rb.ID != "health" {
		t.Fatalf("Complete(health) = %v (runbook %q)", err, ro.rb.ID)
	}
	ro.ssh.concurrency = -1
	if err := ro.Validate(); err == nil {
		t.Error("Validate accepted --concurrency -1")
	}

	f := sshtest.Start(t, 1, sshtest.Options{})
	ro.ssh = sshFlags{hosts: "gpu01", sshConfig: sshConfigFor(t, f, f.KnownHosts)}
	if err := ro.Validate(); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err := ro.Run(context.Background(), &out, &errOut)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != ExitFailed {
		t.Errorf("Run = %v, want exit %d (a check failed)", err, ExitFailed)
	}
	if !strings.Contains(out.String(), "FAIL    gpu01: nvidia-smi is not installed on this host") || !strings.Contains(out.String(), "UNKNOWN gpu01: no evidence") ||
		!strings.HasPrefix(errOut.String(), "1 host: 1 FAIL (gpu01)") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
}
