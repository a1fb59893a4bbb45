// Command bareclient is the floor the fan-out benchmark compares gpulab
// with: a bare golang.org/x/crypto/ssh client that connects to every host at
// once, runs one command, prints the output and exits. It verifies host keys
// (known_hosts, algorithms from the record) like every tool in the
// benchmark, and does nothing else: no events, no folding, no timeouts.
//
// Usage: bareclient -k KEY -K KNOWN_HOSTS -u USER HOST:PORT... -- COMMAND
package main

import (
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

func main() {
	keyFile := flag.String("k", "", "private key")
	known := flag.String("K", "", "known_hosts")
	user := flag.String("u", "root", "user")
	flag.Parse()
	args := flag.Args()
	var hosts []string
	for len(args) > 0 && args[0] != "--" {
		hosts, args = append(hosts, args[0]), args[1:]
	}
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: bareclient -k KEY -K KNOWN_HOSTS HOST:PORT... -- COMMAND")
		os.Exit(2)
	}
	command := strings.Join(args[1:], " ")
	pem, err := os.ReadFile(*keyFile)
	check(err)
	signer, err := ssh.ParsePrivateKey(pem)
	check(err)
	cb, err := knownhosts.New(*known)
	check(err)
	_, probe, _ := ed25519.GenerateKey(nil)
	probeKey, _ := ssh.NewSignerFromKey(probe)
	var mu sync.Mutex
	var wg sync.WaitGroup
	failed := false
	for _, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var algos []string
			var ke *knownhosts.KeyError
			if err := cb(h, addr(h), probeKey.PublicKey()); errors.As(err, &ke) {
				for _, k := range ke.Want {
					algos = append(algos, k.Key.Type())
				}
			}
			c, err := ssh.Dial("tcp", h, &ssh.ClientConfig{User: *user, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: cb, HostKeyAlgorithms: algos})
			var out []byte
			if err == nil {
				var s *ssh.Session
				if s, err = c.NewSession(); err == nil {
					out, err = s.CombinedOutput(command)
				}
				c.Close()
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = true
				fmt.Printf("%s: error: %v\n", h, err)
				return
			}
			fmt.Printf("%s: %s", h, out)
		}()
	}
	wg.Wait()
	if failed {
		os.Exit(1)
	}
}

type addr string

func (a addr) Network() string { return "tcp" }
func (a addr) String() string  { return string(a) }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bareclient:", err)
		os.Exit(2)
	}
}
