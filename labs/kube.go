package labs

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/step/parse"
)

// KubeEnvironment is the Kubernetes side of the environment declaration,
// read once per run with kubectl on the first host (where the lab's
// kubectl steps run): the versions kubectl reports and the nodes that
// offer GPU resources.
type KubeEnvironment struct {
	// Host is where kubectl ran; empty when the cluster was read with
	// client-go (Context).
	Host string `json:"host,omitempty"`
	// Context is the kubeconfig context read with client-go.
	Context string `json:"context,omitempty"`
	// Versions are kubectl version's lines: "Client Version",
	// "Kustomize Version", "Server Version".
	Versions map[string]string `json:"versions"`
	Nodes    []KubeNode        `json:"gpu_nodes"`
	AllNodes int               `json:"all_nodes"`
	// Error says what kubectl could not give (no server, no permission).
	Error string `json:"error,omitempty"`
}

// KubeNode is a node with GPU resources.
type KubeNode struct {
	Name    string `json:"name"`
	Kubelet string `json:"kubelet,omitempty"`
	Runtime string `json:"runtime,omitempty"`
	OS      string `json:"os,omitempty"`
	// GPUs lists each GPU resource as "nvidia.com/gpu 8/8" (allocatable
	// of capacity).
	GPUs []string `json:"gpus"`
	// Product and MIGStrategy are GPU feature discovery's labels.
	Product     string `json:"product,omitempty"`
	MIGStrategy string `json:"mig_strategy,omitempty"`
}

// kubeMarker separates kubectl version from kubectl describe nodes.
const kubeMarker = "--- gpulab: kubectl describe nodes"

const kubeCommand = `command -v kubectl >/dev/null 2>&1 || { echo "kubectl: command not found on this host" >&2; exit 127; }; ` +
	`kubectl version 2>&1; echo '` + kubeMarker + `'; kubectl describe nodes 2>&1; true`

// usesKubernetes says whether a lab talks to a cluster: a step runs
// kubectl or reads the cluster.
func (l *Lab) usesKubernetes() bool {
	for _, s := range l.Steps {
		if slices.Contains(s.Needs, "kubectl") || s.Cluster != "" {
			return true
		}
	}
	return false
}

// readKubernetes reads the cluster's side of the environment with
// client-go: the server's version and the GPU nodes.
func readKubernetes(ctx context.Context, c *cluster.Client) (*KubeEnvironment, error) {
	ctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()
	k := &KubeEnvironment{Context: c.Context, Versions: map[string]string{}, Nodes: []KubeNode{}}
	v, err := c.Kube.Discovery().ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("server version: %w", err)
	}
	k.Versions["Server Version"] = v.GitVersion
	o, err := cluster.Read(ctx, c, "", 0)
	if err != nil {
		return nil, err
	}
	k.AllNodes = len(o.Nodes)
	for _, n := range o.GPUNodes() {
		kn := KubeNode{Name: n.Name, Kubelet: n.Kubelet, Runtime: n.Runtime, OS: n.OS, Product: n.Product, MIGStrategy: n.MIGStrategy, GPUs: []string{}}
		for _, r := range slices.Sorted(maps.Keys(n.Capacity)) {
			kn.GPUs = append(kn.GPUs, fmt.Sprintf("%s %d/%d", r, n.Allocatable[r], n.Capacity[r]))
		}
		k.Nodes = append(k.Nodes, kn)
	}
	return k, nil
}

func captureKubernetes(ctx context.Context, conn *orchestrator.Conn, host string) *KubeEnvironment {
	r := conn.Run(ctx, "environment: kubernetes", kubeCommand, orchestrator.RunOptions{Timeout: time.Minute, MaxOutput: 16 << 20})
	k := parseKubernetes(string(r.Stdout))
	k.Host = host
	if r.Class != orchestrator.OK {
		k.Error = strings.TrimSpace(r.Class.String() + ": " + orchestrator.FirstLine(string(r.Stderr)+" "+r.Err))
	}
	if r.Truncated {
		k.Error = strings.TrimSpace(k.Error + "; kubectl describe nodes printed more than 16 MiB: the node list is cut")
	}
	return k
}

// parseKubernetes reads kubeCommand's output: kubectl version's
// "X Version: v" lines (anything else there is the error, such as a
// refused connection), then every node of kubectl describe nodes.
func parseKubernetes(out string) *KubeEnvironment {
	k := &KubeEnvironment{Versions: map[string]string{}, Nodes: []KubeNode{}}
	version, nodes, _ := strings.Cut(out, kubeMarker+"\n")
	var problems []string
	for _, l := range strings.Split(strings.TrimSpace(version), "\n") {
		l = strings.TrimSpace(l)
		if key, v, ok := strings.Cut(l, ": "); ok && strings.HasSuffix(key, " Version") {
			k.Versions[key] = strings.TrimSpace(v)
		} else if l != "" {
			problems = append(problems, l)
		}
	}
	// Each node's chunk runs from its "Name:" line to the next one, cut
	// out of nodes in place (not joined line by line: += copies a chunk
	// once per line, quadratic in a node's size).
	var chunks []string
	start, off := 0, 0
	for l := range strings.Lines(nodes) {
		if strings.HasPrefix(l, "Name:") && off > 0 {
			chunks = append(chunks, nodes[start:off])
			start = off
		}
		off += len(l)
	}
	chunks = append(chunks, nodes[start:])
	for _, c := range chunks {
		if !strings.HasPrefix(c, "Name:") {
			if t := strings.TrimSpace(c); t != "" && !strings.Contains(strings.Join(problems, " "), orchestrator.FirstLine(t)) {
				problems = append(problems, orchestrator.FirstLine(t))
			}
			continue
		}
		k.AllNodes++
		n, _ := parse.ParseDescribeNode(c)
		if n == nil || len(n.GPU) == 0 {
			continue
		}
		kn := KubeNode{Name: n.Name, Kubelet: n.SystemInfo["Kubelet Version"], Runtime: n.SystemInfo["Container Runtime Version"],
			OS: n.SystemInfo["OS Image"], Product: n.Labels["nvidia.com/gpu.product"], MIGStrategy: n.Labels["nvidia.com/mig.strategy"], GPUs: []string{}}
		for _, r := range slices.Sorted(maps.Keys(n.GPU)) {
			kn.GPUs = append(kn.GPUs, fmt.Sprintf("%s %s/%s", r, orNA(n.Allocatable[r]), orNA(n.Capacity[r])))
		}
		k.Nodes = append(k.Nodes, kn)
	}
	k.Error = strings.Join(problems, "; ")
	return k
}
