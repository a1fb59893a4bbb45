package fence

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// PodOutcome is what a drain did with one pod.
type PodOutcome string

const (
	Evicted     PodOutcome = "evicted"     // evicted, and gone from the node
	Terminating PodOutcome = "terminating" // evicted, still on the node at the deadline
	Blocked     PodOutcome = "blocked"     // its PodDisruptionBudget allowed no eviction before the deadline
	Left        PodOutcome = "left"        // not to be evicted: a DaemonSet's, a static pod, finished
	EvictFailed PodOutcome = "failed"      // the API server refused the eviction
)

// DrainedPod is one pod of a drained node.
type DrainedPod struct {
	Namespace string     `json:"namespace"`
	Name      string     `json:"name"`
	Outcome   PodOutcome `json:"outcome"`
	Why       string     `json:"why,omitempty"`
}

// DrainOptions bound a drain.
type DrainOptions struct {
	// Timeout bounds the whole drain: evictions a PodDisruptionBudget
	// refuses are tried again until then, and evicted pods waited for.
	Timeout time.Duration
	// Retry is how long to wait between tries of a refused eviction
	// (kubectl drain waits 5 s).
	Retry time.Duration
}

// Drain evicts node's pods through the eviction API, as kubectl drain
// does, never deleting one: the API server refuses an eviction that a
// PodDisruptionBudget forbids (429), and it is tried again until the
// timeout, then reported as blocked with the API server's words.
// DaemonSet pods (their controller would put them back at once), static
// pods (the kubelet's) and finished pods are left. Evicted pods are
// waited for until the timeout. Every pod of the node is reported, once.
func Drain(ctx context.Context, cs kubernetes.Interface, node string, o DrainOptions) ([]DrainedPod, error) {
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.Retry <= 0 {
		o.Retry = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	list, err := nodePods(ctx, cs, node)
	if err != nil {
		return nil, err
	}
	out := make([]DrainedPod, len(list))
	for i, p := range list {
		out[i] = DrainedPod{Namespace: p.Namespace, Name: p.Name}
		if why := leftAlone(&p); why != "" {
			out[i].Outcome, out[i].Why = Left, why
		}
	}
	d := drain{cs: cs, pods: list, out: out}
	d.run(ctx, o.Retry)
	return out, nil
}

// nodePods lists the pods bound to node. The API server filters them,
// and they are filtered again here: a server (or a proxy, a fake) that
// ignored the field selector must not make a drain evict every pod of
// the cluster.
func nodePods(ctx context.Context, cs kubernetes.Interface, node string) ([]corev1.Pod, error) {
	list, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil {
		return nil, fmt.Errorf("list the pods of node %s: %w", node, err)
	}
	return slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return p.Spec.NodeName != node }), nil
}

// leftAlone says why a drain leaves p, or "".
func leftAlone(p *corev1.Pod) string {
	if _, ok := p.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return "a static pod (the kubelet's own)"
	}
	if c := metav1.GetControllerOf(p); c != nil && c.Kind == "DaemonSet" {
		return "a DaemonSet's pod (" + c.Name + "): its controller would put it back"
	}
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return "finished (" + string(p.Status.Phase) + ")"
	}
	if metav1.GetControllerOf(p) == nil {
		return "no controller would make it again: evicted, it would be gone for good (kubectl drain refuses it without --force); evict or move it by hand if you mean it"
	}
	for _, v := range p.Spec.Volumes {
		if v.EmptyDir != nil {
			return "its emptyDir volume " + v.Name + " would be lost (kubectl drain refuses it without --delete-emptydir-data); evict it by hand if you mean it"
		}
	}
	return ""
}

// WouldDrain is what a drain of node would do with each of its pods now,
// for the plan: evict it (Outcome empty, Why says so), or leave it and
// why.
func WouldDrain(ctx context.Context, cs kubernetes.Interface, node string) ([]DrainedPod, error) {
	list, err := nodePods(ctx, cs, node)
	if err != nil {
		return nil, err
	}
	out := make([]DrainedPod, len(list))
	for i, p := range list {
		out[i] = DrainedPod{Namespace: p.Namespace, Name: p.Name, Why: "would be evicted (the eviction API: its disruption budget is asked)"}
		if why := leftAlone(&p); why != "" {
			out[i].Outcome, out[i].Why = Left, why
		}
	}
	return out, nil
}

// drain is one node's drain under way: its pods, and what became of
// each so far.
type drain struct {
	cs   kubernetes.Interface
	pods []corev1.Pod
	out  []DrainedPod
}

// run evicts the pods not left alone, tries those refused for their
// disruption budget again every retry, and looks whether the evicted are
// gone, until nothing is pending or ctx ends.
func (d *drain) run(ctx context.Context, retry time.Duration) {
	tick := time.NewTicker(retry)
	defer tick.Stop()
	for {
		pending := 0
		for i := range d.out {
			switch d.out[i].Outcome {
			case "", Blocked:
				d.evict(ctx, i)
			case Terminating:
				d.gone(ctx, i)
			}
			// An eviction the deadline cut short (no outcome yet) is
			// pending too: the timeout below says what became of it.
			if o := d.out[i].Outcome; o == Blocked || o == Terminating || o == "" {
				pending++
			}
		}
		if pending == 0 {
			return
		}
		select {
		case <-ctx.Done():
			d.timedOut()
			return
		case <-tick.C:
		}
	}
}

func (d *drain) evict(ctx context.Context, i int) {
	p := &d.pods[i]
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
	err := d.cs.PolicyV1().Evictions(p.Namespace).Evict(ctx, ev)
	switch {
	case err == nil:
		d.out[i].Outcome, d.out[i].Why = Terminating, ""
		d.gone(ctx, i)
	case apierrors.IsNotFound(err):
		d.out[i].Outcome, d.out[i].Why = Evicted, "gone before its eviction"
	case apierrors.IsTooManyRequests(err):
		d.out[i].Outcome, d.out[i].Why = Blocked, err.Error()
	case ctx.Err() != nil:
		// the deadline came during the call: the pod stays as it was
	default:
		d.out[i].Outcome, d.out[i].Why = EvictFailed, err.Error()
	}
}

// gone marks pod i evicted when it is gone (or replaced by a pod of its
// name with another UID).
func (d *drain) gone(ctx context.Context, i int) {
	p, err := d.cs.CoreV1().Pods(d.pods[i].Namespace).Get(ctx, d.pods[i].Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || err == nil && p.UID != d.pods[i].UID {
		d.out[i].Outcome = Evicted
	}
}

func (d *drain) timedOut() {
	for i := range d.out {
		switch d.out[i].Outcome {
		case Blocked:
			d.out[i].Why += " (tried until the drain's timeout; not forced)"
		case Terminating:
			d.out[i].Why = "evicted, still terminating at the drain's timeout"
		case "":
			d.out[i].Outcome, d.out[i].Why = Blocked, "not evicted: the drain was stopped (its timeout, or Ctrl-C) before its eviction was answered"
		}
	}
}
