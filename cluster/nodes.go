// Package cluster reads the control plane of a Kubernetes cluster with
// client-go: GPU nodes, what is allocated on them, and (later) why pods
// are Pending. It finds the cluster as kubectl does (--kubeconfig, then
// $KUBECONFIG, then ~/.kube/config; --context) and lists in pages, so a
// cluster of thousands of nodes never comes in one call.
package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpulab/gpulab/internal/fileio"
	"github.com/gpulab/gpulab/internal/redirect"
	"github.com/gpulab/gpulab/internal/visible"
)

// Source says which cluster to read, with kubectl's flags and rules.
type Source struct {
	Kubeconfig string // --kubeconfig: this file only
	Context    string // --context
	// Getenv reads $KUBECONFIG and $HOME (os.Getenv when nil).
	Getenv func(string) string
}

// Connect loads the kubeconfig as kubectl does and returns a client for
// its context, with the context's name and namespace.
func (s Source) Connect() (*Client, error) {
	rules := s.rules()
	// A kubeconfig decides what runs as the operator (an exec credential
	// plugin): one another user could change is refused, as an
	// ssh_config is.
	for _, p := range append([]string{rules.ExplicitPath}, rules.Precedence...) {
		if p == "" {
			continue
		}
		if err := fileio.CheckTrusted(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("kubeconfig: %w", err)
		}
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: s.Context})
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	ctxName := cmp.Or(s.Context, raw.CurrentContext)
	cfg, err := cc.ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		return nil, s.noCluster(rules)
	}
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	c, err := NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig context %s: %w", ctxName, err)
	}
	c.Context, c.Namespace = ctxName, ns
	return c, nil
}

// HasContext says whether the kubeconfig Connect would load names a
// context called name (false, nil when there is no kubeconfig at all).
func (s Source) HasContext(name string) (bool, error) {
	rules := s.rules()
	for _, p := range append([]string{rules.ExplicitPath}, rules.Precedence...) {
		if p == "" {
			continue
		}
		if err := fileio.CheckTrusted(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("kubeconfig: %w", err)
		}
	}
	raw, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).RawConfig()
	if err != nil {
		return false, fmt.Errorf("kubeconfig: %w", err)
	}
	_, ok := raw.Contexts[name]
	return ok, nil
}

// ErrNoCluster is what Connect returns when no kubeconfig names a cluster
// and gpulab runs in no pod: nothing is configured, which is not a cluster
// that failed. A check that needs a cluster says UNKNOWN for it.
var ErrNoCluster = errors.New("no cluster configured")

// noCluster says what Connect looked for, where, and how to point it at a
// cluster (client-go's own words name KUBERNETES_MASTER, long gone).
func (s Source) noCluster(rules *clientcmd.ClientConfigLoadingRules) error {
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	var looked []string
	if s.Kubeconfig != "" {
		looked = append(looked, "--kubeconfig "+s.Kubeconfig+" (no cluster in it)")
	} else {
		env := getenv(clientcmd.RecommendedConfigPathEnvVar)
		if env == "" {
			looked = append(looked, "$KUBECONFIG (not set)")
		} else {
			looked = append(looked, "$KUBECONFIG="+env+" ("+kubeconfigFiles(filepath.SplitList(env))+")")
		}
		if env == "" && len(rules.Precedence) == 1 {
			looked = append(looked, rules.Precedence[0]+" (not there)")
		}
	}
	looked = append(looked, "an in-cluster service account (gpulab is not running in a pod)")
	return fmt.Errorf("%w: gpulab looked for %s. Point it at a cluster as kubectl is pointed: --kubeconfig FILE or KUBECONFIG=FILE, and --context NAME; or try the SIMULATED one: --context simulated", ErrNoCluster, strings.Join(looked, ", "))
}

// kubeconfigFiles says what $KUBECONFIG's files hold for a reader
// looking for a cluster: none there, or none naming one.
func kubeconfigFiles(files []string) string {
	var missing int
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			missing++
		}
	}
	switch {
	case missing == len(files) && missing == 1:
		return "no such file"
	case missing == len(files):
		return "none of its files is there"
	case missing > 0:
		return fmt.Sprintf("%d of its %d files are not there, and the others name no cluster", missing, len(files))
	case len(files) == 1:
		return "it names no cluster"
	}
	return "none of its files names a cluster"
}

// rules are kubectl's loading rules: --kubeconfig alone when given, else
// the files of $KUBECONFIG merged, else ~/.kube/config.
func (s Source) rules() *clientcmd.ClientConfigLoadingRules {
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: s.Kubeconfig}
	if env := getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		rules.Precedence = filepath.SplitList(env)
		rules.WarnIfAllMissing = true
	} else if home := getenv("HOME"); home != "" {
		rules.Precedence = []string{filepath.Join(home, clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)}
	}
	return rules
}

// NewClient is a client for a rest.Config (context and namespace unset),
// with kubectl's rate limits when the config sets none (50 requests a
// second, bursts of 300; client-go's own 5 would make a list of 100,000
// pods, in pages of 500, wait 40 s on the limiter).
func NewClient(cfg *rest.Config) (*Client, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg.QPS, cfg.Burst = 50, 300
	}
	plain := rest.CopyConfig(cfg)
	// Built-in kinds in protobuf, as kubectl and the controllers ask them:
	// a page of pods decodes in a fraction of JSON's time and garbage.
	// Custom kinds (Kueue, Volcano) only speak JSON: the dynamic client.
	pb := rest.CopyConfig(cfg)
	pb.ContentType = "application/vnd.kubernetes.protobuf"
	pb.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	// What the API server sends is bounded (a response's bytes), and a
	// redirect to another host is refused: client-go would send the
	// bearer token along (its auth is a round tripper, below the http
	// client's own header stripping).
	wrap := cfg.WrapTransport
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if wrap != nil {
			rt = wrap(rt)
		}
		return boundedResponses{rt}
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	hc.CheckRedirect = redirect.SameHost("the API server", "the client's credentials would go with it")
	kube, err := kubernetes.NewForConfigAndClient(pb, hc)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	return &Client{Kube: kube, Dynamic: dyn, Config: plain}, nil
}

// Bounds on what one read of the API server may hold. A well-behaved
// server never comes near them (a page is pageSize objects, and
// Kubernetes is tested to 150,000 pods); a broken or hostile one is
// stopped at them, with an error that names the limit.
const (
	// MaxResponseBytes is the most one response (a page) may carry.
	MaxResponseBytes = 128 << 20
	// MaxListObjects is the most objects one list may gather, over all
	// its pages.
	MaxListObjects = 200_000
)

// boundedResponses caps each response body at MaxResponseBytes, and each
// event of a watch (a watch is a stream of events that lasts, decoded one
// frame at a time).
type boundedResponses struct{ rt http.RoundTripper }

func (b boundedResponses) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.rt.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if req.URL.Query().Get("watch") != "true" {
		resp.Body = &capped{ReadCloser: resp.Body, left: MaxResponseBytes, url: req.URL.Path}
	} else if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		resp.Body = &jsonEvents{ReadCloser: resp.Body, url: req.URL.Path}
	}
	return resp, nil
}

// jsonEvents fails a watch stream in JSON one of whose events passes
// MaxResponseBytes: client-go's JSON framer holds an event whole before it
// decodes it (protobuf's frames are held to 16 MiB by its decoder). It
// follows the stream's nesting to tell where an event ends.
type jsonEvents struct {
	io.ReadCloser
	url      string
	n        int64 // bytes of the event being read
	depth    int
	str, esc bool
}

func (j *jsonEvents) Read(p []byte) (int, error) {
	n, err := j.ReadCloser.Read(p)
	for _, c := range p[:n] {
		j.n++
		switch {
		case j.esc:
			j.esc = false
		case j.str:
			j.esc, j.str = c == '\\', c != '"'
		case c == '"':
			j.str = true
		case c == '{' || c == '[':
			j.depth++
		case c == '}' || c == ']':
			if j.depth--; j.depth <= 0 {
				j.depth, j.n = 0, 0
			}
		}
	}
	if j.n > MaxResponseBytes {
		return n, fmt.Errorf("an event of the API server's watch of %s is larger than %s, gpulab's limit for one response: refused", visible.String(j.url), fileio.Size(MaxResponseBytes))
	}
	return n, err
}

// capped fails a read past its limit: the decoder sees an error, not a
// truncated object that parses.
type capped struct {
	io.ReadCloser
	left int64
	url  string
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, fmt.Errorf("the API server's answer to %s is larger than %s, gpulab's limit for one response: refused", visible.String(c.url), fileio.Size(MaxResponseBytes))
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.ReadCloser.Read(p)
	c.left -= int64(n)
	return n, err
}

// GPUResource reports whether a resource name is a GPU, or a slice or
// share of one: nvidia.com/gpu, nvidia.com/mig-*, nvidia.com/gpu.shared,
// HAMi's nvidia.com/gpumem and gpucores, and any extended resource with a
// GPU-like name (amd.com/gpu, gpu.intel.com/i915).
func GPUResource(name corev1.ResourceName) bool {
	n := strings.ToLower(string(name))
	if !strings.Contains(n, "/") { // cpu, memory, pods: core resources
		return false
	}
	return strings.Contains(n, "gpu") || strings.HasPrefix(n, "nvidia.com/mig-")
}

// GPUNode is a node's GPU side: what it has, what the scheduler may give,
// and what non-terminated pods hold, per GPU resource.
type GPUNode struct {
	Name          string           `json:"name"`
	Ready         bool             `json:"ready"`
	Unschedulable bool             `json:"unschedulable,omitempty"`
	Taints        []string         `json:"taints,omitempty"`
	Capacity      map[string]int64 `json:"capacity"`
	Allocatable   map[string]int64 `json:"allocatable"`
	Allocated     map[string]int64 `json:"allocated"`
	Pods          int              `json:"gpu_pods"` // non-terminated pods holding a GPU resource here
	Product       string           `json:"product,omitempty"`
	MIGStrategy   string           `json:"mig_strategy,omitempty"`
	Kubelet       string           `json:"kubelet,omitempty"`
	Runtime       string           `json:"runtime,omitempty"`
	OS            string           `json:"os,omitempty"`
	// Memory and Driver are GPU feature discovery's labels: the GPU's
	// memory in MiB, the driver's version.
	Memory string `json:"gpu_memory_mib,omitempty"`
	Driver string `json:"driver,omitempty"`
	// Health is what the cluster already says is wrong with the node's
	// GPUs, and who says it (HealthSignal); none: nobody says so.
	Health []HealthSignal `json:"health,omitempty"`
}

// Free is what the scheduler may still give of a resource.
func (n GPUNode) Free(res string) int64 { return n.Allocatable[res] - n.Allocated[res] }

// pageSize is how many objects one list call returns.
const pageSize = 500

// GPUNodes are the nodes that have a GPU resource, by name, each with what
// the non-terminated pods bound to it request.
func (o *Objects) GPUNodes() []GPUNode {
	byName := map[string]*GPUNode{}
	for _, n := range o.Nodes {
		if g := gpuNode(n); g != nil {
			byName[g.Name] = g
		}
	}
	for _, p := range o.Pods {
		n := byName[p.Spec.NodeName]
		if n == nil || terminated(p) {
			continue
		}
		held := false
		for res, q := range PodRequests(p) {
			if GPUResource(res) {
				n.Allocated[string(res)] += q.Value()
				held = true
			}
		}
		if held {
			n.Pods++
		}
	}
	nodes := make([]GPUNode, 0, len(byName))
	for _, n := range byName {
		nodes = append(nodes, *n)
	}
	slices.SortFunc(nodes, func(a, b GPUNode) int { return strings.Compare(a.Name, b.Name) })
	return nodes
}

// terminated says whether a pod has ended: it holds nothing and waits for
// nothing (an informer's cache still has it until it is deleted).
func terminated(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// eachPage calls list with a page's options until the server says there
// is no more; list returns the continue token and how many objects the
// page held. A list that passes MaxListObjects objects, or whose pages
// never end, is stopped with an error naming the limit.
func eachPage(ctx context.Context, list func(metav1.ListOptions) (string, int, error)) error {
	cont := ""
	total := 0
	for pages := 1; ; pages++ {
		next, n, err := list(metav1.ListOptions{Limit: pageSize, Continue: cont})
		if err != nil {
			return err
		}
		total += n
		if total > MaxListObjects {
			return errTooManyObjects(MaxListObjects)
		}
		if next == "" || ctx.Err() != nil {
			return ctx.Err()
		}
		if pages > maxPages {
			return errEndlessPages(pages)
		}
		cont = next
	}
}

// maxPages is the most pages one list may take: all MaxListObjects in
// full pages, and then some for a server that sends short ones.
const maxPages = MaxListObjects/pageSize + 1000

func errTooManyObjects(limit int) error {
	return fmt.Errorf("more than %d objects, gpulab's limit for one list (Kubernetes is tested to 150,000 pods): refused", limit)
}

func errEndlessPages(pages int) error {
	return fmt.Errorf("%d pages and the API server still says there is more (a continue token that never ends): refused", pages)
}

func gpuNode(n *corev1.Node) *GPUNode {
	g := &GPUNode{Name: n.Name, Unschedulable: n.Spec.Unschedulable, Capacity: map[string]int64{}, Allocatable: map[string]int64{}, Allocated: map[string]int64{},
		Product: n.Labels["nvidia.com/gpu.product"], MIGStrategy: n.Labels["nvidia.com/mig.strategy"],
		Kubelet: n.Status.NodeInfo.KubeletVersion, Runtime: n.Status.NodeInfo.ContainerRuntimeVersion, OS: n.Status.NodeInfo.OSImage}
	for res, q := range n.Status.Capacity {
		if GPUResource(res) {
			g.Capacity[string(res)] = q.Value()
		}
	}
	for res, q := range n.Status.Allocatable {
		if GPUResource(res) {
			g.Allocatable[string(res)] = q.Value()
		}
	}
	if len(g.Capacity) == 0 && len(g.Allocatable) == 0 {
		return nil
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			g.Ready = c.Status == corev1.ConditionTrue
		}
	}
	for _, t := range n.Spec.Taints {
		g.Taints = append(g.Taints, taintString(t))
	}
	g.Memory = n.Labels["nvidia.com/gpu.memory"]
	if v := n.Labels["nvidia.com/cuda.driver-version.full"]; v != "" {
		g.Driver = v
	} else if maj := n.Labels["nvidia.com/cuda.driver.major"]; maj != "" {
		g.Driver = strings.TrimRight(maj+"."+n.Labels["nvidia.com/cuda.driver.minor"]+"."+n.Labels["nvidia.com/cuda.driver.rev"], ".")
	}
	g.Health = nodeHealth(n, g)
	return g
}

// taintString is a taint as kubectl taint writes it: key=value:effect.
func taintString(t corev1.Taint) string {
	s := t.Key
	if t.Value != "" {
		s += "=" + t.Value
	}
	return s + ":" + string(t.Effect)
}

// PodRequests is what a pod asks the scheduler for, as the scheduler
// counts it (k8s.io/component-helpers/resource): the sum of its
// containers' requests (an extended resource's limit is its request) and
// of its sidecars (init containers with restartPolicy Always, which run
// beside them), or, if larger, what any init container needs with the
// sidecars started before it; plus the pod's overhead.
func PodRequests(p *corev1.Pod) corev1.ResourceList {
	sum := corev1.ResourceList{}
	for _, c := range p.Spec.Containers {
		addResources(sum, containerRequests(c))
	}
	sidecars, inits := corev1.ResourceList{}, corev1.ResourceList{}
	for _, c := range p.Spec.InitContainers {
		need := containerRequests(c)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addResources(sum, need)
			addResources(sidecars, need)
			need = sidecars
		} else {
			addResources(need, sidecars)
		}
		maxResources(inits, need)
	}
	maxResources(sum, inits)
	addResources(sum, p.Spec.Overhead)
	return sum
}

func addResources(dst, rl corev1.ResourceList) {
	for res, q := range rl {
		cur := dst[res]
		cur.Add(q)
		dst[res] = cur
	}
}

func maxResources(dst, rl corev1.ResourceList) {
	for res, q := range rl {
		if cur, ok := dst[res]; !ok || q.Cmp(cur) > 0 {
			dst[res] = q.DeepCopy()
		}
	}
}

func containerRequests(c corev1.Container) corev1.ResourceList {
	rl := corev1.ResourceList{}
	for res, q := range c.Resources.Requests {
		rl[res] = q.DeepCopy()
	}
	for res, q := range c.Resources.Limits {
		if _, ok := rl[res]; !ok && GPUResource(res) {
			rl[res] = q.DeepCopy()
		}
	}
	return rl
}
