//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gpulab/gpulab/internal/ptytest"
)

// The queries termenv sends to learn a terminal's background colour: an
// OSC 11 request and a cursor position report that tells whether the
// terminal answered at all.
const (
	queryBackground = "\x1b]11;?"
	queryCursor     = "\x1b[6n"
)

// TestCommandsDoNotQueryTheTerminal: a command run on a terminal (stdout,
// stderr and stdin a pty that is its controlling terminal, TERM an xterm's)
// writes no query to it; they used to send both queries before main ran
// (Bubble Tea's init asks for the background) and, on a terminal that does
// not answer, wait 5 s first. The workbench, which draws in colour, still
// asks, and reads the answer.
func TestCommandsDoNotQueryTheTerminal(t *testing.T) {
	bin := gpulabBinary(t)
	home := t.TempDir()
	for _, args := range [][]string{{"version"}, {"map"}, {"matrix"}, {"--help"}} {
		out := onTerminal(t, bin, home, false, args...)
		if strings.Contains(out, queryBackground) || strings.Contains(out, queryCursor) {
			t.Errorf("gpulab %s queries the terminal: %q", strings.Join(args, " "), out[:min(len(out), 200)])
		}
		if !strings.Contains(out, "gpulab") && !strings.Contains(out, "PLANE") && !strings.Contains(out, "ISOLATION") {
			t.Errorf("gpulab %s printed nothing recognisable: %q", strings.Join(args, " "), out[:min(len(out), 200)])
		}
	}
	// The control: the same terminal carries the workbench's query.
	out := onTerminal(t, bin, home, true)
	if !strings.Contains(out, queryBackground) {
		t.Errorf("the workbench did not ask the terminal for its background: %q", out[:min(len(out), 200)])
	}
}

// onTerminal runs bin with args on a new pty and returns all it wrote
// there. With answer, it answers the background and cursor queries as an
// xterm with a black background does, and runs the workbench to its first
// frame at 80x24. A minute is only a safety net against a hang.
func onTerminal(t *testing.T, bin, home string, answer bool, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, bin, args...)
	c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TERM=xterm-256color", "GPULAB_EXIT_AFTER_FIRST_FRAME=1"}
	answered := false
	s := ptytest.Start(t, c, 24, 80, func(seen string, reply io.Writer) {
		if answer && !answered && strings.Contains(seen, queryCursor) {
			answered = true
			fmt.Fprint(reply, "\x1b]11;rgb:0000/0000/0000\x1b\\\x1b[1;1R")
		}
	})
	err := c.Wait()
	if ctx.Err() != nil {
		t.Fatalf("gpulab %s hung on a terminal (killed after a minute)", strings.Join(args, " "))
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	<-s.Closed()
	return s.Output()
}
