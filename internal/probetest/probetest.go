// Package probetest builds the real NVML probe for tests that push it to
// hosts.
package probetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Build returns the path of the probe built with tags into the test's
// temporary directory: with none, the build that carries the simulated DGX
// A100 (--mock dgxa100); with "nosim", the build shipped for real hosts.
// It fails the test when the build fails.
func Build(t testing.TB, tags ...string) string {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(self), "..", "..", "probes", "nvmlprobe")
	out := filepath.Join(t.TempDir(), "nvmlprobe")
	args := []string{"build", "-o", out}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.Command("go", append(args, src)...)
	cmd.Env = append(os.Environ(), "CGO_CFLAGS=-Wno-deprecated-declarations")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the probe: %v\n%s", err, b)
	}
	return out
}
