//go:build !nosim

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpulab/gpulab/probes/nvmlsim"
)

// simulator returns the simulated machine for --mock, with the faults
// given as JSON (--mock-faults; "" for a healthy machine). The probes
// pushed to real hosts are built with -tags nosim and carry no simulator
// (it is a megabyte of mock code); gpulab uses a separate simulator build
// for --mock.
//
// The simulated machine's /proc (its processes' comm, cgroup, stat and,
// stuck in the driver, open files) and /sys/fs/pstore (its crash
// records) are written to a private temporary directory that the
// collector reads as the real ones, by the same code (a simulated host
// never reads this machine's /proc); the machine's remove deletes it.
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
	dir, err := os.MkdirTemp("", "nvmlprobe-proc-")
	if err != nil {
		return nil, fmt.Errorf("--mock-faults: the simulated machine's /proc: %w", err)
	}
	m.procRoot, m.pstoreDir, m.ibDir = filepath.Join(dir, "proc"), filepath.Join(dir, "pstore"), filepath.Join(dir, "infiniband")
	m.pciDir, m.fmLog = filepath.Join(dir, "pci"), filepath.Join(dir, "fabricmanager.log")
	m.remove = func() { os.RemoveAll(dir) }
	m.readSys = f.SysReader()
	err = errors.Join(os.Mkdir(m.procRoot, 0o700), os.Mkdir(m.pstoreDir, 0o700))
	if err == nil {
		err = errors.Join(f.WriteProc(m.procRoot), f.WritePstore(m.pstoreDir), f.WriteIB(m.ibDir), f.WritePCI(m.pciDir), f.WriteFabricManager(m.procRoot, m.fmLog))
	}
	if err != nil {
		m.remove()
		return nil, fmt.Errorf("--mock-faults: the simulated machine's /proc and pstore: %w", err)
	}
	return m, nil
}
