package labs

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/step"
)

// ClusterReadings are what a step can read of the cluster (Step.Cluster).
var ClusterReadings = []string{"nodes", "pending", "quotas", "fragmentation"}

// clusterTimeout bounds one reading of the cluster.
const clusterTimeout = 2 * time.Minute

// readCluster reads the run's cluster with client-go, once for the run,
// and gives the step's metrics what gpulab cluster READING --json prints.
func (x *hostRun) readCluster(ctx context.Context, s Step, sr *StepRecord) {
	ns := fillParams(s.Namespace, x.o.Params) // sent to the API server as a value, never to a shell
	switch {
	case len(step.Placeholders(ns)) > 0:
		sr.Skipped = step.MissingParams(step.Placeholders(ns))
		return
	case x.o.Cluster == nil:
		sr.Skipped = "no Kubernetes cluster for these hosts: a [[kube]] table in the inventory names the kubeconfig context whose nodes they are"
		if x.o.ClusterProblem != "" {
			sr.Skipped = x.o.ClusterProblem
		}
		return
	}
	sr.Command = fmt.Sprintf("client-go: %s of context %s", s.Cluster, x.o.Cluster.Context)
	if ns != "" {
		sr.Command += ", namespace " + ns
	}
	rctx, cancel := context.WithTimeout(ctx, clusterTimeout)
	defer cancel()
	o, err := cluster.Read(rctx, x.o.Cluster, ns, cluster.Scheduling)
	if err != nil {
		sr.Class, sr.Problem = orchestrator.Error, err.Error()
		return
	}
	v, raw, err := clusterValue(o, s.Cluster, ns)
	sr.Stdout = string(raw)
	if err != nil {
		sr.Class, sr.Problem = orchestrator.Error, err.Error()
		return
	}
	sr.Class, sr.ExitCode, sr.value = orchestrator.OK, 0, v
}

// clusterValue is a reading as CEL sees it (JSON's maps and lists) and
// as the record keeps it (the JSON text).
func clusterValue(o *cluster.Objects, reading, ns string) (any, []byte, error) {
	var v any
	switch reading {
	case "nodes":
		v = o.GPUNodes()
	case "pending":
		v = map[string]any{"pods": o.Pending(ns), "blocked": o.Blocked(ns)}
	case "quotas":
		v = map[string]any{"quotas": o.Quotas(ns), "cluster_queues": o.Queues.ClusterQueues}
	case "fragmentation":
		v = map[string]any{"shapes": o.Fragmentation(ns)}
	default:
		return nil, nil, fmt.Errorf("no cluster reading %q", reading)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, nil, err
	}
	var out any
	err = json.Unmarshal(raw, &out)
	return out, raw, err
}
