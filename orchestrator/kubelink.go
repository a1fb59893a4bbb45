package orchestrator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
)

// kubeLink is one node's pod, through which its commands run.
type kubeLink struct {
	k         *KubeTransport
	node, pod string
	// root is the pod's own file system as the host sees it,
	// /proc/PID/root (the pod shares the host's PID namespace): commands
	// run chrooted into the host reach the pod's scratch directory there.
	root      string
	simulated bool
	// ends is when the pod's deadline ends it (at the latest).
	ends     time.Time
	dead     chan struct{}
	deadOnce sync.Once
}

// reuseMargin is how long before its deadline a pod is no longer taken
// for another command (the workbench's pool).
const reuseMargin = 10 * time.Minute

// usable says whether the pod may take another command: not lost, not
// near its deadline, and, as the run's watch last saw it, still running
// (a pod that ended or was deleted is marked lost).
func (l *kubeLink) usable() bool {
	select {
	case <-l.dead:
		return false
	default:
	}
	if time.Until(l.ends) < reuseMargin {
		return false
	}
	if w := l.k.currentWatch(); w != nil {
		obj, ok, _ := w.informer.GetStore().GetByKey(l.k.Namespace + "/" + l.pod)
		if p, isPod := obj.(*corev1.Pod); w.informer.HasSynced() && (!ok || isPod && p.Status.Phase != corev1.PodRunning) {
			l.markDead()
			return false
		}
	}
	return true
}

func (l *kubeLink) markDead() { l.deadOnce.Do(func() { close(l.dead) }) }

// KubeRootArgv is the command that reads the pod's process ID (NodePod
// writes it), run in the container itself.
var KubeRootArgv = []string{"cat", PodScratch + "/pid"}

// exec runs argv in the pod over the exec subresource: WebSocket first,
// SPDY where the API server does not upgrade to it (as kubectl does).
func (l *kubeLink) exec(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer) error {
	req := l.k.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(l.k.Namespace).Name(l.pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "gpulab", Command: argv, Stdin: stdin != nil, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(l.k.Config, "GET", req.URL().String())
	if err != nil {
		return err
	}
	spdy, err := remotecommand.NewSPDYExecutor(l.k.Config, "POST", req.URL())
	if err != nil {
		return err
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return err
	}
	return ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
}

// acquire takes one of the transport's exec streams, waiting for one.
func (l *kubeLink) acquire(ctx context.Context) (func(), error) {
	select {
	case l.k.sem <- struct{}{}:
		return func() { <-l.k.sem }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// findRoot reads the pod's process ID, which its shell writes as it
// starts: a moment after the pod is Running at most.
func (l *kubeLink) findRoot(ctx context.Context) (Class, error) {
	var last error
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		out, errOut := &limitedBuffer{max: 4 << 10}, &limitedBuffer{max: 4 << 10}
		release, err := l.acquire(ctx)
		if err != nil {
			return TimeoutConnect, fmt.Errorf("waiting for an exec stream: %w", err)
		}
		err = l.exec(ctx, KubeRootArgv, nil, out, errOut)
		release()
		pid, perr := strconv.Atoi(strings.TrimSpace(out.String()))
		if err == nil && perr == nil && pid > 0 {
			l.root = "/proc/" + strconv.Itoa(pid) + "/root"
			return OK, nil
		}
		var ee utilexec.ExitError
		if err != nil && !errors.As(err, &ee) {
			return l.classify(err)
		}
		if err == nil && out.Len() == 0 {
			return Lost, fmt.Errorf("pod %s started, but the exec stream into it ended with no output and no status (cut by the kubelet or the API server?)", l.pod)
		}
		last = fmt.Errorf("%s: %v %s", strings.Join(KubeRootArgv, " "), err, strings.TrimSpace(errOut.String()))
		select {
		case <-ctx.Done():
			return TimeoutConnect, fmt.Errorf("pod %s started, but its process ID could not be read: %v", l.pod, last)
		case <-time.After(wait):
		}
	}
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// classify names a failed exec: RBAC's refusal as the permission, a pod
// gone as the host lost.
func (l *kubeLink) classify(err error) (Class, error) {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "forbidden") && strings.Contains(msg, "pods/exec"):
		return Forbidden, fmt.Errorf("forbidden: create pods/exec in namespace %s (RBAC: see docs/kube-transport.md for the Role the transport needs): %v", l.k.Namespace, err)
	case strings.Contains(msg, "admission webhook") || strings.Contains(msg, "denied the request"):
		return Admission, fmt.Errorf("admission refused an exec into pod %s/%s (a webhook that guards exec): %v", l.k.Namespace, l.pod, err)
	case strings.Contains(strings.ToLower(msg), "forbidden"):
		return Forbidden, fmt.Errorf("the API server refused an exec into pod %s/%s: %v", l.k.Namespace, l.pod, err)
	case strings.Contains(msg, "not found") && strings.Contains(msg, l.pod):
		l.markDead()
		return Lost, fmt.Errorf("pod %s/%s on node %s is gone (deleted, or the node was): %v", l.k.Namespace, l.pod, l.node, err)
	}
	return Lost, fmt.Errorf("exec through the API server into pod %s/%s on node %s: %v", l.k.Namespace, l.pod, l.node, err)
}

// run is Conn.Run through the pod: the command's end or the first reason
// to stop it (cancel, timeouts), then EOF on its standard input (the
// wrapper stops its process group), then the stream is cut.
func (l *kubeLink) run(ctx context.Context, r *Result, command string, o RunOptions, stdout, stderr io.Writer, activity *atomic.Int64) (Class, error) {
	start, actx := time.Now(), ctx
	if o.Timeout > 0 { // the wait for a stream counts against the command's time
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	release, err := l.acquire(actx)
	switch {
	case err != nil && ctx.Err() != nil:
		return Cancelled, errors.New("cancelled")
	case err != nil:
		return TimeoutCommand, fmt.Errorf("waited the command timeout (%v) for one of the %d exec streams the run may open at once", o.Timeout, cap(l.k.sem))
	}
	defer release()
	if o.Timeout > 0 {
		o.Timeout = max(o.Timeout-time.Since(start), time.Millisecond)
	}
	var stdin io.Reader
	var hold *io.PipeWriter
	if o.Raw {
		stdin = o.Stdin
	} else {
		pr, pw := io.Pipe()
		stdin, hold = pr, pw
		defer pw.Close()
	}
	sctx, cut := context.WithCancel(context.WithoutCancel(ctx))
	defer cut()
	done := make(chan error, 1)
	nonce := newNonce()
	tout := &trailerWriter{w: stdout, prefix: trailerPrefix(nonce), activity: activity, status: -1}
	terr := &trailerWriter{w: stderr, prefix: trailerPrefix(nonce), activity: activity, status: -1}
	argv := KubeArgv(command, nonce, o.Raw)
	activity.Store(time.Now().UnixNano()) // the wait for a stream is not the command's silence
	go func() { done <- l.exec(sctx, argv, stdin, tout, terr) }()
	ended, waitErr, stopped, stopErr := watch(ctx, done, o, activity)
	if ended {
		return l.exitClass(r, waitErr, tout.end(), terr.end())
	}
	defer tout.end()
	defer terr.end()
	if hold != nil {
		hold.Close()
	}
	select {
	case <-done:
	case <-time.After(250 * time.Millisecond):
		cut()
		select {
		case <-done:
		case <-time.After(250 * time.Millisecond):
		}
	}
	return stopped, stopErr
}

// exitClass reads an exec's end (err) and the status the wrapper wrote
// last on stdout and on stderr (-1: none came). The three must agree: a
// stream that ended before the wrapper's last word (cut by the kubelet
// or the API server, which client-go reads as a success), or whose
// wrapper died with another status than it wrote, is a host lost, never
// an OK. Through the API server a command killed by a signal reads as
// its shell's status (128+N), not as a signal.
func (l *kubeLink) exitClass(r *Result, err error, outStatus, errStatus int) (Class, error) {
	var ee utilexec.ExitError
	exited := errors.As(err, &ee) && ee.Exited()
	switch {
	case err != nil && !exited:
		return l.classify(err)
	case outStatus < 0 && errStatus < 0 && exited:
		return Lost, fmt.Errorf("gpulab's wrapper did not finish on node %s (exit %d): it was killed, or the node lacks /bin/sh, chroot or util-linux's setsid -w (docs/kube-transport.md)", l.node, ee.ExitStatus())
	case outStatus < 0 || errStatus < 0:
		return Lost, fmt.Errorf("the exec stream into pod %s/%s on node %s ended without the command's exit status (cut by the kubelet or the API server?)", l.k.Namespace, l.pod, l.node)
	case outStatus != errStatus || exited && ee.ExitStatus() != outStatus || !exited && outStatus != 0:
		got := 0
		if exited {
			got = ee.ExitStatus()
		}
		return Lost, fmt.Errorf("on node %s the command's exit status is unclear (the wrapper wrote %d and %d, the exec ended %d): its wrapper was killed?", l.node, outStatus, errStatus, got)
	case outStatus == 0:
		r.ExitCode = 0
		return OK, nil
	}
	r.ExitCode = outStatus
	return Exit, nil
}

// push places spec's file in the pod's own scratch directory, gone with
// the pod (a destination on the host goes through Conn.Push's own
// checks). Only root reaches the scratch, through /proc/PID/root of the
// pod's process. The file is streamed on the exec's standard input into
// a temporary file created exclusively, checked by sha256 and renamed.
func (l *kubeLink) push(ctx context.Context, c *Conn, spec PushSpec) PushResult {
	start := time.Now()
	res := PushResult{Method: "exec"}
	fail := func(class Class, format string, args ...any) PushResult {
		res.Class, res.Err, res.Duration = class, fmt.Sprintf(format, args...), time.Since(start)
		return res
	}
	if err := CheckPushName(spec.Name); err != nil {
		return fail(Error, "push: %v", err)
	}
	mode := spec.Mode.Perm()
	if mode == 0 {
		mode = 0o600
	}
	dir := l.root + PodScratch
	dest := path.Join(dir, spec.Name)
	payload, gz := spec.Data, spec.Compress
	if gz {
		if spec.Gzipped == nil {
			spec.Gzipped = Gzip(spec.Data)
		}
		payload = spec.Gzipped
	}
	for {
		r := c.Run(ctx, "push: upload", kubeScratchScript(dir, spec.Name, spec.Sum(), mode, gz), RunOptions{Raw: true, Stdin: bytes.NewReader(payload), Timeout: c.Target.CommandTimeout})
		switch {
		case r.Class == Exit && r.ExitCode == 7 && gz: // no gzip on the host: send it as it is
			payload, gz = spec.Data, false
			continue
		case r.Class != OK:
			return fail(r.Class, "push: %s: %s", dest, failure(r))
		}
		res.Path, res.Sent, res.Class, res.Duration = dest, int64(len(payload)), OK, time.Since(start)
		return res
	}
}

// kubeScratchScript receives the file on standard input into a
// temporary file of a random name, created exclusively, beside
// dir/name, checks it and renames it into place; nothing is written
// through a link.
func kubeScratchScript(dir, name, sum string, mode os.FileMode, gz bool) string {
	unpack := "cat"
	if gz {
		unpack = `{ command -v gzip >/dev/null 2>&1 || exit 7; gzip -dc; }`
	}
	return fmt.Sprintf(`umask 077; set -C; d=%s; f=%s; t=%s
[ -d "$d" ] && [ ! -L "$d" ] && cd -- "$d" || { echo "no directory $d" >&2; exit 3; }
if [ -L "$f" ] || { [ -e "$f" ] && [ ! -f "$f" ]; }; then echo "$f is a link or not a regular file: refused" >&2; exit 3; fi
trap 'rm -f -- "$t"' EXIT
%s >"$t" || exit 4
if [ -L "$t" ] || [ ! -f "$t" ]; then echo "the temporary file was swapped: refused" >&2; exit 6; fi
s=$(sha256sum <"$t") || exit 4
[ "${s%%%% *}" = %s ] || { echo "the file arrived damaged (sha256 ${s%%%% *})" >&2; exit 5; }
chmod %o "$t" && mv -f -- "$t" "$f" && trap - EXIT || exit 4`, Quote(dir), Quote(name), Quote("."+name+".gpulab-"+randomSuffix()), unpack, sum, mode)
}
