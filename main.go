// Command gpulab is a terminal workbench and agentless SSH lab orchestrator
// for GPU clusters.
//
// With no arguments it opens the workbench on the Map: the control, data and
// workload planes of the GPU-infrastructure landscape and the projects in
// each; the Matrix places every project on four decision axes (resource unit,
// isolation, fragmentation source, governance). Every screen has a
// command-line twin (gpulab map, gpulab matrix, ...) with --json for scripts.
//
// Usage:
//
//	gpulab [command] [flags]
//
// Run 'gpulab --help' for the commands, and 'gpulab COMMAND --help' for
// each one's flags and examples. Exit codes: 0 ok, 1 a check or host failed,
// 2 usage or configuration error, 3 a runbook with UNKNOWN checks, 4 a lab
// whose record was not saved, 130 interrupted.
package main

import (
	"os"

	"github.com/mattn/go-isatty"

	"github.com/gpulab/gpulab/cli"
	"github.com/gpulab/gpulab/internal/termquiet" // before Bubble Tea's init: no terminal queries
	"github.com/gpulab/gpulab/sim"
)

func main() {
	if sim.IsChild() { // gpulab demo's and sim serve's fleet, in a process of its own
		os.Exit(sim.RunChild())
	}
	termquiet.Restore()
	cli.CatchSignals()
	os.Exit(cli.Main(os.Args[1:], cli.Env{
		Stdin:      os.Stdin,
		Stdout:     os.Stdout,
		Stderr:     os.Stderr,
		Getenv:     os.Getenv,
		IsTerminal: isatty.IsTerminal(os.Stdout.Fd()) && isatty.IsTerminal(os.Stdin.Fd()),
	}))
}
