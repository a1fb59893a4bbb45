package sshtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"strconv"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Reply is what a Fake host answers to every command: its output, then
// either an exit status or, when Signal is set, death by that signal (with
// SignalError as the message), as a host may report it, whatever it holds.
type Reply struct {
	Stdout, Stderr []byte
	Status         uint32
	Signal         string
	SignalError    string
}

// Fake is an in-process SSH server on loopback that accepts any client key
// and answers each exec request with the same Reply, without running
// anything: a host whose answers the test writes, such as one that sends
// what OpenSSH never would.
type Fake struct {
	Addr    string // 127.0.0.1
	Port    int
	HostKey ssh.PublicKey
}

// StartFake starts a Fake; it stops, and its goroutines end, when the test
// ends.
func StartFake(t testing.TB, reply Reply) *Fake {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := ssh.NewSignerFromKey(priv)
	hostKey, _ := ssh.NewPublicKey(pub)
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(ssh.ConnMetadata, ssh.PublicKey) (*ssh.Permissions, error) { return nil, nil }}
	cfg.AddHostKey(signer)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				serveFake(c, cfg, reply)
				mu.Lock()
				delete(conns, c)
				mu.Unlock()
			}()
		}
	}()
	return &Fake{Addr: "127.0.0.1", Port: l.Addr().(*net.TCPAddr).Port, HostKey: hostKey}
}

// KnownHostsLine is the fake's known_hosts entry.
func (f *Fake) KnownHostsLine() string {
	return knownhosts.Line([]string{knownhosts.Normalize(net.JoinHostPort(f.Addr, strconv.Itoa(f.Port)))}, f.HostKey)
}

func serveFake(c net.Conn, cfg *ssh.ServerConfig, reply Reply) {
	defer c.Close()
	_, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() { defer wg.Done(); ssh.DiscardRequests(reqs) }()
	for nc := range chans {
		if nc.ChannelType() != "session" {
			nc.Reject(ssh.UnknownChannelType, "sessions only")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer ch.Close()
			for req := range chReqs {
				if req.Type != "exec" {
					req.Reply(false, nil)
					continue
				}
				req.Reply(true, nil)
				_ = answer(ch, reply) // a client gone away is no concern of the fake's
				return
			}
		}()
	}
}

func answer(ch ssh.Channel, r Reply) error {
	if _, err := ch.Write(r.Stdout); err != nil {
		return err
	}
	if _, err := ch.Stderr().Write(r.Stderr); err != nil {
		return err
	}
	if r.Signal != "" {
		_, err := ch.SendRequest("exit-signal", false, ssh.Marshal(struct {
			Signal     string
			CoreDumped bool
			Error      string
			Lang       string
		}{r.Signal, false, r.SignalError, ""}))
		return err
	}
	_, err := ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{r.Status}))
	return err
}
