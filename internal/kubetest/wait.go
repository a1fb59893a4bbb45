package kubetest

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// decideTimeout bounds WaitScheduled: the scheduler decides in
// milliseconds; minutes only on a machine far busier than a test expects.
const decideTimeout = 2 * time.Minute

// WaitScheduled returns once the scheduler has decided about each of the
// pods of namespace ns named: placed (its Scheduled event) or not (its
// FailedScheduling event, which says why). It waits on a watch of the
// namespace's events, not a clock.
func (cp *ControlPlane) WaitScheduled(t testing.TB, ns string, pods ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), decideTimeout)
	defer cancel()
	events := cp.Client.CoreV1().Events(ns)
	for {
		l, err := events.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list the events of %s: %v (waiting for the scheduler's word on %v)", ns, err, pods)
		}
		undecided := undecidedPods(l.Items, pods)
		if len(undecided) == 0 {
			return
		}
		w, err := events.Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
		if err != nil {
			t.Fatalf("watch the events of %s: %v", ns, err)
		}
		select { // any new event: read the list again
		case <-w.ResultChan():
		case <-ctx.Done():
			w.Stop()
			t.Fatalf("the scheduler said nothing of %v in %v", undecided, decideTimeout)
		}
		w.Stop()
	}
}

// undecidedPods are the pods no Scheduled or FailedScheduling event names.
func undecidedPods(events []corev1.Event, pods []string) []string {
	decided := map[string]bool{}
	for _, e := range events {
		if e.InvolvedObject.Kind == "Pod" && (e.Reason == "Scheduled" || e.Reason == "FailedScheduling") {
			decided[e.InvolvedObject.Name] = true
		}
	}
	var out []string
	for _, p := range pods {
		if !decided[p] {
			out = append(out, p)
		}
	}
	return out
}
