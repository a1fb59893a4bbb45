package cli

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gpulab/gpulab/internal/sshtest"
)

// TestNamedFilesMustBeRegular names a FIFO (no writer: opening it for
// reading would wait forever) or /dev/zero (reading it never ends) for
// every file a command takes: each is refused, naming the path. The null
// device reads as empty, as OpenSSH's users expect of it.
func TestNamedFilesMustBeRegular(t *testing.T) {
	f := sshtest.Start(t, 1, sshtest.Options{})
	cfg := sshConfigFor(t, f, f.KnownHosts)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	inv := filepath.Join(dir, "inventory.toml")
	writeFile(t, inv, "[[host]]\nname = \"gpu01\"\n")
	env := noEnv(t)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"--inventory", []string{"inventory", "list", "--inventory", fifo}, 2, "read " + fifo + ": not a regular file: a FIFO"},
		{"inventory check", []string{"inventory", "check", "/dev/zero"}, 2, "read /dev/zero: not a regular file: a character device"},
		{"-F", []string{"exec", "-H", "gpu01", "-F", fifo, "--", "true"}, 2, "ssh_config: read " + fifo + ": not a regular file: a FIFO"},
		// ssh warns of an -i file that is no key and goes on; gpulab says
		// so at once (an inventory given to -i had its host names looked
		// up in DNS).
		{"-i", []string{"exec", "-H", "gpu01", "-F", cfg, "-i", fifo, "--", "true"}, 2, "-i: identity file " + fifo + ": read " + fifo + ": not a regular file: a FIFO"},
		{"-i an inventory", []string{"exec", "-H", "gpu01", "-F", cfg, "-i", inv, "--", "true"}, 2, "cannot be read as a private key (ssh: no key found) (-i names a private key, as ssh -i does; an inventory is --inventory)"},
		{"--known-hosts", []string{"exec", "-H", "gpu01", "-F", cfg, "--known-hosts", fifo, "--", "true"}, 1, "known_hosts: read " + fifo + ": not a regular file: a FIFO"},
		{"push", []string{"push", "/dev/zero", "-H", "gpu01", "-F", cfg}, 2, "push: read /dev/zero: not a regular file: a character device"},
		{"-F /dev/null, as with ssh", []string{"inventory", "show", "gpu01", "-F", "/dev/null"}, 0, "HostName             gpu01"},
		{"--known-hosts /dev/null", []string{"exec", "-H", "gpu01", "-F", cfg, "--known-hosts", "/dev/null", "--", "true"}, 1, "hostkey-unknown"},
		{"--probe-binary", []string{"probe", "-H", "gpu01", "-F", cfg, "--probe-binary", fifo}, 2, "--probe-binary: read " + fifo + ": not a regular file: a FIFO"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, env, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stdout+r.stderr, tc.want) {
				t.Errorf("gpulab %s: exit %d, want %d and %q\nstdout: %s\nstderr: %s", strings.Join(tc.args, " "), r.code, tc.code, tc.want, r.stdout, r.stderr)
			}
		})
	}
}
