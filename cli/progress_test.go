package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpulab/gpulab/internal/ptytest"
	"github.com/gpulab/gpulab/orchestrator"
)

// The live line: drawn cut to the terminal's width, erased before any
// write that goes through it (stdout's or stderr's), and not drawn again
// until the next tick; the meter counts ok and not ok hosts. With no
// terminal there is no line and writes pass untouched.
func TestLiveLineErasesBeforeOutput(t *testing.T) {
	var screen bytes.Buffer
	l := &liveLine{term: &screen, width: func() int { return 30 }}
	var stdout bytes.Buffer
	w := l.through(&stdout)
	m := &meter{line: l, what: "probe", total: 1000}
	for _, c := range []orchestrator.Class{orchestrator.OK, orchestrator.OK, orchestrator.Unreachable} {
		m.hostDone(&orchestrator.HostResult{Class: c})
	}
	text := m.text(23 * time.Second)
	if text != "probe: 3/1000 hosts · 2 ok · 1 not ok · 23s" {
		t.Errorf("meter text %q", text)
	}
	l.draw(text)
	if got := screen.String(); got != "\r\x1b[Kprobe: 3/1000 hosts · 2 ok · " {
		t.Errorf("drawn %q, want the line cut to 29 columns", got)
	}
	screen.Reset()
	io.WriteString(w, "dgx01: ok\n")
	io.WriteString(w, "dgx02: ok\n")
	if screen.String() != "\r\x1b[K" || stdout.String() != "dgx01: ok\ndgx02: ok\n" {
		t.Errorf("after two writes: screen %q (want one erase), stdout %q", screen.String(), stdout.String())
	}

	var none *liveLine
	if none.through(&stdout) != io.Writer(&stdout) {
		t.Error("with no terminal, writes must pass untouched")
	}
	if o := (&options{}); o.startMeter("exec", &orchestrator.Engine{}, 10) != nil {
		t.Error("a meter with no live line")
	}
}

// The line exists only with stderr a terminal that erases, and stdout on
// a terminal or in a file: never with stdout a pipe (a pager holds the
// terminal), stderr a file, or TERM=dumb.
func TestLiveLineOnlyWhereItCanBeErased(t *testing.T) {
	_, tty := ptytest.Open(t, 24, 80)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	xterm := func(k string) string { return map[string]string{"TERM": "xterm-256color"}[k] }
	dumb := func(k string) string { return map[string]string{"TERM": "dumb"}[k] }
	for _, tc := range []struct {
		name   string
		env    Env
		exists bool
	}{
		{"both on the terminal", Env{Stdout: tty, Stderr: tty, Getenv: xterm}, true},
		{"stdout in a file", Env{Stdout: file, Stderr: tty, Getenv: xterm}, true},
		{"stdout a pipe", Env{Stdout: pw, Stderr: tty, Getenv: xterm}, false},
		{"stderr a file", Env{Stdout: tty, Stderr: file, Getenv: xterm}, false},
		{"TERM=dumb", Env{Stdout: tty, Stderr: tty, Getenv: dumb}, false},
		{"stderr a buffer", Env{Stdout: tty, Stderr: &bytes.Buffer{}, Getenv: xterm}, false},
	} {
		if got := newLiveLine(tc.env) != nil; got != tc.exists {
			t.Errorf("%s: a live line %v, want %v", tc.name, got, tc.exists)
		}
	}
}

// A write that blocks (stdout a full pipe) holds no lock: another write
// through the line (the message a Ctrl-C prints on stderr) goes through,
// and the line is not drawn over the blocked one.
func TestLiveLineBlockedWriteStopsNoOther(t *testing.T) {
	var screen bytes.Buffer
	l := &liveLine{term: &screen, width: func() int { return 80 }}
	blocked := &blockingWriter{entered: make(chan struct{}), release: make(chan struct{})}
	go l.through(blocked).Write([]byte("host output\n"))
	select {
	case <-blocked.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("waited 30s for the first write to reach its writer")
	}
	var stderr bytes.Buffer
	done := make(chan struct{})
	go func() {
		io.WriteString(l.through(&stderr), "gpulab: interrupted\n")
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("waited 30s: a write through the line waits for a blocked one")
	}
	l.draw("exec: 1/2 hosts")
	if screen.Len() != 0 {
		t.Errorf("the line was drawn over a write under way: %q", screen.String())
	}
	close(blocked.release)
	if stderr.String() != "gpulab: interrupted\n" {
		t.Errorf("stderr %q", stderr.String())
	}
}

type blockingWriter struct{ entered, release chan struct{} }

func (b *blockingWriter) Write(p []byte) (int, error) {
	close(b.entered)
	<-b.release
	return len(p), nil
}
