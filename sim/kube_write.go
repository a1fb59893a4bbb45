package sim

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gpulab/gpulab/sim/dgx"
)

// The simulated cluster takes the writes gpulab makes (a fence): a
// node's update, which reaches the simulation (dgx.Cluster.WriteNode)
// with the managedFields an API server would compute for its writer,
// and the eviction API. Each is applied to the simulation first, then
// mirrored, so that the simulation stays the one model: kubectl on the
// hosts, the scheduler and the mirror's informers all see it. Other
// writes to nodes are refused as an API server refuses what it does not
// serve; lists of pods honour the field selectors kubectl and a drain
// use.

var (
	nodesResource = corev1.SchemeGroupVersion.WithResource("nodes")
	podsResource  = corev1.SchemeGroupVersion.WithResource("pods")
)

func (m *mirror) reactors() error {
	fm, err := managedfields.NewDefaultFieldManager(applyconfigurations.NewTypeConverter(scheme.Scheme), scheme.Scheme, noDefaults{},
		scheme.Scheme, corev1.SchemeGroupVersion.WithKind("Node"), corev1.SchemeGroupVersion, "", nil)
	if err != nil {
		return fmt.Errorf("sim: the simulated cluster's field manager: %w", err)
	}
	m.fields = fm
	m.cs.PrependReactor("update", "nodes", m.updateNode)
	m.cs.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewMethodNotSupported(nodesResource.GroupResource(), "patch (the SIMULATED cluster takes a node's update)")
	})
	m.cs.PrependReactor("create", "pods", m.evict)
	m.cs.PrependReactor("list", "pods", m.listPods)
	return nil
}

// noDefaults defaults nothing: the mirrored objects are whole.
type noDefaults struct{}

func (noDefaults) Default(runtime.Object) {}

// updateNode takes a node's update: its cordon, taints and annotations.
func (m *mirror) updateNode(a k8stesting.Action) (bool, runtime.Object, error) {
	ua, ok := a.(k8stesting.UpdateActionImpl)
	if !ok {
		return false, nil, nil
	}
	n, ok := ua.GetObject().(*corev1.Node)
	if !ok || ua.GetSubresource() != "" {
		return true, nil, apierrors.NewMethodNotSupported(nodesResource.GroupResource(), "update of "+ua.GetSubresource()+" (the SIMULATED cluster takes a node's cordon, taints and annotations)")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	live, err := m.cs.Tracker().Get(nodesResource, "", n.Name)
	if err != nil {
		return true, nil, err
	}
	old := live.(*corev1.Node)
	if !onlyWritable(old, n) {
		return true, nil, apierrors.NewForbidden(nodesResource.GroupResource(), n.Name,
			errors.New("the SIMULATED cluster takes a node's cordon (spec.unschedulable), taints and annotations, and nothing else of it"))
	}
	managed, err := m.managedFields(old, n, ua.UpdateOptions.FieldManager)
	if err != nil {
		return true, nil, apierrors.NewInternalError(err)
	}
	err = m.src.WriteNode(dgx.NodeWrite{Name: n.Name, ResourceVersion: n.ResourceVersion, Unschedulable: n.Spec.Unschedulable,
		Taints: n.Spec.Taints, Annotations: n.Annotations, ManagedFields: managed})
	if err != nil {
		return true, nil, apiError(nodesResource, n.Name, err)
	}
	if err := m.syncLocked(); err != nil {
		return true, nil, apierrors.NewInternalError(err)
	}
	obj, err := m.cs.Tracker().Get(nodesResource, "", n.Name)
	return true, obj, err
}

// managedFields are the node's managedFields after manager's update of
// old to n, as an API server computes them. A simulated node that no
// client wrote yet has none: it is taken as the kubelet made it, as a
// real node is, or the field manager would track nothing on it.
func (m *mirror) managedFields(old, n *corev1.Node, manager string) ([]metav1.ManagedFieldsEntry, error) {
	old = old.DeepCopy()
	if len(old.ManagedFields) == 0 {
		made, err := m.fields.Update(&corev1.Node{TypeMeta: old.TypeMeta}, old.DeepCopy(), "kubelet")
		if err != nil {
			return nil, err
		}
		old.ManagedFields = made.(*corev1.Node).ManagedFields
	}
	in := n.DeepCopy()
	in.TypeMeta = old.TypeMeta
	out, err := m.fields.Update(old, in, manager)
	if err != nil {
		return nil, err
	}
	return out.(*corev1.Node).ManagedFields, nil
}

// onlyWritable says whether n differs from old only in what a client
// may write on a simulated node (its status, as on an API server, is
// not written by an update of the node).
func onlyWritable(old, n *corev1.Node) bool {
	c := n.DeepCopy()
	c.TypeMeta, c.ResourceVersion, c.ManagedFields, c.Status = old.TypeMeta, old.ResourceVersion, old.ManagedFields, old.Status
	c.Spec.Unschedulable, c.Spec.Taints, c.Annotations = old.Spec.Unschedulable, old.Spec.Taints, old.Annotations
	return equality.Semantic.DeepEqual(c, old)
}

// evict is the eviction API (pods/NAME/eviction); other creates of pods
// go to the mirror as before.
func (m *mirror) evict(a k8stesting.Action) (bool, runtime.Object, error) {
	ca, ok := a.(k8stesting.CreateActionImpl)
	if !ok || ca.GetSubresource() != "eviction" {
		return false, nil, nil
	}
	ev, ok := ca.GetObject().(*policyv1.Eviction)
	if !ok {
		return true, nil, apierrors.NewBadRequest("not an Eviction")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.src.EvictPod(ca.GetNamespace(), ev.Name); err != nil {
		return true, nil, apiError(podsResource, ev.Name, err)
	}
	if err := m.syncLocked(); err != nil {
		return true, nil, apierrors.NewInternalError(err)
	}
	return true, nil, nil
}

// listPods lists pods as the API server does for the field selectors
// on spec.nodeName, status.phase, metadata.name and metadata.namespace
// (the fake clientset would ignore them).
func (m *mirror) listPods(a k8stesting.Action) (bool, runtime.Object, error) {
	la, ok := a.(k8stesting.ListActionImpl)
	if !ok || la.ListRestrictions.Fields == nil || la.ListRestrictions.Fields.Empty() {
		return false, nil, nil
	}
	sel := la.ListRestrictions.Fields
	for _, r := range sel.Requirements() {
		switch r.Field {
		case "spec.nodeName", "status.phase", "metadata.name", "metadata.namespace":
		default:
			return true, nil, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", r.Field))
		}
	}
	obj, err := m.cs.Tracker().List(podsResource, corev1.SchemeGroupVersion.WithKind("Pod"), la.GetNamespace())
	if err != nil {
		return true, nil, err
	}
	list := obj.(*corev1.PodList)
	kept := list.Items[:0]
	for _, p := range list.Items {
		if la.ListRestrictions.Labels != nil && !la.ListRestrictions.Labels.Matches(labels.Set(p.Labels)) {
			continue
		}
		if sel.Matches(fields.Set{"spec.nodeName": p.Spec.NodeName, "status.phase": string(p.Status.Phase),
			"metadata.name": p.Name, "metadata.namespace": p.Namespace}) {
			kept = append(kept, p)
		}
	}
	list.Items = kept
	return true, list, nil
}

// apiError is a simulation's refusal as the API server says it; a
// simulation that does not answer (its process stopped) is a server
// unavailable.
func apiError(res schema.GroupVersionResource, name string, err error) error {
	switch {
	case errors.Is(err, dgx.ErrConflict):
		return apierrors.NewConflict(res.GroupResource(), name, err)
	case errors.Is(err, dgx.ErrNotFound):
		return apierrors.NewNotFound(res.GroupResource(), name)
	}
	return apierrors.NewServiceUnavailable(err.Error())
}
