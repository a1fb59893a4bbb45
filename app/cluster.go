package app

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/orchestrator"
)

// KubeSource picks the cluster: the inventory's [[kube]] table named by
// --context, else the one whose nodes include the selected hosts, else
// kubectl's rules with --kubeconfig and --context as given. A [[kube]]
// table's relative kubeconfig is relative to the inventory's directory.
func KubeSource(inv *inventory.Inventory, src cluster.Source, explicitFile bool, hosts []string, home string) (cluster.Source, *inventory.KubeContext, error) {
	var kube *inventory.KubeContext
	for i := range inv.Kube {
		k := &inv.Kube[i]
		switch {
		case src.Context != "" && k.Name == src.Context:
			kube = k
		case src.Context == "" && !explicitFile && slices.ContainsFunc(hosts, func(h string) bool { return slices.Contains(k.NodeNames, h) }):
			if kube != nil && kube.Name != k.Name {
				return src, nil, fmt.Errorf("the hosts are nodes of kube contexts %q and %q in %s: say which with --context", kube.Name, k.Name, inv.File)
			}
			kube = k
		}
	}
	if kube == nil {
		return src, nil, nil
	}
	s := cluster.Source{Kubeconfig: src.Kubeconfig, Context: kube.Context, Getenv: src.Getenv}
	if !explicitFile && kube.Kubeconfig != "" {
		s.Kubeconfig = kube.Kubeconfig
		if rest, ok := strings.CutPrefix(s.Kubeconfig, "~/"); ok {
			s.Kubeconfig = filepath.Join(home, rest)
		} else if !filepath.IsAbs(s.Kubeconfig) && inv.File != "" {
			s.Kubeconfig = filepath.Join(filepath.Dir(inv.File), s.Kubeconfig)
		}
	}
	return s, kube, nil
}

// Cluster is the Kubernetes cluster the targets belong to: the
// inventory's [[kube]] table whose nodes they are, connected with
// client-go (getenv gives $HOME and kubectl's variables). nil with no
// problem when they belong to none; nil with the problem when its
// kubeconfig cannot be loaded (a lab's cluster steps then say it, and the
// declaration falls back to kubectl on the host).
func (f *Fleet) Cluster(getenv func(string) string, targets []orchestrator.Target) (*cluster.Client, string) {
	if f.Inv == nil {
		return nil, ""
	}
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = t.Name
	}
	src, kube, err := KubeSource(f.Inv, cluster.Source{Getenv: getenv}, false, names, getenv("HOME"))
	if err != nil {
		return nil, err.Error()
	}
	if kube == nil {
		return nil, ""
	}
	c, err := src.Connect()
	if err != nil {
		return nil, "kube context " + kube.Name + " of " + f.Inv.File + ": " + err.Error()
	}
	return c, ""
}
