//go:build bench

package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpulab/gpulab/cluster"
	"github.com/gpulab/gpulab/internal/kubetest"
)

// The cluster of issue 13's benchmark: 1,000 GPU nodes (8 GPUs each) and
// 20,000 pods: 6 one-GPU pods on every node, 14,000 pods without GPUs,
// and pendingPods pods asking 4 GPUs that no node has free.
const (
	kubeNodes   = 1000
	gpuPerNode  = 6
	cpuPods     = 14000
	pendingPods = 100
)

// TestKubeBenchmark fills a real API server (kubetest: etcd, kube-apiserver,
// kube-scheduler, kwok playing every kubelet) with the cluster above, then
// measures side by side, each the median of 3 runs after a warm one:
//   - gpulab cluster nodes and gpulab cluster pending -A (the binaries):
//     wall time and peak RSS;
//   - kubectl describe nodes (what an operator reads for allocated GPUs)
//     and kubectl get pods -A -o json (what a script lists), when
//     tools/kube/build-kubectl.sh has built kubectl of the same version;
//   - cluster.Read in this process: time and the heap it keeps.
//
// The Cluster tab's View() at this size is BenchmarkClusterView in tui.
func TestKubeBenchmark(t *testing.T) {
	cp := kubetest.Start(t)
	fill(t, cp)
	dir := t.TempDir()
	gpulab := build(t, dir, "gpulab", "..")
	env := append(os.Environ(), "KUBECONFIG="+cp.Kubeconfig, "HOME="+dir)

	type row struct {
		name     string
		argv     []string
		wall     time.Duration
		rss      float64
		baseline string
	}
	rows := []*row{
		{name: "gpulab cluster nodes", argv: []string{gpulab, "cluster", "nodes"}},
		{name: "gpulab cluster pending -A", argv: []string{gpulab, "cluster", "pending", "-A"}},
	}
	if kubectl := kubectlBin(t); kubectl != "" {
		rows = append(rows,
			&row{name: "kubectl describe nodes", argv: []string{kubectl, "describe", "nodes"}, baseline: "gpulab cluster nodes"},
			&row{name: "kubectl get pods -A -o json", argv: []string{kubectl, "get", "pods", "-A", "-o", "json"}, baseline: "gpulab cluster pending -A"})
	} else {
		t.Log("kubectl is not built (tools/kube/build-kubectl.sh): gpulab's figures alone")
	}
	for _, r := range rows {
		r.wall, r.rss = medianRun(t, env, r.argv)
	}
	byName := map[string]*row{}
	for _, r := range rows {
		byName[r.name] = r
	}
	fmt.Printf("\n%d nodes, %d pods (kubetest on loopback), median of 3:\n", kubeNodes, kubeNodes*gpuPerNode+cpuPods+pendingPods)
	for _, r := range rows {
		ratio := ""
		if b := byName[r.baseline]; b != nil {
			ratio = fmt.Sprintf("  (%.1fx the time of %s, %.1fx its memory)", r.wall.Seconds()/b.wall.Seconds(), b.name, r.rss/b.rss)
		}
		fmt.Printf("  %-28s %6.2f s  peak RSS %6.1f MiB%s\n", r.name, r.wall.Seconds(), r.rss, ratio)
	}
	inProcess(t, cp)
}

// fill creates the nodes and pods with 16 clients at once, and waits until
// kwok has run every bound pod, so that the measurements do not share the
// CPUs with it.
func fill(t *testing.T, cp *kubetest.ControlPlane) {
	start := time.Now()
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = -1, 0 // no client-side limit: the server is the bound
	c := kubernetes.NewForConfigOrDie(cfg)
	parallel(t, kubeNodes, func(i int) error {
		cp.AddNode(t, kubetest.GPUNode(fmt.Sprintf("gpu%04d", i), 8))
		return nil
	})
	total := kubeNodes*gpuPerNode + cpuPods + pendingPods
	parallel(t, total, func(i int) error {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%05d", i)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "cuda"}}}}
		switch {
		case i < kubeNodes*gpuPerNode:
			p.Spec.NodeName = fmt.Sprintf("gpu%04d", i%kubeNodes)
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
		case i < kubeNodes*gpuPerNode+cpuPods:
			p.Spec.NodeName = fmt.Sprintf("gpu%04d", i%kubeNodes)
		default:
			p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")}
		}
		_, err := c.CoreV1().Pods(metav1.NamespaceDefault).Create(context.Background(), p, metav1.CreateOptions{})
		return err
	})
	t.Logf("created %d nodes and %d pods in %.1f s", kubeNodes, total, time.Since(start).Seconds())
	for deadline := time.Now().Add(10 * time.Minute); ; {
		running := countPods(t, c, "status.phase=Running")
		if running >= kubeNodes*gpuPerNode+cpuPods {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kwok ran %d of %d bound pods in 10 minutes", running, kubeNodes*gpuPerNode+cpuPods)
		}
		time.Sleep(time.Second) // kwok's progress, read from the API server
	}
	t.Logf("kwok ran every bound pod %.1f s after the start", time.Since(start).Seconds())
}

func parallel(t *testing.T, n int, f func(int) error) {
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	next := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

func countPods(t *testing.T, c kubernetes.Interface, sel string) int {
	n, cont := 0, ""
	for {
		l, err := c.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{FieldSelector: sel, Limit: 5000, Continue: cont})
		if err != nil {
			t.Fatal(err)
		}
		n += len(l.Items)
		if cont = l.Continue; cont == "" {
			return n
		}
	}
}

// medianRun runs a command 1 + 3 times and returns the median wall time
// and the largest peak RSS (MiB) of the 3.
func medianRun(t *testing.T, env, argv []string) (time.Duration, float64) {
	var walls []time.Duration
	var rss float64
	for i := range 4 {
		c := exec.Command(argv[0], argv[1:]...)
		c.Env = env
		c.Stdout, c.Stderr = nil, nil
		start := time.Now()
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		peak := peakRSS(c)
		err := c.Wait()
		d := time.Since(start)
		mib := peak()
		if err != nil && c.ProcessState.ExitCode() != 1 { // pending exits 1 when pods wait
			t.Fatalf("%s: %v", strings.Join(argv, " "), err)
		}
		if i == 0 {
			continue
		}
		walls = append(walls, d)
		rss = max(rss, mib)
	}
	slices.Sort(walls)
	return walls[len(walls)/2], rss
}

// inProcess measures cluster.Read here: time, and the heap it keeps.
func inProcess(t *testing.T, cp *kubetest.ControlPlane) {
	c, err := cluster.NewClient(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	o, err := cluster.Read(context.Background(), c, "", cluster.Scheduling)
	if err != nil {
		t.Fatal(err)
	}
	d := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&after)
	start = time.Now()
	nodes, pending := o.GPUNodes(), o.Pending("")
	analysis := time.Since(start)
	fmt.Printf("  cluster.Read in process: %.2f s for %d nodes, %d pods, %d events; keeps %.1f MiB of heap; GPU nodes and pending (%d, %d) computed in %.0f ms\n",
		d.Seconds(), len(o.Nodes), len(o.Pods), len(o.Events), float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), len(nodes), len(pending), float64(analysis.Microseconds())/1000)
	runtime.KeepAlive(o)
}

// kubectlBin is the kubectl tools/kube/build-kubectl.sh built, or "".
func kubectlBin(t *testing.T) string {
	out, err := exec.Command("../tools/kube/build-kubectl.sh", "--print-bin").Output()
	if err != nil {
		return ""
	}
	p := filepath.Join(strings.TrimSpace(string(out)), "kubectl")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}
