package orchestrator

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/gpulab/gpulab/internal/fileio"
	"github.com/gpulab/gpulab/internal/problem"
)

// HostKeyError is a host key that could not be verified: unknown (not in
// known_hosts) or changed (known_hosts holds another key: the connection may
// be intercepted). Changed keys are always refused.
type HostKeyError struct {
	Host        string   // as written in known_hosts ("[127.0.0.1]:2222")
	KeyType     string   // offered key's type
	Fingerprint string   // offered key's SHA256 fingerprint
	Changed     bool     // known_hosts has other keys for the host
	Known       []string // "file:line fingerprint" of the keys on record
	// Files are the known_hosts files that hold the keys on record.
	Files []string
}

func (e *HostKeyError) Error() string {
	if e.Changed {
		return fmt.Sprintf("WARNING: HOST KEY CHANGED for %s: it offered %s %s, but %v is on record. Someone may be intercepting the connection, or the host was reinstalled. Refusing to connect; once the new key is checked, remove the old entry (%s)",
			e.Host, e.KeyType, e.Fingerprint, e.Known, e.removal())
	}
	return fmt.Sprintf("host key for %s is not known: %s %s. Check the fingerprint, then trust it with --accept-new-host-keys (or add it to known_hosts)",
		e.Host, e.KeyType, e.Fingerprint)
}

// Where is the host whose key it is (problem.Placed).
func (e *HostKeyError) Where() problem.Place { return problem.Place{Host: e.Host} }

// removal is the ssh-keygen command that removes the host's entries:
// with -f FILE for each file that is not ssh's default (~/.ssh/known_hosts),
// where ssh-keygen -R alone would look.
func (e *HostKeyError) removal() string {
	def := ""
	if home, err := os.UserHomeDir(); err == nil {
		def = filepath.Join(home, ".ssh", "known_hosts")
	}
	var cmds []string
	for _, f := range e.Files {
		if f == def {
			cmds = append(cmds, "ssh-keygen -R "+Quote(e.Host))
		} else {
			cmds = append(cmds, "ssh-keygen -f "+Quote(f)+" -R "+Quote(e.Host))
		}
	}
	if len(cmds) == 0 {
		return "ssh-keygen -R " + Quote(e.Host)
	}
	return strings.Join(cmds, "; ")
}

// HostKeys verifies host keys against OpenSSH known_hosts files (hashed
// entries and [host]:port included). With AcceptNew, an unknown host's key
// is appended to the first file, as StrictHostKeyChecking=accept-new does;
// a changed key is never accepted.
type HostKeys struct {
	files     []string
	acceptNew bool

	mu    sync.Mutex
	check ssh.HostKeyCallback // nil when no file exists yet
}

// NewHostKeys reads the given known_hosts files; missing ones are skipped,
// as OpenSSH skips them. The first file is where accepted keys are written.
func NewHostKeys(files []string, acceptNew bool) (*HostKeys, error) {
	if len(files) == 0 {
		return nil, errors.New("no known_hosts file given")
	}
	h := &HostKeys{files: files, acceptNew: acceptNew}
	if err := h.reload(); err != nil {
		return nil, err
	}
	return h, nil
}

func (h *HostKeys) reload() error {
	var existing []string
	for _, f := range h.files {
		err := fileio.CheckRegular(f)
		if err == nil {
			err = fileio.CheckTrusted(f)
		}
		if err == nil {
			existing = append(existing, f)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("known_hosts: %w", err)
		}
	}
	if len(existing) == 0 {
		h.check = nil
		return nil
	}
	cb, err := knownhosts.New(existing...)
	if err != nil {
		return fmt.Errorf("known_hosts: %w", err)
	}
	h.check = cb
	return nil
}

// probeKey is a key no known_hosts file holds, offered to learn which keys
// are on record for a host.
var probeKey = func() ssh.PublicKey {
	pub, _, _ := ed25519.GenerateKey(nil)
	k, _ := ssh.NewPublicKey(pub)
	return k
}()

// Algorithms returns the host key algorithms to offer in the handshake for
// hostport: those of the keys on record first, then every other one, as
// OpenSSH orders them; nil when the host is unknown. Without the order, a
// host known by its ed25519 key may negotiate ECDSA and look changed; with
// the rest, a host that no longer has a key of the recorded type shows the
// key it has, which is then refused as changed (not a failed negotiation).
func (h *HostKeys) Algorithms(hostport string) []string {
	h.mu.Lock()
	check := h.check
	h.mu.Unlock()
	if check == nil {
		return nil
	}
	var ke *knownhosts.KeyError
	if err := check(hostport, fakeAddr(hostport), probeKey); !errors.As(err, &ke) {
		return nil
	}
	seen := map[string]bool{}
	var algos []string
	add := func(a string) {
		if !seen[a] {
			seen[a] = true
			algos = append(algos, a)
		}
	}
	for _, k := range ke.Want {
		switch t := k.Key.Type(); t {
		case ssh.KeyAlgoRSA:
			add(ssh.KeyAlgoRSASHA512)
			add(ssh.KeyAlgoRSASHA256)
			add(ssh.KeyAlgoRSA)
		default:
			add(t)
		}
	}
	for _, a := range ssh.SupportedAlgorithms().HostKeys {
		add(a)
	}
	return algos
}

// Callback returns the ssh.HostKeyCallback to put in a ClientConfig.
func (h *HostKeys) Callback() ssh.HostKeyCallback {
	return func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		var err error
		if h.check != nil {
			err = h.check(hostname, remote, key)
		} else {
			err = &knownhosts.KeyError{}
		}
		var ke *knownhosts.KeyError
		var re *knownhosts.RevokedError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &re):
			return &HostKeyError{Host: knownhosts.Normalize(hostname), KeyType: key.Type(), Fingerprint: ssh.FingerprintSHA256(key), Changed: true,
				Known: []string{fmt.Sprintf("%s:%d @revoked", re.Revoked.Filename, re.Revoked.Line)}, Files: []string{re.Revoked.Filename}}
		case errors.As(err, &ke) && len(ke.Want) > 0:
			var known, files []string
			for _, w := range ke.Want {
				known = append(known, fmt.Sprintf("%s:%d %s", w.Filename, w.Line, ssh.FingerprintSHA256(w.Key)))
				if !slices.Contains(files, w.Filename) {
					files = append(files, w.Filename)
				}
			}
			return &HostKeyError{Host: knownhosts.Normalize(hostname), KeyType: key.Type(), Fingerprint: ssh.FingerprintSHA256(key), Changed: true, Known: known, Files: files}
		case errors.As(err, &ke):
			if !h.acceptNew {
				return &HostKeyError{Host: knownhosts.Normalize(hostname), KeyType: key.Type(), Fingerprint: ssh.FingerprintSHA256(key)}
			}
			return h.appendLocked(hostname, key)
		}
		return err
	}
}

// appendLocked records key for hostname in the first known_hosts file.
func (h *HostKeys) appendLocked(hostname string, key ssh.PublicKey) error {
	path := h.files[0]
	// As read, so written: through no path another user could change
	// (a link of the user's own, dotfiles', is followed), and not where
	// another user could create the file first.
	if err := fileio.MkdirTrusted(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("known_hosts: %w", err)
	}
	if err := fileio.CheckTrusted(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("known_hosts: %w", err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("known_hosts: %w", err)
	}
	line := knownhosts.Line([]string{knownhosts.Normalize(hostname)}, key) + "\n"
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		return fmt.Errorf("known_hosts: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("known_hosts: write %s: %w", path, err)
	}
	return h.reload()
}

// fakeAddr is a net.Addr for a host:port string, for lookups.
type fakeAddr string

func (a fakeAddr) Network() string { return "tcp" }
func (a fakeAddr) String() string  { return string(a) }
