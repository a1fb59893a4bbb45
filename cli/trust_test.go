package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpulab/gpulab/internal/testreq"
	"github.com/gpulab/gpulab/sim"
)

// anotherUser gives path to uid 65534 (nobody), as another local user
// would own it; only root can, as CI runs.
func anotherUser(t *testing.T, path string) {
	t.Helper()
	if err := os.Lchown(path, 65534, 65534); err != nil {
		testreq.Missing(t, fmt.Sprintf("the test gives %s to another user (uid 65534), which needs root: %v", path, err))
	}
}

// anotherGroup gives path to group 65534 (nogroup), of which the user is
// not the only member: its group bits are another user's.
func anotherGroup(t *testing.T, path string) {
	t.Helper()
	if err := os.Lchown(path, -1, 65534); err != nil {
		testreq.Missing(t, fmt.Sprintf("the test gives %s to another group (gid 65534), which needs root: %v", path, err))
	}
}

// Another local user who can write the ssh_config gpulab reads, or the
// directory it is in, or who owns it, could have their ProxyCommand run
// as the operator: every such config is refused, with the path and the
// fix, and the ProxyCommand never runs.
func TestConfigAnotherUserCanWriteIsRefused(t *testing.T) {
	_, files := simFleet(t, sim.Config{Hosts: 2})
	env := noEnv(t)
	mark := filepath.Join(t.TempDir(), "ran-as-operator")
	good, err := os.ReadFile(files.SSHConfig)
	if err != nil {
		t.Fatal(err)
	}
	hostile := "Host *\n  ProxyCommand sh -c 'id > " + mark + "'\n" + string(good)
	exec := []string{"exec", "--inventory", files.Inventory, "-H", "@dgx", "--", "true"}
	run(t, env, exec...).expect(t, 0, "", "2 hosts: 2 ok")

	swap := func(mode os.FileMode) {
		t.Helper()
		os.Remove(files.SSHConfig)
		if err := os.WriteFile(files.SSHConfig, []byte(hostile), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(files.SSHConfig, mode); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Dir(files.Inventory)
	for _, c := range []struct {
		name  string
		setup func()
		want  string
	}{
		{"world-writable ssh_config", func() { swap(0o666) }, files.SSHConfig + " is writable by others (mode -rw-rw-rw-)"},
		{"ssh_config its group can write", func() { swap(0o620); anotherGroup(t, files.SSHConfig) }, "chmod go-w " + files.SSHConfig},
		{"directory others can write", func() { swap(0o600); os.Chmod(dir, 0o777) }, dir + " is a directory writable by others without the sticky bit"},
		{"ssh_config another user owns", func() { os.Chmod(dir, 0o700); swap(0o644); anotherUser(t, files.SSHConfig) }, files.SSHConfig + " is owned by uid 65534"},
		{"directory another user owns", func() { swap(0o600); anotherUser(t, dir) }, dir + " is owned by uid 65534"},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(mark)
			c.setup()
			r := run(t, env, exec...)
			r.expect(t, 2, "", c.want)
			r.expect(t, 2, "", "another local user could change what gpulab reads there and runs as you; refused")
			if _, err := os.Stat(mark); !errors.Is(err, fs.ErrNotExist) {
				out, _ := os.ReadFile(mark)
				t.Fatalf("the other user's ProxyCommand ran as the operator: %s", out)
			}
		})
	}
	os.Lchown(dir, os.Geteuid(), os.Getegid())
	os.Chmod(dir, 0o700)

	// The inventory itself, a key, known_hosts: the same rules.
	swap(0o600)
	if err := os.WriteFile(files.SSHConfig, good, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{files.Inventory, files.KnownHosts, files.Key} {
		if err := os.Chmod(p, 0o646); err != nil {
			t.Fatal(err)
		}
		r := run(t, env, exec...)
		if r.code == 0 || !strings.Contains(r.stdout+r.stderr, p+" is writable by others") {
			t.Errorf("%s writable by others: exit %d\n%s%s", filepath.Base(p), r.code, r.stdout, r.stderr)
		}
		os.Chmod(p, 0o600)
	}
	// A private key others can read is refused, as ssh refuses it.
	os.Chmod(files.Key, 0o644)
	r := run(t, env, exec...)
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "UNPROTECTED PRIVATE KEY FILE") {
		t.Errorf("a private key others can read: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	os.Chmod(files.Key, 0o600)
	run(t, env, exec...).expect(t, 0, "", "2 hosts: 2 ok")
}

// sim serve writes an ssh_config: into a directory another user can
// write or owns, it refuses, before any host starts, and writes nothing.
func TestSimServeRefusesADirectoryOthersCanWrite(t *testing.T) {
	open := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777)
	theirs := filepath.Join(t.TempDir(), "theirs")
	if err := os.Mkdir(theirs, 0o755); err != nil {
		t.Fatal(err)
	}
	anotherUser(t, theirs)
	for dir, want := range map[string]string{open: "a directory writable by others", theirs: "owned by uid 65534"} {
		done := make(chan result, 1)
		go func() { done <- run(t, noEnv(t), "sim", "serve", "--inventory-out", filepath.Join(dir, "fleet.toml")) }()
		select {
		case r := <-done:
			r.expect(t, 2, "", "sim serve: --inventory-out "+filepath.Join(dir, "fleet.toml")+": "+dir+" is "+want)
		case <-time.After(time.Minute):
			t.Fatalf("waited a minute for sim serve to refuse %s: it serves", dir)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("sim serve wrote into %s: %v", dir, ents)
		}
	}
}

// The review's ways around the check: an Include line the ssh_config
// library reads otherwise than gpulab (a CR, a comment), a kubeconfig
// another user can write (its exec plugin runs as the operator), and an
// unset HOME (~/.ssh read from the working directory).
func TestTrustCheckCannotBeSidestepped(t *testing.T) {
	home := t.TempDir()
	other := filepath.Join(t.TempDir(), "other")
	if err := os.Mkdir(other, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(other, 0o777)
	mark := filepath.Join(t.TempDir(), "ran")
	team := filepath.Join(other, "team.conf")
	writeFile(t, team, "Host evilhost\n  HostName 127.0.0.9\n  ProxyCommand touch "+mark+"\n")
	os.Chmod(team, 0o666)
	inv := filepath.Join(t.TempDir(), "inventory.toml")
	writeFile(t, inv, "[[host]]\nname = \"evilhost\"\n")
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	for _, line := range []string{"Include " + team + "\r\n", "Include " + team + "#x\n", "Include " + team + "\n"} {
		writeFile(t, filepath.Join(home, ".ssh", "config"), line)
		r := run(t, map[string]string{"HOME": home}, "exec", "--inventory", inv, "-H", "evilhost", "--", "true")
		if r.code != 2 || !strings.Contains(r.stderr, "refused") {
			t.Errorf("%q: exit %d\n%s%s", line, r.code, r.stdout, r.stderr)
		}
		if _, err := os.Stat(mark); err == nil {
			t.Fatalf("%q: the other user's ProxyCommand ran", line)
		}
	}

	kc := filepath.Join(other, "kubeconfig")
	writeFile(t, kc, "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"+
		"users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: ['-c', 'touch "+mark+"; echo {}']}}}]\n"+
		"contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n")
	os.Chmod(kc, 0o666)
	r := run(t, map[string]string{"HOME": home}, "cluster", "nodes", "--kubeconfig", kc)
	if r.code == 0 || !strings.Contains(r.stderr, "kubeconfig: "+kc+": "+other+" is a directory writable by others") {
		t.Errorf("a kubeconfig others can write: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the kubeconfig's exec plugin ran")
	}

	// HOME unset, in a directory holding .ssh/config: it is not read.
	repo := t.TempDir()
	os.MkdirAll(filepath.Join(repo, ".ssh"), 0o700)
	writeFile(t, filepath.Join(repo, ".ssh", "config"), "Host evilhost\n  ProxyCommand touch "+mark+"\n")
	t.Chdir(repo)
	r = run(t, map[string]string{}, "inventory", "show", "evilhost", "--inventory", inv)
	if strings.Contains(r.stdout+r.stderr, "touch "+mark) {
		t.Errorf("with HOME unset, the working directory's .ssh/config was read:\n%s%s", r.stdout, r.stderr)
	}
}

// A file gpulab would read or create in a directory others can write,
// sticky as /tmp, that is missing now: another user could create it (or
// a link) between gpulab's check and the open that the ssh_config
// library, client-go or a known_hosts append does itself. A review won
// the race for an Include (its ProxyCommand ran as root), a known_hosts
// append (a line went through a link into root's file) and a KUBECONFIG
// entry; each is refused before it could be raced, naming the path.
func TestMissingFilesOthersCouldCreateAreRefused(t *testing.T) {
	_, files := simFleet(t, sim.Config{Hosts: 1})
	shared := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(shared, 0o777|fs.ModeSticky)
	want := func(p string) string {
		return p + " is missing from " + shared + ", a directory others can write (mode dtrwxrwxrwx), where another local user could create it first"
	}

	cfg := filepath.Join(t.TempDir(), "ssh_config")
	good, err := os.ReadFile(files.SSHConfig)
	if err != nil {
		t.Fatal(err)
	}
	inc := filepath.Join(shared, "team.conf")
	writeFile(t, cfg, "Include "+inc+"\n"+string(good))
	r := run(t, noEnv(t), "exec", "--inventory", files.Inventory, "-F", cfg, "-H", "dgx01", "--", "true")
	r.expect(t, 2, "", "Include "+inc+": "+want(inc))

	kh := filepath.Join(shared, "known_hosts")
	r = run(t, noEnv(t), "exec", "--inventory", files.Inventory, "--known-hosts", kh, "--accept-new-host-keys", "-H", "dgx01", "--", "true")
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "known_hosts: "+shared+" is writable by others (mode dtrwxrwxrwx)") {
		t.Errorf("a known_hosts to create in a directory others can write: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if ents, _ := os.ReadDir(shared); len(ents) != 0 {
		t.Errorf("gpulab wrote into the shared directory: %v", ents)
	}

	kc := filepath.Join(shared, "kubeconfig")
	env := noEnv(t)
	env["KUBECONFIG"] = kc
	run(t, env, "cluster", "nodes").expect(t, 2, "", want(kc))
}
