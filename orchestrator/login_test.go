package orchestrator_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/gpulab/gpulab/internal/sshtest"
	"github.com/gpulab/gpulab/internal/testreq"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/orchestrator"
)

// loginKeys are the keys of the login tests: an identity file (plain and a
// passphrase-protected copy), a key only the agent has, and unrelated keys.
type loginKeys struct {
	file, encFile string
	filePub       ssh.PublicKey
	agentOnly     string
	agentOnlyPub  ssh.PublicKey
	noise         []string
}

func makeLoginKeys(t *testing.T) loginKeys {
	dir := t.TempDir()
	var k loginKeys
	k.file, k.filePub = sshtest.KeyGen(t, dir, "id_file")
	k.encFile = filepath.Join(dir, "id_file_enc")
	for _, ext := range []string{"", ".pub"} {
		data, err := os.ReadFile(k.file + ext)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(k.encFile+ext, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sshtest.Encrypt(t, k.encFile, "correct horse")
	k.agentOnly, k.agentOnlyPub = sshtest.KeyGen(t, dir, "id_agent_only")
	for i := range 7 {
		n, _ := sshtest.KeyGen(t, dir, fmt.Sprintf("id_noise%d", i))
		k.noise = append(k.noise, n)
	}
	return k
}

// gpulabLogin resolves host through cfg as gpulab does and runs `true`.
func gpulabLogin(t *testing.T, cfg, host string, keys *orchestrator.Keyring) orchestrator.HostResult {
	t.Helper()
	r, err := orchestrator.NewResolver(inventory.Empty(), cfg, orchestrator.Overrides{}, t.TempDir(), "nobody")
	if err != nil {
		t.Fatal(err)
	}
	tg, err := r.ResolveName(host)
	if err != nil {
		t.Fatal(err)
	}
	e := &orchestrator.Engine{Dialer: &orchestrator.Dialer{Keys: keys}, Concurrency: 4}
	return e.Run(context.Background(), orchestrator.Plan{Targets: []orchestrator.Target{tg}, Steps: step("true")}, nil)[0]
}

// opensshLogin runs OpenSSH's ssh in batch mode (no terminal, no prompt)
// with the same config and agent; it reports whether ssh logged in.
func opensshLogin(t *testing.T, sshBin, cfg, host, agentSock string) (bool, string) {
	t.Helper()
	cmd := exec.Command(sshBin, "-F", cfg, "-o", "BatchMode=yes", host, "true")
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "SSH_AUTH_SOCK=" + agentSock}
	cmd.Stdin = nil
	out, err := cmd.CombinedOutput()
	return err == nil, string(out)
}

// gpulab logs in exactly when OpenSSH's ssh logs in, with the same
// ssh_config and the same ssh-agent, in every combination of: an identity
// file plain or passphrase-protected, its key in the agent or not, its key
// authorised or not, another agent key authorised or not, IdentitiesOnly
// yes or no, and 3 or 7 unrelated keys in the agent before them (sshd's
// MaxAuthTries is 6). No terminal: gpulab has no one to ask a passphrase,
// as in the workbench or with stdin redirected.
func TestLoginLikeOpenSSH(t *testing.T) {
	sshBin := testreq.Tool(t, "ssh", "the login tests compare gpulab with OpenSSH's client (apt-get install openssh-client)")
	f := sshtest.Start(t, 1, sshtest.Options{})
	k := makeLoginKeys(t)
	outcomes := map[bool]int{}
	for _, noise := range []int{3, 7} {
		for _, fileInAgent := range []bool{false, true} {
			sock := sshtest.StartAgent(t)
			for _, n := range k.noise[:noise] {
				sshtest.AgentAdd(t, sock, n)
			}
			if fileInAgent {
				sshtest.AgentAdd(t, sock, k.file)
			}
			sshtest.AgentAdd(t, sock, k.agentOnly)
			for _, encrypted := range []bool{false, true} {
				for _, fileAuth := range []bool{false, true} {
					for _, agentAuth := range []bool{false, true} {
						for _, only := range []string{"no", "yes"} {
							file := k.file
							if encrypted {
								file = k.encFile
							}
							name := fmt.Sprintf("noise=%d/in-agent=%v/encrypted=%v/file-authorised=%v/agent-key-authorised=%v/IdentitiesOnly=%s",
								noise, fileInAgent, encrypted, fileAuth, agentAuth, only)
							t.Run(name, func(t *testing.T) {
								var auth []ssh.PublicKey
								if fileAuth {
									auth = append(auth, k.filePub)
								}
								if agentAuth {
									auth = append(auth, k.agentOnlyPub)
								}
								f.SetAuthorized(t, auth...)
								cfg := f.SSHConfig(t, fmt.Sprintf("IdentityFile %s\nIdentitiesOnly %s", file, only))
								want, sshSaid := opensshLogin(t, sshBin, cfg, "h01", sock)
								keys := &orchestrator.Keyring{AgentSocket: sock}
								defer keys.Close()
								r := gpulabLogin(t, cfg, "h01", keys)
								outcomes[want]++
								if got := r.Class == orchestrator.OK; got != want {
									t.Errorf("OpenSSH logged in: %v (%s); gpulab: %s %s", want, strings.TrimSpace(sshSaid), r.Class, r.Err)
								}
								if r.Class != orchestrator.OK && r.Class != orchestrator.Auth {
									t.Errorf("a failed login is class %s, want auth: %s", r.Class, r.Err)
								}
							})
						}
					}
				}
			}
		}
	}
	if outcomes[true] == 0 || outcomes[false] == 0 {
		t.Errorf("the matrix should hold logins that work and logins that fail: %v", outcomes)
	}
}

// With a terminal, a passphrase is asked only when the server accepts the
// key and the agent does not hold it: never for a key the agent has, never
// for a key the server does not take.
func TestPassphraseAskedOnlyWhenNeeded(t *testing.T) {
	f := sshtest.Start(t, 3, sshtest.Options{})
	k := makeLoginKeys(t)
	sock := sshtest.StartAgent(t)
	sshtest.AgentAdd(t, sock, k.agentOnly)
	var asked atomic.Int32
	ask := func(string) ([]byte, error) { asked.Add(1); return []byte("correct horse"), nil }
	run := func(cfgExtra string) []orchestrator.HostResult {
		t.Helper()
		cfg := f.SSHConfig(t, cfgExtra)
		r, err := orchestrator.NewResolver(inventory.Empty(), cfg, orchestrator.Overrides{}, t.TempDir(), "nobody")
		if err != nil {
			t.Fatal(err)
		}
		var ts []orchestrator.Target
		for _, s := range f.Servers {
			tg, err := r.ResolveName(s.Name)
			if err != nil {
				t.Fatal(err)
			}
			ts = append(ts, tg)
		}
		keys := &orchestrator.Keyring{AgentSocket: sock, Passphrase: ask}
		defer keys.Close()
		e := &orchestrator.Engine{Dialer: &orchestrator.Dialer{Keys: keys}, Concurrency: 4}
		return e.Run(context.Background(), orchestrator.Plan{Targets: ts, Steps: step("echo ok")}, nil)
	}

	// The server takes only the agent's key: the encrypted file is offered
	// by its public half, refused, and never decrypted.
	f.SetAuthorized(t, k.agentOnlyPub)
	assertHealthy(t, run("IdentityFile "+k.encFile), nil, "ok\n")
	if n := asked.Load(); n != 0 {
		t.Errorf("passphrase asked %d times for a key no server accepted", n)
	}

	// The agent holds the file's key: the agent signs, nothing is asked.
	sshtest.AgentAdd(t, sock, k.file)
	f.SetAuthorized(t, k.filePub)
	assertHealthy(t, run("IdentityFile "+k.encFile+"\nIdentitiesOnly yes"), nil, "ok\n")
	if n := asked.Load(); n != 0 {
		t.Errorf("passphrase asked %d times for a key the agent holds", n)
	}
}

// A failed login is class auth and names the user and every key offered,
// whether sshd refused them all or gave up after MaxAuthTries; a key left
// out (encrypted, nobody to ask) is named too.
func TestAuthFailureNamesUserAndKeys(t *testing.T) {
	f := sshtest.Start(t, 1, sshtest.Options{})
	k := makeLoginKeys(t)
	sock := sshtest.StartAgent(t)
	for _, n := range k.noise {
		sshtest.AgentAdd(t, sock, n)
	}
	f.SetAuthorized(t) // nobody
	keys := &orchestrator.Keyring{AgentSocket: sock}
	defer keys.Close()

	// IdentitiesOnly: one key offered, refused.
	r := gpulabLogin(t, f.SSHConfig(t, "IdentityFile "+k.file+"\nIdentitiesOnly yes"), "h01", keys)
	if r.Class != orchestrator.Auth || !strings.Contains(r.Err, "as "+f.User+" ") ||
		!strings.Contains(r.Err, ssh.FingerprintSHA256(k.filePub)+" ("+k.file+")") || strings.Count(r.Err, "SHA256:") != 1 {
		t.Errorf("IdentitiesOnly, key refused: %s %q; want auth naming user %s and only %s", r.Class, r.Err, f.User, k.file)
	}

	// Seven agent keys and an encrypted file nobody can unlock: sshd gives
	// up after six; still auth, with the keys offered and the one left out.
	r = gpulabLogin(t, f.SSHConfig(t, "IdentityFile "+k.encFile), "h01", keys)
	if r.Class != orchestrator.Auth || !strings.Contains(r.Err, "(agent: "+filepath.Base(k.noise[0])+")") || !strings.Contains(r.Err, "not offered: "+k.encFile+" (encrypted") {
		t.Errorf("too many keys: %s %q; want auth naming the agent's keys and the encrypted file left out", r.Class, r.Err)
	}
}

// writeProxy writes a ProxyCommand script that records its arguments in
// marker and reaches 127.0.0.1:port through jump with OpenSSH's ssh -W.
func writeProxy(t *testing.T, f *sshtest.Fleet, jump *sshtest.Server, port int, marker string) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "proxy.sh")
	body := fmt.Sprintf("#!/bin/sh\necho \"$@\" > %s\nexec ssh -F /dev/null -o BatchMode=yes -o UserKnownHostsFile=%s -o GlobalKnownHostsFile=/dev/null -o StrictHostKeyChecking=yes -i %s -p %d -l %s -W 127.0.0.1:%d 127.0.0.1\n",
		marker, f.KnownHosts, f.ClientKey, jump.Port, f.User, port)
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	return script
}

// ssh_config's ProxyCommand is the route, with %h %p %r %n expanded; a
// failing one fails the host with what it said, never a direct connection.
func TestProxyCommand(t *testing.T) {
	testreq.Tool(t, "ssh", "the ProxyCommand test reaches its host through OpenSSH's ssh -W (apt-get install openssh-client)")
	f := sshtest.Start(t, 2, sshtest.Options{})
	jump, target := f.Servers[0], f.Servers[1]
	dir := t.TempDir()
	marker := filepath.Join(dir, "proxy-args")
	// Nothing listens on the port dialled: only the ProxyCommand, which
	// goes to the target's real port, can reach it.
	closed := sshtest.FreePort(t)
	kh := filepath.Join(dir, "known_hosts")
	line := fmt.Sprintf("[127.0.0.1]:%d %s", closed, ssh.MarshalAuthorizedKey(target.HostKey))
	if err := os.WriteFile(kh, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "ssh_config")
	write := func(proxy string) {
		t.Helper()
		content := fmt.Sprintf("Host behind\n  HostName 127.0.0.1\n  Port %d\n  User %s\n  IdentityFile %s\n  UserKnownHostsFile %s\n  ProxyCommand %s\n",
			closed, f.User, f.ClientKey, kh, proxy)
		if err := os.WriteFile(cfg, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(writeProxy(t, f, jump, target.Port, marker) + " %h %p %r %n %%")
	r := gpulabLogin(t, cfg, "behind", &orchestrator.Keyring{})
	if r.Class != orchestrator.OK {
		t.Fatalf("through ProxyCommand: %s %s", r.Class, r.Err)
	}
	args, _ := os.ReadFile(marker)
	if want := fmt.Sprintf("127.0.0.1 %d %s behind %%\n", closed, f.User); string(args) != want {
		t.Errorf("ProxyCommand got %q, want %q", args, want)
	}

	write("sh -c 'echo no route to the lab network >&2; exit 3'")
	r = gpulabLogin(t, cfg, "behind", &orchestrator.Keyring{})
	if r.Class == orchestrator.OK || !strings.Contains(r.Err, "no route to the lab network") || !strings.Contains(r.Err, "exit status 3") {
		t.Errorf("failing ProxyCommand: %s %q; want a failure quoting the command's stderr and status", r.Class, r.Err)
	}
}

// HostKeyAlias names the host in known_hosts: the key recorded under the
// alias is the one checked, whatever address is dialled.
func TestHostKeyAlias(t *testing.T) {
	f := sshtest.Start(t, 2, sshtest.Options{})
	dir := t.TempDir()
	kh := filepath.Join(dir, "known_hosts")
	content := "gpu-alias " + string(ssh.MarshalAuthorizedKey(f.Servers[0].HostKey)) +
		"other-alias " + string(ssh.MarshalAuthorizedKey(f.Servers[1].HostKey))
	if err := os.WriteFile(kh, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		alias string
		want  orchestrator.Class
	}{{"gpu-alias", orchestrator.OK}, {"other-alias", orchestrator.HostKeyChanged}, {"unrecorded-alias", orchestrator.HostKeyUnknown}} {
		cfg := filepath.Join(t.TempDir(), "ssh_config")
		c := fmt.Sprintf("Host h01\n  HostName 127.0.0.1\n  Port %d\n  User %s\n  IdentityFile %s\n  UserKnownHostsFile %s\n  HostKeyAlias %s\n",
			f.Servers[0].Port, f.User, f.ClientKey, kh, tc.alias)
		if err := os.WriteFile(cfg, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
		if r := gpulabLogin(t, cfg, "h01", &orchestrator.Keyring{}); r.Class != tc.want {
			t.Errorf("HostKeyAlias %s: %s %s, want %s", tc.alias, r.Class, r.Err, tc.want)
		}
	}
}

// A host recorded with a key of one type that now offers only another type
// is refused as changed (not a failed negotiation classed unreachable).
func TestHostKeyOfAnotherType(t *testing.T) {
	f := sshtest.Start(t, 1, sshtest.Options{})
	_, rsaPub := rsaHostKey(t)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	line := fmt.Sprintf("[127.0.0.1]:%d %s", f.Servers[0].Port, ssh.MarshalAuthorizedKey(rsaPub))
	if err := os.WriteFile(kh, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	tg := target(f, f.Servers[0])
	tg.KnownHosts = []string{kh}
	r := newEngine().Run(context.Background(), orchestrator.Plan{Targets: []orchestrator.Target{tg}, Steps: step("true")}, nil)[0]
	if r.Class != orchestrator.HostKeyChanged || !strings.Contains(r.Err, ssh.FingerprintSHA256(f.Servers[0].HostKey)) {
		t.Errorf("recorded RSA, offered ed25519: %s %q; want hostkey-changed naming the offered key", r.Class, r.Err)
	}
}

func rsaHostKey(t *testing.T) (string, ssh.PublicKey) {
	return sshtest.KeyGenType(t, t.TempDir(), "rsa_host", "rsa")
}

// ssh_config naming both ProxyJump and ProxyCommand for one host is
// refused: OpenSSH takes the first, gpulab does not guess.
func TestProxyJumpAndCommandRefused(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(cfg, []byte("Host both\n  ProxyJump bastion\n  ProxyCommand nc %h %p\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := orchestrator.NewResolver(inventory.Empty(), cfg, orchestrator.Overrides{}, t.TempDir(), "nobody")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ResolveName("both"); err == nil || !strings.Contains(err.Error(), "both ProxyJump") {
		t.Errorf("ProxyJump and ProxyCommand: %v", err)
	}
}

// An inventory naming OpenSSH's default ssh_config keeps it optional, as
// ssh does; another file it names must exist.
func TestInventorySSHConfigDefaultIsOptional(t *testing.T) {
	home := t.TempDir() // no .ssh/config in it
	for _, tc := range []struct {
		path    string
		wantErr bool
	}{{"~/.ssh/config", false}, {filepath.Join(home, ".ssh", "config"), false}, {"~/.ssh/lab_config", true}} {
		inv := filepath.Join(t.TempDir(), "inv.toml")
		if err := os.WriteFile(inv, []byte(fmt.Sprintf("[defaults]\nssh_config = %q\n\n[[host]]\nname = \"gpu01\"\n", tc.path)), 0o600); err != nil {
			t.Fatal(err)
		}
		loaded, err := inventory.Load(inv)
		if err != nil {
			t.Fatal(err)
		}
		_, err = orchestrator.NewResolver(loaded, "", orchestrator.Overrides{}, home, "nobody")
		if (err != nil) != tc.wantErr {
			t.Errorf("ssh_config = %q without the file: err %v, want error %v", tc.path, err, tc.wantErr)
		}
	}
}

// A command runs as with ssh HOST CMD: by the user's login shell, so its
// syntax works and its errors read the same; the output, the error and the
// exit status match OpenSSH's client, command by command (ssh exits 255
// for a command killed by a signal; gpulab names the signal). (sshd names the
// shell "bash" in its messages, gpulab's wrapper "/bin/bash": the path is
// the one difference, and it is ignored.)
func TestCommandRunsLikeSSH(t *testing.T) {
	sshBin := testreq.Tool(t, "ssh", "the test compares gpulab with OpenSSH's client (apt-get install openssh-client)")
	f := sshtest.Start(t, 1, sshtest.Options{})
	cfg := f.SSHConfig(t, "IdentityFile "+f.ClientKey)
	for _, cmd := range []string{
		"gpulab-no-such-command --version",
		"[[ a == a ]] && echo double-brackets",
		"echo $0 | sed 's,.*/,,'",
		"printf '%s\\n' {1..3}",
		"exit 42",
		"echo before; kill -TERM $$",
	} {
		c := exec.Command(sshBin, "-F", cfg, "-o", "BatchMode=yes", "h01", cmd)
		c.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
		var stdout, stderr strings.Builder
		c.Stdout, c.Stderr = &stdout, &stderr
		err := c.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		r := gpulabRun(t, cfg, "h01", cmd)
		if len(r.Steps) != 1 {
			t.Fatalf("%q: %s %s", cmd, r.Class, r.Err)
		}
		s := r.Steps[0]
		if code == 255 && s.Signal != "" { // ssh's own status for a command killed by a signal
			code = s.ExitCode
		}
		if string(s.Stdout) != stdout.String() || shellPath.ReplaceAllString(string(s.Stderr), "$1:") != stderr.String() || s.ExitCode != code {
			t.Errorf("%q:\n  ssh:    exit %d, stdout %q, stderr %q\n  gpulab: exit %d, stdout %q, stderr %q", cmd, code, stdout.String(), stderr.String(), s.ExitCode, s.Stdout, s.Stderr)
		}
	}
}

var shellPath = regexp.MustCompile(`(?m)^/(?:[^/:\s]+/)*([^/:\s]+):`)

func gpulabRun(t *testing.T, cfg, host, cmd string) orchestrator.HostResult {
	t.Helper()
	r, err := orchestrator.NewResolver(inventory.Empty(), cfg, orchestrator.Overrides{}, t.TempDir(), "nobody")
	if err != nil {
		t.Fatal(err)
	}
	tg, err := r.ResolveName(host)
	if err != nil {
		t.Fatal(err)
	}
	e := &orchestrator.Engine{Dialer: &orchestrator.Dialer{Keys: &orchestrator.Keyring{}}, Concurrency: 1}
	return e.Run(context.Background(), orchestrator.Plan{Targets: []orchestrator.Target{tg}, Steps: step(cmd)}, nil)[0]
}

// A job the command leaves in the background outlives the session, as with
// ssh HOST CMD; a command stopped by a cancel takes its whole group along.
func TestBackgroundJobsOutliveTheCommand(t *testing.T) {
	f := sshtest.Start(t, 1, sshtest.Options{})
	// The command says its job's pid ($!): the job is that process
	// whether or not it has exec'd sleep yet (a busy machine may not
	// have), so nothing is waited for by name.
	r := newEngine().Run(context.Background(), orchestrator.Plan{Targets: targets(f), Steps: step("sleep 300 >/dev/null 2>&1 & echo left $!")}, nil)[0]
	if r.Class != orchestrator.OK || len(r.Steps) != 1 {
		t.Fatalf("%s %s", r.Class, r.Err)
	}
	var pid int
	if _, err := fmt.Sscanf(string(r.Steps[0].Stdout), "left %d", &pid); err != nil || pid <= 0 {
		t.Fatalf("the command did not say its job's pid: %q", r.Steps[0].Stdout)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("the background job (pid %d) was stopped with the session: %v", pid, err)
	}
	// Field 3, after the command's name in parentheses, is the state.
	if i := strings.LastIndexByte(string(stat), ')'); i < 0 || len(stat) < i+3 || stat[i+2] == 'Z' || stat[i+2] == 'X' {
		t.Fatalf("the background job (pid %d) was stopped with the session: %s", pid, stat)
	}
}

// A ProxyCommand that leaves a detached child holding its stderr neither
// hangs the dial past the connect timeout nor the session after the
// command: gpulab waits for the command, not for its children.
func TestProxyCommandDetachedChild(t *testing.T) {
	testreq.Tool(t, "ssh", "the ProxyCommand test reaches its host through OpenSSH's ssh -W (apt-get install openssh-client)")
	testreq.Tool(t, "setsid", "the test detaches a child from the ProxyCommand (util-linux)")
	f := sshtest.Start(t, 2, sshtest.Options{})
	jump, target := f.Servers[0], f.Servers[1]
	dir := t.TempDir()
	marker := filepath.Join(dir, "args")
	proxy := writeProxy(t, f, jump, target.Port, marker)
	mark := fmt.Sprintf("%d.%d", 600+os.Getpid()%300, time.Now().Nanosecond()%983) // seconds: far past the deadline below
	cfg := filepath.Join(dir, "ssh_config")
	content := fmt.Sprintf("Host behind\n  HostName 127.0.0.1\n  Port %d\n  User %s\n  IdentityFile %s\n  UserKnownHostsFile %s\n  ConnectTimeout 5\n  ProxyCommand sh -c 'setsid sleep %s & exec %s %%h %%p'\n",
		target.Port, f.User, f.ClientKey, f.KnownHosts, mark, proxy)
	if err := os.WriteFile(cfg, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exec.Command("pkill", "-f", "^sleep "+mark).Run() })
	done := make(chan orchestrator.HostResult, 1)
	go func() { done <- gpulabLogin(t, cfg, "behind", &orchestrator.Keyring{}) }()
	select {
	case r := <-done:
		if r.Class != orchestrator.OK {
			t.Errorf("through a ProxyCommand with a detached child: %s %s", r.Class, r.Err)
		}
	case <-time.After(60 * time.Second): // the child sleeps far longer: a hang detector, not a bound
		t.Fatal("the run waited for the ProxyCommand's detached child")
	}
}

// What ssh_config says about routes and keys is followed as ssh follows
// it, or refused where gpulab cannot: a hop's own ProxyJump, Match blocks,
// Include files that are no regular files, the global known_hosts,
// IdentityAgent, a public key as IdentityFile, a missing IdentityFile.
func TestSSHConfigLikeOpenSSH(t *testing.T) {
	f := sshtest.Start(t, 3, sshtest.Options{})
	home := t.TempDir()
	dir := t.TempDir()
	resolve := func(cfg, host string) (orchestrator.Target, error) {
		t.Helper()
		r, err := orchestrator.NewResolver(inventory.Empty(), cfg, orchestrator.Overrides{}, home, "nobody")
		if err != nil {
			return orchestrator.Target{}, err
		}
		return r.ResolveName(host)
	}
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	block := func(name string, s *sshtest.Server, extra string) string {
		return fmt.Sprintf("Host %s\n  HostName %s\n  Port %d\n  User %s\n  IdentityFile %s\n  UserKnownHostsFile %s\n%s", name, s.Addr, s.Port, f.User, f.ClientKey, f.KnownHosts, extra)
	}

	// A hop's own ProxyJump: gpu → b2 → b1, and b1 is down: like ssh, the
	// host is not reached (not reached directly through b2 instead).
	down := sshtest.FreePort(t)
	cfg := write("jumps", block("gpu", f.Servers[2], "  ProxyJump b2\n")+block("b2", f.Servers[1], "  ProxyJump b1\n")+
		fmt.Sprintf("Host b1\n  HostName 127.0.0.1\n  Port %d\n  User %s\n  IdentityFile %s\n  UserKnownHostsFile %s\n", down, f.User, f.ClientKey, f.KnownHosts))
	tg, err := resolve(cfg, "gpu")
	if err != nil || len(tg.Jump) != 2 || tg.Jump[0].Port != down || tg.Jump[1].Port != f.Servers[1].Port {
		t.Fatalf("gpu's jumps: %+v %v; want b1 then b2", tg.Jump, err)
	}
	if r := newEngine().Run(context.Background(), orchestrator.Plan{Targets: []orchestrator.Target{tg}, Steps: step("true")}, nil)[0]; r.Class == orchestrator.OK {
		t.Errorf("reached gpu although its first hop b1 is down")
	}

	// Match blocks are refused at their line, not read as Host.
	cfg = write("match", block("gpu", f.Servers[0], "")+"Match host 127.0.0.1\n  ProxyCommand false\n")
	if _, err := resolve(cfg, "gpu"); err == nil || !strings.Contains(err.Error(), "match:7: Match blocks are not supported") {
		t.Errorf("Match: %v", err)
	}

	// An Include that is a FIFO is refused, not read (it would hang).
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg = write("include", "Include "+fifo+"\n"+block("gpu", f.Servers[0], ""))
	if _, err := resolve(cfg, "gpu"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Include of a FIFO: %v", err)
	}

	// GlobalKnownHostsFile: a key there is the host's key (changed, if
	// another is offered), even with accept-new.
	other, _ := sshtest.KeyGen(t, dir, "other_host")
	otherPub, _ := os.ReadFile(other + ".pub")
	global := write("global_kh", fmt.Sprintf("[127.0.0.1]:%d %s", f.Servers[0].Port, otherPub))
	user := filepath.Join(dir, "user_kh") // empty
	cfg = write("global", fmt.Sprintf("Host gpu\n  HostName 127.0.0.1\n  Port %d\n  User %s\n  IdentityFile %s\n  UserKnownHostsFile %s\n  GlobalKnownHostsFile %s\n",
		f.Servers[0].Port, f.User, f.ClientKey, user, global))
	tg, err = resolve(cfg, "gpu")
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine()
	e.Dialer.AcceptNew = true
	if r := e.Run(context.Background(), orchestrator.Plan{Targets: []orchestrator.Target{tg}, Steps: step("true")}, nil)[0]; r.Class != orchestrator.HostKeyChanged {
		t.Errorf("a host whose key in the global known_hosts differs: %s %s", r.Class, r.Err)
	}

	// A HostName with shell metacharacters is refused, as ssh refuses it.
	cfg = write("badname", "Host gpu\n  HostName x$(touch /tmp/gpulab-pwned)\n")
	if _, err := resolve(cfg, "gpu"); err == nil || !strings.Contains(err.Error(), "holds characters a host name cannot") {
		t.Errorf("HostName with $( ): %v", err)
	}

	// Host names are looked up in known_hosts lower-cased.
	kh, _ := os.ReadFile(f.KnownHosts)
	lower := write("kh_lower", strings.ReplaceAll(string(kh), "[127.0.0.1]", "[localhost]"))
	upper := strings.NewReplacer(f.KnownHosts, lower, "HostName 127.0.0.1", "HostName LOCALHOST").Replace(block("gpu", f.Servers[0], ""))
	cfg = write("upper", upper)
	if r := gpulabLogin(t, cfg, "gpu", &orchestrator.Keyring{}); r.Class != orchestrator.OK {
		t.Errorf("HostName LOCALHOST against known_hosts [localhost]: %s %s", r.Class, r.Err)
	}

	// IdentityAgent none: the agent is not asked; IdentityAgent PATH: that
	// agent is. A missing IdentityFile is left out, not fatal; a .pub as
	// IdentityFile picks the agent's key.
	k := makeLoginKeys(t)
	sock := sshtest.StartAgent(t)
	sshtest.AgentAdd(t, sock, k.agentOnly)
	f.SetAuthorized(t, k.agentOnlyPub)
	for _, tc := range []struct {
		extra string
		env   string // the keyring's $SSH_AUTH_SOCK
		want  bool
	}{
		{"IdentityFile /nonexistent/key\n", sock, true},
		{"IdentityFile /nonexistent/key\nIdentityAgent none\n", sock, false},
		{"IdentityFile /nonexistent/key\nIdentityAgent " + sock + "\n", "", true},
		{"IdentityFile " + k.agentOnly + ".pub\nIdentitiesOnly yes\n", sock, true},
	} {
		cfg := f.SSHConfig(t, tc.extra)
		keys := &orchestrator.Keyring{AgentSocket: tc.env}
		r := gpulabLogin(t, cfg, "h01", keys)
		keys.Close()
		if got := r.Class == orchestrator.OK; got != tc.want {
			t.Errorf("%q with SSH_AUTH_SOCK=%q: %s %s, want login %v", tc.extra, tc.env, r.Class, r.Err, tc.want)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// A timeout or keepalive setting ssh -G would refuse is refused, naming
// the file's line: a silent default would be a limit nobody set.
func TestSSHConfigTimeoutsAreChecked(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"ConnectTimeout -5", `ConnectTimeout "-5"`},
		{"ConnectTimeout 0", `ConnectTimeout "0"`},
		{"ConnectTimeout 99999999999999999999", "want a whole number of seconds, 1 to 300"},
		{"ConnectTimeout soon", `ConnectTimeout "soon"`},
		{"ServerAliveInterval -1", `ServerAliveInterval "-1"`},
		{"ServerAliveCountMax 0", `ServerAliveCountMax "0"`},
	} {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "config")
		if err := os.WriteFile(cfg, []byte("Host h\n  HostName 127.0.0.1\n  "+tc.line+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := orchestrator.NewResolver(inventory.Empty(), cfg, orchestrator.Overrides{}, t.TempDir(), "nobody")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.ResolveName("h"); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), cfg) {
			t.Errorf("%s: %v, want an error naming the file and saying %s", tc.line, err, tc.want)
		}
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	os.WriteFile(cfg, []byte("Host h\n  HostName 127.0.0.1\n  ConnectTimeout 7\n  ServerAliveInterval 0\n"), 0o600)
	r, _ := orchestrator.NewResolver(inventory.Empty(), cfg, orchestrator.Overrides{}, t.TempDir(), "nobody")
	if tg, err := r.ResolveName("h"); err != nil || tg.ConnectTimeout != 7*time.Second || tg.ServerAliveInterval != 15*time.Second {
		t.Errorf("valid settings: %v, connect %s, keepalive %s", err, tg.ConnectTimeout, tg.ServerAliveInterval)
	}
}
