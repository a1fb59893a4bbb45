package sim

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"

	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/sim/spec"
)

// KubeletConfig makes every host of the fleet a Kubernetes node's
// kubelet too, for the exec subresource the API server proxies: a node
// whose status names 127.0.0.1 and the host's KubeletPort is reached
// through the API server (orchestrator.KubeTransport) on the same
// simulated machine as over SSH. The server is the kubelet's own
// streaming code (k8s.io/cri-streaming's remotecommand, WebSocket and
// SPDY as the API server speaks them), over TLS.
type KubeletConfig struct {
	// ClientCA is a PEM file: only clients with a certificate it signed
	// (the API server's --kubelet-client-certificate) are served.
	ClientCA string
}

// kubelet is a host's kubelet endpoint.
type kubelet struct {
	srv  *http.Server
	port int
	mu   sync.Mutex
	pids map[string]int // pod (name/namespace) → the process ID its shell says it has
}

// podPIDBase is where the simulated pods' process IDs start.
const podPIDBase = 40000

var podPIDs atomic.Int64

type connKey struct{}

// startKubelets starts every host's kubelet endpoint on a loopback port.
func (f *Fleet) startKubelets() error {
	cfg := f.cfg.Kubelet
	pem, err := os.ReadFile(cfg.ClientCA)
	if err != nil {
		return fmt.Errorf("sim: kubelet client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return fmt.Errorf("sim: kubelet client CA %s: no certificate in it", cfg.ClientCA)
	}
	cert, err := selfSigned()
	if err != nil {
		return err
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS12}
	for _, h := range f.hosts {
		if h.mode == Drop {
			continue
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		k := &kubelet{port: ln.Addr().(*net.TCPAddr).Port, pids: map[string]int{}}
		mux := http.NewServeMux()
		mux.HandleFunc("/exec/{ns}/{pod}/{container}", h.serveExec)
		mux.HandleFunc("/exec/{ns}/{pod}/{uid}/{container}", h.serveExec)
		k.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0),
			BaseContext: func(net.Listener) context.Context { return f.ctx },
			ConnContext: func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) }}
		h.kubelet = k
		tl := tls.NewListener(ln, tc)
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			_ = k.srv.Serve(tl)
		}()
	}
	return nil
}

// selfSigned is the kubelets' serving certificate (the API server does
// not verify a kubelet's unless told its CA, as kubeadm's clusters run).
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gpulab-sim-kubelet"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

func (h *host) serveExec(w http.ResponseWriter, req *http.Request) {
	opts, err := remotecommand.NewOptions(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	name := req.PathValue("pod") + "/" + req.PathValue("ns")
	remotecommand.ServeExec(w, req, podExecutor{h}, name, req.PathValue("uid"), req.PathValue("container"),
		req.URL.Query()["command"], opts, 4*time.Hour, 30*time.Second, remotecommand.SupportedStreamingProtocols)
}

// podExecutor runs a node pod's commands on its host.
type podExecutor struct{ h *host }

// ExecInContainer runs cmd as gpulab's node pod runs it: `cat
// /gpulab/pid` in the container (the pod's process ID, whose
// /proc/PID/root/gpulab is then the pod's scratch directory in the
// host's tree), and `chroot /host ...` on the host, its wrapped command
// stopped when its standard input ends, as the wrapper does.
func (e podExecutor) ExecInContainer(ctx context.Context, name, _, _ string, cmd []string, in io.Reader, out, errOut io.WriteCloser, _ bool, _ <-chan remotecommand.TerminalSize, _ time.Duration) error {
	h := e.h
	ctx, cancel := context.WithCancel(withBounds(ctx))
	defer cancel()
	defer h.fleet.watch.add(h.name, cancel, errOut)()
	switch h.mode {
	case Die: // the kubelet's connection is cut as the command starts
		if c, ok := ctx.Value(connKey{}).(net.Conn); ok {
			c.Close()
		}
		return errors.New("connection cut")
	case Stall:
		<-ctx.Done()
		return exitCode(143)
	}
	if slices.Equal(cmd, orchestrator.KubeRootArgv) {
		pid, err := h.podPID(name)
		if err != nil {
			fmt.Fprintf(errOut, "cat: %s: %v\n", cmd[1], err)
			return exitCode(1)
		}
		fmt.Fprintln(out, pid)
		return nil
	}
	if in == nil { // an exec without standard input
		in = devNull{}
	}
	env := append(h.baseEnv(), "USER=root", "LOGNAME=root", "HOME=/root", "UID=0", "EUID=0")
	mu := new(sync.Mutex)
	c := &call{h: h, env: env, stdin: in, stdout: syncWriter{mu, out}, stderr: syncWriter{mu, errOut}}
	command, nonce, raw, ok := orchestrator.KubeUnwrap(cmd)
	if !ok { // another client's chroot /host CMD... (kubectl exec into a debug pod)
		if len(cmd) < 3 || cmd[0] != "chroot" || cmd[1] != "/host" {
			fmt.Fprintf(errOut, "gpulab sim: %s: the simulated node pod runs host commands only, as chroot /host CMD\n", strings.Join(cmd, " "))
			return exitCode(126)
		}
		code, err := c.runLine(ctx, orchestrator.QuoteArgs(cmd[2:]))
		if err != nil || code != 0 {
			return exitCode(max(code, 1))
		}
		return nil
	}
	var code int
	var err error
	if raw {
		code, err = c.runLine(ctx, command)
	} else {
		code, err = c.runWrapped(ctx, command, in)
	}
	if err != nil {
		code = 143
	}
	// The wrapper's last word, as on a real node.
	_, _ = io.WriteString(syncWriter{mu, out}, orchestrator.KubeTrailer(nonce, code))
	_, _ = io.WriteString(syncWriter{mu, errOut}, orchestrator.KubeTrailer(nonce, code))
	if code != 0 {
		return exitCode(code)
	}
	return nil
}

// podPID is the process ID pod's shell has, the same for every exec
// into it, and makes its scratch directory in the host's tree.
func (h *host) podPID(pod string) (int, error) {
	k := h.kubelet
	k.mu.Lock()
	defer k.mu.Unlock()
	if pid, ok := k.pids[pod]; ok {
		return pid, nil
	}
	pid := podPIDBase + int(podPIDs.Add(1))
	dir := "proc/" + strconv.Itoa(pid) + "/root" + orchestrator.PodScratch
	root := h.fs.r()
	if err := root.MkdirAll(dir, 0o700); err != nil {
		return 0, err
	}
	k.pids[pod] = pid
	return pid, nil
}

// NodeOf is the Node object of host h for a cluster whose kubelets are
// the fleet's (KubeletConfig): a GPU node with eight nvidia.com/gpu,
// labelled simulated and with what it has (as the fleet's inventory
// says, ExpectGPUsLabel and its kin), its kubelet at 127.0.0.1 on h.KubeletPort.
// Capacity and addresses are status: set them with UpdateStatus after
// the create (which drops a node's status).
func NodeOf(h Host) *corev1.Node {
	res := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("256"), corev1.ResourceMemory: resource.MustParse("2Ti"),
		corev1.ResourcePods: resource.MustParse("110"), "nvidia.com/gpu": resource.MustParse("8"),
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: h.Name, Labels: map[string]string{
			"kubernetes.io/hostname": h.Name, "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB",
			orchestrator.SimulatedLabel: "true", orchestrator.ExpectGPUsLabel: strconv.Itoa(spec.GPUs),
			orchestrator.ExpectIBPortsLabel: strconv.Itoa(len(spec.NICs)), orchestrator.ExpectIBRateLabel: strconv.Itoa(spec.IBRateGbps),
		}},
		Status: corev1.NodeStatus{Capacity: res, Allocatable: res.DeepCopy(),
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: h.Name}}},
	}
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(h.KubeletPort)
	return n
}

// exitCode is a command's non-zero exit status as the kubelet's
// streaming code reads it (k8s.io/utils/exec.ExitError).
type exitCode int

func (e exitCode) Error() string   { return "exit status " + strconv.Itoa(int(e)) }
func (e exitCode) String() string  { return e.Error() }
func (e exitCode) Exited() bool    { return true }
func (e exitCode) ExitStatus() int { return int(e) }
