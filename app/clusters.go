package app

import (
	"context"
	"os"
	"time"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/internal/fileio"
	"github.com/gpulab/gpulab/inventory"
)

// EnvKlog names a file client-go's logging (klog) goes to while the
// workbench runs; unset, it goes nowhere. Never to the terminal: the
// workbench owns it.
const EnvKlog = "GPULAB_KLOG"

// LiveCluster is a cluster followed as it changes (cluster.Live, or a
// test's).
type LiveCluster interface {
	// Snapshot is the cluster's objects now (read-only).
	Snapshot() *cluster.Objects
	// Status is the connection to its API server.
	Status() cluster.LiveStatus
	// Changes receives a value after a change; closed when it stops.
	Changes() <-chan struct{}
}

// ClusterSource is one cluster the workbench's Cluster tab shows.
type ClusterSource struct {
	// Name is the context's name ("simulated" for the demo's).
	Name string
	// Simulated marks a cluster no API server holds (the demo's): the tab
	// says SIMULATED.
	Simulated bool
	// Live follows it; nil when it could not be connected (Err says why).
	Live LiveCluster
	Err  string
}

// ClusterSpec is where the workbench's clusters come from: a simulated
// one (the demo's, which only the command line can make, for only it may
// import sim), or else the inventory's [[kube]] contexts.
type ClusterSpec struct {
	Inventory *inventory.Inventory
	Getenv    func(string) string
	// Simulated connects to the simulated cluster; nil when there is none.
	Simulated     func(context.Context) (*cluster.Client, error)
	SimulatedName string
}

// liveOptions are the Cluster tab's: at most one change a second, since
// the tab recomputes its cluster on each (a quarter of a second of one
// core at 1,000 nodes and 20,000 pods, off the workbench's loop).
var liveOptions = cluster.LiveOptions{Interval: time.Second}

// Clusters starts following the workbench's clusters, each by informers
// until stop is called: the simulated one, or the inventory's [[kube]]
// contexts (one that cannot be loaded is listed with why). klog is routed
// away from the terminal first, in any case: whatever reads a cluster in
// the workbench (the tab, a lab's cluster step), klog stays off the
// screen.
func Clusters(life context.Context, s ClusterSpec) (sources []ClusterSource, stop func()) {
	closeLog := routeKlog(s.Getenv(EnvKlog))
	ctx, cancel := context.WithCancel(life)
	stop = func() { cancel(); closeLog() }
	if s.Simulated != nil {
		client, err := s.Simulated(ctx)
		src := ClusterSource{Name: s.SimulatedName, Simulated: true}
		if err != nil {
			src.Err = err.Error()
		} else {
			src.Live = cluster.StartLive(ctx, client, liveOptions)
		}
		return []ClusterSource{src}, stop
	}
	if s.Inventory == nil {
		return nil, stop
	}
	for _, k := range s.Inventory.Kube {
		sources = append(sources, follow(ctx, k, s.Getenv))
	}
	return sources, stop
}

// follow connects to one [[kube]] context, as kubectl would (with
// gpulab's environment: $KUBECONFIG, $HOME), and follows it; connecting
// reads only the kubeconfig, so an unreachable server shows in the tab as
// lost, not here.
func follow(ctx context.Context, k inventory.KubeContext, getenv func(string) string) ClusterSource {
	src := ClusterSource{Name: k.Name}
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
