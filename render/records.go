package render

import (
	"time"

	"github.com/gpulab/gpulab/internal/visible"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/labs"
)

// Record is a lab record's row in both front ends' lists of records: when
// it started (local time), the lab, its hosts as one node set, and its
// outcome (the workbench marks a simulated record with its badge, the
// command line says "(SIMULATED)" after the outcome).
func Record(r *labs.Record) (started, lab, hosts, outcome string) {
	names := make([]string, len(r.Hosts))
	for i, h := range r.Hosts {
		names[i] = h.Host
	}
	return r.Started.Local().Format(time.DateTime), visible.String(r.Lab), visible.String(inventory.FoldNames(names)), r.Outcome()
}
