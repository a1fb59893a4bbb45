package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// KubeTransport reaches Kubernetes nodes through the API server, with
// nothing installed on them and no SSH: for each node one short-lived
// pod pinned to it (NodePod, the shape of kubectl debug node
// --profile=sysadmin), and every command over that pod's exec
// subresource (client-go's remotecommand: WebSocket, SPDY where the API
// server offers only that), run chrooted into the host's / as root, under
// the same wrapper, limits and classes as over SSH.
//
// Every pod it creates is deleted when its connection closes (the engine
// closes each host's when the host is done, cancelled or not), and Close
// deletes whatever is left of the run; Prepare removes other runs'
// leftovers (CleanupNodePods). A pod that outlives all of that (the
// process killed) ends by its deadline.
type KubeTransport struct {
	Config *rest.Config
	Client kubernetes.Interface
	// Context is the kubeconfig context: what records name.
	Context   string
	Namespace string
	Image     string // DefaultNodePodImage when ""
	// RunID names the run on its pods (RunLabel); one per process.
	RunID string
	// Deadline is each pod's activeDeadlineSeconds; DefaultPodDeadline
	// when 0 (PodDeadline derives one from the command timeout).
	Deadline time.Duration
	// StartTimeout bounds a pod's creation and start, its image pull
	// included; default 2m.
	StartTimeout time.Duration
	// Streams bounds the exec streams open at once: the API server's
	// priority and fairness does not count them. Default 256.
	Streams int
	// WritableHost mounts the host's / read-write (a lab's setup).
	WritableHost bool

	once    sync.Once
	sem     chan struct{}
	watch   *podWatch
	watchMu sync.Mutex

	mu   sync.Mutex
	pods map[string]string // created and not yet deleted: pod → node
}

// DefaultPodDeadline bounds a node pod's life when nothing says longer.
const DefaultPodDeadline = time.Hour

// PodDeadline is the deadline of the pods of a run whose commands may
// each run commandTimeout: four of them, an hour at least, a day at
// most. A pod ends at its deadline whatever runs in it.
func PodDeadline(commandTimeout time.Duration) time.Duration {
	return min(max(4*commandTimeout, DefaultPodDeadline), 24*time.Hour)
}

// KubeNode is a Target's way through a KubeTransport.
type KubeNode struct {
	Context   string `json:"context"`
	Namespace string `json:"namespace"`
	// Simulated: the node says it is one of gpulab's simulated hosts
	// (SimulatedLabel).
	Simulated bool `json:"simulated,omitempty"`
	transport *KubeTransport
}

// WritableHost says whether the node's pod mounts the host's / read-write.
func (n *KubeNode) WritableHost() bool { return n.transport != nil && n.transport.WritableHost }

// The node labels that say what a node should have, as an inventory's
// expect = { gpus, ib_ports, ib_rate_gbps } does for a host (the probe's
// count and rate checks judge against it). Without them the GPUs are
// the node's nvidia.com/gpu capacity.
const (
	ExpectGPUsLabel    = "gpulab.io/expect-gpus"
	ExpectIBPortsLabel = "gpulab.io/expect-ib-ports"
	ExpectIBRateLabel  = "gpulab.io/expect-ib-rate-gbps"
)

// SimulatedLabel on a node says its kubelet is gpulab's simulated host
// (sim): what is made on it says SIMULATED, as over SSH.
const SimulatedLabel = "gpulab.io/simulated"

// Target is node as a host reached through k, with base's timeouts. The
// login is root: the pod is privileged, and no step goes through sudo.
func (k *KubeTransport) Target(node string, simulated bool, base Target) Target {
	t := Target{Name: node, User: "root",
		ConnectTimeout: base.ConnectTimeout, CommandTimeout: base.CommandTimeout, InactivityTimeout: base.InactivityTimeout,
		Sources: base.Sources}
	t.Kube = &KubeNode{Context: k.Context, Namespace: k.Namespace, Simulated: simulated, transport: k}
	return t
}

func (k *KubeTransport) init() {
	k.once.Do(func() {
		n := k.Streams
		if n <= 0 {
			n = 256
		}
		k.sem = make(chan struct{}, n)
		k.pods = map[string]string{}
	})
}

func (k *KubeTransport) startTimeout() time.Duration {
	if k.StartTimeout > 0 {
		return k.StartTimeout
	}
	return 2 * time.Minute
}

func (k *KubeTransport) podOptions() NodePodOptions {
	d := k.Deadline
	if d <= 0 {
		d = DefaultPodDeadline
	}
	return NodePodOptions{Namespace: k.Namespace, Image: k.Image, RunID: k.RunID, Deadline: d, WritableHost: k.WritableHost}
}

// Prepare checks, once and before any node is touched, that the API
// server would take a node pod on node (a server-side dry run: the
// namespace exists, RBAC lets this user create pods there, admission
// allows a privileged pod), and removes the leftovers of other runs in
// the namespace (pods that have ended), saying how many.
func (k *KubeTransport) Prepare(ctx context.Context, node string) (int, error) {
	o := k.podOptions()
	_, err := k.Client.CoreV1().Pods(k.Namespace).Create(ctx, NodePod(node, o), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	switch {
	case apierrors.IsNotFound(err):
		return 0, &KubeError{Class: Error, Err: fmt.Errorf("namespace %s does not exist in context %s: create it and label it pod-security.kubernetes.io/enforce=privileged (docs/kube-transport.md): %w", k.Namespace, k.Context, err)}
	case err != nil:
		return 0, createRefusal(err, o.Namespace, node) // named as a real create's refusal is
	}
	n, err := CleanupNodePods(ctx, k.Client, k.Namespace, "")
	return n, kubeAPIError(err, "list pods", k.Namespace)
}

// Close deletes every pod of this run still there, whatever became of
// its connection, on a context of its own (the run's may be cancelled),
// and stops the watch of the run's pods: all of them in one request, then
// a second pass for a pod whose create was still on its way. It says how
// many it deleted in the second pass.
func (k *KubeTransport) Close(ctx context.Context) (int, error) {
	k.init()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	k.watchMu.Lock()
	if k.watch != nil {
		k.watch.stop()
		k.watch = nil
	}
	k.watchMu.Unlock()
	err := DeleteRunPods(ctx, k.Client, k.Namespace, k.RunID)
	n, err2 := CleanupNodePods(ctx, k.Client, k.Namespace, k.RunID)
	if err2 == nil {
		k.mu.Lock()
		clear(k.pods)
		k.mu.Unlock()
		err = nil
	}
	return n, kubeAPIError(errors.Join(err, err2), "delete pods", k.Namespace)
}

func (k *KubeTransport) track(pod, node string) {
	k.mu.Lock()
	k.pods[pod] = node
	k.mu.Unlock()
}

// deletePod deletes pod at once (grace 0), on a context of its own.
func (k *KubeTransport) deletePod(ctx context.Context, pod string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	zero := int64(0)
	err := k.Client.CoreV1().Pods(k.Namespace).Delete(ctx, pod, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if err != nil && !apierrors.IsNotFound(err) {
		return kubeAPIError(err, "delete pods", k.Namespace)
	}
	k.mu.Lock()
	delete(k.pods, pod)
	k.mu.Unlock()
	return nil
}

// dial creates t's pod, waits for it to start, and finds its own file
// system as the host sees it.
func (k *KubeTransport) dial(ctx context.Context, t Target) (*Conn, error) {
	k.init()
	host := "node/" + t.Name
	ctx, cancel := context.WithTimeout(ctx, k.startTimeout())
	defer cancel()
	pod, err := CreateNodePod(ctx, k.Client, t.Name, k.podOptions())
	if err != nil {
		return nil, &DialError{Class: createClass(err, ctx), Host: host, Err: err}
	}
	k.track(pod.Name, t.Name)
	l := &kubeLink{k: k, node: t.Name, pod: pod.Name, simulated: t.Kube.Simulated, dead: make(chan struct{}),
		ends: time.Now().Add(time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second)}
	fail := func(class Class, err error) (*Conn, error) {
		_ = k.deletePod(ctx, pod.Name)
		return nil, &DialError{Class: class, Host: host, Err: err}
	}
	if class, err := k.waitStarted(ctx, pod); err != nil {
		return fail(class, err)
	}
	if class, err := l.findRoot(ctx); err != nil {
		return fail(class, err)
	}
	return &Conn{Target: t, kube: l, stop: make(chan struct{}), dead: l.dead}, nil
}

// createClass is the class of a refused pod creation.
func createClass(err error, ctx context.Context) Class {
	var ke *KubeError
	switch {
	case errors.As(err, &ke):
		return ke.Class
	case ctx.Err() != nil:
		return TimeoutConnect
	}
	return Unreachable
}

// KubeError is the API server's refusal, with its class and, for RBAC,
// the permission it lacks.
type KubeError struct {
	Class Class
	Err   error
}

func (e *KubeError) Error() string { return e.Err.Error() }
func (e *KubeError) Unwrap() error { return e.Err }

// kubeAPIError names an API error by what the transport was doing: a
// Forbidden one says which permission (verb resource in namespace) is
// missing, never only "forbidden".
func kubeAPIError(err error, verbResource, ns string) error {
	if err == nil {
		return nil
	}
	if apierrors.IsForbidden(err) {
		return &KubeError{Class: Forbidden, Err: fmt.Errorf("forbidden: %s in namespace %s (RBAC: see docs/kube-transport.md for the Role the transport needs): %w", verbResource, ns, err)}
	}
	return err
}

// podWatch follows the run's pods in one informer, however many nodes:
// one list and one watch for the run, not one per pod, and the reflector
// lists again after the API server comes back.
type podWatch struct {
	informer cache.SharedIndexInformer
	cancel   context.CancelFunc
	mu       sync.Mutex
	waiters  map[string]chan struct{}
	lastErr  error
}

func (k *KubeTransport) podWatch() *podWatch {
	k.watchMu.Lock()
	defer k.watchMu.Unlock()
	if k.watch != nil {
		return k.watch
	}
	sel := labels.SelectorFromSet(labels.Set{ManagedByLabel: ManagedBy, RunLabel: labelSafe(k.RunID)}).String()
	f := informers.NewSharedInformerFactoryWithOptions(k.Client, 0, informers.WithNamespace(k.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel }))
	inf := f.Core().V1().Pods().Informer()
	w := &podWatch{informer: inf, waiters: map[string]chan struct{}{}}
	_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		w.mu.Lock()
		w.lastErr = err
		w.mu.Unlock()
	})
	notify := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok {
			w.poke(p.Name)
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: notify, UpdateFunc: func(_, o any) { notify(o) }, DeleteFunc: notify,
	})
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go inf.RunWithContext(ctx)
	k.watch = w
	return w
}

// currentWatch is the run's watch of its pods, nil before the first dial
// or after Close.
func (k *KubeTransport) currentWatch() *podWatch {
	k.watchMu.Lock()
	defer k.watchMu.Unlock()
	return k.watch
}

func (w *podWatch) poke(name string) {
	w.mu.Lock()
	ch := w.waiters[name]
	w.mu.Unlock()
	if ch != nil {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (w *podWatch) stop() { w.cancel() }

// waitStarted waits until pod's container runs, or says why it will not:
// an image that cannot be pulled, a container that cannot be made, the
// pod ended, or (at the start timeout) a node that is not Ready.
func (k *KubeTransport) waitStarted(ctx context.Context, pod *corev1.Pod) (Class, error) {
	w := k.podWatch()
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	w.waiters[pod.Name] = ch
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.waiters, pod.Name)
		w.mu.Unlock()
	}()
	last := pod
	for {
		if obj, ok, _ := w.informer.GetStore().GetByKey(pod.Namespace + "/" + pod.Name); ok {
			last = obj.(*corev1.Pod)
		}
		if done, class, err := podStarted(last); done {
			return class, err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return k.notStarted(last, w)
		}
	}
}

// podStarted reads a pod's status: started (OK), or a reason it never
// will be; done is false while it may still start.
func podStarted(p *corev1.Pod) (done bool, class Class, err error) {
	switch p.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return true, PodFailed, fmt.Errorf("pod %s/%s ended (%s) before gpulab could use it: %s %s", p.Namespace, p.Name, p.Status.Phase, p.Status.Reason, p.Status.Message)
	}
	for _, cs := range p.Status.ContainerStatuses {
		switch {
		case cs.State.Running != nil && p.Status.Phase == corev1.PodRunning:
			return true, OK, nil
		case cs.State.Terminated != nil:
			t := cs.State.Terminated
			return true, PodFailed, fmt.Errorf("pod %s/%s: its container ended (%s, exit %d): %s", p.Namespace, p.Name, t.Reason, t.ExitCode, t.Message)
		case cs.State.Waiting != nil:
			wt := cs.State.Waiting
			switch wt.Reason {
			case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull":
				return true, ImagePull, fmt.Errorf("node %s cannot pull the pod's image %s (%s): %s; an air-gapped site names its mirror with --image", p.Spec.NodeName, cs.Image, wt.Reason, wt.Message)
			case "CreateContainerConfigError", "CreateContainerError", "RunContainerError", "CrashLoopBackOff":
				return true, PodFailed, fmt.Errorf("node %s cannot start the pod's container (%s): %s", p.Spec.NodeName, wt.Reason, wt.Message)
			}
		}
	}
	return false, OK, nil
}

// notStarted says why a pod did not start within the start timeout: its
// node is not Ready, the run's watch was refused, or what the pod shows.
func (k *KubeTransport) notStarted(p *corev1.Pod, w *podWatch) (Class, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	limit := k.startTimeout()
	if n, err := k.Client.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{}); err == nil {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
				return NodeNotReady, fmt.Errorf("node %s is not Ready (Ready=%s since %s: %s %s): its kubelet did not start the pod within %v",
					n.Name, c.Status, c.LastTransitionTime.UTC().Format(time.RFC3339), c.Reason, c.Message, limit)
			}
		}
	} else if apierrors.IsNotFound(err) {
		return NodeNotReady, fmt.Errorf("node %s is not in the cluster (deleted?)", p.Spec.NodeName)
	}
	w.mu.Lock()
	werr := w.lastErr
	w.mu.Unlock()
	if werr != nil && apierrors.IsForbidden(werr) {
		return Forbidden, kubeAPIError(werr, "list and watch pods", k.Namespace)
	}
	var conds []string
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			conds = append(conds, fmt.Sprintf("%s=%s %s", c.Type, c.Status, strings.TrimSpace(c.Reason+" "+c.Message)))
		}
	}
	phase := cmpOr(string(p.Status.Phase), "Pending")
	return TimeoutConnect, fmt.Errorf("pod %s/%s on node %s did not start within %v (%s%s)", p.Namespace, p.Name, p.Spec.NodeName, limit, phase, joinConds(conds))
}

func joinConds(c []string) string {
	if len(c) == 0 {
		return ""
	}
	return ": " + strings.Join(c, "; ")
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// NodeSelection lists the nodes a selection names: every node matching
// selector (a label selector, as kubectl -l writes it; "" for all), in
// the API server's order, each with whether it is simulated.
func NodeSelection(ctx context.Context, client kubernetes.Interface, selector string) ([]corev1.Node, error) {
	if _, err := labels.Parse(selector); err != nil {
		return nil, fmt.Errorf("label selector %q: %w", selector, err)
	}
	l, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector, FieldSelector: fields.Everything().String()})
	if err != nil {
		return nil, kubeAPIError(err, "list nodes", "(cluster scope)")
	}
	return l.Items, nil
}
