// Package testreq is how tests say that something they need is missing:
// a loud skip on a developer's machine, a failure under CI (CI set), so a
// CI run can never pass by skipping an integration test.
package testreq

import (
	"os"
	"os/exec"
	"testing"
)

// Missing skips t loudly with msg, or fails it under CI.
func Missing(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(msg + " (CI must provide it: .ci/run)")
	}
	logSkip(t, msg)
	t.Skip("SKIPPED LOUDLY: " + msg)
}

// Tool returns the path of the program name, or calls Missing with why the
// test needs it and how to install it.
func Tool(t testing.TB, name, why string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, name+" is not installed: "+why)
	}
	return p
}
