package cli

import (
	"reflect"

	"github.com/gpulab/gpulab/orchestrator"
)

// simulatedFleet is how a text output says its hosts are simulated.
const simulatedFleet = "SIMULATED fleet"

// simulatedRun reports whether a run's hosts are simulated, so that its
// text output says SIMULATED: the inventory is a simulated fleet's (gpulab
// sim serve writes simulated = true in it), or one of results comes from a
// host that identified itself as gpulab's simulator (anySimulated). A run
// whose host results are not at hand passes none.
func simulatedRun(r *runner, results ...orchestrator.HostResult) bool {
	return r.simulated || anySimulated(results)
}

// hostResultSimulated is the index of HostResult's bool field Simulated,
// which the engine sets on the result of a host that identifies itself as
// gpulab's simulator; nil with an engine that has no such field.
var hostResultSimulated = func() []int {
	f, ok := reflect.TypeFor[orchestrator.HostResult]().FieldByName("Simulated")
	if !ok || f.Type.Kind() != reflect.Bool {
		return nil
	}
	return f.Index
}()

// anySimulated reports whether any of results comes from a host that
// identified itself as gpulab's simulator (HostResult.Simulated). The
// field is read by name, so that cli builds with an engine that has it and
// with one that does not (then no result is simulated).
func anySimulated(results []orchestrator.HostResult) bool {
	if hostResultSimulated == nil {
		return false
	}
	for i := range results {
		if reflect.ValueOf(&results[i]).Elem().FieldByIndex(hostResultSimulated).Bool() {
			return true
		}
	}
	return false
}
