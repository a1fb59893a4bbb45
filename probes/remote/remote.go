// Package remote puts the NVML probe on a host over an open SSH connection
// and runs it there: once for a snapshot, or as a watch that samples the
// host while something else runs. Nothing stays installed unless asked.
package remote

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gpulab/gpulab/internal/visible"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/probes/bundle"
	"github.com/gpulab/gpulab/probes/report"
)

// Source gives the probe for a Go architecture, plain and gzipped.
type Source func(arch string) (data, gz []byte, err error)

// Prober installs one probe per architecture, each compressed once and
// shared by every host of a run. It is safe for concurrent use.
type Prober struct {
	Source Source
	// SimSource, when set, gives the probe for a simulated host (one that
	// says so in its handshake, orchestrator.Conn.Simulated): the
	// simulator build, which such a host runs with its own faults.
	SimSource Source
	// Args go to every run of the probe (--mock dgxa100).
	Args []string
	// Keep leaves the probe cached on the hosts under its sha256, and uses
	// a cached one as it is.
	Keep bool
	// AnyArch skips the uname check, and with it the glibc check: Source
	// gives one binary for all.
	AnyArch bool

	mu     sync.Mutex
	probes map[string]probe
}

// probe is the binary for one architecture, ready to push, with the glibc
// it needs ("" for none, or when its ELF could not be read).
type probe struct {
	spec  orchestrator.PushSpec
	glibc string
}

// hostQuery asks a host, in one round trip, for its machine type (first
// line) and its C library (the rest). Only uname decides the exit status.
const hostQuery = "uname -m || exit; " + bundle.LibcCommand + "; exit 0"

// SourceError is an Install that failed on this machine: the probe for
// the host's architecture could not be had or read (a build without it,
// an unreadable --probe-binary). Every other Install error is the host's
// (a machine type no probe exists for, a C library older than the
// probe's).
type SourceError struct{ Err error }

func (e *SourceError) Error() string { return e.Err.Error() }
func (e *SourceError) Unwrap() error { return e.Err }

// Installed is the probe on one host.
type Installed struct {
	Path string
	Sent int64 // bytes pushed; 0 when the host had it
	own  bool  // a copy of this run's own, removed afterwards
	sim  bool  // the simulator build on a simulated host: it adds --mock itself
}

// Install puts the probe on the host behind conn. Without Keep, the run
// gets a copy of its own unless an earlier Keep left the same probe: a
// home directory shared by many hosts (NFS) must not see one host delete
// another's probe. A host whose glibc is older than the probe needs is
// refused before anything is pushed (bundle.CheckLibc).
func (p *Prober) Install(ctx context.Context, conn *orchestrator.Conn, timeout time.Duration) (*Installed, orchestrator.Class, error) {
	arch := "any"
	var libc bundle.Libc
	if !p.AnyArch {
		u := conn.Run(ctx, "uname", hostQuery, orchestrator.RunOptions{Timeout: timeout})
		if u.Class != orchestrator.OK {
			return nil, u.Class, fmt.Errorf("uname -m: %s%s", u.Err, strings.TrimSpace(string(u.Stderr)))
		}
		machine, rest, _ := strings.Cut(string(u.Stdout), "\n")
		var err error
		if arch, err = bundle.Arch(machine); err != nil {
			return nil, orchestrator.Error, err
		}
		libc = bundle.ParseLibc(rest)
	}
	sim := p.SimSource != nil && conn.Simulated()
	pr, err := p.probe(arch, sim)
	if err != nil {
		return nil, orchestrator.Error, &SourceError{err}
	}
	if err := bundle.CheckLibc(libc, pr.glibc); err != nil {
		return nil, orchestrator.Error, err
	}
	spec := pr.spec
	own := false
	// Through Kubernetes the probe goes into the node pod's own scratch
	// directory: new with the pod, gone with it; nothing to look for
	// before, nothing to remove after (two exec round trips a node).
	if !p.Keep && conn.Target.Kube == nil {
		c := conn.Run(ctx, "probe: cached?", `f="${XDG_CACHE_HOME:-$HOME/.cache}/gpulab/`+spec.Name+`"; [ -x "$f" ] && sha256sum -- "$f"`, orchestrator.RunOptions{Timeout: timeout})
		sum := sha256.Sum256(spec.Data)
		if c.Class != orchestrator.OK || !strings.HasPrefix(string(c.Stdout), hex.EncodeToString(sum[:])) {
			spec.Name += "." + randomTag()
			own = true
		}
	}
	push := conn.Push(ctx, spec)
	if push.Class != orchestrator.OK {
		return nil, push.Class, fmt.Errorf("%s", push.Err)
	}
	return &Installed{Path: push.Path, Sent: push.Sent, own: own, sim: sim}, orchestrator.OK, nil
}

// probe returns the probe for arch (the simulator build with sim), read
// and examined once per run.
func (p *Prober) probe(arch string, sim bool) (probe, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key, source := arch, p.Source
	if sim {
		key, source = "simulated/"+arch, p.SimSource
	}
	if pr, ok := p.probes[key]; ok {
		return pr, nil
	}
	data, gz, err := source(arch)
	if err != nil {
		return probe{}, err
	}
	sum := sha256.Sum256(data)
	pr := probe{spec: orchestrator.PushSpec{Name: "nvmlprobe-" + hex.EncodeToString(sum[:6]), Data: data, Mode: 0o700, Compress: true, Gzipped: gz, SHA256: hex.EncodeToString(sum[:])}}
	if !p.AnyArch {
		// A probe whose ELF cannot be read is pushed unchecked: the
		// host's loader then says what is wrong with it.
		pr.glibc, _ = bundle.NeedsGlibc(data)
	}
	if p.probes == nil {
		p.probes = map[string]probe{}
	}
	p.probes[key] = pr
	return pr, nil
}

// Line is the command line that runs the installed probe with the
// Prober's and these arguments, each quoted. With remove, the line also
// deletes the run's own copy afterwards, keeping the probe's exit status.
func (in *Installed) Line(p *Prober, remove bool, args ...string) string {
	pargs := p.Args
	if in.sim { // a simulated host says what its probe simulates
		pargs = withoutMock(pargs)
	}
	line := "env -u LD_BIND_NOW " + orchestrator.QuoteArgs(append(append([]string{in.Path}, pargs...), args...))
	if remove && in.own {
		line += "; rc=$?; rm -f -- " + orchestrator.Quote(in.Path) + "; exit $rc"
	}
	return line
}

// withoutMock drops --mock NAME (and --mock=NAME) from a probe's arguments.
func withoutMock(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "--mock" && i+1 < len(args):
			i++
		case strings.HasPrefix(args[i], "--mock="):
		default:
			out = append(out, args[i])
		}
	}
	return out
}

// Remove deletes the run's own copy (a cached one stays).
func (in *Installed) Remove(ctx context.Context, conn *orchestrator.Conn) {
	if in != nil && in.own {
		conn.Run(ctx, "probe: remove", "rm -f -- "+orchestrator.Quote(in.Path), orchestrator.RunOptions{Timeout: 30 * time.Second})
	}
}

// RemoveIfStopped removes the run's own copy when the probe's run ended
// with class before its line could remove it (cancelled, timed out,
// lost), on a context of its own: the run's may be cancelled already.
func (in *Installed) RemoveIfStopped(ctx context.Context, conn *orchestrator.Conn, class orchestrator.Class) {
	if class == orchestrator.OK || class == orchestrator.Exit {
		return // the line ran to its end, and its rm with it
	}
	rm, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	in.Remove(rm, conn)
}

// WrongHost is why s is not host's evidence: the probe is told its host's
// name (--host), and a report that names another came from elsewhere.
// Nil when s names host.
func WrongHost(s *report.Snapshot, host string) error {
	if s == nil || s.Host == host {
		return nil
	}
	return fmt.Errorf("the probe's report names host %q, not %s: not this host's evidence", visible.String(s.Host), host)
}

// Decode reads one snapshot line, refusing a schema newer than this
// gpulab's.
func Decode(line []byte) (*report.Snapshot, error) {
	var s report.Snapshot
	if err := json.Unmarshal(bytes.TrimSpace(line), &s); err != nil || s.Schema == 0 {
		if err == nil {
			err = fmt.Errorf("no schema field")
		}
		return nil, fmt.Errorf("not a probe snapshot: %v", err)
	}
	if s.Schema > report.Schema {
		return nil, fmt.Errorf("snapshot schema %d is newer than this gpulab understands (%d)", s.Schema, report.Schema)
	}
	report.DecodeXIDs(&s) // the probe carries no catalog: what each Xid means is read here
	return &s, nil
}

// Snapshot runs the probe once and decodes what it printed.
func (in *Installed) Snapshot(ctx context.Context, conn *orchestrator.Conn, p *Prober, host string) (*report.Snapshot, orchestrator.Result) {
	r := conn.Run(ctx, "probe", in.Line(p, false, "--host", host), orchestrator.RunOptions{Timeout: time.Minute, MaxOutput: 32 << 20})
	s, err := Decode(r.Stdout)
	if err != nil && r.Err == "" {
		r.Err = err.Error()
	}
	return s, r
}

// Watch is a probe sampling a host until Stop.
type Watch struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	snaps  []*report.Snapshot
	bad    int
	buf    []byte
	result orchestrator.Result
}

// Watch starts the probe sampling every interval in a session of its own
// beside whatever else runs on conn. onSnap, when set, sees each snapshot
// as it arrives (from the session's goroutine).
func (in *Installed) Watch(ctx context.Context, conn *orchestrator.Conn, p *Prober, host string, every time.Duration, onSnap func(*report.Snapshot)) *Watch {
	wctx, cancel := context.WithCancel(ctx)
	w := &Watch{cancel: cancel, done: make(chan struct{})}
	line := in.Line(p, false, "--host", host, "--watch", every.String())
	go func() {
		defer close(w.done)
		w.result = conn.Run(wctx, "probe: watch", line, orchestrator.RunOptions{MaxOutput: 64 << 10, OnOutput: func(stream int, b []byte) {
			if stream != 1 {
				return
			}
			for _, s := range w.feed(b) {
				if onSnap != nil {
					onSnap(s)
				}
			}
		}})
	}()
	return w
}

// feed splits output into lines and decodes each whole one.
func (w *Watch) feed(b []byte) []*report.Snapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	var got []*report.Snapshot
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return got
		}
		line := w.buf[:i]
		w.buf = w.buf[i+1:]
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if s, err := Decode(line); err == nil {
			w.snaps = append(w.snaps, s)
			got = append(got, s)
		} else {
			w.bad++
		}
	}
}

// WatchResult is what a watch saw.
type WatchResult struct {
	Snapshots []*report.Snapshot
	// Problem says why the watch gave fewer samples than it should have
	// (the probe failed or printed something else); empty when it ran
	// until stopped.
	Problem string
}

// Stop ends the watch (the probe's process group is killed on the host)
// and returns its snapshots.
func (w *Watch) Stop() WatchResult {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	res := WatchResult{Snapshots: w.snaps}
	r := w.result
	switch {
	case r.Class != orchestrator.Cancelled: // it ended by itself: that is a problem
		res.Problem = fmt.Sprintf("the probe's watch ended early (%s, exit %d): %s", r.Class, r.ExitCode, orchestrator.FirstLine(string(r.Stderr)+" "+r.Err))
	case w.bad > 0:
		res.Problem = fmt.Sprintf("%d lines of the probe's watch were not snapshots", w.bad)
	}
	return res
}

func randomTag() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
