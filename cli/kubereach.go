package cli

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/orchestrator"
)

// kubeFlags choose the transport and, for Kubernetes, the cluster and the
// node pods (kubectl's --kubeconfig, --context, --namespace, -l).
type kubeFlags struct {
	via        string
	kubeconfig string
	context    string
	namespace  string
	image      string
	selector   string
	writable   bool // --writable-host: the node pods mount the host's / read-write
}

func (f *sshFlags) registerKube() {
	f.registerVia()
	fl := f.cmd.Flags()
	fl.StringVar(&f.kube.kubeconfig, "kubeconfig", "", "with --via kube: the kubeconfig `FILE` (default: $KUBECONFIG, then ~/.kube/config)")
	fl.StringVar(&f.kube.context, "context", "", "with --via kube: the kubeconfig context `NAME` (default: the current context)")
	fl.StringVar(&f.kube.namespace, "namespace", "", "with --via kube: the `NAMESPACE` of the node pods (default: the context's); it must allow privileged pods")
	fl.BoolVar(&f.kube.writable, "writable-host", false, "with --via kube: mount the host's / read-write in the node pods (default read-only; a lab step with needs = [\"writable-host\"] asks for it)")
}

// registerVia registers --via and the node pods' flags but the cluster's
// (--kubeconfig, --context, --namespace), for a command of the cluster
// group, which has them already.
func (f *sshFlags) registerVia() {
	fl := f.cmd.Flags()
	fl.StringVar(&f.kube.via, "via", "ssh", "how hosts are reached: `ssh`, or kube (Kubernetes nodes through the API server: a pod on each, commands over pods/exec; no SSH, no inventory)")
	fl.StringVar(&f.kube.image, "image", "", "with --via kube: the node pods' `IMAGE` (default "+orchestrator.DefaultNodePodImage+"; an air-gapped site names its mirror)")
	fl.StringVar(&f.kube.selector, "selector", "", "with --via kube: only nodes matching this label `SELECTOR`, as kubectl -l writes it (with --via kube, -l is the selector too)")
}

// viaKube says whether the hosts are Kubernetes nodes.
func (f *sshFlags) viaKube() (bool, error) {
	switch f.kube.via {
	case "", "ssh":
		if f.kube.writable {
			return false, usageErr("--writable-host is for --via kube (over SSH a command writes what the login may)")
		}
		return false, nil
	case "kube":
		return true, nil
	}
	return false, usageErr("--via %q: want ssh or kube", f.kube.via)
}

// kubeRunner builds the fleet of the nodes f selects, reached through
// the API server: -l (or --selector) asks the API server, -H picks among
// the nodes by name or label as it does among an inventory's hosts (a
// name that is no node is reported as such, once). The transport's pods
// are removed at the end of the command (Main's cleanups), or at a
// forced exit.
func (o *options) kubeRunner(f *sshFlags) (*app.Fleet, error) {
	if err := o.kubeFlagsCheck(f); err != nil {
		return nil, err
	}
	selector := f.kube.selector
	if selector == "" {
		selector = f.user // -l: kubectl's selector where there is no SSH user
	}
	if f.hosts == "" && selector == "" {
		return nil, usageErr("-H or -l is required with --via kube: which nodes? (e.g. -H 'gpu[01-08]', -l nvidia.com/gpu.present=true, -H '*' for every node)")
	}
	src := cluster.Source{Kubeconfig: f.kube.kubeconfig, Context: f.kube.context, Getenv: o.getenv}
	client, err := src.Connect()
	if err != nil {
		return nil, configErr(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nodes, err := orchestrator.NodeSelection(ctx, client.Kube, selector)
	if err != nil {
		return nil, fmt.Errorf("context %s: %w", client.Context, err)
	}
	inv := inventory.Empty().Only(nodeHosts(nodes))
	ns := cmpOr(f.kube.namespace, client.Namespace, "default")
	// The Cluster tab shows the same cluster.
	inv.Kube = []inventory.KubeContext{{Name: client.Context, Kubeconfig: f.kube.kubeconfig, Context: client.Context, Namespace: ns}}
	expr := f.hosts
	if expr == "" {
		expr = "*"
	}
	hosts, err := inv.Select(expr)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	if len(hosts) == 0 {
		return nil, usageErr("-H %q -l %q selects no node of context %s", expr, selector, client.Context)
	}
	concurrency := cmpOrInt(f.concurrency, inv.Defaults.Concurrency)
	kt := &orchestrator.KubeTransport{Config: client.Config, Client: client.Kube, Context: client.Context,
		Namespace: ns, Image: f.kube.image, RunID: newRunID(), StartTimeout: f.connectTimeout, WritableHost: f.kube.writable,
		Deadline: orchestrator.PodDeadline(cmp.Or(f.timeout, inv.Defaults.CommandTimeout.Duration)),
		// Two streams a host at most (a lab's sampling beside its step).
		Streams: max(256, 2*concurrency)}
	if _, err := kt.Prepare(ctx, hosts[0].Name); err != nil {
		return nil, configErr(fmt.Errorf("context %s: %w", client.Context, err))
	}
	// What a record's Reproduce names: the context and namespace used.
	f.kube.context, f.kube.namespace = client.Context, ns
	o.atEnd(kt)
	return kubeFleet(inv, hosts, nodes, kt, f), nil
}

// kubeFlagsCheck refuses what --via kube does not use: SSH's settings
// and the inventory (it takes the cluster's nodes), and a selector given
// twice.
func (o *options) kubeFlagsCheck(f *sshFlags) error {
	if f.cmd != nil {
		for _, name := range []string{"port", "identity", "ssh-config", "known-hosts", "accept-new-host-keys", "no-sftp"} {
			if fl := f.cmd.Flags().Lookup(name); fl != nil && fl.Changed {
				return usageErr("--%s is an SSH setting: --via kube reaches the nodes through the API server", name)
			}
		}
	}
	if o.inventory != "" {
		return usageErr("--inventory names SSH hosts: --via kube takes the cluster's nodes (-H and -l select among them)")
	}
	if f.kube.selector != "" && f.user != "" {
		return usageErr("the label selector is given twice (-l and --selector): give it once")
	}
	return nil
}

// kubeFleet is the fleet of hosts, nodes reached through kt.
func kubeFleet(inv *inventory.Inventory, hosts []inventory.Host, nodes []corev1.Node, kt *orchestrator.KubeTransport, f *sshFlags) *app.Fleet {
	simulated := map[string]bool{}
	for _, n := range nodes {
		simulated[n.Name] = n.Labels[orchestrator.SimulatedLabel] == "true"
	}
	d := inv.Defaults
	base := orchestrator.Target{ConnectTimeout: d.ConnectTimeout.Duration, CommandTimeout: d.CommandTimeout.Duration,
		InactivityTimeout: d.InactivityTimeout.Duration, Sources: map[string]string{}}
	for _, s := range []struct {
		key  string
		flag time.Duration
		v    *time.Duration
	}{{"ConnectTimeout", f.connectTimeout, &base.ConnectTimeout}, {"CommandTimeout", f.timeout, &base.CommandTimeout}, {"InactivityTimeout", f.inactivity, &base.InactivityTimeout}} {
		if s.flag > 0 {
			*s.v, base.Sources[s.key] = s.flag, orchestrator.SourceFlag
		}
	}
	fleet := &app.Fleet{Keys: &orchestrator.Keyring{}, Inv: inv, Simulated: len(hosts) > 0,
		Engine: &orchestrator.Engine{Dialer: &orchestrator.Dialer{}, Concurrency: cmpOrInt(f.concurrency, d.Concurrency)}}
	for _, h := range hosts {
		if h.Adhoc {
			fleet.Targets = append(fleet.Targets, orchestrator.Target{Name: h.Name,
				Unresolved: fmt.Sprintf("no node %s in context %s (or not matching the selector)", h.Name, kt.Context)})
			fleet.Simulated = false
			continue
		}
		fleet.Targets = append(fleet.Targets, kt.Target(h.Name, simulated[h.Name], base))
		fleet.Simulated = fleet.Simulated && simulated[h.Name]
	}
	return fleet
}

// nodeHosts are nodes as inventory hosts: their names and labels (for -H
// @label=value), and what each should have, as an inventory's expect
// says it, where the node carries the gpulab.io/expect-* labels. Never
// from the node's own state: a device plugin that lost a GPU offers 7,
// and 7 expected would pass the count that should fail.
func nodeHosts(nodes []corev1.Node) []inventory.Host {
	hosts := make([]inventory.Host, 0, len(nodes))
	for _, n := range nodes {
		h := inventory.Host{Name: n.Name, Address: "node/" + n.Name, Labels: n.Labels, Source: "node " + n.Name}
		for label, v := range map[string]*int{orchestrator.ExpectGPUsLabel: &h.Expect.GPUs, orchestrator.ExpectIBPortsLabel: &h.Expect.IBPorts, orchestrator.ExpectIBRateLabel: &h.Expect.IBRateGbps} {
			if x, err := strconv.Atoi(n.Labels[label]); err == nil && x > 0 {
				*v = x
			}
		}
		hosts = append(hosts, h)
	}
	return hosts
}

// newRunID names one gpulab process's node pods.
func newRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "gpulab-" + strconv.FormatInt(time.Now().Unix(), 36) + "-" + hex.EncodeToString(b)
}

// atEnd removes kt's pods when the command ends, however it ends: after
// it returns (Main), or at a forced exit (a second Ctrl-C), bounded.
func (o *options) atEnd(kt *orchestrator.KubeTransport) {
	remove := onForcedExit(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := kt.Close(ctx); err != nil {
			fmt.Fprintf(o.live.through(o.env.Stderr), "gpulab: the node pods of run %s may be left: %v (kubectl delete pods -n %s -l %s=%s)\n", kt.RunID, err, kt.Namespace, orchestrator.RunLabel, kt.RunID)
		}
	})
	o.cleanups = append(o.cleanups, func() {
		defer remove() // after: a signal during this cleanup still has the forced exit's
		if _, err := kt.Close(context.Background()); err != nil {
			fmt.Fprintf(o.live.through(o.env.Stderr), "gpulab: the node pods of run %s may be left: %v (kubectl delete pods -n %s -l %s=%s)\n", kt.RunID, err, kt.Namespace, orchestrator.RunLabel, kt.RunID)
		}
	})
}

func cmpOr(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func cmpOrInt(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}
