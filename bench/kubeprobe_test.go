//go:build bench

package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/gpulab/gpulab/internal/kubetest"
	"github.com/gpulab/gpulab/sim"
)

// TestKubeProbeBenchmark is issue 23's figure: the simulated DGX fleet of
// GPULAB_BENCH_NODES hosts (default 1,000), each a real API server's node
// whose kubelet endpoint is its host, probed through the API server:
//   - gpulab probe --via kube -H '*' on every node: all answers, the first
//     answer, peak RSS, and the API requests made per node (the API
//     server's apiserver_request_total, before and after);
//   - the same probe over SSH on the same simulated hosts (what the
//     simulation itself costs);
//   - gpulab exec --via kube -- nvidia-smi -q on every node, the same;
//   - beside it, on the first GPULAB_BENCH_KUBECTL_NODES nodes (default
//     100) and at the same concurrency, what an operator would otherwise
//     run per node in a shell loop: kubectl debug node/N
//     --profile=sysadmin, kubectl wait for the pod, kubectl exec into it
//     `chroot /host nvidia-smi -q` (the GPUs' state, as the probe reads
//     it), kubectl delete the pod; and gpulab exec and probe --via kube
//     on the same nodes, for the ratios.
//
// kubectl is tools/kube/build-kubectl.sh's (make bench-kube builds it).
func TestKubeProbeBenchmark(t *testing.T) {
	nodes := envInt(t, "GPULAB_BENCH_NODES", 1000)
	sample := min(nodes, envInt(t, "GPULAB_BENCH_KUBECTL_NODES", 100))
	const concurrency = 64
	cp := kubetest.Start(t)
	f, err := sim.Start(t.Context(), sim.Config{Hosts: nodes, Kubelet: &sim.KubeletConfig{ClientCA: cp.KubeletClientCA}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	addSimNodes(t, cp, f.Hosts())
	dir := t.TempDir()
	gpulab := build(t, dir, "gpulab", "..")
	env := append(os.Environ(), "HOME="+dir)
	probe := func(hosts string) probeRun {
		// One reading (--window 0): the simulated fleet runs 16 real probe
		// processes at once, and a window of sampling each would measure
		// the simulation, not the transport.
		return runProbe(t, cp, env, gpulab, "probe", "--via", "kube", "--kubeconfig", cp.Kubeconfig, "-H", hosts, "--concurrency", strconv.Itoa(concurrency), "--window", "0")
	}
	exec := func(hosts string) probeRun {
		return runProbe(t, cp, env, gpulab, "exec", "--via", "kube", "--kubeconfig", cp.Kubeconfig, "-H", hosts, "--concurrency", strconv.Itoa(concurrency), "--no-fold", "--", "nvidia-smi", "-q")
	}
	all := probe("*")
	allExec := exec("*")
	files, err := f.WriteInventory(filepath.Join(dir, "inventory.toml"))
	if err != nil {
		t.Fatal(err)
	}
	overSSH := runProbe(t, cp, env, gpulab, "probe", "--inventory", files.Inventory, "-H", "*", "--concurrency", strconv.Itoa(concurrency), "--window", "0")
	fmt.Printf("\n%d simulated DGX nodes through a real API server (kubetest, loopback, %d cores), concurrency %d:\n", nodes, runtimeCPUs(), concurrency)
	fmt.Printf("  gpulab probe --via kube --window 0, every node: all answers %.1f s, first answer %.2f s, peak RSS %.1f MiB, %.1f API requests per node; %s; %s\n",
		all.wall.Seconds(), all.first.Seconds(), all.rss, float64(all.requests)/float64(nodes), all.cpu, all.summary)
	fmt.Printf("  gpulab probe --window 0 over SSH, the same simulated hosts: all answers %.1f s, peak RSS %.1f MiB; %s; %s\n",
		overSSH.wall.Seconds(), overSSH.rss, overSSH.cpu, overSSH.summary)
	fmt.Printf("  gpulab exec --via kube -- nvidia-smi -q, every node: all answers %.1f s, first answer %.2f s, peak RSS %.1f MiB, %.1f API requests per node; %s; %s\n",
		allExec.wall.Seconds(), allExec.first.Seconds(), allExec.rss, float64(allExec.requests)/float64(nodes), allExec.cpu, allExec.summary)
	names := make([]string, sample)
	for i := range names {
		names[i] = f.Hosts()[i].Name
	}
	sub, subExec := probe(strings.Join(names, ",")), exec(strings.Join(names, ","))
	kubectl := kubectlBin(t)
	if kubectl == "" {
		fmt.Printf("  kubectl is not built (tools/kube/build-kubectl.sh): gpulab's figures alone\n")
		return
	}
	loop := kubectlLoop(t, cp, kubectl, names, concurrency)
	fmt.Printf("  on %d nodes: kubectl debug node + wait + exec nvidia-smi -q + delete, in a loop of %d at once, %.1f s: %.1fx the time of gpulab exec --via kube -- nvidia-smi -q (%.1f s), %.1fx that of gpulab probe --via kube (%.1f s, which also pushes and runs the probe)\n",
		sample, concurrency, loop.Seconds(), loop.Seconds()/subExec.wall.Seconds(), subExec.wall.Seconds(), loop.Seconds()/sub.wall.Seconds(), sub.wall.Seconds())
	if left := countPods(t, cp.Client, ""); left != 0 {
		t.Errorf("%d pods left after the runs", left)
	}
}

// addSimNodes makes every host a node, 32 at once, and waits until kwok
// has made each Ready.
func addSimNodes(t *testing.T, cp *kubetest.ControlPlane, hosts []sim.Host) {
	nodes := cp.Client.CoreV1().Nodes()
	parallel(t, len(hosts), func(i int) error {
		want := sim.NodeOf(hosts[i])
		n, err := nodes.Create(t.Context(), want, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n.Status.Capacity, n.Status.Allocatable = want.Status.Capacity, want.Status.Allocatable
			n.Status.Addresses, n.Status.DaemonEndpoints = want.Status.Addresses, want.Status.DaemonEndpoints
			updated, err := nodes.UpdateStatus(t.Context(), n, metav1.UpdateOptions{})
			if err == nil {
				return nil
			}
			if latest, gerr := nodes.Get(t.Context(), n.Name, metav1.GetOptions{}); gerr == nil {
				n = latest
			} else {
				n = updated
			}
			return err
		})
	})
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	for {
		l, err := nodes.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list nodes, waiting for %d Ready: %v", len(hosts), err)
		}
		ready := 0
		for _, n := range l.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue && n.Status.DaemonEndpoints.KubeletEndpoint.Port != 0 {
					ready++
				}
			}
		}
		if ready == len(hosts) {
			return
		}
		w, err := nodes.Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
		if err != nil {
			t.Fatalf("watch nodes: %v", err)
		}
		select {
		case <-w.ResultChan():
		case <-ctx.Done():
			t.Fatalf("waited 5m for %d nodes Ready with their kubelet port: %d", len(hosts), ready)
		}
		w.Stop()
	}
}

type probeRun struct {
	wall, first time.Duration
	rss         float64
	requests    int
	summary     string
	cpu         cpuShares
}

// runProbe runs gpulab with args: the time to its first line of output
// and to its end, its peak RSS, the API requests it made (the API
// server's count before and after) and the summary on stderr.
func runProbe(t *testing.T, cp *kubetest.ControlPlane, env []string, bin string, args ...string) probeRun {
	before := apiRequests(t, cp)
	clock := readCPU()
	c := exec.Command(bin, args...)
	c.Env = env
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errOut strings.Builder
	c.Stderr = &errOut
	start := time.Now()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	rss := peakRSS(c)
	var r probeRun
	br := bufio.NewReader(out)
	var stdout strings.Builder
	if line, err := br.ReadString('\n'); err == nil {
		r.first = time.Since(start)
		stdout.WriteString(line)
	}
	_, _ = io.Copy(&stdout, br)
	err = c.Wait()
	r.wall = time.Since(start)
	r.cpu = clock.since(c.ProcessState.UserTime() + c.ProcessState.SystemTime())
	if err != nil && c.ProcessState.ExitCode() != 1 { // 1: a host flagged (the sick one)
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, errOut.String())
	}
	r.rss = rss()
	r.requests = apiRequests(t, cp) - before
	lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
	r.summary = lines[len(lines)-1]
	if !strings.Contains(r.summary, " ok") || strings.Contains(r.summary, "failed") {
		t.Logf("%s %s:\n%s\nstderr:\n%s", bin, strings.Join(args, " "), stdout.String(), errOut.String())
	}
	return r
}

var requestTotal = regexp.MustCompile(`(?m)^apiserver_request_total\{[^}]*\} (\d+)`)

// apiRequests is the API server's apiserver_request_total, summed.
func apiRequests(t *testing.T, cp *kubetest.ControlPlane) int {
	body, err := cp.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("read the API server's metrics: %v", err)
	}
	n := 0
	for _, m := range requestTotal.FindAllStringSubmatch(string(body), -1) {
		v, _ := strconv.Atoi(m[1])
		n += v
	}
	return n
}

var debugPod = regexp.MustCompile(`Creating debugging pod (\S+) with container (\S+)`)

// kubectlLoop is the shell loop an operator would run on names, n at
// once: per node a debug pod, wait for it, exec nvidia-smi -q on the host
// through it, delete it. It returns the wall time.
func kubectlLoop(t *testing.T, cp *kubetest.ControlPlane, kubectl string, names []string, n int) time.Duration {
	env := append(os.Environ(), "KUBECONFIG="+cp.Kubeconfig, "HOME="+t.TempDir())
	kc := func(args ...string) (string, error) {
		c := exec.Command(kubectl, args...)
		c.Env = env
		out, err := c.CombinedOutput()
		return string(out), err
	}
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	start := time.Now()
	for _, node := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := func() error {
				out, err := kc("debug", "node/"+node, "--profile=sysadmin", "--image=docker.io/library/busybox:1.37", "--", "sleep", "600")
				m := debugPod.FindStringSubmatch(out)
				if err != nil || m == nil {
					return fmt.Errorf("kubectl debug node/%s: %v %s", node, err, out)
				}
				if out, err := kc("wait", "--for=condition=Ready", "--timeout=2m", "pod/"+m[1]); err != nil {
					return fmt.Errorf("kubectl wait %s: %v %s", m[1], err, out)
				}
				if out, err := kc("exec", m[1], "-c", m[2], "--", "chroot", "/host", "nvidia-smi", "-q"); err != nil || !strings.Contains(out, "Attached GPUs") {
					return fmt.Errorf("kubectl exec %s: %v %.200s", m[1], err, out)
				}
				if out, err := kc("delete", "pod", m[1], "--grace-period=0", "--force"); err != nil {
					return fmt.Errorf("kubectl delete %s: %v %s", m[1], err, out)
				}
				return nil
			}()
			if err != nil {
				mu.Lock()
				failed = append(failed, err.Error())
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	d := time.Since(start)
	if len(failed) > 0 {
		t.Fatalf("the kubectl loop failed on %d nodes, e.g. %s", len(failed), failed[0])
	}
	return d
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

func runtimeCPUs() int { return runtime.NumCPU() }
