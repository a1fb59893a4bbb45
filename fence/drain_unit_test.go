package fence_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gpulab/gpulab/fence"
)

// A drain stopped while an eviction is in flight still reports the pod,
// with what became of it (a unit shape: the eviction's answer is what
// the fake makes it).
func TestDrainStoppedMidEvictionReportsThePod(t *testing.T) {
	p := boundPod("serve-0", "gpu09", nil)
	p.Namespace = "default"
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "serve", UID: "u1", Controller: new(true)}}
	cs := fake.NewSimpleClientset(p)
	ctx, cancel := context.WithCancel(t.Context())
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		cancel() // Ctrl-C while the API server has not answered
		return true, nil, context.Canceled
	})
	got, err := fence.Drain(ctx, cs, "gpu09", fence.DrainOptions{Timeout: time.Minute, Retry: time.Second})
	if err != nil || len(got) != 1 || got[0].Outcome != fence.Blocked || got[0].Why == "" {
		t.Fatalf("drain stopped mid-eviction = %+v, %v: want the pod reported blocked, with why", got, err)
	}
}
