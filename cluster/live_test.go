package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/internal/kubetest"
)

// waitLive waits, on the view's change notifications, until ok holds of
// a snapshot and the status, or fails the test after a minute.
func waitLive(t *testing.T, l *cluster.Live, what string, ok func(*cluster.Objects, cluster.LiveStatus) bool) *cluster.Objects {
	t.Helper()
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for {
		o, st := l.Snapshot(), l.Status()
		if ok(o, st) {
			return o
		}
		select {
		case _, open := <-l.Changes():
			if !open {
				t.Fatalf("the view stopped while waiting for %s", what)
			}
		case <-deadline.C:
			t.Fatalf("no %s within a minute; status: %s", what, st)
		}
	}
}

// stateLog is the states a view went through (LiveOptions.OnStatus).
type stateLog struct {
	mu     sync.Mutex
	states []cluster.LiveState
}

func (s *stateLog) add(st cluster.LiveStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.states); n == 0 || s.states[n-1] != st.State {
		s.states = append(s.states, st.State)
	}
}

// since is the states from the last time the view was in first.
func (s *stateLog) since(first cluster.LiveState) []cluster.LiveState {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.states) - 1; i >= 0; i-- {
		if s.states[i] == first {
			return slices.Clone(s.states[i:])
		}
	}
	return nil
}

func hasPod(o *cluster.Objects, name string, bound bool) bool {
	return slices.ContainsFunc(o.Pods, func(p *corev1.Pod) bool { return p.Name == name && (p.Spec.NodeName != "") == bound })
}

// Against a real API server and scheduler: the view syncs, sees a pod
// bound and a pod that does not fit with the scheduler's event, says the
// server is lost when it stops (keeping what it said last), recovers when
// it comes back, and stops cleanly.
func TestLiveFollowsARealAPIServer(t *testing.T) {
	cp := kubetest.Start(t)
	cp.AddNode(t, kubetest.GPUNode("gpu-a", 8))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var states stateLog
	l := cluster.StartLive(ctx, kubetestClient(t, cp), cluster.LiveOptions{Interval: 20 * time.Millisecond, Check: 100 * time.Millisecond, OnStatus: states.add})
	waitLive(t, l, "synced view with gpu-a", func(o *cluster.Objects, st cluster.LiveStatus) bool {
		return st.State == cluster.Synced && len(o.GPUNodes()) == 1
	})

	pods := cp.Client.CoreV1().Pods(metav1.NamespaceDefault)
	for _, p := range []*corev1.Pod{pod("small", "nvidia.com/gpu", 2, ""), pod("wide", "nvidia.com/gpu", 16, "")} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	o := waitLive(t, l, "small bound and wide explained", func(o *cluster.Objects, _ cluster.LiveStatus) bool {
		pending := o.Pending("")
		return hasPod(o, "small", true) && len(pending) == 1 && pending[0].Scheduling != nil
	})
	if got := o.GPUNodes()[0].Allocated["nvidia.com/gpu"]; got != 2 {
		t.Errorf("allocated on gpu-a = %d, want 2", got)
	}
	if why := o.Pending("")[0].Why; !strings.Contains(why, "default/wide waits for a node for 16 nvidia.com/gpu") || !strings.Contains(why, "none of 1 nodes fits") {
		t.Errorf("wide's why: %s", why)
	}

	cp.StopAPIServer(t)
	o = waitLive(t, l, "lost API server", func(_ *cluster.Objects, st cluster.LiveStatus) bool { return st.State == cluster.Lost })
	st := l.Status()
	if server := strings.TrimPrefix(cp.Config.Host, "https://"); st.Server != server || !strings.Contains(st.String(), "API server "+server+" unreachable since ") {
		t.Errorf("lost status = %q (server %q), want it to name %s", st, st.Server, server)
	}
	if !hasPod(o, "small", true) || len(o.GPUNodes()) != 1 {
		t.Errorf("a lost server emptied the view: %d pods, %d GPU nodes", len(o.Pods), len(o.GPUNodes()))
	}

	cp.StartAPIServer(t)
	// The pod deleted right after the restart: the view is reconnecting,
	// not synced, until its informers have delivered again.
	if err := pods.Delete(ctx, "small", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	waitLive(t, l, "recovered view", func(_ *cluster.Objects, st cluster.LiveStatus) bool { return st.State == cluster.Synced })
	if got := states.since(cluster.Lost); !slices.Equal(got, []cluster.LiveState{cluster.Lost, cluster.Reconnecting, cluster.Synced}) {
		t.Errorf("states after the server was lost: %v, want lost, reconnecting, synced", got)
	}
	waitLive(t, l, "the pod deleted after the restart gone", func(o *cluster.Objects, _ cluster.LiveStatus) bool { return !hasPod(o, "small", true) })
	if _, err := pods.Create(ctx, pod("after", "nvidia.com/gpu", 1, ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitLive(t, l, "a pod made after the server came back", func(o *cluster.Objects, _ cluster.LiveStatus) bool { return hasPod(o, "after", true) })

	cancel()
	select {
	case <-l.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the view did not stop within 30s of its context's end")
	}
	// Changes is closed: a change told before the end may still be
	// waiting in it (the test read it as "still open"), then it ends.
	for range 2 {
		if _, open := <-l.Changes(); !open {
			return
		}
	}
	t.Error("Changes is still open after the view stopped")
}

// A server that never answers makes the view Lost, not an error: it names
// the server, and it stops cleanly.
func TestLiveUnreachableFromTheStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connections are refused
	c, err := cluster.NewClient(&rest.Config{Host: "https://" + addr})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	l := cluster.StartLive(ctx, c, cluster.LiveOptions{Interval: 10 * time.Millisecond, Check: 50 * time.Millisecond})
	waitLive(t, l, "lost status", func(_ *cluster.Objects, st cluster.LiveStatus) bool { return st.State == cluster.Lost })
	if st := l.Status(); st.Server != addr || !strings.Contains(st.String(), "API server "+addr+" unreachable since ") || !strings.Contains(st.Err, "connection refused") {
		t.Errorf("status = %q (err %q), want %s unreachable, connection refused", st, st.Err, addr)
	}
	if st := l.Status(); !slices.Equal(st.Listing, []string{"nodes", "pods", "resourcequotas", "priorityclasses", "events"}) || st.Knows("pods") {
		t.Errorf("listing = %v, want every kind: none was ever listed", st.Listing)
	}
	cancel()
	select {
	case <-l.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the view did not stop within 30s of its context's end")
	}
}

// RouteKlog keeps client-go's logging off the terminal: klog's own calls
// and runtime.HandleError (an informer's failed watch) reach the writer
// given, and nothing reaches stderr.
func TestRouteKlogKeepsTheTerminalClean(t *testing.T) {
	stderr, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = stderr
	defer func() { os.Stderr = saved }()
	var log bytes.Buffer
	cluster.RouteKlog(&log)
	defer cluster.RouteKlog(nil)
	klog.Error("klog error line")
	klog.Warning("klog warning line")
	klog.ErrorS(errors.New("boom"), "structured error line")
	utilruntime.HandleError(errors.New(`Failed to watch *v1.Pod: dial tcp 127.0.0.1:6443: connect: connection refused`))
	klog.Flush()
	cluster.RouteKlog(nil) // no line reaches log from here on: it can be read
	os.Stderr = saved
	written, err := os.ReadFile(stderr.Name())
	if err != nil {
		t.Fatal(err)
	}
	if len(written) > 0 {
		t.Errorf("klog wrote to stderr:\n%s", written)
	}
	for _, want := range []string{"klog error line", "klog warning line", "structured error line", "connection refused"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, log.String())
		}
	}
}

// Live reads the queue objects again and again (LiveOptions.Queues): a
// Job Kueue has not admitted, whose Workload is made after the view
// started, shows among the blocked workloads.
func TestLiveReadsKueue(t *testing.T) {
	cp := kubetest.Start(t)
	cp.AddNode(t, kubetest.GPUNode("gpu-a", 8))
	cp.Namespace(t, "ml")
	c := kubetestClient(t, cp)
	for _, kind := range []struct{ plural, kind string }{{"clusterqueues", "ClusterQueue"}, {"localqueues", "LocalQueue"}, {"workloads", "Workload"}} {
		crd(t, c, "kueue.x-k8s.io", "v1beta1", kind.plural, kind.kind, kind.plural != "clusterqueues")
	}
	l := cluster.StartLive(t.Context(), c, cluster.LiveOptions{Interval: 20 * time.Millisecond, Queues: 100 * time.Millisecond})
	gvr := func(r string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta1", Resource: r}
	}
	createWithStatus(t, c, gvr("clusterqueues"), "", map[string]any{"kind": "ClusterQueue", "metadata": map[string]any{"name": "gpu-cq"},
		"spec": map[string]any{"resourceGroups": []any{map[string]any{"coveredResources": []any{"nvidia.com/gpu"},
			"flavors": []any{map[string]any{"name": "a100", "resources": []any{map[string]any{"name": "nvidia.com/gpu", "nominalQuota": "8"}}}}}}}})
	createWithStatus(t, c, gvr("localqueues"), "ml", map[string]any{"kind": "LocalQueue", "metadata": map[string]any{"name": "team"},
		"spec": map[string]any{"clusterQueue": "gpu-cq"}})
	suspend := true
	job, err := cp.Client.BatchV1().Jobs("ml").Create(t.Context(), &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "sweep"},
		Spec: batchv1.JobSpec{Suspend: &suspend, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "cuda"}}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	createWithStatus(t, c, gvr("workloads"), "ml", map[string]any{"kind": "Workload", "metadata": map[string]any{"name": "job-sweep",
		"ownerReferences": []any{map[string]any{"apiVersion": "batch/v1", "kind": "Job", "name": "sweep", "uid": string(job.UID)}}},
		"spec": map[string]any{"queueName": "team", "podSets": []any{map[string]any{"name": "main", "count": int64(1),
			"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "cuda"}}}}}}}})
	o := waitLive(t, l, "the Job Kueue holds", func(o *cluster.Objects, _ cluster.LiveStatus) bool {
		b := o.Blocked("ml")
		return len(b) == 1 && b[0].Name == "sweep"
	})
	if b := o.Blocked("ml")[0]; b.By != "Kueue ClusterQueue gpu-cq" || !strings.Contains(b.Why, "Kueue has not admitted its Workload job-sweep") {
		t.Errorf("blocked: %+v", b)
	}
}
