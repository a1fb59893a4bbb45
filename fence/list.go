package fence

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Fenced is one node gpulab fenced, as the cluster holds it now.
type Fenced struct {
	Node string `json:"node"`
	// In is the scheduler: InKubernetes or InSlurm.
	In string `json:"in"`
	Fence
	// Cordoned is whether the node is unschedulable now.
	Cordoned bool `json:"unschedulable"`
}

// List is every node of the cluster that carries a gpulab fence, with
// what was undone since by hand (Fence.Drift), in the API server's order
// (by name).
func List(ctx context.Context, cs kubernetes.Interface) ([]Fenced, error) {
	var out []Fenced
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := cs.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list nodes: %w", err)
		}
		for i := range list.Items {
			n := &list.Items[i]
			if f := ReadFence(n); f != nil {
				out = append(out, Fenced{Node: n.Name, In: InKubernetes, Fence: *f, Cordoned: n.Spec.Unschedulable})
			}
		}
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}
