package cli

import (
	"context"
	"os"
	"time"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/internal/fileio"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/sim"
	"github.com/gpulab/gpulab/tui"
)

// EnvKlog names a file client-go's logging (klog) goes to while the
// workbench runs; unset, it goes nowhere. Never to the terminal: the
// workbench owns it.
const EnvKlog = "GPULAB_KLOG"

// liveOptions are the Cluster tab's: at most one change a second, since
// the tab recomputes its cluster on each (a quarter of a second of one
// core at 1,000 nodes and 20,000 pods, off the workbench's loop).
var liveOptions = cluster.LiveOptions{Interval: time.Second}

// workbenchClusters are the Cluster tab's clusters, each followed by
// informers until stop is called: the demo's simulated one, or the
// inventory's [[kube]] contexts (one that cannot be loaded is listed
// with why). klog is routed away from the terminal first, in any case.
func workbenchClusters(o *options, life context.Context, w *workbench, inv *inventory.Inventory) (sources []tui.ClusterSource, stop func()) {
	// Whatever reads a cluster in the workbench (this tab, a lab's
	// cluster step), klog stays off the screen.
	closeLog := routeKlog(o.getenv(EnvKlog))
	ctx, cancel := context.WithCancel(life)
	stop = func() { cancel(); closeLog() }
	if w.cluster == nil && len(inv.Kube) == 0 {
		return nil, stop
	}
	if w.cluster != nil {
		client, err := w.cluster(ctx)
		src := tui.ClusterSource{Name: sim.KubeContext, Simulated: true}
		if err != nil {
			src.Err = err.Error()
		} else {
			src.Live = cluster.StartLive(ctx, client, liveOptions)
		}
		return []tui.ClusterSource{src}, stop
	}
	for _, k := range inv.Kube {
		sources = append(sources, tabSource(ctx, k, o.getenv))
	}
	return sources, stop
}

// tabSource connects to one [[kube]] context, as kubectl would (with
// gpulab's environment: $KUBECONFIG, $HOME), and
// follows it; connecting reads only the kubeconfig, so an unreachable
// server shows in the tab as lost, not here.
func tabSource(ctx context.Context, k inventory.KubeContext, getenv func(string) string) tui.ClusterSource {
	src := tui.ClusterSource{Name: k.Name}
	client, err := cluster.Source{Kubeconfig: k.Kubeconfig, Context: k.Context, Getenv: getenv}.Connect()
	if err != nil {
		src.Err = err.Error()
		return src
	}
	opts := liveOptions
	opts.Namespace = k.Namespace
	src.Live = cluster.StartLive(ctx, client, opts)
	return src
}

// routeKlog sends klog to the file at path, or nowhere when path is ""
// or cannot be opened; the returned function closes the file.
func routeKlog(path string) func() {
	if path == "" {
		cluster.RouteKlog(nil)
		return func() {}
	}
	f, err := fileio.OpenOwned(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		cluster.RouteKlog(nil)
		return func() {}
	}
	cluster.RouteKlog(f)
	return func() { cluster.RouteKlog(nil); f.Close() }
}
