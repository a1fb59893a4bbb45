package sshtest

import (
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

func TestFleetStarts(t *testing.T) {
	start := time.Now()
	f := Start(t, 3, Options{})
	t.Logf("3 sshd up in %v", time.Since(start))
	cb, err := knownhosts.New(f.KnownHosts)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range f.Servers {
		c, err := ssh.Dial("tcp", s.HostPort(), &ssh.ClientConfig{User: f.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(f.Signer)}, HostKeyCallback: cb, HostKeyAlgorithms: []string{ssh.KeyAlgoED25519}})
		if err != nil {
			t.Fatalf("dial %s: %v", s.Name, err)
		}
		sess, _ := c.NewSession()
		t0 := time.Now()
		out, err := sess.CombinedOutput("echo hello")
		t.Logf("%s: %q %v in %v", s.Name, out, err, time.Since(t0))
		if string(out) != "hello\n" {
			t.Errorf("%s: echo hello = %q, %v", s.Name, out, err)
		}
		c.Close()
	}
}
