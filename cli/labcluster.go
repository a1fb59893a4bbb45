package cli

import (
	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/orchestrator"
)

// labCluster is the Kubernetes cluster a lab's hosts belong to: the
// inventory's [[kube]] table whose nodes they are, connected with
// client-go. nil with no problem when they belong to none; nil with the
// problem when its kubeconfig cannot be loaded (the lab's cluster steps
// then say it, and the declaration falls back to kubectl on the host).
func (o *options) labCluster(r *app.Fleet, targets []orchestrator.Target) (*cluster.Client, string) {
	if r.Inv == nil {
		return nil, ""
	}
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = t.Name
	}
	src, kube, err := kubeSource(r.Inv, cluster.Source{Getenv: o.getenv}, false, names, o.getenv("HOME"))
	if err != nil {
		return nil, err.Error()
	}
	if kube == nil {
		return nil, ""
	}
	c, err := src.Connect()
	if err != nil {
		return nil, "kube context " + kube.Name + " of " + r.Inv.File + ": " + err.Error()
	}
	return c, ""
}
