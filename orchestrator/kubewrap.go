package orchestrator

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io"
	"slices"
	"strconv"
	"sync/atomic"
	"time"
)

// kubeWrapper is wrapper (see run.go) for a node reached through its
// pod: it runs on the host, chrooted, as the leader of a session of its
// own (setsid -w, the host's util-linux: its kill 0 reaches only what it
// started, never the container runtime's processes), and runs the
// command under root's usual shell, bash where the host has it.
//
// It ends by writing the command's status, with the run's nonce ($2), on
// stdout and on stderr (KubeTrailer): an exec stream the kubelet or the
// API server cuts ends like one whose command succeeded (no status on
// the error channel reads as success), and stdout and stderr travel
// apart, so only a status seen on both, after all of each, says the
// command ended so. No output can be taken for it: the nonce is new for
// every command.
const kubeWrapper = `exec 3<&0 </dev/null
(trap '' TERM; read -r _ <&3; kill -0 $$ 2>/dev/null || exit 0; kill -TERM 0; sleep 1; kill -KILL 0) >/dev/null 2>&1 &
exec 3<&-
s=/bin/sh; [ -x /bin/bash ] && s=/bin/bash
"$s" -c "$1"; rc=$?
printf '\036gpulab-exit %s %d\n' "$2" "$rc"; printf '\036gpulab-exit %s %d\n' "$2" "$rc" >&2; exit "$rc"`

// kubeRawWrapper runs a raw command (its standard input the caller's)
// and writes its status as kubeWrapper does.
const kubeRawWrapper = `/bin/sh -c "$1"; rc=$?
printf '\036gpulab-exit %s %d\n' "$2" "$rc"; printf '\036gpulab-exit %s %d\n' "$2" "$rc" >&2; exit "$rc"`

// KubeTrailer is what the wrappers write last on stdout and stderr.
func KubeTrailer(nonce string, code int) string {
	return string(trailerPrefix(nonce)) + strconv.Itoa(code) + "\n"
}

func trailerPrefix(nonce string) []byte { return []byte("\x1egpulab-exit " + nonce + " ") }

func newNonce() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// KubeArgv is the command a node pod's exec runs for command: chrooted
// into the host's / (mounted at /host), under kubeWrapper unless raw.
func KubeArgv(command, nonce string, raw bool) []string {
	if raw {
		return []string{"chroot", "/host", "/bin/sh", "-c", kubeRawWrapper, "gpulab", command, nonce}
	}
	return []string{"chroot", "/host", "setsid", "-w", "/bin/sh", "-c", kubeWrapper, "gpulab", command, nonce}
}

// KubeUnwrap recognises KubeArgv's command line: the command, its
// nonce, and whether it is raw.
func KubeUnwrap(argv []string) (command, nonce string, raw, ok bool) {
	for _, r := range []bool{false, true} {
		want := KubeArgv("", "", r)
		if len(argv) == len(want) && slices.Equal(argv[:len(want)-2], want[:len(want)-2]) {
			return argv[len(argv)-2], argv[len(argv)-1], r, true
		}
	}
	return "", "", false, false
}

// trailerWriter passes a stream through, taking the wrapper's status line
// (prefix, then digits and a newline) out of it wherever it comes: what
// a background job writes after it is kept. It holds back only from a
// \x1e that may begin that line, which output seldom holds, so a running
// command's output flows as it comes; every write is activity, held or
// not.
type trailerWriter struct {
	w        io.Writer
	prefix   []byte
	activity *atomic.Int64
	held     []byte
	status   int // -1 until the line is seen
}

func (t *trailerWriter) Write(p []byte) (int, error) {
	t.activity.Store(time.Now().UnixNano())
	t.held = append(t.held, p...)
	return len(p), t.scan(false)
}

// scan writes what cannot be part of the status line, takes the line
// out when it is whole, and keeps a possible beginning of it; at the end
// it writes everything left.
func (t *trailerWriter) scan(end bool) error {
	for len(t.held) > 0 {
		i := bytes.IndexByte(t.held, 0x1e)
		if i < 0 || end {
			i = len(t.held)
		}
		if i > 0 {
			if _, err := t.w.Write(t.held[:i]); err != nil {
				return err
			}
			t.held = t.held[i:]
			continue
		}
		n, whole, maybe := t.line()
		switch {
		case whole:
			t.held = t.held[n:]
		case maybe:
			return nil // wait for more
		default: // a \x1e of the output's own
			if _, err := t.w.Write(t.held[:1]); err != nil {
				return err
			}
			t.held = t.held[1:]
		}
	}
	return nil
}

// line reads the status line at the start of held: its length when it is
// whole (and the status), or whether it may still become one.
func (t *trailerWriter) line() (n int, whole, maybe bool) {
	h, p := t.held, t.prefix
	if len(h) < len(p) {
		return 0, false, bytes.HasPrefix(p, h)
	}
	if !bytes.HasPrefix(h, p) {
		return 0, false, false
	}
	rest := h[len(p):]
	nl := bytes.IndexByte(rest, '\n')
	if nl < 0 {
		return 0, false, len(rest) <= 4
	}
	code, err := strconv.Atoi(string(rest[:nl]))
	if err != nil || code < 0 || code > 255 {
		return 0, false, false
	}
	t.status = code
	return len(p) + nl + 1, true, false
}

// end writes what is held back and returns the status (-1: none came).
func (t *trailerWriter) end() int {
	_ = t.scan(true)
	return t.status
}
