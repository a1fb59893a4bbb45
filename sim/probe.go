package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gpulab/gpulab/sim/spec"
)

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
	probe, err := t.sealedProbe(f, fi.Size())
	if err != nil {
		t.errf("sh: %s: cannot execute: %v", name, err)
		return 126
	}
	return t.runProbe(probe, args)
}

var errNotProbe = errors.New("a simulated host runs no program but gpulab's simulator probe (this file's sha256 is not that build's)")

// sealedProbe checks the sha256 of the host's file, read once as a
// stream, against the simulator build's, and returns the path of the
// fleet's own copy of that build: what runs has exactly the bytes
// checked, whatever happens to the host's file afterwards (rewritten in
// place, its time set back, swapped). One copy serves every host: 300
// hosts starting the probe at once each held their own 5 MB read of it,
// and the heap passed the watchdog's limit.
func (t *toolCall) sealedProbe(f *os.File, size int64) (string, error) {
	want, _ := t.h.fleet.probe()
	if want == "" || size <= 0 || size > maxProbe {
		return "", errNotProbe
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, maxProbe+1)); err != nil {
		return "", err
	}
	if hex.EncodeToString(h.Sum(nil)) != want {
		return "", errNotProbe
	}
	return t.h.fleet.sealedProbe(want)
}

// sealedProbe is the path of the embedded simulator probe, written once
// for the fleet into its private directory (0700, this process's), read
// and execute only, created exclusively, never through a link; its
// sha256 is checked to be want. (A sealed memory file, run through
// /proc/self/fd, failed to execute at times, EACCES, while the process
// forked other children: a plain file does not.)
func (f *Fleet) sealedProbe(want string) (string, error) {
	f.memOnce.Do(func() {
		data, err := f.probeData()
		if err != nil {
			f.memErr = err
			return
		}
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != want {
			f.memErr = errNotProbe
			return
		}
		p := filepath.Join(f.tmp, "gpulab-sim-probe-"+want[:12])
		w, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o500)
		if err != nil {
			f.memErr = err
			return
		}
		_, err = w.Write(data)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(p)
			f.memErr = err
			return
		}
		f.probePath = p
	})
	return f.probePath, f.memErr
}

// probeArgs are what the simulation adds to the probe's own arguments.
func (t *toolCall) probeArgs() []string {
	a := []string{"--mock", "dgxa100"}
	if f := t.h.probeFaults(); len(f) > 0 {
		a = append(a, "--mock-faults", string(f))
	}
	return a
}

// probeFaults are the host's faults with what runs on its GPUs now: the
// simulated cluster's pods bound to it, and the sick host's stray process
// (dgx.Cluster.Workload), added to the processes and utilisation the
// host's faults give it, so that a reconciliation of the simulated fleet
// finds GPUs busy, idle and used without an allocation. A workload the
// probe's simulator would refuse is left out rather than break the probe.
func (h *host) probeFaults() []byte {
	if h.fleet == nil || h.fleet.cluster == nil {
		return h.faults
	}
	procs, util := h.fleet.cluster.Workload(h.name)
	if len(procs) == 0 && len(util) == 0 {
		return h.faults
	}
	var f spec.Faults
	if len(h.faults) > 0 && json.Unmarshal(h.faults, &f) != nil {
		return h.faults
	}
	// The host's own knobs first: a utilisation it was given stands.
	f.Processes = append(f.Processes, procs...)
	for g, u := range util {
		if _, set := f.Utilization[g]; !set {
			if f.Utilization == nil {
				f.Utilization = map[int]uint32{}
			}
			f.Utilization[g] = u
		}
	}
	if f.Validate() != nil {
		return h.faults
	}
	b, err := json.Marshal(f)
	if err != nil {
		return h.faults
	}
	return b
}

func (t *toolCall) runProbe(probe string, args []string) int {
	for _, a := range args[1:] {
		if isProbeFlag(a) {
			t.errf("%s: on a simulated host the simulation says what the probe sees: %s refused", path.Base(args[0]), a)
			return 64
		}
	}
	// Real processes are bounded: maxProbesPerHost on a host at once (more
	// fail as fork does), maxProbes in the fleet (more wait their turn).
	if n := t.h.probes.Add(1); n > int32(maxProbesPerHost) {
		t.h.probes.Add(-1)
		t.errf("sh: fork: retry: Resource temporarily unavailable (a simulated host runs %d probes at once at most)", maxProbesPerHost)
		return 126
	}
	defer t.h.probes.Add(-1)
	if fl := t.h.fleet; fl != nil {
		select {
		case fl.probeSlots <- struct{}{}:
			defer func() { <-fl.probeSlots }()
		case <-t.ctx.Done():
			return 143
		}
	}
	// Run the fleet's copy of the bytes that were checked (sealedProbe).
	cmd := exec.CommandContext(t.ctx, probe)
	cmd.Args = append(append([]string{args[0]}, t.probeArgs()...), args[1:]...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C"}
	if t.h.fleet != nil {
		cmd.Env = append(cmd.Env, "TMPDIR="+t.h.fleet.scratch) // removed with the fleet
	}
	cmd.Dir = t.h.fs.dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = t.stdin, t.stdout, t.stderr
	if t.stdin == nil {
		cmd.Stdin = devNull{}
	}
	// If this process dies (kill -9 of sim serve), the probe dies with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
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
