package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"

	"github.com/gpulab/gpulab/orchestrator"
)

// lower sets *p to v for the test.
func lower[T any](t *testing.T, p *T, v T) {
	old := *p
	*p = v
	t.Cleanup(func() { *p = old })
}

// runOn runs line in one exec session of a raw client and returns its
// output and exit status; the session has until the test's deadline.
func runOn(t *testing.T, c *ssh.Client, line string) (stdout, stderr string, code int) {
	t.Helper()
	s, err := c.NewSession()
	if err != nil {
		t.Fatalf("new session: %v", err)
	}
	defer s.Close()
	var o, e bytes.Buffer
	s.Stdout, s.Stderr = &o, &e
	err = s.Run(line)
	var ee *ssh.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitStatus()
	default:
		t.Fatalf("%q: %v (stderr %q)", line, err, e.String())
	}
	return o.String(), e.String(), code
}

// A session's bombs end that session's command with bash's own words;
// the host answers the next command.
func TestSessionBombsEndTheirCommand(t *testing.T) {
	lower(t, &maxJobs, 16)
	lower(t, &maxInput, 64<<10)
	lower(t, &maxFuncNest, 100)
	lower(t, &maxScript, 64<<10)
	f, _ := startFleet(t, Config{Hosts: 1})
	c := rawClient(t, f, f.hosts[0].name)
	for _, tc := range []struct{ name, line, stderr, stdout string }{
		{"fork bomb", `f() { f & f & wait; }; f; echo survived`, "Resource temporarily unavailable", "survived\n"},
		{"fork bomb in bash -c", `bash -c 'f() { f & f & wait; }; f'; echo survived`, "Resource temporarily unavailable", "survived\n"},
		// Detached jobs end with their session's command.
		{"pipe bomb", `b() { b | b & }; b; wait; echo survived`, "", "survived\n"},
		{"recursion", `f() { f; }; f`, "maximum function nesting level exceeded (100)", ""},
		{"fork bomb in eval", `eval 'f() { f & f & wait; }; f'; echo survived`, "a background job (&) inside eval is not simulated", "survived\n"},
		{"fork bomb sourced", `echo 'f() { f & f & wait; }; f' > b.sh; . ./b.sh; echo survived`, "a background job (&) inside . is not simulated", "survived\n"},
		{"eval without jobs", `eval 'echo $((6*7))'`, "", "42\n"},
		{"jobs in a trap", `bash -c "trap 'sleep 1 &' EXIT"; echo survived`, "a background job (&) inside trap is not simulated", "survived\n"},
		{"a sourced file too big to check", `seq 1 70000 | while read -r n; do echo "#$n"; done > big.sh; echo 'sleep 1 &' >> big.sh; . ./big.sh; echo survived`, "over 65536 bytes", "survived\n"},
		{"substitution", `x=$(seq 1 100000000); [ ${#x} -le 65536 ] && echo held`, "seq: write error: cannot allocate memory", "held\n"},
	} {
		stdout, stderr, _ := runOn(t, c, tc.line)
		if !strings.Contains(stderr, tc.stderr) || (tc.stdout != "" && !strings.HasSuffix(stdout, tc.stdout)) {
			t.Errorf("%s: %q printed %q, stderr %.300q; want stderr to say %q and stdout to end %q", tc.name, tc.line, stdout, stderr, tc.stderr, tc.stdout)
		}
	}
	// Jobs that end give their place back: more jobs than the bound, one
	// after another, all run; their exit status is theirs.
	if stdout, stderr, _ := runOn(t, c, `n=0; for i in $(seq 40); do (exit 3) & wait $!; n=$((n+$?)); done; echo $n`); stdout != "120\n" {
		t.Errorf("40 jobs one after another: %q %q, want 120 (each exits 3)", stdout, stderr)
	}
	if stdout, _, code := runOn(t, c, `echo ok`); stdout != "ok\n" || code != 0 {
		t.Errorf("after the bombs: %q exit %d", stdout, code)
	}
}

// The script a shell reads from standard input, and the environment env
// requests add, are bounded.
func TestSessionBuffersAreBounded(t *testing.T) {
	lower(t, &maxScript, 64<<10)
	lower(t, &maxEnv, 3)
	lower(t, &maxEnvBytes, 1<<10)
	f, _ := startFleet(t, Config{Hosts: 1})
	c := rawClient(t, f, f.hosts[0].name)

	s, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	var e bytes.Buffer
	s.Stderr = &e
	s.Stdin = io.LimitReader(zeros{}, 1<<30) // ssh -T host < /dev/zero, for a GiB
	err = s.Shell()
	if err == nil {
		err = s.Wait()
	}
	s.Close()
	var ee *ssh.ExitError
	if !errors.As(err, &ee) || ee.ExitStatus() != 126 || !strings.Contains(e.String(), "the script on standard input is over") {
		t.Errorf("a shell fed zeros: %v, stderr %q; want exit 126 and the bound named", err, e.String())
	}

	s, err = c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	accepted := 0
	for i := range 10 {
		if s.Setenv(fmt.Sprintf("LC_X%d", i), strings.Repeat("v", 100)) == nil {
			accepted++
		}
	}
	if err := s.Setenv("LC_BIG", strings.Repeat("v", 2<<10)); err == nil {
		t.Errorf("an env request of 2 KiB was accepted past a bound of 1 KiB")
	}
	out, err := s.Output("env | grep -c '^LC_X'")
	if accepted != 3 || strings.TrimSpace(string(out)) != "3" {
		t.Errorf("10 env requests: %d accepted, env shows %q (%v); want 3", accepted, out, err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// Connections that never log in cannot keep a host from its users: past
// maxStartups they are closed at once, and each is closed after
// handshakeTimeout.
func TestUnauthenticatedConnectionsAreBounded(t *testing.T) {
	lower(t, &maxStartups, 2)
	lower(t, &handshakeTimeout, 300*time.Millisecond)
	f, _ := startFleet(t, Config{Hosts: 1})
	h := f.Hosts()[0]
	addr := net.JoinHostPort(h.Address, strconv.Itoa(h.Port))
	deadline := time.Now().Add(30 * time.Second)
	var idle []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	// Each idle connection gets the server's version line: it is being served.
	for _, c := range idle {
		_ = c.SetReadDeadline(deadline)
		if line, err := readConnLine(c); err != nil || !strings.HasPrefix(line, "SSH-2.0-") {
			t.Fatalf("waiting for the host's version line on an idle connection: %q %v", line, err)
		}
	}
	over, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	_ = over.SetReadDeadline(deadline)
	if n, err := over.Read(make([]byte, 64)); err != io.EOF {
		t.Errorf("a third connection not logged in, past maxStartups 2: read %d bytes, %v; want it closed at once (EOF)", n, err)
	}
	// The idle ones are closed when their grace time ends.
	for i, c := range idle {
		if _, err := io.Copy(io.Discard, c); err != nil {
			t.Errorf("idle connection %d: waiting for the host to close it: %v", i, err)
		}
	}
	// The host logs a user in.
	if stdout, _, _ := runOn(t, rawClient(t, f, h.Name), "echo ok"); stdout != "ok\n" {
		t.Errorf("after the idle connections: %q", stdout)
	}
}

func readConnLine(c net.Conn) (string, error) {
	var b []byte
	one := make([]byte, 1)
	for len(b) < 256 {
		if _, err := c.Read(one); err != nil {
			return string(b), err
		}
		if one[0] == '\n' {
			return string(b), nil
		}
		b = append(b, one[0])
	}
	return string(b), nil
}

// A host whose accept fails for want of descriptors (EMFILE) keeps
// serving when they come back.
func TestAcceptOutlivesEMFILE(t *testing.T) {
	f, _ := startFleet(t, Config{Hosts: 1})
	h := f.Hosts()[0]
	addr := net.JoinHostPort(h.Address, strconv.Itoa(h.Port))
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	// Hold descriptors until the process has none left, then dial: the
	// connection waits in the listener's backlog while accept fails.
	low := old
	low.Cur = uint64(openFiles(t)) + 16
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	restore := func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) }
	defer restore()
	var held []int
	for {
		fd, err := syscall.Open("/dev/null", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			break
		}
		held = append(held, fd)
	}
	// One descriptor left, for the dialing side: the kernel completes the
	// connection, and the host's accept has none for it.
	syscall.Close(held[len(held)-1])
	held = held[:len(held)-1]
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial with one descriptor left: %v", err)
	}
	defer c.Close()
	hs := f.hosts[0]
	for deadline := time.Now().Add(30 * time.Second); hs.acceptErrs.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for the host's accept to fail with no descriptor left")
		}
	}
	for _, fd := range held {
		syscall.Close(fd)
	}
	restore()
	// The connection that waited is served.
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if line, err := readConnLine(c); err != nil || !strings.HasPrefix(line, "SSH-2.0-") {
		t.Errorf("waiting 30 s for the host to serve the connection made while it had no descriptor: %q %v", line, err)
	}
}

func openFiles(t *testing.T) int {
	t.Helper()
	n := 0
	for fd := 0; fd < 1<<16; fd++ {
		if _, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFD, 0); e == 0 {
			n = fd + 1
		}
	}
	return n
}

// An SFTP setstat cannot make a file larger than the disk, and the disk's
// count cannot overflow (two 2^62-byte truncates wrapped it, and 900 MiB
// were written past a 256 MiB disk).
func TestSFTPTruncateCannotOverflowTheDisk(t *testing.T) {
	lower(t, &hostDisk, 1<<20)
	f, _ := startFleet(t, Config{Hosts: 1})
	c := rawClient(t, f, f.hosts[0].name)
	sc, err := sftp.NewClient(c)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	for _, name := range []string{"a", "b"} {
		w, err := sc.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
		// 2^62 bytes is refused by ext4 itself (tmpfs, where /tmp often is,
		// takes it); 2^40, by the simulated disk.
		for _, size := range []int64{1 << 40, 1 << 62} {
			if err := sc.Truncate(name, size); err == nil {
				t.Errorf("truncate %s to %d bytes on a 1 MiB disk succeeded", name, size)
			}
		}
	}
	w, err := sc.Create("fill")
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(w, io.LimitReader(zeros{}, 4<<20))
	w.Close()
	if err == nil || n > hostDisk {
		t.Errorf("wrote %d bytes of 4 MiB on a 1 MiB disk (%v); want the write refused at the disk", n, err)
	}
	if _, err := sc.Create("big"); err == nil {
		if err := sc.Truncate("big", hostDisk); err == nil {
			t.Errorf("a truncate that grows a file past the free space succeeded")
		}
	}
	if _, stderr, code := runOn(t, c, "echo x >> a"); code != 1 || !strings.Contains(stderr, "no space left on device") {
		t.Errorf("a write on the full disk: exit %d, %q", code, stderr)
	}
}

// A host runs maxProbesPerHost real probe processes at once at most.
func TestProbeProcessesAreBounded(t *testing.T) {
	probe := simulatorProbe(t)
	lower(t, &maxProbesPerHost, 0)
	_, files := startFleet(t, Config{Hosts: 1})
	g := newGpulab(t, files, orchestrator.Overrides{})
	conn := g.dial(t, "dgx01")
	r := conn.Push(context.Background(), orchestrator.PushSpec{Name: "nvmlprobe", Data: probe, Mode: 0o700})
	if r.Class != orchestrator.OK {
		t.Fatalf("push: %s %s", r.Class, r.Err)
	}
	res := conn.Run(context.Background(), "probe", orchestrator.Quote(r.Path), orchestrator.RunOptions{})
	if res.ExitCode != 126 || !strings.Contains(string(res.Stderr), "Resource temporarily unavailable") {
		t.Errorf("a probe past the host's bound: exit %d %q", res.ExitCode, res.Stderr)
	}
}

// What an SFTP client is told when an operation fails names the host's
// own paths, never the directory on the operator's machine behind them.
func TestSFTPErrorsKeepTheRealTreeHidden(t *testing.T) {
	f, _ := startFleet(t, Config{Hosts: 1})
	c := rawClient(t, f, f.hosts[0].name)
	sc, err := sftp.NewClient(c)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if w, err := sc.Create("file"); err != nil {
		t.Fatal(err)
	} else {
		w.Close()
	}
	if err := sc.Mkdir("dir"); err != nil {
		t.Fatal(err)
	}
	if w, err := sc.Create("dir/in"); err != nil { // Remove falls back to rmdir
		t.Fatal(err)
	} else {
		w.Close()
	}
	failing := []struct {
		name string
		op   func() error
	}{
		{"open missing", func() error { _, err := sc.Open("missing/x"); return err }},
		{"stat missing", func() error { _, err := sc.Stat("/no/such"); return err }},
		{"lstat missing", func() error { _, err := sc.Lstat("no-such"); return err }},
		{"readdir a file", func() error { _, err := sc.ReadDir("file"); return err }},
		{"readlink a file", func() error { _, err := sc.ReadLink("file"); return err }},
		{"rename onto file", func() error { return sc.Rename("dir", "file") }},
		{"posix rename", func() error { return sc.PosixRename("missing", "dir/x") }},
		{"rename escaping", func() error { return sc.PosixRename("missing", "../../../../../../x") }},
		{"remove a full dir", func() error { return sc.Remove("dir") }},
		{"rmdir a file", func() error { return sc.RemoveDirectory("file") }},
		{"mkdir existing", func() error { return sc.Mkdir("dir") }},
		{"link missing", func() error { return sc.Link("missing", "l") }},
		{"symlink existing", func() error { return sc.Symlink("file", "dir") }},
		{"chmod missing", func() error { return sc.Chmod("missing", 0o600) }},
		{"truncate missing", func() error { return sc.Truncate("missing", 1) }},
		{"chtimes missing", func() error { return sc.Chtimes("missing", time.Now(), time.Now()) }},
		{"create in file", func() error { _, err := sc.Create("file/x"); return err }},
		{"open escaping", func() error { _, err := sc.Open("../../../../../../../etc/shadow"); return err }},
	}
	for _, c := range failing {
		name, err := c.name, c.op()
		if err == nil {
			t.Errorf("%s: succeeded; the test wants a failure to read", name)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, f.dir) || strings.Contains(msg, simDirPrefix) || strings.Contains(msg, os.TempDir()+"/") {
			t.Errorf("%s: the client is told %q, which names the operator's machine (%s)", name, msg, f.dir)
		}
	}
}

// Connections not logged in are dropped as sshd drops them (MaxStartups
// 10:30:100): none up to 10, all past 100, and in between some, so that
// 40 idle connections from anyone no longer shut every client out.
func TestStartupsDropAsSSHD(t *testing.T) {
	for n := 1; n <= startupsStart; n++ {
		if dropStartup(n) {
			t.Fatalf("connection %d (not past start %d) was dropped", n, startupsStart)
		}
	}
	if !dropStartup(maxStartups + 1) {
		t.Errorf("connection %d (past full %d) was let in", maxStartups+1, maxStartups)
	}
	dropped := 0
	for range 1000 {
		if dropStartup(41) {
			dropped++
		}
	}
	// sshd's odds at 41 of 10:30:100 are 30% + 70% × 31/91, about 54%.
	if dropped < 300 || dropped > 800 {
		t.Errorf("with 40 connections not logged in, %d of 1000 new ones were dropped; want about 540", dropped)
	}
}
