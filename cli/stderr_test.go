//go:build unix

package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// While diverted, what is written to file descriptor 2 (as an exec
// credential plugin's stderr is: the process's own) goes to the log;
// restored, it reaches the terminal's stderr again, and the log is named
// when it holds anything. Run in a child process: it moves fd 2.
func TestStderrDivertedWhileTheWorkbenchRuns(t *testing.T) {
	if os.Getenv("GPULAB_TEST_DIVERT") != "" {
		divertChild()
		return
	}
	home := t.TempDir()
	c := exec.Command(os.Args[0], "-test.run=^TestStderrDivertedWhileTheWorkbenchRuns$")
	c.Env = []string{"GPULAB_TEST_DIVERT=1", "HOME=" + home, "PATH=" + os.Getenv("PATH")}
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if out, err := c.Output(); err != nil {
		t.Fatalf("child: %v\n%s\n%s", err, out, stderr.String())
	}
	if s := stderr.String(); strings.Contains(s, "DURING") || !strings.Contains(s, "BEFORE") || !strings.Contains(s, "AFTER") {
		t.Errorf("the terminal's stderr got %q: want BEFORE and AFTER, not DURING", s)
	}
	logs, _ := filepath.Glob(filepath.Join(home, ".cache", "gpulab", "workbench-stderr-*.log"))
	if len(logs) != 1 {
		t.Fatalf("logs: %v, want one; stderr: %q", logs, stderr.String())
	}
	if b, _ := os.ReadFile(logs[0]); string(b) != "DURING plugin\n" {
		t.Errorf("the log holds %q", b)
	}
	if !strings.Contains(stderr.String(), "is in "+logs[0]) {
		t.Errorf("the log is not named on exit: %q", stderr.String())
	}
}

// divertChild writes to fd 2 before, while and after the workbench's
// diversion, as a child process would (a plugin inherits fd 2).
func divertChild() {
	o := &options{env: Env{Stderr: os.Stderr, Getenv: os.Getenv}}
	os.Stderr.WriteString("BEFORE\n")
	_, restore := o.quietStderr()
	sh := exec.Command("sh", "-c", "echo DURING plugin >&2")
	sh.Stderr = os.Stderr
	_ = sh.Run()
	restore()
	os.Stderr.WriteString("AFTER\n")
}
