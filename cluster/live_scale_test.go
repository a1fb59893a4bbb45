package cluster_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/internal/kubetest"
)

// scalePods is pods of the scale benchmarks: one GPU pod in four (5 of
// a node's 8 GPUs held), the rest CPU only, bound round-robin to
// gpu-0000…; pending of them unbound and asking 16 GPUs (no node fits).
func scalePods(nodes, pods, pending int) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, pods)
	for i := range pods {
		res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
		node := fmt.Sprintf("gpu-%04d", i%nodes)
		switch {
		case i < pending:
			node, res["nvidia.com/gpu"] = "", resource.MustParse("16")
		case i%4 == 0:
			res["nvidia.com/gpu"] = resource.MustParse("1")
		}
		out = append(out, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: fmt.Sprintf("pod-%05d", i)},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "cuda", Resources: corev1.ResourceRequirements{Limits: res, Requests: res}}}}})
	}
	return out
}

// syncedWith waits on l's changes until it is synced with the nodes and
// pods given.
func syncedWith(b *testing.B, l *cluster.Live, nodes, pods int) {
	b.Helper()
	deadline := time.NewTimer(10 * time.Minute)
	defer deadline.Stop()
	for {
		o := l.Snapshot()
		if l.Status().State == cluster.Synced && len(o.Nodes) == nodes && len(o.Pods) == pods {
			return
		}
		select {
		case <-l.Changes():
		case <-deadline.C:
			b.Fatalf("not synced with %d nodes and %d pods in 10 minutes: %s, %d nodes, %d pods", nodes, pods, l.Status(), len(o.Nodes), len(o.Pods))
		}
	}
}

// analyse is what a view computes of a snapshot on each change.
func analyse(o *cluster.Objects) int {
	return len(o.GPUNodes()) + len(o.Pending("")) + len(o.Blocked("")) + len(o.Quotas(""))
}

// BenchmarkLiveSnapshot: Snapshot and the analysis of it at 1,000 nodes
// and 20,000 pods held by the informers (a fake clientset's objects, in
// memory).
func BenchmarkLiveSnapshot(b *testing.B) {
	var objs []kruntime.Object
	for i := range 1000 {
		objs = append(objs, kubetest.GPUNode(fmt.Sprintf("gpu-%04d", i), 8))
	}
	for _, p := range scalePods(1000, 20000, 100) {
		objs = append(objs, p)
	}
	l := cluster.StartLive(b.Context(), &cluster.Client{Kube: fake.NewSimpleClientset(objs...)}, cluster.LiveOptions{})
	syncedWith(b, l, 1000, 20000)
	b.Run("snapshot", func(b *testing.B) {
		for b.Loop() {
			_ = l.Snapshot()
		}
	})
	b.Run("snapshot+analysis", func(b *testing.B) {
		for b.Loop() {
			_ = analyse(l.Snapshot())
		}
	})
}

// BenchmarkLiveKwok: a real API server with 1,000 kwok nodes and 20,000
// pods (100 of them pending): how long Live takes from start to synced
// (list-s), the heap its caches hold (heap-MB), and Snapshot with the
// analysis (ns/op). Setting it up takes minutes: it runs only when asked
// (go test ./cluster -run '^$' -bench LiveKwok -benchtime 20x).
func BenchmarkLiveKwok(b *testing.B) {
	cp := kubetest.Start(b)
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = 2000, 4000
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	begin := time.Now()
	parallel(b, 1000, func(i int) error {
		return addNode(b.Context(), kube, kubetest.GPUNode(fmt.Sprintf("gpu-%04d", i), 8))
	})
	pods := scalePods(1000, 20000, 100)
	parallel(b, len(pods), func(i int) error {
		_, err := kube.CoreV1().Pods(metav1.NamespaceDefault).Create(b.Context(), pods[i], metav1.CreateOptions{})
		return err
	})
	create := time.Since(begin)
	pods = nil
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c, err := cluster.NewClient(cfg)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	l := cluster.StartLive(b.Context(), c, cluster.LiveOptions{})
	syncedWith(b, l, 1000, 20000)
	list := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := float64(after.HeapInuse-before.HeapInuse) / (1 << 20)
	for b.Loop() {
		_ = analyse(l.Snapshot())
	}
	// Reported after the loop: its first call clears the metrics.
	b.ReportMetric(create.Seconds(), "create-s")
	b.ReportMetric(list.Seconds(), "list-s")
	b.ReportMetric(heap, "heap-MB")
}

// addNode creates node and sets its status (a create drops it), as
// kubetest's AddNode does, with an error instead of failing the test (it
// runs on the benchmark's workers).
func addNode(ctx context.Context, kube kubernetes.Interface, node *corev1.Node) error {
	created, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		created.Status.Capacity, created.Status.Allocatable = node.Status.Capacity, node.Status.Allocatable
		_, err := kube.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
		if err != nil {
			if latest, gerr := kube.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{}); gerr == nil {
				created = latest
			}
		}
		return err
	})
}

// parallel runs f(0..n-1) on 16 workers, failing b on the first error.
func parallel(b *testing.B, n int, f func(i int) error) {
	b.Helper()
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	next := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					once.Do(func() { first = err })
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		b.Fatal(first)
	}
}
