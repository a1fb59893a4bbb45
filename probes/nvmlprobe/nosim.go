//go:build nosim

package main

import (
	"errors"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

func simulator(string) (nvml.Interface, error) {
	return nil, errors.New("this probe was built without the simulator (-tags nosim); gpulab runs --mock with its simulator build")
}
