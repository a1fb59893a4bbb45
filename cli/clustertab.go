package cli

import (
	"context"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/sim"
)

// EnvKlog names a file client-go's logging (klog) goes to while the
// workbench runs (app.EnvKlog).
const EnvKlog = app.EnvKlog

// workbenchClusters are the Cluster tab's clusters (app.Clusters): the
// demo's simulated one, which only cli can make, or the inventory's
// [[kube]] contexts.
func workbenchClusters(o *options, life context.Context, w *workbench, inv *inventory.Inventory) ([]app.ClusterSource, func()) {
	return app.Clusters(life, app.ClusterSpec{Inventory: inv, Getenv: o.getenv, Simulated: w.cluster, SimulatedName: sim.KubeContext})
}
