package orchestrator

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/gpulab/gpulab/internal/fileio"
)

// Keyring holds the client's keys for a run: ssh-agent's, and identity files
// loaded once and shared by every host. An encrypted file's passphrase is
// asked once, through Passphrase; it is never logged or kept after the key is
// decrypted.
type Keyring struct {
	// AgentSocket is $SSH_AUTH_SOCK; empty means no agent. The agent is
	// dialled the first time a server asks for a key.
	AgentSocket string
	// Passphrase asks for an encrypted key's passphrase; nil means encrypted
	// keys cannot be used (an error says to load them into ssh-agent).
	Passphrase func(file string) ([]byte, error)

	mu      sync.Mutex
	files   map[string]fileKey
	agent   agent.ExtendedAgent
	agentC  net.Conn
	agentOK bool
}

type fileKey struct {
	signer ssh.Signer
	err    error
}

// fileSigner loads one identity file. A missing file is skipped (nil, nil)
// unless it was named explicitly.
func (k *Keyring) fileSigner(path string, explicit bool) (ssh.Signer, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.files == nil {
		k.files = map[string]fileKey{}
	}
	if fk, ok := k.files[path]; ok {
		return fk.signer, fk.err
	}
	s, err := k.load(path, explicit)
	k.files[path] = fileKey{s, err}
	return s, err
}

func (k *Keyring) load(path string, explicit bool) (ssh.Signer, error) {
	data, err := fileio.ReadRegular(path, fileio.MaxKey)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && !explicit {
			return nil, nil
		}
		return nil, fmt.Errorf("identity file %s: %w", path, err)
	}
	s, err := ssh.ParsePrivateKey(data)
	var missing *ssh.PassphraseMissingError
	if errors.As(err, &missing) {
		if k.Passphrase == nil {
			return nil, fmt.Errorf("identity file %s is encrypted and no terminal is there to ask for its passphrase: load it into ssh-agent (ssh-add %s)", path, Quote(path))
		}
		pass, perr := k.Passphrase(path)
		if perr != nil {
			return nil, fmt.Errorf("identity file %s: passphrase: %w", path, perr)
		}
		s, err = ssh.ParsePrivateKeyWithPassphrase(data, pass)
		clear(pass)
		if err != nil {
			return nil, fmt.Errorf("identity file %s: wrong passphrase or damaged key", path)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("identity file %s: %w", path, err)
	}
	return s, nil
}

// agentSigners returns the agent's keys, dialling it once.
func (k *Keyring) agentSigners() []ssh.Signer {
	k.mu.Lock()
	if !k.agentOK && k.AgentSocket != "" {
		k.agentOK = true
		if c, err := net.Dial("unix", k.AgentSocket); err == nil {
			k.agentC = c
			k.agent = agent.NewClient(c)
		}
	}
	a := k.agent
	k.mu.Unlock()
	if a == nil {
		return nil
	}
	signers, err := a.Signers()
	if err != nil {
		return nil
	}
	return signers
}

// Close closes the connection to the agent.
func (k *Keyring) Close() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.agentC != nil {
		err := k.agentC.Close()
		k.agentC, k.agent = nil, nil
		return err
	}
	return nil
}

// AuthMethod returns public-key authentication offering the agent's keys
// first, then each identity file (explicit ones must load; default ones are
// skipped when absent). Keys are loaded only when a server asks.
func (k *Keyring) AuthMethod(files []string, explicit bool) (ssh.AuthMethod, error) {
	// Load explicit files now, so that a missing or undecryptable key is a
	// clear error before any host is dialled.
	for _, f := range files {
		if _, err := k.fileSigner(f, explicit); err != nil {
			return nil, err
		}
	}
	return ssh.PublicKeysCallback(func() ([]ssh.Signer, error) {
		signers := k.agentSigners()
		for _, f := range files {
			s, err := k.fileSigner(f, explicit)
			if err != nil {
				return nil, err
			}
			if s != nil {
				signers = append(signers, s)
			}
		}
		return signers, nil
	}), nil
}
