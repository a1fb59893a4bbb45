package labs_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/internal/kubetest"
	"github.com/gpulab/gpulab/labs"
)

const clusterLab = `id = "why-lab"
name = "Why a pod waits"
goal = "Every waiting pod is explained"
plane = "control"
maturity = "draft"
estimate_minutes = 1
cost = "none"
principle = "client-go reads the cluster."
stop_loss = "none"

[[step]]
id = "why"
phase = "observe"
cluster = "pending"
namespace = "{{ns}}"

[step.metrics]
waiting = "out.pods.size()"
explained = "out.pods.all(p, p.why.contains('fragmentation') && p.evidence.size() > 0)"

[[param]]
name = "ns"
type = "name"
help = "the namespace"
default = "default"

[[criterion]]
id = "explained"
description = "Every waiting pod's why names fragmentation"
expr = "metrics.waiting == 1 && metrics.explained"
impact = "critical"
`

// A lab whose hosts belong to a cluster reads it with client-go: the
// environment declaration (server version, GPU nodes) and a step that
// reads pending pods and their why, scored by its criterion, against a
// real API server and scheduler; without a cluster the step is skipped
// saying why, and the declaration falls back to kubectl on the host.
func TestLabReadsTheClusterWithClientGo(t *testing.T) {
	cp := kubetest.Start(t)
	cp.AddNode(t, kubetest.GPUNode("gpu-a", 8))
	cp.AddNode(t, kubetest.GPUNode("gpu-b", 8))
	c, err := cluster.NewClient(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	c.Context = "kubetest"
	pods := cp.Client.CoreV1().Pods(metav1.NamespaceDefault)
	for _, p := range []struct {
		name, node string
		gpus       string
	}{{"a", "gpu-a", "5"}, {"b", "gpu-b", "5"}, {"wide", "", "4"}} {
		q := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(p.gpus)}
		if _, err := pods.Create(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.name}, Spec: corev1.PodSpec{NodeName: p.node,
			Containers: []corev1.Container{{Name: "c", Image: "cuda", Resources: corev1.ResourceRequirements{Limits: q}}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cp.WaitScheduled(t, "default", "wide")

	l, err := labs.Parse("why.toml", []byte(clusterLab))
	if err != nil {
		t.Fatal(err)
	}
	_, e, ts, _ := e2eFleet(t, []testHost{{topo: "nvidia-smi-topo-m/hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt"}})
	rec := labs.Run(context.Background(), e, ts, l, labs.RunOptions{Cluster: c, Params: map[string]string{"ns": "default"}})
	k := rec.Kubernetes
	if k == nil || k.Host != "" || k.Context != "kubetest" || k.Versions["Server Version"] == "" || len(k.Nodes) != 2 || k.AllNodes != 2 {
		t.Fatalf("kubernetes declaration: %+v", k)
	}
	if !rec.Passed {
		t.Errorf("the cluster step's criterion: %+v, metrics %v %v", rec.Hosts[0].Scores, rec.Hosts[0].Metrics, rec.Hosts[0].MetricErrors)
	}
	md := rec.Markdown()
	for _, want := range []string{"Kubernetes (client-go, context kubetest): Server v", "2 of 2 nodes offer GPU resources", "| gpu-a |",
		"client-go: pending of context kubetest, namespace default"} {
		if !strings.Contains(md, want) {
			t.Errorf("record.md lacks %q:\n%s", want, md)
		}
	}

	// No cluster for these hosts: the step says so, the criterion is not
	// decided, kubectl on the host is asked for the declaration.
	rec = labs.Run(context.Background(), e, ts, l, labs.RunOptions{Params: map[string]string{"ns": "default"}})
	if rec.Passed || rec.Kubernetes == nil || rec.Kubernetes.Host != ts[0].Name {
		t.Errorf("without a cluster: passed %v, kubernetes %+v", rec.Passed, rec.Kubernetes)
	}
	if s := rec.Hosts[0].Steps[0].Skipped; !strings.Contains(s, "no Kubernetes cluster for these hosts: a [[kube]] table") {
		t.Errorf("the step without a cluster: skipped %q", s)
	}
}
