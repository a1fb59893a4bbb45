package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpulab/gpulab/internal/ptytest"
	"github.com/gpulab/gpulab/sim"
)

// TestProgressLineOnATerminal: on a terminal, a run over many hosts keeps
// one line saying how far it is ("exec: 1/2 hosts · 1 ok · 0 not ok"),
// and erases it before anything else is written (here the interrupt
// message and the summary), so it never tears the output. The second
// host's command waits until Ctrl-C; off a terminal (every other test)
// no such line is written.
func TestProgressLineOnATerminal(t *testing.T) {
	bin := gpulabBinary(t)
	f, err := sim.Start(context.Background(), sim.Config{Hosts: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	files, err := f.WriteInventory(filepath.Join(t.TempDir(), "inventory.toml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, bin, "exec", "--inventory", files.Inventory, "-H", "*", "--",
		`[ "$(hostname)" = dgx01 ] || sleep 600`)
	c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TERM=xterm-256color"}
	term := ptytest.Start(t, c, 24, 100, nil)
	const line = "exec: 1/2 hosts · 1 ok · 0 not ok · "
	if err := term.WaitFor(ctx, line); err != nil {
		t.Fatal(err)
	}
	if err := c.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err = c.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("after Ctrl-C: %v, want exit 130", err)
	}
	<-term.Closed()
	got := term.Output()
	// After the last progress line, the next thing written is its
	// erasure; then the interrupt message and the summary.
	last := strings.LastIndex(got, line)
	rest := got[last:]
	erase := strings.Index(rest, "\r\x1b[K")
	msg := strings.Index(rest, "gpulab: interrupted")
	if erase < 0 || msg < 0 || erase > msg || strings.ContainsAny(rest[len(line):erase], "\n") {
		t.Errorf("the progress line was not erased before the interrupt message:\n%q", rest)
	}
	if !strings.Contains(rest, "2 hosts: 1 ok, 1 cancelled (dgx02) in ") {
		t.Errorf("no summary after the progress line:\n%q", rest)
	}
}
