package labs

import (
	"context"
	"strings"
	"time"

	"github.com/gpulab/gpulab/orchestrator"
)

// Environment is a host's declaration in the lab record: what the
// conclusion held on. Fields the host could not give stay empty.
type Environment struct {
	Kernel string   `json:"kernel,omitempty"`
	Driver string   `json:"driver,omitempty"`
	CUDA   string   `json:"cuda,omitempty"`
	GPUs   []string `json:"gpus"` // "0: NVIDIA A100-SXM4-80GB, 81920 MiB, MIG Disabled"
	Error  string   `json:"error,omitempty"`
}

// envCommand reads the declaration in one round trip; every part may fail
// on its own (no driver, no nvidia-smi) without hiding the others.
const envCommand = `uname -sr; ` +
	`nvidia-smi --query-gpu=index,name,driver_version,memory.total,mig.mode.current --format=csv,noheader 2>/dev/null | sed 's/^/gpu /'; ` +
	`nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/cuda \1/p' | head -1; true`

func captureEnvironment(ctx context.Context, conn *orchestrator.Conn) Environment {
	r := conn.Run(ctx, "environment", envCommand, orchestrator.RunOptions{Timeout: 30 * time.Second})
	env := parseEnvironment(string(r.Stdout))
	if r.Class != orchestrator.OK {
		env.Error = r.Class.String() + ": " + firstLine(string(r.Stderr)+r.Err)
	}
	return env
}

// parseEnvironment reads envCommand's output: the kernel line, "gpu "
// lines of nvidia-smi's CSV query, and a "cuda " line.
func parseEnvironment(out string) Environment {
	env := Environment{GPUs: []string{}}
	for i, l := range strings.Split(strings.TrimSpace(out), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case i == 0:
			env.Kernel = l
		case strings.HasPrefix(l, "gpu "):
			f := strings.Split(strings.TrimPrefix(l, "gpu "), ", ")
			if len(f) == 5 {
				env.Driver = f[2]
				env.GPUs = append(env.GPUs, f[0]+": "+f[1]+", "+f[3]+", MIG "+f[4])
			}
		case strings.HasPrefix(l, "cuda "):
			env.CUDA = strings.TrimPrefix(l, "cuda ")
		}
	}
	return env
}
