package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/fence"
)

// slurmFake is a Slurm controller as scontrol on a login host answers:
// show node (the text), update State=DRAIN; down names the nodes whose
// reads fail, as an unreachable login host's would.
type slurmFake struct {
	mu      sync.Mutex
	reason  map[string]string
	down    map[string]bool
	updates []string
}

func (s *slurmFake) run(_ context.Context, command string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := strings.Fields(command)
	switch {
	case len(f) == 4 && f[1] == "show":
		if s.down[f[3]] {
			return "", errors.New("ssh: connect to host login: connection refused")
		}
		state := "IDLE"
		if r := s.reason[f[3]]; r != "" {
			state = "IDLE+DRAIN\n   Reason=" + r + " [root@2026-12-06T02:14:00]"
		}
		return fmt.Sprintf("NodeName=%s Arch=x86_64\n   Partitions=gpu\n   State=%s\n", f[3], state), nil
	case len(f) > 2 && f[1] == "update":
		s.updates = append(s.updates, command)
		node := strings.TrimPrefix(f[2], "NodeName=")
		_, r, _ := strings.Cut(command, "Reason=")
		s.reason[node] = strings.Trim(r, "'")
		return "", nil
	}
	return "", fmt.Errorf("scontrol: %q not simulated here", command)
}

func node(name string) *corev1.Node { return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}} }

// The plans of a fence in two schedulers, in unit shape (the real
// parts are cli's TestFenceInBothClusters): each host gets a plan in
// each scheduler that has it, one in neither is refused; a node whose
// Slurm side cannot be read is not fenced in Kubernetes alone; and where
// the Kubernetes write fails at apply time, the Slurm drain is not made.
func TestFenceInTwoSchedulers(t *testing.T) {
	cs := fake.NewClientset(node("n1"), node("n2"), node("n3"))
	sl := &slurmFake{reason: map[string]string{}, down: map[string]bool{}}
	spec := FenceSpec{Kube: &cluster.Client{Kube: cs, Context: "test"}, Scontrol: sl.run, SlurmLogin: "login",
		KubeHas:  func(h string) bool { return h == "n1" || h == "n3" },
		SlurmHas: func(h string) bool { return h == "n1" || h == "n2" }}
	req := fence.Request{Reason: "xid 79", Record: "r1", By: "a@b"}
	ctx := t.Context()

	var got []string
	for _, p := range spec.plan(ctx, []string{"n1", "n2", "n3", "n4"}, req, false) {
		got = append(got, p.Node+" "+p.In+" "+map[bool]string{true: "refused", false: "changes"}[p.Refused != ""])
	}
	if want := "n1 kubernetes changes,n1 slurm changes,n2 slurm changes,n3 kubernetes changes,n4  refused"; strings.Join(got, ",") != want {
		t.Errorf("plans = %q, want %q", strings.Join(got, ","), want)
	}

	sl.down["n1"] = true
	plans := spec.plan(ctx, []string{"n1"}, req, false)
	if len(plans) != 2 || plans[0].Refused == "" || !strings.Contains(plans[0].Refused, "not fenced in kubernetes alone") || plans[1].Error == "" {
		t.Errorf("plans with n1's Slurm side not read = %+v", plans)
	}
	sl.down["n1"] = false

	cs.PrependReactor("update", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("the API server is gone")
	})
	plans = spec.plan(ctx, []string{"n1"}, req, false)
	res := spec.apply(ctx, plans, req, false)
	if len(res) != 2 || res[0].Outcome != fence.Failed || res[1].Outcome != fence.Refused || !strings.Contains(res[1].Detail, "not drained in slurm alone") {
		t.Errorf("apply with the Kubernetes write failing = %+v", res)
	}
	if len(sl.updates) != 0 {
		t.Errorf("scontrol updates made: %q, want none", sl.updates)
	}
}
