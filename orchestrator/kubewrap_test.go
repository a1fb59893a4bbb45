package orchestrator

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	utilexec "k8s.io/client-go/util/exec"

	"github.com/gpulab/gpulab/internal/testreq"
)

// runWrapped runs command under the node pod's wrapper in a real shell
// on this machine (KubeArgv without its chroot /host), as a kubelet runs
// it, and reads its end as the transport does.
func runWrapped(t *testing.T, command string, raw bool) (Class, Result, string, string) {
	t.Helper()
	testreq.Tool(t, "setsid", "the wrapper runs under util-linux's setsid -w (apt-get install util-linux)")
	nonce := newNonce()
	argv := KubeArgv(command, nonce, raw)[2:]
	var activity atomic.Int64
	var out, errOut bytes.Buffer
	tout := &trailerWriter{w: &out, prefix: trailerPrefix(nonce), activity: &activity, status: -1}
	terr := &trailerWriter{w: &errOut, prefix: trailerPrefix(nonce), activity: &activity, status: -1}
	c := exec.Command(argv[0], argv[1:]...)
	c.Stdout, c.Stderr = tout, terr
	if raw {
		c.Stdin = strings.NewReader("raw input\n") // the caller's, to its end
	} else {
		stdin, err := c.StdinPipe() // held open, as the transport does
		if err != nil {
			t.Fatal(err)
		}
		defer stdin.Close()
	}
	err := c.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code := ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal()) // as a container runtime reports it
		}
		err = utilexec.CodeExitError{Err: err, Code: code}
	} else if err != nil {
		t.Fatal(err)
	}
	l := &kubeLink{k: &KubeTransport{Namespace: "ns"}, node: "n1", pod: "p1"}
	var r Result
	class, cerr := l.exitClass(&r, err, tout.end(), terr.end())
	if cerr != nil {
		r.Err = cerr.Error()
	}
	return class, r, out.String(), errOut.String()
}

// The wrapper in a real shell: the status and both streams come back
// whole; a status line without the run's nonce is output like any other;
// a wrapper killed after its command wrote a status of its own is a host
// lost, never an OK; a background job's late output is kept.
func TestKubeWrapperInARealShell(t *testing.T) {
	class, r, out, errOut := runWrapped(t, "echo out; echo err >&2; exit 3", false)
	if class != Exit || r.ExitCode != 3 || out != "out\n" || errOut != "err\n" {
		t.Errorf("exit 3: %s %d %q %q %s", class, r.ExitCode, out, errOut, r.Err)
	}
	class, r, out, _ = runWrapped(t, "printf 'a\\036b\\n'", false)
	if class != OK || out != "a\x1eb\n" {
		t.Errorf("output holding \\x1e: %s %q %s", class, out, r.Err)
	}
	class, r, _, errOut = runWrapped(t, `printf '\036gpulab-exit 0\n' >&2; exit 4`, false)
	if class != Exit || r.ExitCode != 4 || errOut != "\x1egpulab-exit 0\n" {
		t.Errorf("a status line without the nonce: %s %d %q", class, r.ExitCode, errOut)
	}
	class, r, _, _ = runWrapped(t, `printf '\036gpulab-exit 0\n'; printf '\036gpulab-exit 0\n' >&2; kill -9 $PPID`, false)
	if class == OK || class == Exit {
		t.Errorf("the wrapper killed after a forged status: %s %d %s, want a host lost", class, r.ExitCode, r.Err)
	}
	class, r, out, errOut = runWrapped(t, "(sleep 0.3; echo late >&2) & echo now", false)
	if class != OK || out != "now\n" || errOut != "late\n" {
		t.Errorf("a background job's late output: %s %q %q %s", class, out, errOut, r.Err)
	}
	class, r, out, _ = runWrapped(t, "cat; echo raw-ok", true)
	if class != OK || out != "raw input\nraw-ok\n" {
		t.Errorf("raw: %s %q %s", class, out, r.Err)
	}
}

// The status line is found however the stream is cut into writes, and
// output without \x1e passes at once (a running command's output is
// seen as it comes).
func TestTrailerWriterSplitsAndStreams(t *testing.T) {
	var activity atomic.Int64
	var got bytes.Buffer
	tw := &trailerWriter{w: &got, prefix: trailerPrefix("abc"), activity: &activity, status: -1}
	tw.Write([]byte("progress ."))
	if got.String() != "progress ." {
		t.Errorf("output held back: %q", got.String())
	}
	for _, b := range []byte("\x1egpulab-exit abc 7\nafter\n") {
		tw.Write([]byte{b})
	}
	if st := tw.end(); st != 7 || got.String() != "progress .after\n" {
		t.Errorf("status %d, output %q", st, got.String())
	}
	var cut bytes.Buffer
	tw = &trailerWriter{w: &cut, prefix: trailerPrefix("abc"), activity: &activity, status: -1}
	tw.Write([]byte("x\x1egpulab-exit ab"))
	if st := tw.end(); st != -1 || cut.String() != "x\x1egpulab-exit ab" {
		t.Errorf("a stream cut in the status line: %d %q", st, cut.String())
	}
	if strings.Contains(KubeTrailer("n", 1), "\x00") {
		t.Error("the status line holds a NUL")
	}
}

// The pod scratch's push script, in the real /bin/sh: the file lands
// whole with its mode; a damaged one is refused and leaves nothing; a
// link planted at the name is refused, its target untouched; the
// temporary name is new for every push, so no link can wait for it.
func TestKubeScratchScriptInARealShell(t *testing.T) {
	dir := t.TempDir()
	data := []byte("probe bytes\n")
	sum := PushSpec{Data: data}.Sum()
	run := func(sum string) (int, string) {
		t.Helper()
		c := exec.Command("/bin/sh", "-c", kubeScratchScript(dir, "probe", sum, 0o700, false))
		c.Stdin = bytes.NewReader(data)
		out, err := c.CombinedOutput()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return c.ProcessState.ExitCode(), string(out)
	}
	if code, out := run(sum); code != 0 {
		t.Fatalf("push: exit %d %s", code, out)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "probe")); err != nil || !bytes.Equal(got, data) {
		t.Errorf("the file: %q %v", got, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "probe")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the file's mode: %v %v", fi, err)
	}
	if code, out := run(strings.Repeat("0", 64)); code != 5 || !strings.Contains(out, "arrived damaged") {
		t.Errorf("a damaged file: exit %d %q, want 5", code, out)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "probe")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, "probe")); err != nil {
		t.Fatal(err)
	}
	if code, out := run(sum); code != 3 || !strings.Contains(out, "is a link") {
		t.Errorf("a link at the name: exit %d %q, want 3", code, out)
	}
	if got, _ := os.ReadFile(victim); string(got) != "keep" {
		t.Errorf("the link's target was written: %q", got)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("left in the scratch: %v, want only the planted link", ents)
	}
	if a, b := kubeScratchScript(dir, "p", sum, 0o700, false), kubeScratchScript(dir, "p", sum, 0o700, false); a == b {
		t.Error("two pushes use the same temporary name")
	}
}
