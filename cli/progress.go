package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/charmbracelet/x/ansi"
	"golang.org/x/term"

	"github.com/gpulab/gpulab/orchestrator"
)

// liveLine is the one line of progress a run over many hosts keeps at
// the bottom of a terminal: "probe: 412/1000 hosts · 409 ok · 3 not ok ·
// 23s", redrawn in place. Whatever the command writes, to stdout or to
// stderr, goes through it and erases the line first, so the line never
// tears the output; the next tick draws it again below. It exists only
// where stderr is a terminal that understands erasing (not TERM=dumb): a
// script's stderr gets the summary line alone.
type liveLine struct {
	mu       sync.Mutex
	term     io.Writer // the terminal's stderr
	width    func() int
	shown    bool // the line is on the screen
	text     string
	inflight int // writes under way: the line is not drawn over them
}

// newLiveLine returns the live line of env's stderr, or nil where it is
// not a terminal, or where stdout is a pipe: a pager (| less) holds the
// same terminal, and a line drawn under it would tear its screen. Stdout
// on the terminal, or in a file, keeps the line.
func newLiveLine(env Env) *liveLine {
	f, ok := env.Stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) || env.Getenv == nil || env.Getenv("TERM") == "dumb" {
		return nil
	}
	out, ok := env.Stdout.(*os.File)
	if !ok {
		return nil
	}
	if fi, err := out.Stat(); err != nil || !term.IsTerminal(int(out.Fd())) && !fi.Mode().IsRegular() {
		return nil
	}
	return &liveLine{term: f, width: func() int {
		w, _, err := term.GetSize(int(f.Fd()))
		if err != nil || w <= 0 {
			return 80
		}
		return w
	}}
}

// through is w, each write erasing the line first (w itself when l is nil).
func (l *liveLine) through(w io.Writer) io.Writer {
	if l == nil {
		return w
	}
	return liveWriter{l, w}
}

type liveWriter struct {
	l *liveLine
	w io.Writer
}

// Write erases the line, then writes p without holding the line's lock:
// a write that blocks (stdout a full pipe) never stops another, such as
// the message a Ctrl-C prints on stderr; the line is not drawn while
// writes are under way.
func (lw liveWriter) Write(p []byte) (int, error) {
	l := lw.l
	l.mu.Lock()
	l.eraseLocked()
	l.inflight++
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.inflight--
		l.mu.Unlock()
	}()
	return lw.w.Write(p)
}

func (l *liveLine) eraseLocked() {
	if l.shown {
		io.WriteString(l.term, "\r\x1b[K")
		l.shown = false
	}
}

// draw puts text on the line, cut to the terminal's width.
func (l *liveLine) draw(text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inflight > 0 {
		return // the next tick draws it
	}
	text = ansi.Truncate(text, max(0, l.width()-1), "")
	io.WriteString(l.term, "\r\x1b[K"+text)
	l.shown, l.text = true, text
}

func (l *liveLine) erase() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.eraseLocked()
}

// meter counts a run's hosts as they finish and keeps the live line
// saying so, from the first second on (a short run shows nothing).
type meter struct {
	line          *liveLine
	what          string
	total         int
	start         time.Time
	mu            sync.Mutex
	done, notOK   int
	stop, stopped chan struct{}
	ended         sync.Once
	unhook        func() // the forced exit's erasure
}

// meterDelay and meterTick: when the line first shows, and how often it
// is redrawn.
const (
	meterDelay = time.Second
	meterTick  = 250 * time.Millisecond
)

// startMeter shows the progress of what over engine's hosts on the live
// line, if there is one; end stops it. A nil meter does nothing.
func (o *options) startMeter(what string, engine *orchestrator.Engine, total int) *meter {
	if o.live == nil || total < 2 {
		return nil
	}
	m := &meter{line: o.live, what: what, total: total, start: time.Now(), stop: make(chan struct{}), stopped: make(chan struct{})}
	engine.Done = m.hostDone
	m.unhook = onForcedExit(o.live.erase) // a second Ctrl-C leaves a clean line
	go m.run()
	return m
}

func (m *meter) hostDone(hr *orchestrator.HostResult) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.done++
	if hr.Class != orchestrator.OK {
		m.notOK++
	}
}

// text is the line: what, hosts done of all, ok and not, time so far.
func (m *meter) text(elapsed time.Duration) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return fmt.Sprintf("%s: %d/%d hosts · %d ok · %d not ok · %ds", m.what, m.done, m.total, m.done-m.notOK, m.notOK, int(elapsed.Seconds()))
}

func (m *meter) run() {
	defer close(m.stopped)
	tick := time.NewTicker(meterTick)
	defer tick.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-tick.C:
			if e := time.Since(m.start); e >= meterDelay {
				m.line.draw(m.text(e))
			}
		}
	}
}

// end stops the meter and erases its line; again, it does nothing.
func (m *meter) end() {
	if m == nil {
		return
	}
	m.ended.Do(func() {
		close(m.stop)
		<-m.stopped
		m.line.erase()
		m.unhook()
	})
}
