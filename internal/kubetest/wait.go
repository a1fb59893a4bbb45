package kubetest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
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

// waitSchedulerNodes returns once the scheduler's cache holds as many
// nodes as the API server lists (its scheduler_cache_size gauge): a pod
// created after it is judged against every node, so that its
// FailedScheduling event counts them all ("0/2 nodes are available"), not
// the ones the scheduler's informer had seen by then on a busy machine.
func (cp *ControlPlane) waitSchedulerNodes(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), decideTimeout)
	defer cancel()
	nodes, err := cp.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list nodes: %v", err)
	}
	want := len(nodes.Items)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		got, err := cp.schedulerNodes(ctx)
		if err == nil && got >= want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the scheduler's cache did not reach the API server's %d nodes in %v: %d, %v", want, decideTimeout, got, err)
		case <-tick.C:
		}
	}
}

// schedulerNodes reads scheduler_cache_size{type="nodes"} off the
// scheduler's /metrics.
func (cp *ControlPlane) schedulerNodes(ctx context.Context) (int, error) {
	callCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(callCtx, http.MethodGet, cp.schedulerURL+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := cp.scheduler.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s/metrics: %s", cp.schedulerURL, resp.Status)
	}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 16<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	const gauge = `scheduler_cache_size{type="nodes"} `
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), gauge); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int(f), err
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s/metrics has no %s", cp.schedulerURL, strings.TrimSpace(gauge))
}

// WaitPods returns once ok holds for the pods of namespace ns, waiting on
// a watch of them (two minutes at most); it fails naming what it waited
// for and the pods it last saw.
func (cp *ControlPlane) WaitPods(t testing.TB, ns string, ok func([]corev1.Pod) bool, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), decideTimeout)
	defer cancel()
	pods := cp.Client.CoreV1().Pods(ns)
	for {
		l, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list pods, waiting for %s: %v", what, err)
		}
		if ok(l.Items) {
			return
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
		if err != nil {
			t.Fatalf("watch pods, waiting for %s: %v", what, err)
		}
		select {
		case <-w.ResultChan():
		case <-ctx.Done():
			w.Stop()
			var left []string
			for _, p := range l.Items {
				left = append(left, p.Name+" "+string(p.Status.Phase))
			}
			t.Fatalf("waited %v for %s; pods: %v", decideTimeout, what, left)
		}
		w.Stop()
	}
}
