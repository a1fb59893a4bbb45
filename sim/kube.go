package sim

import (
	"context"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/sim/dgx"
)

// KubeContext is the name the simulated cluster goes by where a
// kubeconfig context's name would be shown.
const KubeContext = "simulated"

// KubeResync is how often a mirror reads the simulated cluster again
// for what time changes in it (events repeating, pods finishing).
const KubeResync = 10 * time.Second

// KubeClient is the fleet's simulated cluster as client-go sees it (see
// MirrorCluster), kept in step until ctx ends.
func (f *Fleet) KubeClient(ctx context.Context) (*cluster.Client, error) {
	return MirrorCluster(ctx, f.cluster, KubeResync)
}

// MirrorCluster serves a simulated cluster through client-go's fake
// clientset, SIMULATED: its tracker holds the cluster's objects
// (dgx.Cluster.KubeObjects), and every change kubectl makes on the
// simulated hosts, and every resync period, is applied to it as creates,
// updates and deletes, so that informers watching the fake see watch
// events as they would from an API server. The client's context is
// KubeContext; no kubeconfig names it. A fake clientset has no resource
// versions: a change applied between an informer's list and its watch
// reaches it only with the object's next change (the demo's changes come
// from a person at the keyboard, long after the informers started).
func MirrorCluster(ctx context.Context, c kubeSource, resync time.Duration) (*cluster.Client, error) {
	cs := fake.NewSimpleClientset()
	if d, ok := cs.Discovery().(*fakediscovery.FakeDiscovery); ok {
		d.FakedServerVersion = &version.Info{GitVersion: "v1.31.4", Major: "1", Minor: "31"} // the simulated control plane's
	}
	m := &mirror{src: c, cs: cs, have: map[string]mirrored{}}
	if err := m.reactors(); err != nil {
		return nil, err
	}
	if err := m.sync(); err != nil {
		return nil, err
	}
	go m.follow(ctx, resync)
	return &cluster.Client{Kube: cs, Context: KubeContext, Namespace: "default"}, nil
}

// kubeSource is a simulated cluster a mirror follows: *dgx.Cluster in
// this process, or a child's (Child).
type kubeSource interface {
	KubeObjects() (*dgx.KubeObjects, error)
	Changes() <-chan struct{}
	WriteNode(dgx.NodeWrite) error
	EvictPod(ns, name string) error
}

// mirror keeps a fake clientset's tracker equal to a simulated cluster.
type mirror struct {
	src    kubeSource
	cs     *fake.Clientset
	fields *managedfields.FieldManager // the managedFields of a node's update (kube_write.go)

	mu   sync.Mutex          // one sync at a time
	have map[string]mirrored // by resource/namespace/name: what the tracker holds
}

type mirrored struct {
	gvr schema.GroupVersionResource
	ns  string
	obj runtime.Object
}

func (m *mirror) follow(ctx context.Context, resync time.Duration) {
	t := time.NewTicker(resync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.src.Changes():
		case <-t.C:
		}
		_ = m.sync() // the simulation renders what it holds: an error here is a bug its tests catch
	}
}

// sync applies what changed in the simulated cluster since the last
// sync to the tracker.
func (m *mirror) sync() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.syncLocked()
}

// syncLocked is sync with m.mu held.
func (m *mirror) syncLocked() error {
	ko, err := m.src.KubeObjects()
	if err != nil {
		return err
	}
	want := mirroredObjects(ko)
	tr := m.cs.Tracker()
	for k, w := range want {
		old, ok := m.have[k]
		switch {
		case !ok:
			err = tr.Create(w.gvr, w.obj, w.ns)
		case !equality.Semantic.DeepEqual(old.obj, w.obj):
			err = tr.Update(w.gvr, w.obj, w.ns)
		}
		if err != nil {
			return fmt.Errorf("sim: mirror %s: %w", k, err)
		}
	}
	for k, old := range m.have {
		if _, ok := want[k]; !ok {
			if err := tr.Delete(old.gvr, old.ns, nameOf(old.obj)); err != nil {
				return fmt.Errorf("sim: mirror delete %s: %w", k, err)
			}
		}
	}
	m.have = want
	return nil
}

func nameOf(o runtime.Object) string {
	if m, ok := o.(interface{ GetName() string }); ok {
		return m.GetName()
	}
	return ""
}

// mirroredObjects keys every object by resource, namespace and name.
func mirroredObjects(ko *dgx.KubeObjects) map[string]mirrored {
	out := map[string]mirrored{}
	add := func(gvr schema.GroupVersionResource, ns, name string, obj runtime.Object) {
		out[gvr.Resource+"/"+ns+"/"+name] = mirrored{gvr, ns, obj}
	}
	core, sched, batch := corev1.SchemeGroupVersion, schedulingv1.SchemeGroupVersion, batchv1.SchemeGroupVersion
	for i := range ko.Namespaces {
		add(core.WithResource("namespaces"), "", ko.Namespaces[i].Name, &ko.Namespaces[i])
	}
	for i := range ko.Nodes {
		add(core.WithResource("nodes"), "", ko.Nodes[i].Name, &ko.Nodes[i])
	}
	for i := range ko.PriorityClasses {
		add(sched.WithResource("priorityclasses"), "", ko.PriorityClasses[i].Name, &ko.PriorityClasses[i])
	}
	for i := range ko.Pods {
		p := &ko.Pods[i]
		add(core.WithResource("pods"), p.Namespace, p.Name, p)
	}
	for i := range ko.Jobs {
		j := &ko.Jobs[i]
		add(batch.WithResource("jobs"), j.Namespace, j.Name, j)
	}
	for i := range ko.Events {
		e := &ko.Events[i]
		add(core.WithResource("events"), e.Namespace, e.Name, e)
	}
	for i := range ko.Quotas {
		q := &ko.Quotas[i]
		add(core.WithResource("resourcequotas"), q.Namespace, q.Name, q)
	}
	return out
}
