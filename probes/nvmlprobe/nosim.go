//go:build nosim

package main

import "errors"

// simulator is absent from this build; --mock and --mock-faults parse,
// and are refused here.
func simulator(string, string) (*simulated, error) {
	return nil, errors.New("this probe was built without the simulator (-tags nosim); gpulab runs --mock with its simulator build")
}
