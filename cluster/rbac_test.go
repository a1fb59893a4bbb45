package cluster_test

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/internal/kubetest"
)

// Read-only access to one namespace is enough: a reader who may list the
// pods, events, Jobs and quotas of ml, and nothing at the cluster scope
// (no nodes, no other namespaces, no priority classes, no DRA or
// discovery of them), gets ml's pending pods explained, with what it
// could not read said, and no claim that GPUs are or are not free. With
// nodes and pods cluster-wide too, but DRA's ResourceSlices forbidden,
// the rest is read and the slices are said to be left out.
func TestReadWithNamespaceAccessOnly(t *testing.T) {
	cp := kubetest.Start(t)
	cp.AddNode(t, kubetest.GPUNode("gpu-a", 4))
	cp.Namespace(t, "ml")
	if _, err := cp.Client.CoreV1().Pods("ml").Create(t.Context(), pod("big", "nvidia.com/gpu", 8, ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	read := []string{"get", "list", "watch"}
	nsRules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "events", "resourcequotas"}, Verbs: read},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: read}}
	narrow, err := cluster.NewClient(cp.ServiceAccountConfig(t, "ml", "reader", nsRules, nil))
	if err != nil {
		t.Fatal(err)
	}
	cp.WaitScheduled(t, "ml", "big")
	o, err := cluster.Read(context.Background(), narrow, "ml", cluster.Scheduling)
	if err != nil {
		t.Fatalf("a namespace reader: %v", err)
	}
	if p := o.Pending("ml"); len(p) != 1 || p[0].Scheduling == nil {
		t.Fatalf("the namespace reader's pending: %+v", p)
	}
	notes := strings.Join(o.Unreadable, "\n")
	contains(t, "what the namespace reader could not read", notes, "list nodes: forbidden (RBAC)", "list pods at the cluster scope: forbidden (RBAC): only namespace ml's are read",
		"list priority classes: forbidden (RBAC)")
	big := o.Pending("ml")[0]
	contains(t, "big's why", big.Why, "ml/big waits for a node for 8 nvidia.com/gpu on one node.", "Insufficient nvidia.com/gpu",
		"Whether 8 nvidia.com/gpu are free on a node is unknown: these credentials may not list nodes (RBAC).")
	if strings.Contains(big.Why, "it may use") || strings.Contains(big.Why, "would have room") {
		t.Errorf("a reader who cannot list nodes is told how many GPUs are free:\n%s", big.Why)
	}

	// Nodes and pods everywhere, but not DRA's slices: served, forbidden,
	// left out.
	clusterRules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes", "pods", "events", "resourcequotas"}, Verbs: read},
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims"}, Verbs: read}}
	wide, err := cluster.NewClient(cp.ServiceAccountConfig(t, "ml", "wide", nil, clusterRules))
	if err != nil {
		t.Fatal(err)
	}
	o, err = cluster.Read(context.Background(), wide, "", cluster.Scheduling)
	if err != nil {
		t.Fatalf("a reader without ResourceSlices: %v", err)
	}
	contains(t, "what the wide reader could not read", strings.Join(o.Unreadable, "\n"), "list resourceslices.resource.k8s.io: forbidden (RBAC): served but not read")
	if len(o.GPUNodes()) != 1 || o.NodesForbidden || o.PodsOnly != "" {
		t.Errorf("the wide reader's nodes: %+v", o.GPUNodes())
	}
	contains(t, "big's why for the wide reader", o.Pending("ml")[0].Why, "It can never run as asked: the nodes it may use offer at most 4 nvidia.com/gpu (gpu-a: allocatable 4 of capacity 4)")

	// Without Scheduling (gpulab cluster nodes) every list is required.
	if _, err := cluster.Read(context.Background(), narrow, "", 0); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("nodes for a namespace reader: %v, want the RBAC refusal", err)
	}
}
