package orchestrator

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/gpulab/gpulab/internal/clip"
	"github.com/gpulab/gpulab/internal/fileio"
)

// Keyring holds the client's keys for a run: ssh-agent's, and identity files
// read once and shared by every host. Keys are chosen as OpenSSH chooses
// them: an identity file's public half (stored in clear in OpenSSH's format,
// or the .pub beside it) says whether the agent holds its key; the private
// half is decrypted only when a server accepts the public key and the agent
// cannot sign for it. An encrypted file's passphrase is asked at most once,
// through Passphrase; it is never logged or kept after the key is decrypted.
type Keyring struct {
	// AgentSocket is $SSH_AUTH_SOCK; empty means no agent. The agent is
	// dialled the first time a server asks for a key.
	AgentSocket string
	// Passphrase asks for an encrypted key's passphrase; nil means there is
	// no one to ask (no terminal, or the workbench owns it): such keys are
	// skipped, and an authentication failure says so.
	Passphrase func(file string) ([]byte, error)

	mu     sync.Mutex
	files  map[string]*identity
	agents map[string]*agentConn // by socket, dialled once
}

type agentConn struct {
	agent agent.ExtendedAgent
	conn  net.Conn
}

// identity is one identity file, read without decrypting it.
type identity struct {
	file    string
	missing bool          // a default file that is not there
	pub     ssh.PublicKey // nil for a legacy encrypted PEM key without .pub
	// unusable says why the private half cannot be used (a file that is
	// not there or not a key, only a public key, a format gpulab cannot
	// decrypt): the agent may still hold the key; else it is left out, as
	// ssh warns and goes on.
	unusable string

	mu      sync.Mutex // held while the passphrase is asked
	signer  ssh.Signer // the file was not encrypted, or has been decrypted
	tried   bool       // decryption was tried (signer or err is final)
	decrErr error
}

// identityFor reads one identity file. A missing file is skipped unless
// it was named explicitly.
func (k *Keyring) identityFor(path string, explicit bool) (*identity, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if id, ok := k.files[path]; ok {
		return id, nil
	}
	id, err := readIdentity(path, explicit)
	if err != nil {
		return nil, err
	}
	if k.files == nil {
		k.files = map[string]*identity{}
	}
	k.files[path] = id
	return id, nil
}

func readIdentity(path string, explicit bool) (*identity, error) {
	id := &identity{file: path}
	if path == "none" || strings.HasSuffix(path, "/none") {
		id.missing = true // IdentityFile none: no file
		return id, nil
	}
	data, err := fileio.ReadTrusted(path, fileio.MaxKey)
	if err == nil {
		err = privateKeyModes(path, data)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && !explicit {
			id.missing = true
			return id, nil
		}
		id.unusable = err.Error()
		return id, nil
	}
	s, err := ssh.ParsePrivateKey(data)
	var encrypted *ssh.PassphraseMissingError
	switch {
	case err == nil:
		id.signer, id.pub, id.tried = s, s.PublicKey(), true
	case errors.As(err, &encrypted):
		id.pub = encrypted.PublicKey
		if id.pub == nil { // legacy PEM: the public half is only in the .pub
			id.pub = readPub(path + ".pub")
		}
	default:
		// A public key named as the identity (its private half in the
		// agent, or a hardware key), or a private key in a format gpulab
		// cannot read (PKCS#8 encrypted): the public half still picks the
		// agent's key.
		if pk, _, _, _, perr := ssh.ParseAuthorizedKey(data); perr == nil {
			id.pub, id.unusable = pk, "only a public key (the agent must hold its private half)"
		} else {
			id.pub, id.unusable = readPub(path+".pub"), fmt.Sprintf("cannot be read as a private key (%v)", err)
		}
	}
	return id, nil
}

// CheckIdentityFile says why the identity file a command line names
// (ssh's -i) cannot be offered: missing, untrusted, or neither a private
// key nor a public one whose private half an agent could hold. ssh warns
// and goes on; a file the operator named on the command line that is no
// key at all is a mistake to say at once (an inventory given to -i had
// its hosts looked up in DNS instead).
func CheckIdentityFile(path string) error {
	id, _ := readIdentity(path, true)
	if id.unusable == "" || id.pub != nil {
		return nil
	}
	return fmt.Errorf("identity file %s: %s", path, id.unusable)
}

func readPub(path string) ssh.PublicKey {
	data, err := fileio.ReadTrusted(path, fileio.MaxKey)
	if err != nil {
		return nil
	}
	pk, _, _, _, err := ssh.ParseAuthorizedKey(data)
	if err != nil {
		return nil
	}
	return pk
}

func (id *identity) state() (ssh.Signer, bool, error) {
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.signer, id.tried, id.decrErr
}

// decrypt asks for id's passphrase once and keeps the outcome.
func (k *Keyring) decrypt(id *identity) (ssh.Signer, error) {
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.tried {
		return id.signer, id.decrErr
	}
	id.tried = true
	if k.Passphrase == nil {
		id.decrErr = fmt.Errorf("identity file %s is encrypted and there is no terminal to ask its passphrase: load it into ssh-agent (ssh-add %s)", id.file, Quote(id.file))
		return nil, id.decrErr
	}
	data, err := fileio.ReadTrusted(id.file, fileio.MaxKey)
	if err != nil {
		id.decrErr = fmt.Errorf("identity file %s: %w", id.file, err)
		return nil, id.decrErr
	}
	pass, err := k.Passphrase(id.file)
	if err != nil {
		id.decrErr = fmt.Errorf("identity file %s: passphrase: %w", id.file, err)
		return nil, id.decrErr
	}
	s, err := ssh.ParsePrivateKeyWithPassphrase(data, pass)
	clear(pass)
	if err != nil {
		id.decrErr = fmt.Errorf("identity file %s: wrong passphrase or damaged key", id.file)
		return nil, id.decrErr
	}
	id.signer = s
	return s, nil
}

// agentSigners returns the keys of the agent at socket ("" for none),
// dialling it once.
func (k *Keyring) agentSigners(socket string) []ssh.Signer {
	if socket == "" {
		return nil
	}
	k.mu.Lock()
	if k.agents == nil {
		k.agents = map[string]*agentConn{}
	}
	a, ok := k.agents[socket]
	if !ok {
		a = &agentConn{}
		if c, err := net.Dial("unix", socket); err == nil {
			a.conn, a.agent = c, agent.NewClient(c)
		}
		k.agents[socket] = a
	}
	k.mu.Unlock()
	if a.agent == nil {
		return nil
	}
	signers, err := a.agent.Signers()
	if err != nil {
		return nil
	}
	return signers
}

// Close closes the connections to the agents.
func (k *Keyring) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	var errs []error
	for s, a := range k.agents {
		if a.conn != nil {
			errs = append(errs, a.conn.Close())
		}
		delete(k.agents, s)
	}
	return errors.Join(errs...)
}

// agentSocket is the agent a host's IdentityAgent names: the keyring's own
// ($SSH_AUTH_SOCK) by default, none, or another socket.
func (k *Keyring) agentSocket(identityAgent string) string {
	switch identityAgent {
	case "", "SSH_AUTH_SOCK":
		return k.AgentSocket
	case "none":
		return ""
	}
	return identityAgent
}

// AuthLog is what one connection offered a server, for the message of a
// failed authentication.
type AuthLog struct {
	mu      sync.Mutex
	offered []string // "ED25519 SHA256:… (agent)"
	seen    map[string]bool
	skipped []string // why an identity file was not offered
}

func (l *AuthLog) offer(label string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.seen[label] {
		if l.seen == nil {
			l.seen = map[string]bool{}
		}
		l.seen[label] = true
		l.offered = append(l.offered, label)
	}
}

func (l *AuthLog) skip(why string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.skipped = append(l.skipped, why)
}

// Summary says which keys were offered and which were left out.
func (l *AuthLog) Summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	if len(l.offered) == 0 {
		b.WriteString("no key was offered")
	} else {
		fmt.Fprintf(&b, "offered %s", strings.Join(l.offered, ", "))
	}
	if len(l.skipped) > 0 {
		fmt.Fprintf(&b, "; not offered: %s", strings.Join(l.skipped, "; "))
	}
	return b.String()
}

// AuthMethod returns public-key authentication for one connection, with
// the keys in OpenSSH's order: the agent's keys that match an identity file
// (the agent signs for the file, so its passphrase is never asked), then the
// agent's other keys (not with identitiesOnly), each in the agent's order,
// then the identity files the agent does not hold. A file that cannot be
// used (not there, not a key, only a public key) is left out and named in
// the log, as ssh warns and goes on. The log records what was offered.
func (k *Keyring) AuthMethod(files []string, explicit, identitiesOnly bool, identityAgent string) (ssh.AuthMethod, *AuthLog, error) {
	socket := k.agentSocket(identityAgent)
	ids := make([]*identity, 0, len(files))
	for _, f := range files {
		id, err := k.identityFor(f, explicit)
		if err != nil {
			return nil, nil, err
		}
		ids = append(ids, id)
	}
	log := &AuthLog{}
	return ssh.PublicKeysCallback(func() ([]ssh.Signer, error) {
		return k.signers(ids, identitiesOnly, socket, log), nil
	}), log, nil
}

func (k *Keyring) signers(ids []*identity, identitiesOnly bool, socket string, log *AuthLog) []ssh.Signer {
	var out, others []ssh.Signer
	inAgent := make([]bool, len(ids))
	for _, as := range k.agentSigners(socket) {
		blob := as.PublicKey().Marshal()
		matched := false
		for i, id := range ids {
			if !inAgent[i] && id.pub != nil && bytes.Equal(id.pub.Marshal(), blob) {
				inAgent[i], matched = true, true
				out = append(out, &offered{as, log, "agent, " + id.file})
				break
			}
		}
		if !matched && !identitiesOnly {
			others = append(others, &offered{as, log, agentLabel(as)})
		}
	}
	out = append(out, others...)
	for i, id := range ids {
		if inAgent[i] || id.missing {
			continue
		}
		signer, tried, decrErr := id.state()
		switch {
		case id.unusable != "":
			log.skip(fmt.Sprintf("%s (%s)", id.file, id.unusable))
		case signer != nil:
			out = append(out, &offered{signer, log, id.file})
		case tried:
			log.skip(decrErr.Error())
		case k.Passphrase == nil:
			log.skip(fmt.Sprintf("%s (encrypted, not in ssh-agent, and no terminal to ask its passphrase: ssh-add %s)", id.file, Quote(id.file)))
		case id.pub == nil:
			// A legacy PEM key without its .pub: OpenSSH too must decrypt
			// it to learn which key it is.
			s, err := k.decrypt(id)
			if err != nil {
				log.skip(err.Error())
				continue
			}
			out = append(out, &offered{s, log, id.file})
		default:
			out = append(out, &offered{&lazySigner{k: k, id: id}, log, id.file})
		}
	}
	return out
}

// agentLabel names an agent's key in the log by its comment (ssh-add -l
// shows it: usually user@host or the key's file), never its material.
func agentLabel(s ssh.Signer) string {
	k, ok := s.PublicKey().(*agent.Key)
	if !ok || strings.TrimSpace(k.Comment) == "" {
		return "agent"
	}
	c := strings.TrimSpace(k.Comment)
	if len(c) > 64 {
		c = c[:clip.CutAt(c, 64)] + "…" // never half a character
	}
	return "agent: " + c
}

// offered wraps a signer to record that its key was offered.
type offered struct {
	ssh.Signer
	log   *AuthLog
	label string
}

func (o *offered) PublicKey() ssh.PublicKey {
	pub := o.Signer.PublicKey()
	o.log.offer(fmt.Sprintf("%s %s (%s)", keyKind(pub), ssh.FingerprintSHA256(pub), o.label))
	return pub
}

func (o *offered) SignWithAlgorithm(rand io.Reader, data []byte, algorithm string) (*ssh.Signature, error) {
	return signWith(o.Signer, rand, data, algorithm)
}

// lazySigner is an encrypted identity file whose public half is known: it
// is decrypted only when the server has accepted that public key.
type lazySigner struct {
	k  *Keyring
	id *identity
}

func (l *lazySigner) PublicKey() ssh.PublicKey { return l.id.pub }

func (l *lazySigner) Sign(rand io.Reader, data []byte) (*ssh.Signature, error) {
	return l.SignWithAlgorithm(rand, data, "")
}

func (l *lazySigner) SignWithAlgorithm(rand io.Reader, data []byte, algorithm string) (*ssh.Signature, error) {
	s, err := l.k.decrypt(l.id)
	if err != nil {
		return nil, &authError{err}
	}
	return signWith(s, rand, data, algorithm)
}

func signWith(s ssh.Signer, rand io.Reader, data []byte, algorithm string) (*ssh.Signature, error) {
	if as, ok := s.(ssh.AlgorithmSigner); ok {
		return as.SignWithAlgorithm(rand, data, algorithm)
	}
	if algorithm != "" && algorithm != s.PublicKey().Type() {
		return nil, fmt.Errorf("ssh: key %s cannot sign with %s", s.PublicKey().Type(), algorithm)
	}
	return s.Sign(rand, data)
}

// authError is a key that could not be used when the server accepted it
// (a wrong passphrase): authentication fails with it.
type authError struct{ err error }

func (e *authError) Error() string { return e.err.Error() }
func (e *authError) Unwrap() error { return e.err }

// keyKind names a key's type as ssh-keygen -l does: ED25519, RSA, ECDSA.
func keyKind(k ssh.PublicKey) string {
	t := k.Type()
	switch {
	case strings.Contains(t, "ed25519"):
		return "ED25519"
	case strings.Contains(t, "rsa"):
		return "RSA"
	case strings.Contains(t, "ecdsa"):
		return "ECDSA"
	}
	return strings.ToUpper(t)
}

// privateKeyModes refuses, as ssh does ("UNPROTECTED PRIVATE KEY FILE"),
// a private key of the user's that others can read: whoever read it holds
// the user's access. A public key (a .pub named as the identity) passes.
func privateKeyModes(path string, data []byte) error {
	if !bytes.Contains(data, []byte("PRIVATE KEY-----")) {
		return nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if s, ok := st.Sys().(*syscall.Stat_t); ok && int(s.Uid) == os.Geteuid() && st.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s is a private key others can read (mode %s): ssh refuses it too (UNPROTECTED PRIVATE KEY FILE); chmod 600 %s", path, st.Mode(), Quote(path))
	}
	return nil
}
