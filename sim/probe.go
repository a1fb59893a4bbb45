package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// sumCache remembers the sha256 of files on the simulated hosts by inode,
// size and modification time: push checks a file's sum and the probe's
// run checks it again, and a rename keeps the inode, so each pushed probe
// is hashed once.
type sumCache struct {
	mu sync.Mutex
	m  map[sumKey]string
}

type sumKey struct {
	dev, ino     uint64
	size, mtimeN int64
}

const maxSums = 1 << 16

func (c *sumCache) of(h *host, f *os.File) (string, error) {
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", errors.New("no inode")
	}
	key := sumKey{uint64(st.Dev), st.Ino, fi.Size(), fi.ModTime().UnixNano()}
	c.mu.Lock()
	sum, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return sum, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	hs := sha256.New()
	if _, err := io.Copy(hs, f); err != nil {
		return "", err
	}
	sum = hex.EncodeToString(hs.Sum(nil))
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxSums {
		c.m = map[sumKey]string{}
	}
	c.m[key] = sum
	c.mu.Unlock()
	return sum, nil
}

// execFile runs a file of the host's tree. A script (#!) runs in the
// simulated shell. The one file that runs as a real process is the
// simulator probe: its sha256 must be that of the simulator build this
// gpulab embeds, and it then runs with --mock dgxa100 and the host's
// faults. Anything else is refused: nothing an operator uploads or types
// ever runs on the operator's machine.
func (t *toolCall) execFile(args []string) int {
	name := args[0]
	f, err := t.h.fs.r().Open(rel(t.dir, name))
	if err != nil {
		t.errf("sh: %s: %s", name, errText(cleanPathErr(name, err)))
		if errors.Is(err, os.ErrNotExist) {
			return 127
		}
		return 126
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		t.errf("sh: %s: %s", name, errText(err))
		return 126
	case fi.IsDir():
		t.errf("sh: %s: Is a directory", name)
		return 126
	case fi.Mode().Perm()&0o111 == 0:
		t.errf("sh: %s: Permission denied", name)
		return 126
	}
	head := make([]byte, 2)
	if n, _ := f.ReadAt(head, 0); n == 2 && string(head) == "#!" {
		return toolSh(t, append([]string{"sh"}, args...))
	}
	sum, err := t.h.fleet.sums.of(t.h, f)
	if want, _ := t.h.fleet.probe(); err != nil || want == "" || sum != want {
		t.errf("sh: %s: cannot execute: a simulated host runs no program but gpulab's simulator probe (this file's sha256 is not that build's)", name)
		return 126
	}
	return t.runProbe(f, args)
}

// probeArgs are what the simulation adds to the probe's own arguments.
func (t *toolCall) probeArgs() []string {
	a := []string{"--mock", "dgxa100"}
	if len(t.h.faults) > 0 {
		a = append(a, "--mock-faults", string(t.h.faults))
	}
	return a
}

func (t *toolCall) runProbe(f *os.File, args []string) int {
	for _, a := range args[1:] {
		if isProbeFlag(a) {
			t.errf("%s: on a simulated host the simulation says what the probe sees: %s refused", path.Base(args[0]), a)
			return 64
		}
	}
	// Run the very file that was checked (its descriptor), so that nothing
	// can swap it between the check and the start.
	cmd := exec.CommandContext(t.ctx, fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	cmd.Args = append(append([]string{args[0]}, t.probeArgs()...), args[1:]...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C"}
	cmd.Dir = t.h.fs.dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = t.stdin, t.stdout, t.stderr
	if t.stdin == nil {
		cmd.Stdin = devNull{}
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	case t.ctx.Err() != nil:
		return 143
	}
	t.errf("sh: %s: %v", args[0], err)
	return 126
}

// isProbeFlag reports whether a is one of the flags the simulation owns.
func isProbeFlag(a string) bool {
	name := strings.SplitN(strings.TrimLeft(a, "-"), "=", 2)[0]
	return strings.HasPrefix(a, "-") && slices.Contains([]string{"mock", "mock-faults"}, name)
}
