package app

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpulab/gpulab/fence"
	"github.com/gpulab/gpulab/internal/fileio"
	"github.com/gpulab/gpulab/orchestrator"
)

// MaxBugReport bounds the nvidia-bug-report.sh log a fence record keeps
// of a host (it is compressed; a large one is a few tens of MiB).
const MaxBugReport = 128 << 20

// bugReportScript runs NVIDIA's nvidia-bug-report.sh as root (sudo -n)
// into a private directory, writes the compressed log on standard
// output, and removes it: nothing is left on the host. Exit 127: the
// script is not there.
const bugReportScript = `command -v nvidia-bug-report.sh >/dev/null 2>&1 || exit 127
d=$(mktemp -d) || exit 1
trap 'rm -rf "$d"' EXIT
s=""; [ "$(id -u)" = 0 ] || s="sudo -n"
$s nvidia-bug-report.sh --output-file "$d/nvidia-bug-report.log" >"$d/out" 2>&1 || { tail -n 5 "$d/out" >&2; exit 1; }
$s cat "$d/nvidia-bug-report.log.gz"`

// bugReports runs nvidia-bug-report.sh on targets and keeps each log in
// rec's directory (evidence/HOST/nvidia-bug-report.log.gz); a host where
// it cannot run says why. It runs a few minutes on a real host, two hosts
// at a time (each log is held in memory until written).
func (f *Fleet) bugReports(ctx context.Context, rec *fence.Record, targets []orchestrator.Target) map[string]*fence.StepOutput {
	type got struct {
		host string
		out  fence.StepOutput
	}
	results := make(chan got, len(targets))
	e := *f.Engine
	e.Concurrency = 2
	e.ForEach(ctx, targets, nil, func(_ int, t orchestrator.Target, conn *orchestrator.Conn, hr *orchestrator.HostResult) {
		r := conn.Run(ctx, "nvidia-bug-report", bugReportScript, orchestrator.RunOptions{Timeout: 15 * time.Minute, Inactivity: 10 * time.Minute, MaxOutput: MaxBugReport})
		so := fence.StepOutput{ID: "nvidia-bug-report", Command: "nvidia-bug-report.sh --output-file DIR/nvidia-bug-report.log (sudo -n)", ExitCode: r.ExitCode, Bytes: int(r.StdoutBytes)}
		switch {
		case r.Class == orchestrator.OK && r.ExitCode == 0 && !r.Truncated:
			so.File = filepath.Join("evidence", fence.SafeName(t.Name), "nvidia-bug-report.log.gz")
			if err := fileio.WriteAtomic(filepath.Join(rec.Dir(), so.File), r.Stdout); err != nil {
				so.File, so.Problem = "", "not kept: "+err.Error()
			}
		case r.ExitCode == 127:
			so.Problem = "nvidia-bug-report.sh is not on the host"
		case r.Truncated:
			so.Problem = fmt.Sprintf("not kept: %d bytes, over the %d MiB a record keeps", r.StdoutBytes, MaxBugReport>>20)
		default:
			so.Problem = strings.TrimSpace(fmt.Sprintf("%s (exit %d): %s %s", r.Class, r.ExitCode, strings.TrimSpace(string(r.Stderr)), r.Err))
		}
		results <- got{t.Name, so}
	})
	close(results)
	out := map[string]*fence.StepOutput{}
	for g := range results {
		out[g.host] = &g.out
	}
	return out
}
