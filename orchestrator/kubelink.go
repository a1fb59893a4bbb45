package orchestrator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
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
	dead      chan struct{}
	deadOnce  sync.Once
}

func (l *kubeLink) markDead() { l.deadOnce.Do(func() { close(l.dead) }) }

// kubeWrapper is wrapper (see run.go) for a node reached through its
// pod: it runs on the host, chrooted, as the leader of a session of its
// own (setsid -w, the host's util-linux: its kill 0 reaches only what it
// started, never the container runtime's processes), and runs the
// command under root's usual shell, bash where the host has it.
//
// It ends by writing the command's status on stderr (KubeTrailer): an
// exec stream the kubelet or the API server cuts ends like one whose
// command succeeded (no status on the error channel reads as success),
// so a status gpulab did not see is a host lost, never an OK.
const kubeWrapper = `exec 3<&0 </dev/null
(trap '' TERM; read -r _ <&3; kill -0 $$ 2>/dev/null || exit 0; kill -TERM 0; sleep 1; kill -KILL 0) >/dev/null 2>&1 &
exec 3<&-
s=/bin/sh; [ -x /bin/bash ] && s=/bin/bash
"$s" -c "$1"; rc=$?; printf '\036gpulab-exit %d\n' "$rc" >&2; exit "$rc"`

// kubeRawWrapper runs a raw command (its standard input the caller's)
// and writes its status as kubeWrapper does.
const kubeRawWrapper = `/bin/sh -c "$1"; rc=$?; printf '\036gpulab-exit %d\n' "$rc" >&2; exit "$rc"`

// KubeTrailer is what the wrappers write last on stderr: the status.
func KubeTrailer(code int) string { return "\x1egpulab-exit " + strconv.Itoa(code) + "\n" }

// KubeArgv is the command a node pod's exec runs for command: chrooted
// into the host's / (mounted at /host), under kubeWrapper unless raw.
func KubeArgv(command string, raw bool) []string {
	if raw {
		return []string{"chroot", "/host", "/bin/sh", "-c", kubeRawWrapper, "gpulab", command}
	}
	return []string{"chroot", "/host", "setsid", "-w", "/bin/sh", "-c", kubeWrapper, "gpulab", command}
}

// KubeUnwrap recognises KubeArgv's command line: the command, and
// whether it is raw.
func KubeUnwrap(argv []string) (command string, raw, ok bool) {
	for _, r := range []bool{false, true} {
		want := KubeArgv("", r)
		if len(argv) == len(want) && slices.Equal(argv[:len(want)-1], want[:len(want)-1]) {
			return argv[len(argv)-1], r, true
		}
	}
	return "", false, false
}

// trailerWriter passes stderr through but for its last bytes, held back
// until the end: the wrapper's status line, taken off and read there.
type trailerWriter struct {
	w    io.Writer
	tail []byte
}

const trailerHold = 32

func (t *trailerWriter) Write(p []byte) (int, error) {
	t.tail = append(t.tail, p...)
	if n := len(t.tail) - trailerHold; n > 0 {
		if _, err := t.w.Write(t.tail[:n]); err != nil {
			return 0, err
		}
		t.tail = append(t.tail[:0], t.tail[n:]...)
	}
	return len(p), nil
}

// end writes what is held back but the status line, and returns the
// status (-1 when no status line came: the stream was cut).
func (t *trailerWriter) end() int {
	code := -1
	if i := bytes.LastIndex(t.tail, []byte("\x1egpulab-exit ")); i >= 0 && bytes.HasSuffix(t.tail, []byte("\n")) {
		if n, err := strconv.Atoi(string(t.tail[i+len("\x1egpulab-exit ") : len(t.tail)-1])); err == nil {
			code = n
			t.tail = t.tail[:i]
		}
	}
	_, _ = t.w.Write(t.tail)
	t.tail = nil
	return code
}

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
		var out, errOut bytes.Buffer
		release, err := l.acquire(ctx)
		if err != nil {
			return TimeoutConnect, fmt.Errorf("waiting for an exec stream: %w", err)
		}
		err = l.exec(ctx, KubeRootArgv, nil, &out, &errOut)
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

// classify names a failed exec: RBAC's refusal as the permission, a pod
// gone as the host lost.
func (l *kubeLink) classify(err error) (Class, error) {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "forbidden") && strings.Contains(msg, "pods/exec"):
		return Forbidden, fmt.Errorf("forbidden: create pods/exec in namespace %s (RBAC: see docs/kube-transport.md for the Role the transport needs): %v", l.k.Namespace, err)
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
	release, err := l.acquire(ctx)
	if err != nil {
		return Cancelled, errors.New("cancelled")
	}
	defer release()
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
	tw := &trailerWriter{w: stderr}
	go func() { done <- l.exec(sctx, KubeArgv(command, o.Raw), stdin, stdout, tw) }()
	ended, waitErr, stopped, stopErr := watch(ctx, done, o, activity)
	if ended {
		return l.exitClass(r, waitErr, tw.end())
	}
	defer tw.end()
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

// exitClass reads an exec's end and the status the wrapper wrote (-1:
// none came). Through the API server a command killed by a signal reads
// as its shell's status (128+N), not as a signal.
func (l *kubeLink) exitClass(r *Result, err error, status int) (Class, error) {
	var ee utilexec.ExitError
	switch {
	case err != nil && !errors.As(err, &ee):
		return l.classify(err)
	case status < 0:
		return Lost, fmt.Errorf("the exec stream into pod %s/%s on node %s ended without the command's exit status (cut by the kubelet or the API server?)", l.k.Namespace, l.pod, l.node)
	case status == 0:
		r.ExitCode = 0
		return OK, nil
	}
	r.ExitCode = status
	return Exit, nil
}

// push places spec's file through the pod: into the pod's own scratch
// directory (gone with the pod) when spec names no destination, else at
// the host's absolute path (which the read-only /host refuses unless the
// transport mounts it writable). The file is streamed on the exec's
// standard input into a temporary file, checked by sha256 and renamed.
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
	dir, base := l.root+PodScratch, spec.Name
	if spec.Dest != "" {
		if !path.IsAbs(spec.Dest) {
			return fail(Error, "push: %s: a node reached through Kubernetes has no home directory: give an absolute destination", spec.Dest)
		}
		dir, base = path.Split(spec.Dest)
		if base == "" {
			base = spec.Name
		}
	}
	mode := spec.Mode.Perm()
	if mode == 0 {
		mode = 0o600
	}
	dest := path.Join(dir, base)
	payload, gz := spec.Data, spec.Compress
	if gz {
		if spec.Gzipped == nil {
			spec.Gzipped = Gzip(spec.Data)
		}
		payload = spec.Gzipped
	}
	for {
		r := c.Run(ctx, "push: upload", kubePushScript(dir, dest, spec.Sum(), mode, gz), RunOptions{Raw: true, Stdin: bytes.NewReader(payload), Timeout: c.Target.CommandTimeout})
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

// kubePushScript receives the file on standard input into a temporary
// file beside dest, checks it and renames it into place; nothing is
// written through a link.
func kubePushScript(dir, dest, sum string, mode os.FileMode, gz bool) string {
	unpack := "cat"
	if gz {
		unpack = `{ command -v gzip >/dev/null 2>&1 || exit 7; gzip -dc; }`
	}
	return fmt.Sprintf(`d=%s; f=%s; t="$f.gpulab-$$"
[ -d "$d" ] && [ ! -L "$d" ] || { echo "no directory $d" >&2; exit 3; }
if [ -L "$f" ] || { [ -e "$f" ] && [ ! -f "$f" ]; }; then echo "$f is a link or not a regular file: refused" >&2; exit 3; fi
umask 077
%s >"$t" || { rm -f -- "$t"; exit 4; }
s=$(sha256sum <"$t") || { rm -f -- "$t"; exit 4; }
[ "${s%%%% *}" = %s ] || { rm -f -- "$t"; echo "the file arrived damaged (sha256 ${s%%%% *})" >&2; exit 5; }
chmod %o "$t" && mv -f -- "$t" "$f" || { rm -f -- "$t"; exit 4; }`, Quote(dir), Quote(dest), unpack, sum, mode)
}
