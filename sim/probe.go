package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gpulab/gpulab/probes/bundle"
	"github.com/gpulab/gpulab/sim/spec"
	"golang.org/x/sys/unix"
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
	sealed, err := t.sealedProbe(f, fi.Size())
	if err != nil {
		t.errf("sh: %s: cannot execute: %v", name, err)
		return 126
	}
	defer sealed.Close()
	return t.runProbe(sealed, args)
}

var errNotProbe = errors.New("a simulated host runs no program but gpulab's simulator probe (this file's sha256 is not that build's)")

// sealedProbe checks the sha256 of the host's file, read once as a
// stream, against the simulator build's, and returns a read-only
// descriptor of the fleet's sealed memory copy of that build: what runs
// has exactly the bytes checked, whatever happens to the host's file
// afterwards (rewritten in place, its time set back, swapped). One copy
// serves every host: 300 hosts starting the probe at once each held their
// own 5 MB read of it, and the heap passed the watchdog's limit.
func (t *toolCall) sealedProbe(f *os.File, size int64) (*os.File, error) {
	want, _ := t.h.fleet.probe()
	if want == "" || size <= 0 || size > maxProbe {
		return nil, errNotProbe
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, maxProbe+1)); err != nil {
		return nil, err
	}
	if hex.EncodeToString(h.Sum(nil)) != want {
		return nil, errNotProbe
	}
	mem, err := t.h.fleet.sealedProbe(want)
	if err != nil {
		return nil, err
	}
	// A read-only descriptor of the memory file: the kernel refuses to
	// execute a file open for writing (ETXTBSY).
	return os.Open(fmt.Sprintf("/proc/self/fd/%d", mem.Fd()))
}

// sealedProbe is the embedded simulator probe in a private memory file,
// sealed against any change, made once for the fleet; its sha256 is
// checked to be want.
func (f *Fleet) sealedProbe(want string) (*os.File, error) {
	f.memOnce.Do(func() {
		data, _, err := bundle.Probe(runtime.GOARCH, true)
		if err != nil {
			f.memErr = err
			return
		}
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != want {
			f.memErr = errNotProbe
			return
		}
		fd, err := unix.MemfdCreate("gpulab-sim-probe", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
		if err != nil {
			f.memErr = err
			return
		}
		mem := os.NewFile(uintptr(fd), "gpulab-sim-probe")
		if _, err := mem.Write(data); err != nil {
			mem.Close()
			f.memErr = err
			return
		}
		if _, err := unix.FcntlInt(mem.Fd(), unix.F_ADD_SEALS, unix.F_SEAL_SEAL|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_WRITE); err != nil {
			mem.Close()
			f.memErr = err
			return
		}
		f.probeMem = mem
	})
	return f.probeMem, f.memErr
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

func (t *toolCall) runProbe(f *os.File, args []string) int {
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
	// Run the sealed copy of the bytes that were checked (sealedProbe).
	cmd := exec.CommandContext(t.ctx, fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	cmd.Args = append(append([]string{args[0]}, t.probeArgs()...), args[1:]...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C"}
	if t.h.fleet != nil {
		cmd.Env = append(cmd.Env, "TMPDIR="+t.h.fleet.tmp) // removed with the fleet
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
