// Package dgx is the hardware side of gpulab's simulated DGX A100 fleet:
// what each host is (sim/spec), what is wrong with it (Plan), and
// how its GPU, network and cluster tools answer (Host.Run): nvidia-smi,
// dcgmi, lspci, numactl, dmesg, all_reduce_perf and the others that
// gpulab's runbooks and labs run.
//
// Answers come from recorded real outputs (recorded/, copies of
// testdata/fixtures): where a recording of this very machine exists
// (nvidia-smi -q of 8x A100-SXM4-40GB on driver 535.129.03) the healthy
// answer is that recording; elsewhere the answer is rendered in the exact
// format of the closest recording, which each renderer names. A host's
// faults show the same way in every tool and in the probe (probes/nvmlsim
// builds go-nvml's mock from the same spec).
//
// The package does no networking and runs no process: the simulated
// fleet's SSH server and shell (package sim) call Run for the commands it
// does not implement itself.
package dgx

import (
	"context"
	"io"
	"sort"
	"time"

	"github.com/gpulab/gpulab/sim/spec"
)

// Host is one simulated DGX A100.
type Host struct {
	Name   string
	Index  int
	Faults spec.Faults
	// Boot is when the host booted: the kernel log's timestamps count from
	// it. New sets it DefaultUptime before the clock; zero means the same,
	// from the clock at each call.
	Boot time.Time
	// Now reads the host's clock (nvidia-smi's timestamp, journalctl's
	// range); nil means time.Now.
	Now func() time.Time
	// Pace is the pause between the lines a long-running tool streams
	// (all_reduce_perf, dcgmi diag, gpu_burn, vllm bench serve); zero
	// means DefaultPace. Every such tool takes a few seconds at most.
	Pace time.Duration
	// Cluster is the Kubernetes cluster the host is a node of, which its
	// kubectl talks to; nil means none is configured (kubectl's
	// connection to localhost:8080 is refused).
	Cluster *Cluster
	// Slurm is the Slurm controller the host's scontrol and sinfo talk
	// to; nil means none (they cannot contact it).
	Slurm *Slurm
}

// uuid is GPU g's UUID on this machine (spec.UUID of Faults.Machine).
func (h *Host) uuid(g int) string { return spec.UUID(h.Faults.Machine, g) }

// serial is GPU g's board serial number on this machine.
func (h *Host) serial(g int) string { return spec.Serial(h.Faults.Machine, g) }

// IO is where a tool reads and writes; a nil writer discards.
type IO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// DefaultPace is the pause between streamed lines of a long tool.
const DefaultPace = 80 * time.Millisecond

// DefaultUptime is how long a host has been up when New makes it: longer
// than Plan puts Xids after boot (at most a day), so that they are past.
const DefaultUptime = 50 * time.Hour

// ExitCancelled is a tool's exit status when its context is cancelled:
// what a shell reports for a process killed by SIGTERM.
const ExitCancelled = 143

// New returns host index of a fleet, named name, with faults f.
func New(name string, index int, f spec.Faults) *Host {
	return &Host{Name: name, Index: index, Faults: f, Boot: time.Now().Add(-DefaultUptime).Truncate(time.Second)}
}

// tool runs one command; args[0] is its name.
type tool func(ctx context.Context, h *Host, t *term, args []string) int

// tools maps a command name to its simulation. Filled by init in the
// files that implement them.
var tools = map[string]tool{}

// Tools lists the commands Run knows, sorted.
func (h *Host) Tools() []string {
	out := make([]string, 0, len(tools))
	for name := range tools {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Run answers one simulated tool invocation: args[0] is the command name
// as typed (a base name). ok is false when the host has no such tool (the
// shell then prints "sh: NAME: not found" and exits 127). A cancelled ctx
// stops a long tool at its next line: it returns ExitCancelled.
func (h *Host) Run(ctx context.Context, stdio IO, args []string) (code int, ok bool) {
	if len(args) == 0 {
		return 0, false
	}
	fn, ok := tools[args[0]]
	if !ok {
		return 0, false
	}
	t := &term{out: orDiscard(stdio.Stdout), err: orDiscard(stdio.Stderr), in: stdio.Stdin}
	code = fn(ctx, h, t, args)
	if code != ExitCancelled && ctx.Err() != nil {
		return ExitCancelled, true
	}
	return code, true
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

func (h *Host) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func (h *Host) boot() time.Time {
	if h.Boot.IsZero() {
		return h.now().Add(-DefaultUptime).Truncate(time.Second)
	}
	return h.Boot
}

func (h *Host) pace() time.Duration {
	if h.Pace > 0 {
		return h.Pace
	}
	return DefaultPace
}

// wait pauses n paces, or until ctx is done; it reports whether the tool
// may go on. A done ctx is checked first, so that a tool cancelled while
// it was writing stops at once.
func (h *Host) wait(ctx context.Context, n int) bool {
	if ctx.Err() != nil {
		return false
	}
	tm := time.NewTimer(time.Duration(n) * h.pace())
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}
