//go:build !nosim

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/gpulab/gpulab/probes/nvmlsim"
)

// simulator returns the simulated machine for --mock, with the faults
// given as JSON (--mock-faults; "" for a healthy machine). The probes
// pushed to real hosts are built with -tags nosim and carry no simulator
// (it is a megabyte of mock code); gpulab uses a separate simulator build
// for --mock.
//
// When the faults have processes, their /proc entries (comm, cgroup) are
// written to a private temporary directory that the collector reads as
// its /proc, so the simulated processes are mapped to pods by the same
// code as real ones; the machine's remove deletes it.
func simulator(_ string, faults string) (*simulated, error) {
	var f nvmlsim.Faults
	if faults != "" {
		dec := json.NewDecoder(bytes.NewReader([]byte(faults)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return nil, fmt.Errorf("--mock-faults: not the JSON of the faults of a simulated machine (sim/spec.Faults): %w", err)
		}
		if dec.More() {
			return nil, fmt.Errorf("--mock-faults: text after the JSON object")
		}
		if err := f.Validate(); err != nil {
			return nil, fmt.Errorf("--mock-faults: %w", err)
		}
	}
	m := &simulated{lib: nvmlsim.DGXA100With(f), remove: func() {}}
	if len(f.Processes) == 0 {
		return m, nil
	}
	dir, err := os.MkdirTemp("", "nvmlprobe-proc-")
	if err != nil {
		return nil, fmt.Errorf("--mock-faults: the simulated processes' /proc: %w", err)
	}
	if err := f.WriteProc(dir); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("--mock-faults: the simulated processes' /proc: %w", err)
	}
	m.procRoot, m.remove = dir, func() { os.RemoveAll(dir) }
	return m, nil
}
