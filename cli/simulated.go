package cli

import (
	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/orchestrator"
)

// simulatedFleet is how a text output says its hosts are simulated.
const simulatedFleet = "SIMULATED fleet"

// simulatedRun reports whether a run's hosts are simulated, so that its
// text output says SIMULATED: the inventory is a simulated fleet's (gpulab
// sim serve writes simulated = true in it), or one of results comes from a
// host that identified itself as gpulab's simulator (anySimulated). A run
// whose host results are not at hand passes none.
func simulatedRun(r *app.Fleet, results ...orchestrator.HostResult) bool {
	return r.Simulated || anySimulated(results)
}

// anySimulated reports whether any of results comes from a host that
// identified itself as gpulab's simulator (HostResult.Simulated).
func anySimulated(results []orchestrator.HostResult) bool {
	for _, r := range results {
		if r.Simulated {
			return true
		}
	}
	return false
}
