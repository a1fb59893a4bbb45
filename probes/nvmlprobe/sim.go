//go:build !nosim

package main

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpulab/gpulab/probes/sim"
)

// simulator returns the simulated machine for --mock. The probes pushed to
// real hosts are built with -tags nosim and carry no simulator (it is a
// megabyte of mock code); gpulab uses a separate simulator build for --mock.
func simulator(string) (nvml.Interface, error) { return sim.DGXA100(), nil }
