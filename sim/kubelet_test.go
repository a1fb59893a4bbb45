package sim

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpulab/gpulab/internal/kubetest"
	"github.com/gpulab/gpulab/orchestrator"
)

// kubeFleet is a simulated fleet whose hosts are a real API server's
// nodes too: each node's kubelet endpoint is its host's.
type kubeFleet struct {
	cp    *kubetest.ControlPlane
	fleet *Fleet
	kt    *orchestrator.KubeTransport
}

func startKubeFleet(t *testing.T, cfg Config) *kubeFleet {
	t.Helper()
	cp := kubetest.Start(t)
	cfg.Kubelet = &KubeletConfig{ClientCA: cp.KubeletClientCA}
	f, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	for _, h := range f.Hosts() {
		cp.AddNode(t, NodeOf(h))
	}
	kt := &orchestrator.KubeTransport{Config: cp.Config, Client: cp.Client, Context: "kubetest", Namespace: metav1.NamespaceDefault,
		RunID: "test-" + strings.ReplaceAll(t.Name(), "/", "-"), StartTimeout: time.Minute}
	return &kubeFleet{cp: cp, fleet: f, kt: kt}
}

func (k *kubeFleet) dial(t *testing.T, node string) *orchestrator.Conn {
	t.Helper()
	tg := k.kt.Target(node, true, orchestrator.Target{ConnectTimeout: time.Minute, CommandTimeout: time.Minute, InactivityTimeout: time.Minute})
	c, err := (&orchestrator.Dialer{}).Dial(t.Context(), tg)
	if err != nil {
		t.Fatalf("dial %s through the API server: %v", node, err)
	}
	return c
}

// podsLeft lists the pods in the transport's namespace.
func (k *kubeFleet) podsLeft(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := k.cp.Client.CoreV1().Pods(k.kt.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range l.Items {
		out = append(out, p.Name)
	}
	return out
}

// A simulated DGX reached through the real API server and the kubelet's
// streaming code: commands run on the host (its nvidia-smi), exit codes
// and stderr come back, a file pushed lands in the pod's scratch
// directory and runs from there, a silent command is stopped at the
// inactivity timeout; closing the connection deletes its pod.
func TestKubeletExecThroughTheAPIServer(t *testing.T) {
	k := startKubeFleet(t, Config{Hosts: 2})
	node := k.fleet.Hosts()[0].Name
	c := k.dial(t, node)
	if !c.Simulated() {
		t.Error("a node labelled simulated: Conn.Simulated is false")
	}
	r := c.Run(t.Context(), "smi", "nvidia-smi -L | head -2; hostname", orchestrator.RunOptions{Timeout: time.Minute})
	if r.Class != orchestrator.OK || !strings.Contains(string(r.Stdout), "GPU 0: NVIDIA A100") || !strings.Contains(string(r.Stdout), node) {
		t.Fatalf("nvidia-smi -L through the pod: %s %s stdout=%q stderr=%q", r.Class, r.Err, r.Stdout, r.Stderr)
	}
	r = c.Run(t.Context(), "fail", "echo to-stderr >&2; exit 3", orchestrator.RunOptions{Timeout: time.Minute})
	if r.Class != orchestrator.Exit || r.ExitCode != 3 || strings.TrimSpace(string(r.Stderr)) != "to-stderr" {
		t.Errorf("exit 3: %s code %d stderr=%q err=%s", r.Class, r.ExitCode, r.Stderr, r.Err)
	}
	script := []byte("#!/bin/sh\necho pushed-and-ran\n")
	p := c.Push(t.Context(), orchestrator.PushSpec{Name: "hello.sh", Data: script, Mode: 0o700, Compress: true})
	if p.Class != orchestrator.OK || !strings.HasPrefix(p.Path, "/proc/") || !strings.HasSuffix(p.Path, orchestrator.PodScratch+"/hello.sh") {
		t.Fatalf("push: %+v", p)
	}
	r = c.Run(t.Context(), "run it", orchestrator.Quote(p.Path), orchestrator.RunOptions{Timeout: time.Minute})
	if r.Class != orchestrator.OK || strings.TrimSpace(string(r.Stdout)) != "pushed-and-ran" {
		t.Errorf("the pushed file: %s %s %q %q", r.Class, r.Err, r.Stdout, r.Stderr)
	}
	r = c.Run(t.Context(), "hang", "sleep 600", orchestrator.RunOptions{Inactivity: 300 * time.Millisecond})
	if r.Class != orchestrator.Inactive {
		t.Errorf("a silent command: %s %s", r.Class, r.Err)
	}
	if left := k.podsLeft(t); len(left) != 1 {
		t.Errorf("pods while connected: %v", left)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if left := k.podsLeft(t); len(left) != 0 {
		t.Errorf("pods left after Close: %v", left)
	}
}

// The Role docs/kube-transport.md ships is enough, and without pods/exec
// the refusal names that permission (class forbidden, not a host that
// could not be reached); a kubelet that cuts every exec stream leaves the
// host lost. No pod is left after any of them.
func TestKubeTransportRefusalsAndCuts(t *testing.T) {
	k := startKubeFleet(t, Config{Hosts: 2, Die: []string{HostName(1, 2)}})
	pods := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "get", "list", "watch", "delete"}}
	exec := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create", "get"}}
	nodes := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list"}}
	node := k.fleet.Hosts()[0].Name
	dial := func(cfg *rest.Config, node string) (*orchestrator.Conn, error) {
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		kt := &orchestrator.KubeTransport{Config: cfg, Client: client, Namespace: metav1.NamespaceDefault, RunID: "rbac", StartTimeout: time.Minute}
		tg := kt.Target(node, true, orchestrator.Target{CommandTimeout: time.Minute})
		return (&orchestrator.Dialer{}).Dial(t.Context(), tg)
	}

	full := k.cp.ServiceAccountConfig(t, metav1.NamespaceDefault, "gpulab-full", []rbacv1.PolicyRule{pods, exec}, []rbacv1.PolicyRule{nodes})
	c, err := dial(full, node)
	if err != nil {
		t.Fatalf("with the documented Role: %v", err)
	}
	if r := c.Run(t.Context(), "id", "nvidia-smi -L | grep -c '^GPU '", orchestrator.RunOptions{Timeout: time.Minute}); r.Class != orchestrator.OK || strings.TrimSpace(string(r.Stdout)) != "8" {
		t.Errorf("with the documented Role: %s %s %q", r.Class, r.Err, r.Stdout)
	}
	c.Close()

	noExec := k.cp.ServiceAccountConfig(t, metav1.NamespaceDefault, "gpulab-noexec", []rbacv1.PolicyRule{pods}, []rbacv1.PolicyRule{nodes})
	_, err = dial(noExec, node)
	var de *orchestrator.DialError
	if !errors.As(err, &de) || de.Class != orchestrator.Forbidden || !strings.Contains(err.Error(), "forbidden: create pods/exec in namespace default") {
		t.Errorf("without pods/exec: %v", err)
	}

	_, err = dial(full, HostName(1, 2))
	if !errors.As(err, &de) || de.Class != orchestrator.Lost {
		t.Errorf("a kubelet that cuts the stream: %v", err)
	}
	if left := k.podsLeft(t); len(left) != 0 {
		t.Errorf("pods left: %v", left)
	}
}

// The API server stops under a running command and comes back: the
// command's stream is cut, and the host is lost (never an OK with half
// its output); the pod is deleted once the server is back, the run's
// watch of its pods recovers, and the next node is reached as before.
func TestKubeTransportOutlivesAnAPIServerRestart(t *testing.T) {
	k := startKubeFleet(t, Config{Hosts: 2})
	hosts := k.fleet.Hosts()
	c := k.dial(t, hosts[0].Name)
	started := make(chan struct{})
	var once sync.Once
	done := make(chan orchestrator.Result, 1)
	go func() {
		done <- c.Run(context.Background(), "long", "echo started; sleep 30; echo done", orchestrator.RunOptions{Timeout: 2 * time.Minute,
			OnOutput: func(_ int, p []byte) {
				if strings.Contains(string(p), "started") {
					once.Do(func() { close(started) })
				}
			}})
	}()
	select {
	case <-started:
	case r := <-done:
		t.Fatalf("the command ended before the API server stopped: %s %s %q", r.Class, r.Err, r.Stdout)
	case <-time.After(time.Minute):
		t.Fatal("waited a minute for the command to print that it started")
	}
	k.cp.StopAPIServer(t)
	var r orchestrator.Result
	select {
	case r = <-done:
	case <-time.After(time.Minute):
		t.Fatal("waited a minute for the command's stream to end after the API server stopped")
	}
	if r.Class != orchestrator.Lost || strings.Contains(string(r.Stdout), "done") {
		t.Errorf("a stream cut by the API server: %s %s %q, want lost", r.Class, r.Err, r.Stdout)
	}
	k.cp.StartAPIServer(t)
	if err := c.Close(); err != nil {
		t.Errorf("close after the restart: %v", err)
	}
	c2 := k.dial(t, hosts[1].Name)
	if r := c2.Run(t.Context(), "after", "echo back", orchestrator.RunOptions{Timeout: time.Minute}); r.Class != orchestrator.OK || strings.TrimSpace(string(r.Stdout)) != "back" {
		t.Errorf("a node reached after the restart: %s %s %q", r.Class, r.Err, r.Stdout)
	}
	c2.Close()
	if n, err := k.kt.Close(t.Context()); err != nil || n != 0 {
		t.Errorf("the transport's close found %d pods, %v", n, err)
	}
	if left := k.podsLeft(t); len(left) != 0 {
		t.Errorf("pods left: %v", left)
	}
}

// A pod that does not start is classed by why, against the real API
// server: a node whose kubelet is gone (not Ready, named with its
// condition), a node deleted, an image the node cannot pull (the test
// plays that node's kubelet), a namespace whose quota is full, one whose
// Pod Security refuses it. Each host still gets its one error, and no
// pod is left in any namespace.
func TestKubeTransportClassesWhyAPodDoesNotStart(t *testing.T) {
	k := startKubeFleet(t, Config{Hosts: 1})
	down := kubetest.GPUNode(kubetest.KubeletDown, 8)
	down.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown,
		Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status.", LastTransitionTime: metav1.Now()}}
	k.cp.AddNode(t, down)
	k.cp.Namespace(t, "full")
	k.cp.Quota(t, "full", "no-pods", corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")})
	k.cp.Namespace(t, "locked")
	locked, err := k.cp.Client.CoreV1().Namespaces().Get(t.Context(), "locked", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	locked.Labels["pod-security.kubernetes.io/enforce"] = "baseline"
	if _, err := k.cp.Client.CoreV1().Namespaces().Update(t.Context(), locked, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	dialIn := func(ns, node string, start time.Duration) error {
		kt := &orchestrator.KubeTransport{Config: k.cp.Config, Client: k.cp.Client, Namespace: ns, RunID: "why-" + ns, StartTimeout: start}
		c, err := (&orchestrator.Dialer{}).Dial(t.Context(), kt.Target(node, false, orchestrator.Target{}))
		if err == nil {
			c.Close()
		}
		return err
	}
	want := func(what string, err error, class orchestrator.Class, text string) {
		t.Helper()
		var de *orchestrator.DialError
		if !errors.As(err, &de) || de.Class != class || !strings.Contains(err.Error(), text) {
			t.Errorf("%s: %v, want class %s saying %q", what, err, class, text)
		}
	}
	want("kubelet gone", dialIn("default", kubetest.KubeletDown, 3*time.Second), orchestrator.NodeNotReady, "node kubelet-down is not Ready (Ready=Unknown since")
	want("node deleted", dialIn("default", "no-such-node", 2*time.Second), orchestrator.NodeNotReady, "node no-such-node is not in the cluster")
	want("quota full", dialIn("full", k.fleet.Hosts()[0].Name, time.Minute), orchestrator.Quota, "namespace full has no room for the node pod")
	want("Pod Security", dialIn("locked", k.fleet.Hosts()[0].Name, time.Minute), orchestrator.Admission, "pod-security.kubernetes.io/enforce=privileged")

	// The image: the test plays the kubelet of kubelet-down, which
	// cannot pull it.
	errc := make(chan error, 1)
	go func() { errc <- dialIn("default", kubetest.KubeletDown, time.Minute) }()
	pod := waitForPod(t, k.cp, "default", "the node pod on kubelet-down")
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "gpulab", Image: pod.Spec.Containers[0].Image,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "dial tcp: lookup registry-1.docker.io: no such host"}}}}
	if _, err := k.cp.Client.CoreV1().Pods("default").UpdateStatus(t.Context(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		want("image pull", err, orchestrator.ImagePull, "node kubelet-down cannot pull the pod's image docker.io/library/busybox:1.37 (ErrImagePull)")
	case <-time.After(time.Minute):
		t.Fatal("waited a minute for the dial to see the image pull fail")
	}
	for _, ns := range []string{"default", "full", "locked"} {
		k.kt.Namespace = ns
		if left := k.podsLeft(t); len(left) != 0 {
			t.Errorf("pods left in %s: %v", ns, left)
		}
	}
}

// waitForPod waits, on a watch, for the first pod in ns and returns it.
func waitForPod(t *testing.T, cp *kubetest.ControlPlane, ns, what string) *corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	w, err := cp.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for {
		select {
		case ev := <-w.ResultChan():
			if p, ok := ev.Object.(*corev1.Pod); ok {
				return p
			}
		case <-ctx.Done():
			t.Fatalf("waited a minute for %s", what)
		}
	}
}
