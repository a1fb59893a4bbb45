//go:build !nosim

package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpulab/gpulab/probes/sim"
)

// simulator returns the simulated machine for --mock, with the faults
// given as JSON (--mock-faults; "" for a healthy machine). The probes
// pushed to real hosts are built with -tags nosim and carry no simulator
// (it is a megabyte of mock code); gpulab uses a separate simulator build
// for --mock.
func simulator(_ string, faults string) (nvml.Interface, error) {
	var f sim.Faults
	if faults != "" {
		dec := json.NewDecoder(bytes.NewReader([]byte(faults)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return nil, fmt.Errorf("--mock-faults: not the JSON of a sim.Faults: %w", err)
		}
		if dec.More() {
			return nil, fmt.Errorf("--mock-faults: text after the JSON object")
		}
		if err := f.Validate(); err != nil {
			return nil, fmt.Errorf("--mock-faults: %w", err)
		}
	}
	return sim.DGXA100With(f), nil
}
