package sim

import (
	"context"
	"encoding/json"
	"io"

	"github.com/gpulab/gpulab/sim/dgx"
	"github.com/gpulab/gpulab/sim/spec"
)

// plan picks the sick host and every host's faults (sim/dgx), each named
// for its host (its GPUs' serials and UUIDs are its own), and gives them
// as the probe's --mock-faults JSON.
func plan(seed int64, n int, over map[string]spec.Faults) (int, []spec.Faults, [][]byte) {
	sick, faults := dgx.Plan(seed, n)
	js := make([][]byte, n)
	for i := range faults {
		if f, ok := over[HostName(i, n)]; ok {
			faults[i] = f
		}
		faults[i].Machine = HostName(i, n)
		b, err := json.Marshal(faults[i])
		if err != nil {
			panic(err) // plain data: cannot fail
		}
		js[i] = b
	}
	return sick, faults, js
}

// newCluster is the Kubernetes cluster of a fleet of n hosts with these
// faults: every host is a node of it.
func newCluster(n int, faults []spec.Faults) *dgx.Cluster {
	names := make([]string, n)
	for i := range names {
		names[i] = HostName(i, n)
	}
	return dgx.NewCluster(names, faults)
}

// newSlurm is the fleet's Slurm controller: its n hosts are the nodes.
func newSlurm(n int) *dgx.Slurm {
	names := make([]string, n)
	for i := range names {
		names[i] = HostName(i, n)
	}
	return dgx.NewSlurm(names)
}

// dgxMachine adapts sim/dgx's host to the shell.
type dgxMachine struct{ h *dgx.Host }

func newMachine(name string, index int, f spec.Faults, cluster *dgx.Cluster, slurm *dgx.Slurm) machine {
	h := dgx.New(name, index, f)
	h.Cluster, h.Slurm = cluster, slurm
	return dgxMachine{h: h}
}

func (m dgxMachine) run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, args []string) (int, bool) {
	return m.h.Run(ctx, dgx.IO{Stdin: stdin, Stdout: stdout, Stderr: stderr}, args)
}

func (m dgxMachine) tools() []string { return m.h.Tools() }
