package cli

import (
	"os"
	"testing"

	"github.com/gpulab/gpulab/sim"
)

// TestMain lets this test binary be a simulated fleet's child process:
// sim serve and the demo run their fleet in one (sim.Spawn runs the
// program's own executable).
func TestMain(m *testing.M) {
	if sim.IsChild() {
		os.Exit(sim.RunChild())
	}
	os.Exit(m.Run())
}
