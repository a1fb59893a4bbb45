package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
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
	ptmx, tty := ptytest.Open(t, 24, 100)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, bin, "exec", "--inventory", files.Inventory, "-H", "*", "--",
		`[ "$(hostname)" = dgx01 ] || sleep 600`)
	c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TERM=xterm-256color"}
	c.Stdin, c.Stdout, c.Stderr = tty, tty, tty
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var (
		mu  sync.Mutex
		out bytes.Buffer
	)
	more := make(chan struct{}, 1)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			select {
			case more <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	const line = "exec: 1/2 hosts · 1 ok · 0 not ok · "
	seen := func() string { mu.Lock(); defer mu.Unlock(); return out.String() }
	for !strings.Contains(seen(), line) {
		select {
		case <-more:
		case <-ctx.Done():
			t.Fatalf("waited 2m for the progress line %q on the terminal; it shows %q", line, seen())
		}
	}
	if err := c.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err = c.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("after Ctrl-C: %v, want exit 130", err)
	}
	got := seen()
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
