// Package kubetest starts a real Kubernetes control plane for tests: etcd,
// kube-apiserver, kube-scheduler and kwok (which plays the kubelet of every
// node, so nodes are simulated and pods never run a container), all on
// 127.0.0.1 ports, in a temporary directory, stopped when the test ends.
//
// There is no controller manager: nothing creates ServiceAccounts (Start
// creates default/default, Namespace does it for new namespaces), no
// controller taints, garbage-collects or runs Deployments and Jobs, and
// node status is whatever the test sets with UpdateStatus (AddNode) plus
// what kwok's stages add (stages/README.md). The binaries come from
// `make kube-testenv` (tools/kube/build.sh); without them Start skips the
// test loudly, or fails it under CI (internal/testreq).
package kubetest

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpulab/gpulab/internal/testreq"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
)

// Binaries are the programs Start runs, in the directory BinDir finds.
var Binaries = []string{"etcd", "kube-apiserver", "kube-scheduler", "kwok"}

// readyTimeout bounds start-up; it takes a few seconds on a 2-core machine.
const readyTimeout = 90 * time.Second

//go:embed stages/*.yaml
var stages embed.FS

// ControlPlane is a running control plane. Its fields are set by Start and
// must not be changed.
type ControlPlane struct {
	// Dir holds the data, certificates, kubeconfig and each process's log
	// (NAME.log); it is removed when the test ends.
	Dir string
	// Kubeconfig is a kubeconfig file for the cluster's admin (a member of
	// system:masters, token authentication), current context "kubetest".
	Kubeconfig string
	// Config and Client are the same admin's, for client-go.
	Config *rest.Config
	Client kubernetes.Interface
	// StartUp is how long Start took from the first process started to
	// every component ready.
	StartUp time.Duration
	// KubeletClientCA is the PEM file of the CA that signed the API
	// server's client certificate to kubelets: a kubelet endpoint a test
	// serves (sim.KubeletConfig) accepts what it signed.
	KubeletClientCA string

	procs   []*process
	stopped *process // the API server, between StopAPIServer and StartAPIServer
	// pki and token are made once: a start again on other ports keeps
	// them (client-go caches a transport by its CA file's path).
	pki   *pki
	token string
	// scheduler and schedulerURL reach the scheduler's own endpoints
	// (/readyz, /metrics).
	scheduler    *http.Client
	schedulerURL string
}

// BinDir returns the directory holding Binaries: $GPULAB_KUBE_BIN when set,
// otherwise the one tools/kube/build.sh names for the pinned versions in
// ${GPULAB_KUBE_CACHE:-~/.cache/gpulab-kube}. When any is missing it calls
// testreq.Missing with how to build them, so it returns only when all are
// there.
func BinDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("GPULAB_KUBE_BIN")
	if dir == "" {
		script, err := buildScript()
		if err != nil {
			testreq.Missing(t, "kube test control plane: "+err.Error())
		}
		out, err := exec.Command("bash", script, "--print-bin").Output()
		if err != nil {
			testreq.Missing(t, fmt.Sprintf("kube test control plane: %s --print-bin: %v", script, err))
		}
		dir = strings.TrimSpace(string(out))
	}
	for _, b := range Binaries {
		if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.Mode()&0o111 == 0 {
			testreq.Missing(t, fmt.Sprintf("kube test control plane: %s is not built in %s: run `make kube-testenv` (once; 6-11 minutes cold, then cached by version)", b, dir))
		}
	}
	return dir
}

// buildScript finds tools/kube/build.sh in a directory above this one.
func buildScript() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		p := filepath.Join(d, "tools", "kube", "build.sh")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no tools/kube/build.sh above %s: set GPULAB_KUBE_BIN to the directory of %s", wd, strings.Join(Binaries, ", "))
		}
	}
}

// Start starts etcd, kube-apiserver, kube-scheduler and kwok and returns
// once all four answer ready and the default ServiceAccount exists. Every
// process is stopped (its whole process group) and Dir removed when the
// test ends. A component that does not start fails the test with the end
// of its log.
func Start(t testing.TB) *ControlPlane {
	t.Helper()
	bin := BinDir(t)
	cp := &ControlPlane{Dir: t.TempDir()}
	t.Cleanup(func() {
		cp.stop()
		if t.Failed() {
			cp.logTails(t)
		}
	})
	// A port picked free can be taken by another process before the
	// component binds it (a busy machine, tests in parallel): that start
	// is thrown away and the control plane started again on other ports.
	const attempts = 5
	for i := 1; ; i++ {
		err := cp.start(t.Context(), bin)
		if err == nil {
			return cp
		}
		if i == attempts || !strings.Contains(err.Error(), "address already in use") {
			t.Fatalf("kubetest: %v", err)
		}
		t.Logf("kubetest: start %d of %d lost a port to another process, starting again on other ports: %s", i, attempts, firstLine(err.Error()))
		cp.stop()
		if err := os.RemoveAll(filepath.Join(cp.Dir, "etcd")); err != nil {
			t.Fatalf("kubetest: %v", err)
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// ports are the control plane's loopback ports.
type ports struct{ etcdClient, etcdPeer, api, sched, kwok int }

// pickPorts picks the control plane's ports (a test takes one first).
var pickPorts = freePorts

func (cp *ControlPlane) start(ctx context.Context, bin string) error {
	ps, err := pickPorts(5)
	if err != nil {
		return err
	}
	p := ports{ps[0], ps[1], ps[2], ps[3], ps[4]}
	pki, tokens, err := cp.credentials(p.api)
	if err != nil {
		return err
	}
	stagesFile, err := writeStages(cp.Dir)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	begin := time.Now()
	etcdURL, err := cp.startEtcd(bin, p)
	if err != nil {
		return err
	}
	// The API server retries etcd itself: starting both at once saves
	// etcd's start-up from the total.
	if err := cp.startAPIServer(bin, p, etcdURL, pki, tokens); err != nil {
		return err
	}
	if err := cp.waitHTTP(ctx, "kube-apiserver", cp.apiReady); err != nil {
		return err
	}
	if err := cp.startWorkers(ctx, bin, p, stagesFile); err != nil {
		return err
	}
	if err := cp.waitHTTP(ctx, "the default ServiceAccount", func(ctx context.Context) error {
		return cp.serviceAccount(ctx, metav1.NamespaceDefault)
	}); err != nil {
		return err
	}
	cp.StartUp = time.Since(begin)
	return nil
}

// credentials writes the certificates, an admin token and the kubeconfig,
// and makes the test's client.
func (cp *ControlPlane) credentials(apiPort int) (pki, string, error) {
	if cp.pki == nil {
		pki, err := writePKI(cp.Dir)
		if err != nil {
			return pki, "", err
		}
		if cp.token, err = randomToken(); err != nil {
			return pki, "", err
		}
		cp.pki = &pki
		cp.KubeletClientCA = pki.caCert
	}
	pki, token := *cp.pki, cp.token
	var err error
	tokens := filepath.Join(cp.Dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(token+`,admin,admin,"system:masters"`+"\n"), 0o600); err != nil {
		return pki, "", err
	}
	server := "https://127.0.0.1:" + strconv.Itoa(apiPort)
	cp.Kubeconfig = filepath.Join(cp.Dir, "kubeconfig")
	if err := os.WriteFile(cp.Kubeconfig, []byte(kubeconfig(server, pki.caCert, token)), 0o600); err != nil {
		return pki, "", err
	}
	cp.Config = &rest.Config{
		Host:            server,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: pki.caCert},
		QPS:             200,
		Burst:           400,
	}
	if cp.Client, err = kubernetes.NewForConfig(cp.Config); err != nil {
		return pki, "", fmt.Errorf("client: %w", err)
	}
	return pki, tokens, nil
}

// startEtcd starts etcd and returns its client URL.
func (cp *ControlPlane) startEtcd(bin string, p ports) (string, error) {
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(p.etcdClient)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(p.etcdPeer)
	return etcdURL, cp.run(bin, "etcd",
		"--name=kubetest",
		"--data-dir="+filepath.Join(cp.Dir, "etcd"),
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=kubetest="+peerURL,
		"--unsafe-no-fsync", // a test's data need not survive a power cut
	)
}

func (cp *ControlPlane) startAPIServer(bin string, p ports, etcdURL string, pki pki, tokens string) error {
	return cp.run(bin, "kube-apiserver",
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(p.api),
		"--etcd-servers="+etcdURL,
		"--cert-dir="+filepath.Join(cp.Dir, "apiserver"),
		"--tls-cert-file="+pki.serverCert,
		"--tls-private-key-file="+pki.serverKey,
		"--token-auth-file="+tokens,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+pki.saKey,
		"--service-account-signing-key-file="+pki.saKey,
		"--service-cluster-ip-range=10.96.0.0/16",
		// No kubelet on loopback to reconcile the kubernetes Service's
		// endpoints with, and nothing to reach through them.
		"--endpoint-reconciler-type=none",
		// No node lifecycle controller will ever lift the not-ready taint
		// this plugin puts on every new node.
		"--disable-admission-plugins=TaintNodesByCondition",
		// As kubeadm's clusters do: a node pod (kubectl debug node
		// --profile=sysadmin, gpulab's) is privileged; Pod Security
		// admission, per namespace, is what refuses it.
		"--allow-privileged=true",
		// Exec and logs go to a node's kubelet at its InternalIP (every
		// node's is 127.0.0.1, each kubelet on a port of its own, the
		// node's daemonEndpoints), with a client certificate kubelets
		// check against the CA (KubeletClientCA).
		"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-client-certificate="+pki.kubeletCert,
		"--kubelet-client-key="+pki.kubeletKey,
	)
}

// startWorkers starts the scheduler and kwok and waits until both are
// ready.
func (cp *ControlPlane) startWorkers(ctx context.Context, bin string, p ports, stagesFile string) error {
	if err := cp.run(bin, "kube-scheduler",
		"--kubeconfig="+cp.Kubeconfig,
		"--authentication-kubeconfig="+cp.Kubeconfig,
		"--authorization-kubeconfig="+cp.Kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(p.sched),
		"--leader-elect=false",
		// /metrics as /readyz is, without credentials: AddNode reads the
		// scheduler's node count there (scheduler_cache_size).
		"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
	); err != nil {
		return err
	}
	if err := cp.run(bin, "kwok",
		"--kubeconfig="+cp.Kubeconfig,
		"--config="+stagesFile,
		"--manage-all-nodes=true",
		"--server-address=127.0.0.1:"+strconv.Itoa(p.kwok),
		"--node-ip=127.0.0.1",
	); err != nil {
		return err
	}
	insecure := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		// The scheduler serves /readyz with a certificate it made itself.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
	cp.scheduler, cp.schedulerURL = insecure, "https://127.0.0.1:"+strconv.Itoa(p.sched)
	if err := cp.waitHTTP(ctx, "kube-scheduler", getOK(insecure, cp.schedulerURL+"/readyz")); err != nil {
		return err
	}
	return cp.waitHTTP(ctx, "kwok", getOK(insecure, "http://127.0.0.1:"+strconv.Itoa(p.kwok)+"/readyz"))
}

// apiReady asks the API server's /readyz, which turns 200 once etcd is
// reachable and every post-start hook (RBAC roles, priority classes, the
// system namespaces) has run.
func (cp *ControlPlane) apiReady(ctx context.Context) error {
	body, err := cp.Client.CoreV1().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("%w: %s", err, body)
	}
	return nil
}

func getOK(c *http.Client, url string) func(context.Context) error {
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return nil
	}
}

// waitHTTP polls ready until it succeeds, a process exits (its log's end
// is in the error), or ctx ends.
func (cp *ControlPlane) waitHTTP(ctx context.Context, what string, ready func(context.Context) error) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		callCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		last = ready(callCtx)
		cancel()
		if last == nil {
			return nil
		}
		for _, p := range cp.procs {
			select {
			case <-p.exited:
				return fmt.Errorf("%s exited while waiting for %s to be ready: %v\n%s", p.name, what, p.err, tail(p.log, 30))
			default:
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready within %s: %v", what, readyTimeout, last)
		case <-tick.C:
		}
	}
}

// Namespace creates namespace name with its default ServiceAccount, which
// pods need (no controller manager makes it).
func (cp *ControlPlane) Namespace(t testing.TB, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cp.Client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %q: %v", name, err)
	}
	if err := cp.serviceAccount(t.Context(), name); err != nil {
		t.Fatal(err)
	}
}

func (cp *ControlPlane) serviceAccount(ctx context.Context, ns string) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	_, err := cp.Client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ServiceAccount %s/default: %w", ns, err)
	}
	return nil
}

// AddNode creates node, then sets its status (capacity, allocatable, and
// the addresses and kubelet port when it has them) with UpdateStatus,
// since a create drops it; kwok then marks it Ready and
// keeps it so. It returns the node as stored.
func (cp *ControlPlane) AddNode(t testing.TB, node *corev1.Node) *corev1.Node {
	t.Helper()
	ctx := t.Context()
	nodes := cp.Client.CoreV1().Nodes()
	created, err := nodes.Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create node %q: %v", node.Name, err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		created.Status.Capacity = node.Status.Capacity
		created.Status.Allocatable = node.Status.Allocatable
		if len(node.Status.Addresses) > 0 {
			created.Status.Addresses = node.Status.Addresses
		}
		if node.Status.DaemonEndpoints.KubeletEndpoint.Port != 0 {
			created.Status.DaemonEndpoints = node.Status.DaemonEndpoints
		}
		if len(node.Status.Conditions) > 0 {
			created.Status.Conditions = node.Status.Conditions
		}
		updated, err := nodes.UpdateStatus(ctx, created, metav1.UpdateOptions{})
		if err == nil {
			created = updated
			return nil
		}
		if latest, gerr := nodes.Get(ctx, node.Name, metav1.GetOptions{}); gerr == nil {
			created = latest
		}
		return err
	})
	if err != nil {
		t.Fatalf("update status of node %q: %v", node.Name, err)
	}
	cp.waitSchedulerNodes(t)
	return created
}

// GPUNode is a node with gpus nvidia.com/gpu (and 64 CPUs, 512Gi, 110
// pods) in its capacity and allocatable, labelled as the NVIDIA device
// plugin's GPU feature discovery would.
func GPUNode(name string, gpus int) *corev1.Node {
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("512Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
		"nvidia.com/gpu":      resource.MustParse(strconv.Itoa(gpus)),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: map[string]string{"kubernetes.io/hostname": name, "nvidia.com/gpu.present": "true"},
			Annotations: map[string]string{
				"kwok.x-k8s.io/node": "fake",
			},
		},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res.DeepCopy()},
	}
}

// KubeletDown is the name of a node kwok leaves alone (stages/README.md):
// a node whose kubelet is gone. AddNode it with the conditions it should
// show (kwok never makes it Ready); its pods stay Pending.
const KubeletDown = "kubelet-down"

func randomToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// freePorts returns n distinct ports free on 127.0.0.1 now; another
// process may take one before ours binds it, which shows as a component
// that exits with "address already in use" (Start then starts again).
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pick a free port: %w", err)
		}
		ls = append(ls, l)
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}

func kubeconfig(server, caFile, token string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kubetest
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: kubetest
  context:
    cluster: kubetest
    user: admin
    namespace: default
current-context: kubetest
`, server, caFile, token)
}

// writeStages writes the embedded kwok stages into one multi-document
// file for kwok's --config.
func writeStages(dir string) (string, error) {
	files, err := fs.Glob(stages, "stages/*.yaml")
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, f := range files {
		data, err := stages.ReadFile(f)
		if err != nil {
			return "", err
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	p := filepath.Join(dir, "kwok-stages.yaml")
	return p, os.WriteFile(p, []byte(b.String()), 0o600)
}

// process is one running component.
type process struct {
	name   string
	bin    string   // the directory it was started from
	args   []string // its arguments, to start it again (RestartAPIServer)
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
	err    error // cmd.Wait's, once exited is closed
}

// run starts bin/name with args in its own process group, its output in
// Dir/name.log and HOME set to Dir, so nothing reads or writes the real
// home (kwok looks for ~/.kwok).
func (cp *ControlPlane) run(bin, name string, args ...string) error {
	logPath := filepath.Join(cp.Dir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644) // appended to when started again
	if err != nil {
		return err
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := exec.Command(filepath.Join(bin, name), args...)
	cmd.Dir = cp.Dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(withoutKube(os.Environ()), "HOME="+cp.Dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, bin: bin, args: args, cmd: cmd, log: logPath, exited: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	cp.procs = append(cp.procs, p)
	return nil
}

// withoutKube drops the environment that would point a component at
// another cluster or home.
func withoutKube(env []string) []string {
	var out []string
	for _, kv := range env {
		if strings.HasPrefix(kv, "KUBECONFIG=") || strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "ETCD_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// stop ends every process group, the last started first: SIGTERM, then
// SIGKILL for what is still there after 10 seconds.
func (cp *ControlPlane) stop() {
	for i := len(cp.procs) - 1; i >= 0; i-- {
		p := cp.procs[i]
		pgid := p.cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL) // and anything it left in the group
		<-p.exited
	}
	cp.procs = nil
}

func (cp *ControlPlane) logTails(t testing.TB) {
	entries, _ := filepath.Glob(filepath.Join(cp.Dir, "*.log"))
	for _, e := range entries {
		t.Logf("--- end of %s ---\n%s", filepath.Base(e), tail(e, 20))
	}
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
