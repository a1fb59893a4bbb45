package sim

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/internal/testreq"
)

// startFleet starts a fleet for a test and writes its inventory.
func startFleet(t *testing.T, cfg Config) (*Fleet, Files) {
	t.Helper()
	f, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	files, err := f.WriteInventory(filepath.Join(t.TempDir(), "inventory.toml"))
	if err != nil {
		t.Fatal(err)
	}
	return f, files
}

// openssh runs one of OpenSSH's clients with the fleet's config.
func openssh(t *testing.T, files Files, stdin string, tool string, args ...string) (string, string, error) {
	t.Helper()
	bin := testreq.Tool(t, tool, "the simulated fleet must work with OpenSSH's own clients (apt-get install openssh-client)")
	cmd := exec.Command(bin, append([]string{"-F", files.SSHConfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func TestOpenSSHClients(t *testing.T) {
	_, files := startFleet(t, Config{Hosts: 2})

	out, stderr, err := openssh(t, files, "", "ssh", "-o", "BatchMode=yes", "dgx02", `cd /tmp && pwd; echo "$USER@$(hostname)" | tr a-z A-Z; uname -m; cat /etc/hostname; printf '%s\n' a b c | wc -l; false || echo status=$?`)
	if err != nil {
		t.Fatalf("ssh: %v\n%s", err, stderr)
	}
	want := "/tmp\nGPULAB@DGX02\n" + machineArch() + "\ndgx02\n3\nstatus=1\n"
	if out != want {
		t.Errorf("ssh printed %q, want %q", out, want)
	}

	// Exit status and "not found" as a shell says them.
	_, stderr, err = openssh(t, files, "", "ssh", "-o", "BatchMode=yes", "dgx01", "no-such-tool --flag")
	var ee *exec.ExitError
	if !errorsAs(err, &ee) || ee.ExitCode() != 127 || !strings.Contains(stderr, "sh: no-such-tool: not found") {
		t.Errorf("unknown command: err %v, stderr %q; want exit 127 and 'sh: no-such-tool: not found'", err, stderr)
	}

	// scp (SFTP protocol) up and back down, then sftp's listing.
	local := filepath.Join(t.TempDir(), "payload.bin")
	payload := bytes.Repeat([]byte("gpulab\x00\xff"), 40000)
	if err := os.WriteFile(local, payload, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := openssh(t, files, "", "scp", "-q", "-o", "BatchMode=yes", local, "dgx01:payload.bin"); err != nil {
		t.Fatalf("scp up: %v\n%s", err, stderr)
	}
	out, stderr, err = openssh(t, files, "", "ssh", "-o", "BatchMode=yes", "dgx01", "sha256sum payload.bin; stat -c %s /home/gpulab/payload.bin")
	if err != nil || !strings.HasPrefix(out, sha256hex(payload)+"  payload.bin\n") || !strings.HasSuffix(out, "\n320000\n") {
		t.Errorf("after scp: %q %v %s", out, err, stderr)
	}
	back := filepath.Join(t.TempDir(), "back.bin")
	if _, stderr, err := openssh(t, files, "", "scp", "-q", "-o", "BatchMode=yes", "dgx01:/home/gpulab/payload.bin", back); err != nil {
		t.Fatalf("scp down: %v\n%s", err, stderr)
	}
	if got, _ := os.ReadFile(back); !bytes.Equal(got, payload) {
		t.Errorf("scp down: %d bytes, want the %d sent", len(got), len(payload))
	}
	out, stderr, err = openssh(t, files, "mkdir sub\nrename payload.bin sub/p.bin\nls -1 sub\nbye\n", "sftp", "-q", "-b", "-", "-o", "BatchMode=yes", "dgx01")
	if err != nil || !strings.Contains(out, "sub/p.bin") {
		t.Errorf("sftp: %q %v %s", out, err, stderr)
	}
	// The other host never saw the file: each host has its own tree.
	out, _, _ = openssh(t, files, "", "ssh", "-o", "BatchMode=yes", "dgx02", "ls sub payload.bin; echo rc=$?")
	if !strings.Contains(out, "rc=2") {
		t.Errorf("dgx02 sees dgx01's files: %q", out)
	}
}

func TestOpenSSHRefusesAnotherKeyAndUser(t *testing.T) {
	_, files := startFleet(t, Config{Hosts: 1})
	_, stderr, err := openssh(t, files, "", "ssh", "-o", "BatchMode=yes", "-l", "root", "dgx01", "true")
	if err == nil || !strings.Contains(stderr, "Permission denied") {
		t.Errorf("root login: err %v, stderr %q; want Permission denied", err, stderr)
	}
	other := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(other, []byte("[127.0.0.1]:1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, err = openssh(t, files, "", "ssh", "-o", "BatchMode=yes", "-o", "UserKnownHostsFile="+other, "dgx01", "true")
	if err == nil || !strings.Contains(stderr, "Host key verification failed") {
		t.Errorf("unknown host key: err %v, stderr %q; want the key refused", err, stderr)
	}
}

// ssh -t: a login shell with a prompt; cd and variables stay from line to
// line, and exit's status is the session's.
func TestOpenSSHInteractiveShell(t *testing.T) {
	_, files := startFleet(t, Config{Hosts: 1})
	out, stderr, err := openssh(t, files, "cd /tmp\nx=kept\npwd; echo $x\nexit 7\n", "ssh", "-tt", "-o", "BatchMode=yes", "dgx01")
	var ee *exec.ExitError
	if !errorsAs(err, &ee) || ee.ExitCode() != 7 {
		t.Errorf("exit 7 in the shell: err %v (stderr %q)", err, stderr)
	}
	for _, want := range []string{"SIMULATED", "gpulab@dgx01:~$ ", "gpulab@dgx01:/tmp$ ", "/tmp\r\nkept\r\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the shell's screen lacks %q:\n%s", want, out)
		}
	}
}
