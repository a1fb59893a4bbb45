// Package sshtest starts fleets of real OpenSSH sshd processes on loopback
// for tests and benchmarks: each with its own host key, config, port, pid
// file and log, one authorized client key, and a known_hosts file that
// lists them all. Servers are stopped by pid when the test ends.
package sshtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpulab/gpulab/internal/testreq"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHD is where Debian's openssh-server puts the daemon.
const SSHD = "/usr/sbin/sshd"

// Require skips t when sshd is missing, loudly; under CI (CI set) it fails
// instead, so a CI run can never pass by skipping the SSH suite.
func Require(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(SSHD); err == nil {
		return
	}
	testreq.Missing(t, SSHD+" is missing: the SSH integration tests need Debian's openssh-server (apt-get install openssh-server)")
}

// Options shape a fleet.
type Options struct {
	// Extra is appended to every server's sshd_config.
	Extra string
	// MaxStartups and MaxSessions default to values high enough that tests
	// not about these limits do not hit them; set to "default" to leave
	// OpenSSH's defaults.
	MaxStartups string
	MaxSessions string
	// Env is set in every session (sshd's SetEnv).
	Env map[string]string
	// EnvFor, if set, adds variables for server i (0-based), for tests
	// that need each "host" to have its own directories.
	EnvFor func(i int) map[string]string
	// NoSFTP leaves the sftp subsystem out.
	NoSFTP bool
}

// Fleet is a set of running sshd servers sharing one client key.
type Fleet struct {
	Dir        string
	Servers    []*Server
	ClientKey  string // private key file (OpenSSH format, unencrypted)
	KnownHosts string // known_hosts listing every server
	User       string
	Signer     ssh.Signer
}

// Server is one sshd.
type Server struct {
	Name     string // "h01"...
	Addr     string // 127.0.0.1
	Port     int
	Dir      string
	HostKey  ssh.PublicKey
	hostPriv ed25519.PrivateKey
	config   string
	// configText renders sshd_config for the current port.
	configText func() string
	cmd        *exec.Cmd
	exited     chan struct{} // closed when cmd has exited
	mu         sync.Mutex
}

// HostPort is "127.0.0.1:port".
func (s *Server) HostPort() string { return net.JoinHostPort(s.Addr, strconv.Itoa(s.Port)) }

// Start starts n servers and registers their shutdown with t.Cleanup.
func Start(t testing.TB, n int, opts Options) *Fleet {
	t.Helper()
	Require(t)
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil { // privilege separation directory
		t.Fatalf("sshtest: %v", err)
	}
	dir := t.TempDir()
	f := &Fleet{Dir: dir, User: currentUser(t)}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	f.ClientKey = filepath.Join(dir, "client_ed25519")
	writeKey(t, f.ClientKey, priv)
	sshPub, _ := ssh.NewPublicKey(pub)
	f.Signer, _ = ssh.NewSignerFromKey(priv)
	authorized := filepath.Join(dir, "authorized_keys")
	writeFile(t, authorized, string(ssh.MarshalAuthorizedKey(sshPub)), 0o600)
	f.KnownHosts = filepath.Join(dir, "known_hosts")

	var known strings.Builder
	for i := range n {
		s := &Server{Name: fmt.Sprintf("h%02d", i+1), Addr: "127.0.0.1", Dir: filepath.Join(dir, fmt.Sprintf("h%02d", i+1))}
		if err := os.MkdirAll(s.Dir, 0o700); err != nil {
			t.Fatal(err)
		}
		s.Port = freePort(t)
		hpub, hpriv, _ := ed25519.GenerateKey(rand.Reader)
		s.hostPriv = hpriv
		writeKey(t, filepath.Join(s.Dir, "host_ed25519"), hpriv)
		s.HostKey, _ = ssh.NewPublicKey(hpub)
		s.config = filepath.Join(s.Dir, "sshd_config")
		o := opts
		if opts.EnvFor != nil {
			o.Env = map[string]string{}
			for k, v := range opts.Env {
				o.Env[k] = v
			}
			for k, v := range opts.EnvFor(i) {
				o.Env[k] = v
			}
		}
		s.configText = func() string { return sshdConfig(s, authorized, o) }
		writeFile(t, s.config, s.configText(), 0o600)
		f.Servers = append(f.Servers, s)
	}
	t.Cleanup(f.Stop)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, s := range f.Servers {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = s.start() }()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("sshtest: %v", err)
	}
	for _, s := range f.Servers { // ports are final only now
		known.WriteString(knownhosts.Line([]string{knownhosts.Normalize(s.HostPort())}, s.HostKey) + "\n")
	}
	writeFile(t, f.KnownHosts, known.String(), 0o600)
	return f
}

func sshdConfig(s *Server, authorized string, o Options) string {
	maxStartups, maxSessions := "1000:30:2000", "64"
	if o.MaxStartups != "" {
		maxStartups = o.MaxStartups
	}
	if o.MaxSessions != "" {
		maxSessions = o.MaxSessions
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Port %d\nListenAddress %s\nHostKey %s\nPidFile %s\nAuthorizedKeysFile %s\n",
		s.Port, s.Addr, filepath.Join(s.Dir, "host_ed25519"), filepath.Join(s.Dir, "sshd.pid"), authorized)
	b.WriteString("StrictModes no\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n")
	b.WriteString("PubkeyAuthentication yes\nPermitRootLogin yes\nPrintMotd no\nPrintLastLog no\nUseDNS no\n")
	b.WriteString("LogLevel ERROR\n")
	if !o.NoSFTP {
		b.WriteString("Subsystem sftp internal-sftp\n")
	}
	// A neutral shell: bash sources ~/.bashrc for commands run by sshd
	// unless SHLVL says it is nested. Some machines' root .bashrc costs
	// hundreds of milliseconds, which would drown what tests measure.
	// sshd takes the first SetEnv line only, so all variables go on it.
	b.WriteString("SetEnv SHLVL=1")
	keys := make([]string, 0, len(o.Env))
	for k := range o.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kv := k + "=" + o.Env[k]
		if strings.ContainsAny(kv, " \t") {
			kv = `"` + kv + `"` // sshd_config's quoting; a value cannot hold '"'
		}
		fmt.Fprintf(&b, " %s", kv)
	}
	b.WriteString("\n")
	if maxStartups != "default" {
		fmt.Fprintf(&b, "MaxStartups %s\n", maxStartups)
	}
	if maxSessions != "default" {
		fmt.Fprintf(&b, "MaxSessions %s\n", maxSessions)
	}
	b.WriteString(o.Extra)
	return b.String()
}

// start runs sshd in the foreground (-D) and waits until it answers on
// its port with its own host key. A port taken meanwhile by someone else
// (free ports are only free when picked: another server, of this fleet or
// of another test, may bind it first, and answer there while this sshd
// fails to) is replaced by another, before the fleet's known_hosts is
// written.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for attempt := 0; ; attempt++ {
		err := s.startOnce()
		if err == nil || attempt == 4 || !errors.Is(err, errPortTaken) && !strings.Contains(err.Error(), "Address already in use") || s.cmd != nil {
			return err
		}
		s.Port = freePort(nil)
		if err := os.WriteFile(s.config, []byte(s.configText()), 0o600); err != nil {
			return err
		}
	}
}

func (s *Server) startOnce() error {
	cmd := exec.Command(SSHD, "-D", "-f", s.config, "-E", filepath.Join(s.Dir, "sshd.log"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start sshd %s: %w", s.Name, err)
	}
	s.cmd = cmd
	exited := make(chan error, 1)
	s.exited = make(chan struct{})
	go func(done chan struct{}) { exited <- cmd.Wait(); close(done) }(s.exited)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", s.HostPort(), 200*time.Millisecond)
		if err == nil {
			if err = s.ours(c); err == nil {
				return nil
			} else if errors.Is(err, errPortTaken) { // ours cannot bind: stop it
				killTree(cmd.Process.Pid)
				<-s.exited
				s.cmd = nil
				return err
			}
		}
		select {
		case err := <-exited:
			s.cmd = nil
			log, _ := os.ReadFile(filepath.Join(s.Dir, "sshd.log"))
			return fmt.Errorf("sshd %s exited: %v: %s", s.Name, err, log)
		case <-time.After(10 * time.Millisecond):
		}
	}
	return fmt.Errorf("sshd %s did not listen on %s within 10s", s.Name, s.HostPort())
}

// errPortTaken: another server answers on the port picked for this one.
var errPortTaken = errors.New("another server answers on the port")

// ours says, over c (then closed), whether the server on the port is
// this one: the key it shows in the SSH handshake is its host key.
func (s *Server) ours(c net.Conn) error {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	mine := false
	_, _, _, err := ssh.NewClientConn(c, s.HostPort(), &ssh.ClientConfig{
		User:              "sshtest-probe",
		HostKeyAlgorithms: []string{s.HostKey.Type()}, // the key of ours, where it has others too
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			mine = string(key.Marshal()) == string(s.HostKey.Marshal())
			return nil
		},
	})
	switch {
	case mine:
		return nil // its key, whatever the (refused) login said after
	case err != nil && !strings.Contains(err.Error(), "unable to authenticate"):
		return fmt.Errorf("sshd %s on %s: the handshake failed: %w", s.Name, s.HostPort(), err)
	}
	return fmt.Errorf("sshd %s on %s: %w (its host key is not this server's)", s.Name, s.HostPort(), errPortTaken)
}

// Kill stops the server and every session it spawned: per-connection sshd
// processes leave the listener's process group, so the whole process tree
// is killed, as when a host dies.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil && s.cmd.Process != nil {
		killTree(s.cmd.Process.Pid)
		select { // the port is free only once the listener is gone
		case <-s.exited:
		case <-time.After(5 * time.Second):
		}
		s.cmd = nil
	}
}

// killTree kills pid and all its descendants, children first found from
// /proc.
func killTree(pid int) {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name may hold spaces: fields start after the last ')'.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 {
			if pp, err := strconv.Atoi(fields[1]); err == nil {
				children[pp] = append(children[pp], p)
			}
		}
	}
	var kill func(int)
	kill = func(p int) {
		_ = syscall.Kill(p, syscall.SIGSTOP) // no new children while we look
		for _, c := range children[p] {
			kill(c)
		}
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	kill(pid)
}

// Restart starts a killed server again on the same port with the same key
// (as RotateHostKey left it): the targets and known_hosts made before name
// that port, so it is never swapped for another. A port still held (the
// old listener's socket not yet gone) is tried again until a deadline.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := s.startOnce()
		if err == nil || s.cmd != nil || !strings.Contains(err.Error(), "Address already in use") {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sshd %s: port %d stayed in use for 10s after it was killed (another process took it?): %w", s.Name, s.Port, err)
		}
		time.Sleep(50 * time.Millisecond) // polling for the port, under the deadline above
	}
}

// RotateHostKey gives the server a new host key (it must be restarted to
// use it): the known_hosts entry then no longer matches.
func (s *Server) RotateHostKey(t testing.TB) {
	t.Helper()
	hpub, hpriv, _ := ed25519.GenerateKey(rand.Reader)
	s.hostPriv = hpriv
	writeKey(t, filepath.Join(s.Dir, "host_ed25519"), hpriv)
	s.HostKey, _ = ssh.NewPublicKey(hpub)
}

// Stop kills every server.
func (f *Fleet) Stop() {
	for _, s := range f.Servers {
		s.Kill()
	}
}

// KnownHostsFor writes a known_hosts file listing only the given servers.
func (f *Fleet) KnownHostsFor(t testing.TB, servers ...*Server) string {
	t.Helper()
	var b strings.Builder
	for _, s := range servers {
		b.WriteString(knownhosts.Line([]string{knownhosts.Normalize(s.HostPort())}, s.HostKey) + "\n")
	}
	p := filepath.Join(t.TempDir(), "known_hosts")
	writeFile(t, p, b.String(), 0o600)
	return p
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		if t == nil {
			panic(err)
		}
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// FreePort returns a loopback port that nothing listens on, and that
// nothing can take for the test's life: a socket bound to it (without
// SO_REUSEADDR, never listening) holds it, so a connection there is
// refused even on a busy machine whose other tests' servers pick ports
// (one took a port a test had freed, and answered with its host key).
func FreePort(t testing.TB) int {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	return sa.(*syscall.SockaddrInet4).Port
}

func writeKey(t testing.TB, path string, priv ed25519.PrivateKey) {
	t.Helper()
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(pem.EncodeToMemory(block)), 0o600)
}

// WriteKey writes a new unencrypted client key that no server authorizes
// (until Fleet.Authorize) and returns its path and public key.
func WriteKey(t testing.TB, dir string) (string, ssh.PublicKey) {
	t.Helper()
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	p := filepath.Join(dir, "other_ed25519")
	writeKey(t, p, priv)
	sp, _ := ssh.NewPublicKey(pub)
	return p, sp
}

// WriteEncryptedKey writes a passphrase-protected client key and returns
// its path and signer; authorize it with Fleet.Authorize.
func WriteEncryptedKey(t testing.TB, dir, passphrase string) (string, ssh.PublicKey) {
	t.Helper()
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte(passphrase))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "encrypted_ed25519")
	writeFile(t, p, string(pem.EncodeToMemory(block)), 0o600)
	sp, _ := ssh.NewPublicKey(pub)
	return p, sp
}

// Authorize adds a public key to the fleet's authorized_keys.
func (f *Fleet) Authorize(t testing.TB, key ssh.PublicKey) {
	t.Helper()
	fh, err := os.OpenFile(filepath.Join(f.Dir, "authorized_keys"), os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.Write(ssh.MarshalAuthorizedKey(key)); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func currentUser(t testing.TB) string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	out, err := exec.Command("id", "-un").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}
