// Package app is gpulab's application layer, under the command line and
// the workbench alike: a Fleet is the selected hosts and what reaching
// them takes (the composition root every command shares: inventory,
// resolver, keyring, engine), Probe pushes and runs the NVML probe on
// them, and a Workbench is what the workbench's tabs run through (commands,
// probes, runbooks, labs, the demo's fleet).
//
// The command line (cli) turns flags into a Fleet and prints what comes
// back; the TUI (tui) calls a Workbench directly, so that a key press goes
// tui → app → runbooks/labs → orchestrator and its events come back the
// same way. app imports neither.
package app
