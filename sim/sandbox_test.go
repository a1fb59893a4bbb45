package sim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/internal/testreq"
	"github.com/gpulab/gpulab/orchestrator"
)

// hostileCase is a command that tries to reach the operator's machine.
type hostileCase struct {
	name string
	cmd  string
	// inTree is the simulated path the command creates inside the host's
	// own tree, as it would on a real host ("" when it creates nothing).
	inTree string
	// stdout, when set, is what the command must print; stderr, what its
	// standard error must hold.
	stdout, stderr string
}

// TestNothingLeavesTheSandbox runs commands that try to write, read or
// run something on the operator's machine, through gpulab's orchestrator
// (the wrapped path) and through OpenSSH's ssh (a plain exec), with
// MARKER a real absolute path in a directory of this test. The marker
// never appears on the real file system: what a command creates lands in
// the host's own tree, at the same simulated path. The directory of the
// marker is also $TMPDIR of this process and of the shells, so that a
// named pipe the shell interpreter made on the real file system (process
// substitution) would show there.
func TestNothingLeavesTheSandbox(t *testing.T) {
	f, files := startFleet(t, Config{Hosts: 1})
	h := f.hosts[0]
	dir := t.TempDir()   // the operator's side; must stay empty
	local := t.TempDir() // what sftp gets
	raw := rawClient(t, f, h.name)
	token := "gpulab-sim-marker-" + randomHex(t)
	m := filepath.Join(dir, token)
	t.Setenv("TMPDIR", dir) // after the fleet started: its trees are elsewhere

	// The marker's directory exists in the host's tree too, so that what a
	// command creates shows there, at the path it named.
	g := newGpulab(t, files, orchestrator.Overrides{})
	conn := g.dial(t, h.name)
	if r := conn.Run(context.Background(), "mkdir", "mkdir -p "+orchestrator.Quote(dir), orchestrator.RunOptions{}); r.Class != orchestrator.OK {
		t.Fatalf("mkdir -p %s on the host: %v %s", dir, r.Class, r.Stderr)
	}
	rootNames := treeRoot(t, h.fs.dir)

	q := orchestrator.Quote
	cases := []hostileCase{
		{name: "touch", cmd: "touch " + q(m), inTree: m},
		{name: "dotdot from home", cmd: "echo x > $HOME/../../../.." + q(m), inTree: m},
		{name: "dotdot relative", cmd: "cd /tmp && echo x > ../../../../../../.." + q(m), inTree: m},
		{name: "cd above root", cmd: "cd /; cd ..; cd ../..; pwd", stdout: "/\n"},
		{name: "absolute link", cmd: "ln -s / up; echo x > up" + q(m)},
		{name: "relative link out", cmd: "ln -s ../../../../../../../.. rel; echo x > rel" + q(m)},
		{name: "shadow", cmd: "cat /etc/shadow /etc/passwd; cat /proc/self/environ /proc/self/status", stdout: ""},
		{name: "python3", cmd: "python3 -c 'open(\"" + m + "\", \"w\")'"},
		{name: "perl", cmd: "perl -e 'open(F, \">" + m + "\")'"},
		{name: "bin sh -c", cmd: "/bin/sh -c " + q("touch "+q(m)), inTree: m},
		{name: "exec usr bin touch", cmd: "exec /usr/bin/touch " + q(m), inTree: m},
		{name: "env", cmd: "env touch " + q(m), inTree: m},
		{name: "timeout", cmd: "timeout 5 touch " + q(m), inTree: m},
		{name: "sudo", cmd: "sudo touch " + q(m), inTree: m},
		{name: "nohup setsid nice stdbuf", cmd: "nohup setsid nice -n 5 stdbuf -o0 touch " + q(m), inTree: m},
		{name: "bash -c", cmd: "bash -c " + q("touch "+q(m)), inTree: m},
		{name: "SHELL -c", cmd: "$SHELL -c " + q("echo x > "+q(m)), inTree: m},
		{name: "command substitution", cmd: "echo $(touch " + q(m) + "; echo hi)", inTree: m, stdout: "hi\n"},
		{name: "heredoc", cmd: "cat > " + q(m) + " <<EOF\nx\nEOF", inTree: m},
		{name: "heredoc into sh", cmd: "sh <<EOF\ntouch " + q(m) + "\nEOF", inTree: m},
		{name: "eval", cmd: "eval " + q("touch "+q(m)), inTree: m},
		{name: "function and trap", cmd: "f() { touch " + q(m) + "; }; trap f EXIT; true", inTree: m},
		{name: "source", cmd: "echo " + q("touch "+q(m)) + " > s.sh; source s.sh", inTree: m},
		{name: "dot", cmd: "echo " + q("touch "+q(m)) + " > s.sh; . ./s.sh", inTree: m},
		{name: "cp tee gzip", cmd: "cp /etc/hostname " + q(m) + " && tee -a " + q(m) + " < /etc/os-release > /dev/null && gzip -k " + q(m), inTree: m},
		{name: "process substitution in", cmd: "cat <(touch " + q(m) + "; echo hi)", stderr: "process substitution <(...) is not available on a simulated host"},
		{name: "process substitution in eval", cmd: "eval " + q("cat <(touch "+q(m)+"; echo hi)")},
		{name: "process substitution in source", cmd: "echo " + q("echo hi > >(cat > "+q(m)+")") + " > p.sh; source p.sh"},
		{name: "process substitution out", cmd: "echo hi > >(cat > " + q(m) + ")"},
		{name: "process substitution with TMPDIR", cmd: "export TMPDIR=" + q(dir) + "; bash -c 'while read -r l; do echo $l; done < <(echo hi)'"},
		// The shell interpreter opens <TMPDIR>/sh-interp-* itself, bypassing
		// the host's tree, for its named pipes.
		{name: "interpreter pipe name in tmp", cmd: "echo x > /tmp/sh-interp-" + token, inTree: "/tmp/sh-interp-" + token},
		{name: "interpreter pipe name in TMPDIR", cmd: "export TMPDIR=" + q(dir) + "; bash -c " + q("echo x > "+q(filepath.Join(dir, "sh-interp-"+token))), inTree: filepath.Join(dir, "sh-interp-"+token)},
		{name: "glob root", cmd: "echo /*", stdout: "/" + strings.Join(rootNames, " /") + "\n"},
		{name: "ls up", cmd: "ls ../../..", stdout: strings.Join(rootNames, "\n") + "\n"},
		{name: "tilde users", cmd: "echo ~daemon ~root ~" + User + " ~", stdout: "~daemon /root " + Home + " " + Home + "\n"},
		{name: "dev tcp", cmd: "echo x > /dev/tcp/127.0.0.1/22"},
		{name: "kill the real pid", cmd: "kill -9 $$ $PPID 1"},
		{name: "proc self exe", cmd: "cp /proc/self/exe x; ls -l /proc/self/cwd/"},
	}

	check := func(t *testing.T, c hostileCase, stdout, stderr string) {
		t.Helper()
		if c.stdout != "" && stdout != c.stdout {
			t.Errorf("%q printed %q, want %q", c.cmd, stdout, c.stdout)
		}
		if !strings.Contains(stderr, c.stderr) {
			t.Errorf("%q: standard error %q, want it to say %q", c.cmd, stderr, c.stderr)
		}
		if c.inTree != "" {
			if _, err := os.Lstat(filepath.Join(h.fs.dir, c.inTree)); err != nil {
				t.Errorf("%q: %s is not in the host's tree: %v", c.cmd, c.inTree, err)
			}
		} else if _, err := os.Lstat(filepath.Join(h.fs.dir, m)); err == nil {
			t.Errorf("%q made %s in the host's tree", c.cmd, m)
		}
		for _, p := range []string{m, m + ".gz", c.inTree} {
			if p != "" {
				if err := os.RemoveAll(filepath.Join(h.fs.dir, p)); err != nil {
					t.Fatal(err)
				}
			}
		}
		assertEmpty(t, dir, c.cmd)
	}

	t.Run("gpulab", func(t *testing.T) {
		for _, c := range cases {
			r := conn.Run(context.Background(), c.name, c.cmd, orchestrator.RunOptions{})
			if r.Class != orchestrator.OK && r.Class != orchestrator.Exit {
				t.Errorf("%q: %v (%s); want the host to answer", c.cmd, r.Class, r.Err)
			}
			check(t, c, string(r.Stdout), string(r.Stderr))
		}
	})
	t.Run("openssh", func(t *testing.T) {
		testreq.Tool(t, "ssh", "the sandbox test runs its commands through OpenSSH's ssh too (apt-get install openssh-client)")
		for _, c := range cases {
			out, stderr, err := openssh(t, files, "", "ssh", "-o", "BatchMode=yes", h.name, c.cmd)
			var ee *exec.ExitError
			if err != nil && (!errors.As(err, &ee) || ee.ExitCode() == 255) {
				t.Errorf("ssh %q: %v\n%s", c.cmd, err, stderr)
			}
			check(t, c, out, stderr)
		}
	})

	t.Run("interactive", func(t *testing.T) {
		// A login shell with a terminal, one line at a time.
		s, err := raw.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.RequestPty("xterm", 40, 200, nil); err != nil {
			t.Fatal(err)
		}
		in, _ := s.StdinPipe()
		var out strings.Builder
		s.Stdout = &out
		if err := s.Shell(); err != nil {
			t.Fatal(err)
		}
		pipe := "/tmp/sh-interp-" + token + ".interactive"
		for _, line := range []string{"cat <(touch " + q(m) + "; echo hi)", "echo x > " + pipe + "; echo ~daemon", "exit"} {
			if _, err := io.WriteString(in, line+"\r"); err != nil {
				t.Fatal(err)
			}
		}
		_ = wait(t, "the interactive shell", s)
		for _, want := range []string{"bash: line 1: process substitution <(...) is not available on a simulated host", "\r\n~daemon\r\n"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("the interactive shell printed %q, want %q in it", out.String(), want)
			}
		}
		if _, err := os.Lstat(filepath.Join(h.fs.dir, pipe)); err != nil {
			t.Errorf("%s is not in the host's tree: %v", pipe, err)
		}
		if _, err := os.Lstat(filepath.Join(h.fs.dir, m)); err == nil {
			t.Errorf("the refused line made %s in the host's tree", m)
		}
		assertEmpty(t, dir, "the interactive shell")
	})
	t.Run("sftp", func(t *testing.T) {
		testreq.Tool(t, "sftp", "the sandbox test uses OpenSSH's sftp too (apt-get install openssh-client)")
		payload := filepath.Join(local, "payload")
		if err := os.WriteFile(payload, []byte("payload\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		// Each line may fail ("-"): what matters is where things land.
		batch := strings.Join([]string{
			"-put " + payload + " " + m,
			"-symlink / up",
			"-put " + payload + " up" + m + ".up",
			"-symlink ../../../../../../../.. rel",
			"-put " + payload + " rel" + m + ".rel",
			"-rename " + m + " ../../../../../../../.." + m + ".renamed",
			"-get /etc/hostname " + filepath.Join(local, "hostname"),
			"-get ../../../../../../../../etc/os-release " + filepath.Join(local, "os-release"),
			"-get /etc/shadow " + filepath.Join(local, "shadow"),
			"-get up/etc/hostname " + filepath.Join(local, "up-hostname"),
			"bye",
		}, "\n") + "\n"
		if _, stderr, err := openssh(t, files, batch, "sftp", "-q", "-b", "-", "-o", "BatchMode=yes", h.name); err != nil {
			t.Fatalf("sftp: %v\n%s", err, stderr)
		}
		if _, err := os.Lstat(filepath.Join(h.fs.dir, m+".renamed")); err != nil {
			t.Errorf("the file put at %s and renamed from above the root is not in the host's tree: %v", m, err)
		}
		for _, name := range []string{"hostname", "os-release"} {
			want, _ := os.ReadFile(filepath.Join(h.fs.dir, "etc", name))
			if got, err := os.ReadFile(filepath.Join(local, name)); err != nil || string(got) != string(want) {
				t.Errorf("sftp get /etc/%s gave %q (%v), want the host's own %q", name, got, err, want)
			}
		}
		for _, name := range []string{"shadow", "up-hostname"} {
			if _, err := os.Stat(filepath.Join(local, name)); err == nil {
				t.Errorf("sftp got %s, which the host does not have", name)
			}
		}
		for _, p := range []string{m + ".up", m + ".rel"} {
			if _, err := os.Lstat(filepath.Join(h.fs.dir, p)); err == nil {
				t.Errorf("%s: put through a link made it in the host's tree", p)
			}
		}
		assertEmpty(t, dir, "sftp")
	})

	if _, err := os.Lstat(m); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the marker %s is on the real file system (%v)", m, err)
	}
	for _, d := range []string{"/tmp", os.TempDir()} {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if strings.Contains(e.Name(), token) {
				t.Errorf("%s appeared on the real file system", filepath.Join(d, e.Name()))
			}
		}
	}
}

// assertEmpty fails t when the operator's directory dir holds anything.
func assertEmpty(t *testing.T, dir, after string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("after %q: %s appeared on the real file system", after, filepath.Join(dir, e.Name()))
		_ = os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// treeRoot lists the names at the root of a host's tree.
func treeRoot(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// source NAME looks NAME up in the host's tree, not on the operator's
// machine: PATH=/etc source shadow reads the same as a name that exists
// nowhere (it told whether the operator's /etc/shadow exists).
func TestSourceIsNoOracleOnTheRealFilesystem(t *testing.T) {
	if _, err := os.Stat("/etc/shadow"); err != nil {
		t.Fatalf("this test needs a real /etc/shadow to ask about: %v", err)
	}
	f, files := startFleet(t, Config{Hosts: 1})
	g := newGpulab(t, files, orchestrator.Overrides{})
	conn := g.dial(t, f.hosts[0].name)
	answer := func(name string) string {
		r := conn.Run(context.Background(), "source", "PATH=/etc source "+name+"; echo rc=$?", orchestrator.RunOptions{})
		return strings.ReplaceAll(string(r.Stdout)+string(r.Stderr), name, "NAME")
	}
	real, none := answer("shadow"), answer("shadow-"+randomHex(t))
	if real != none {
		t.Errorf("source tells a real file from none:\nshadow: %q\nnone:   %q", real, none)
	}
	if strings.Contains(real, "/etc/NAME") {
		t.Errorf("source names the real file it found: %q", real)
	}
}

// A fleet's directory that a killed gpulab left in TMPDIR is removed at
// the next start; one whose process still runs, or another user's, stays.
func TestPrivateDirRemovesCrashedTrees(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	mk := func(name, pid string) string {
		d := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(d, "dgx01", "etc"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, ".pid"), []byte(pid+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return d
	}
	crashed := mk(simDirPrefix+"crashed", fmt.Sprint(gone.Process.Pid))
	running := mk(simDirPrefix+"running", fmt.Sprint(os.Getpid()))
	other := mk("unrelated-dir", fmt.Sprint(gone.Process.Pid))
	d, err := PrivateDir(simDirPrefix)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(d)
	if _, err := os.Stat(crashed); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the crashed fleet's directory is still there: %v", err)
	}
	for _, keep := range []string{running, other, d} {
		if _, err := os.Stat(keep); err != nil {
			t.Errorf("%s was removed: %v", keep, err)
		}
	}
}
