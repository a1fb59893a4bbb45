package cli

import (
	"bytes"
	"io"
	"testing"
	"time"

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
