package sshtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/gpulab/gpulab/internal/testreq"
)

// StartAgent runs OpenSSH's ssh-agent in the foreground on a socket of its
// own, stopped when the test ends, and returns the socket's path once the
// agent accepts connections on it. The socket file appears at bind(), before
// listen(): a client that only waited for the file was refused on a busy
// machine.
func StartAgent(t testing.TB) string {
	t.Helper()
	bin := testreq.Tool(t, "ssh-agent", "the login tests use OpenSSH's own agent (apt-get install openssh-client)")
	sock := filepath.Join(t.TempDir(), "agent.sock")
	cmd := exec.Command(bin, "-D", "-a", sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("ssh-agent: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.Dial("unix", sock); err == nil {
			_ = c.Close()
			return sock
		}
		select {
		case <-exited:
			t.Fatal("ssh-agent exited before it listened")
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("ssh-agent did not accept connections on %s within 10s", sock)
		}
	}
}

// AgentAdd loads an unencrypted key file into the agent with ssh-add.
func AgentAdd(t testing.TB, sock, keyFile string) {
	t.Helper()
	cmd := exec.Command("ssh-add", "-q", keyFile)
	cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add %s: %v: %s", keyFile, err, out)
	}
}

// KeyGen makes an ed25519 key with ssh-keygen (OpenSSH's format, .pub
// beside it) at dir/name, and returns its path and public key.
func KeyGen(t testing.TB, dir, name string) (string, ssh.PublicKey) {
	t.Helper()
	return KeyGenType(t, dir, name, "ed25519")
}

// KeyGenType is KeyGen for another key type (rsa, ecdsa).
func KeyGenType(t testing.TB, dir, name, typ string) (string, ssh.PublicKey) {
	t.Helper()
	p := filepath.Join(dir, name)
	if out, err := exec.Command("ssh-keygen", "-q", "-t", typ, "-N", "", "-C", name, "-f", p).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	data, err := os.ReadFile(p + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey(data)
	if err != nil {
		t.Fatal(err)
	}
	return p, pub
}

// Encrypt sets a passphrase on an unencrypted key file, with ssh-keygen -p.
func Encrypt(t testing.TB, keyFile, passphrase string) {
	t.Helper()
	if out, err := exec.Command("ssh-keygen", "-q", "-p", "-P", "", "-N", passphrase, "-f", keyFile).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -p: %v: %s", err, out)
	}
}

// SetAuthorized replaces the fleet's authorized_keys with keys (none: no
// key logs in). sshd reads the file at each login.
func (f *Fleet) SetAuthorized(t testing.TB, keys ...ssh.PublicKey) {
	t.Helper()
	var b strings.Builder
	for _, k := range keys {
		b.Write(ssh.MarshalAuthorizedKey(k))
	}
	writeFile(t, filepath.Join(f.Dir, "authorized_keys"), b.String(), 0o600)
}

// SSHConfig writes an ssh_config file for the fleet's servers, one Host
// block per server named as the server (h01...), with extra lines added to
// each block, and returns its path. OpenSSH's ssh -F and gpulab's resolver
// both read it.
func (f *Fleet) SSHConfig(t testing.TB, extra string) string {
	t.Helper()
	var b strings.Builder
	for _, s := range f.Servers {
		fmt.Fprintf(&b, "Host %s\n  HostName %s\n  Port %d\n  User %s\n  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n",
			s.Name, s.Addr, s.Port, f.User, f.KnownHosts)
		for _, l := range strings.Split(strings.TrimSpace(extra), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				fmt.Fprintf(&b, "  %s\n", l)
			}
		}
	}
	p := filepath.Join(t.TempDir(), "ssh_config")
	writeFile(t, p, b.String(), 0o600)
	return p
}
