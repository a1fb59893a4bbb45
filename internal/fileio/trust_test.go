package fileio

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/internal/testreq"
)

// otherUID is a uid that is not the test's: nobody's.
const otherUID = 65534

// chownOther gives path to another user, which only root may do; the
// owner rules are then tested, else the test says loudly why not.
func chownOther(t *testing.T, path string) {
	t.Helper()
	if err := os.Lchown(path, otherUID, otherUID); err != nil {
		testreq.Missing(t, fmt.Sprintf("giving %s to uid %d (another user) needs root, as CI runs: %v", path, otherUID, err))
	}
}

func TestCheckTrusted(t *testing.T) {
	dir := t.TempDir() // 0700, under the sticky /tmp
	write := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := write("ok", 0o644)
	if err := CheckTrusted(ok); err != nil {
		t.Errorf("a 0644 file of the user's in a private directory: %v", err)
	}
	if err := CheckTrusted(os.DevNull); err != nil {
		t.Errorf("the null device (ssh -F /dev/null): %v", err)
	}
	if err := CheckTrusted(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
	worldWritable := write("ww", 0o666)
	expectUntrusted(t, CheckTrusted(worldWritable), worldWritable, "writable by others", "chmod go-w "+worldWritable)

	// A directory on the way that others can write, without the sticky
	// bit: the file below can be renamed away and replaced.
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o700); err != nil {
		t.Fatal(err)
	}
	inOpen := filepath.Join(open, "ssh_config")
	if err := os.WriteFile(inOpen, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	expectUntrusted(t, CheckTrusted(inOpen), open, "without the sticky bit", "chmod go-w "+open)
	// With the sticky bit (as /tmp) only an entry's owner renames it.
	if err := os.Chmod(open, 0o777|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := CheckTrusted(inOpen); err != nil {
		t.Errorf("a file of the user's in a sticky directory: %v", err)
	}
	// A missing file there another user could create first, or a link of
	// theirs: the ssh_config library, client-go and a known_hosts append
	// open the path again themselves after the check.
	for _, missing := range []string{filepath.Join(open, "missing"), filepath.Join(open, "missing", "deeper")} {
		expectUntrusted(t, CheckTrusted(missing), filepath.Join(open, "missing"), "missing from "+open+", a directory others can write", "a directory of your own")
	}
	// ... but a directory gpulab writes into may not be writable by others.
	expectUntrusted(t, CheckTrustedDir(open), open, "writable by others", "write into a directory of your own (mktemp -d makes one")
	if err := CheckTrustedDir(dir); err != nil {
		t.Errorf("a private directory to write into: %v", err)
	}

	// A link on the way: where it points is checked too.
	link := filepath.Join(dir, "link")
	if err := os.Symlink(worldWritable, link); err != nil {
		t.Fatal(err)
	}
	expectUntrusted(t, CheckTrusted(link), worldWritable, "writable by others", "")
	rel := filepath.Join(dir, "rel")
	if err := os.Symlink("ok", rel); err != nil {
		t.Fatal(err)
	}
	if err := CheckTrusted(rel); err != nil {
		t.Errorf("a relative link of the user's to a safe file: %v", err)
	}
	loop := filepath.Join(dir, "loop")
	if err := os.Symlink("loop", loop); err != nil {
		t.Fatal(err)
	}
	if err := CheckTrusted(loop); err == nil || !strings.Contains(err.Error(), "too many levels") {
		t.Errorf("a link to itself: %v", err)
	}
	if _, err := ReadTrusted(worldWritable, MaxConfig); !IsUntrusted(err) {
		t.Errorf("ReadTrusted of a world-writable file: %v", err)
	}

	// Owned by another user: the file, a directory on the way, a link.
	theirs := write("theirs", 0o644)
	chownOther(t, theirs)
	expectUntrusted(t, CheckTrusted(theirs), theirs, "owned by uid 65534", "chown it")
	theirDir := filepath.Join(dir, "theirdir")
	if err := os.Mkdir(theirDir, 0o755); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(theirDir, "inventory.toml")
	if err := os.WriteFile(mine, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	chownOther(t, theirDir)
	expectUntrusted(t, CheckTrusted(mine), theirDir, "owned by uid 65534", "")
	theirLink := filepath.Join(dir, "theirlink")
	if err := os.Symlink(ok, theirLink); err != nil {
		t.Fatal(err)
	}
	chownOther(t, theirLink)
	expectUntrusted(t, CheckTrusted(theirLink), theirLink, "owned by uid 65534", "")
}

func expectUntrusted(t *testing.T, err error, at, why, fix string) {
	t.Helper()
	var u *UntrustedError
	if !errors.As(err, &u) {
		t.Errorf("%s: %v, want it refused as untrusted (%s)", at, err, why)
		return
	}
	if u.At != at || !strings.Contains(u.Why, why) || !strings.Contains(u.Fix, fix) {
		t.Errorf("refused at %s (%s; fix %s), want at %s (%s; fix %s)", u.At, u.Why, u.Fix, at, why, fix)
	}
	if !strings.Contains(err.Error(), "another local user could change") {
		t.Errorf("the message does not say why it matters: %v", err)
	}
}

// ".." after a link is resolved as the kernel resolves it, from where the
// link points, not by cleaning the path's text; a relative path starts
// from the real working directory.
func TestCheckTrustedDotDotAfterALink(t *testing.T) {
	dir := t.TempDir()
	theirs := filepath.Join(dir, "theirs")
	if err := os.MkdirAll(filepath.Join(theirs, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(theirs, "inventory.toml")
	if err := os.WriteFile(bad, []byte("x\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(bad, 0o666)
	mine := filepath.Join(dir, "mine")
	if err := os.Mkdir(mine, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mine, "inventory.toml"), []byte("ok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(mine, "lnk")
	if err := os.Symlink(filepath.Join(theirs, "sub"), link); err != nil {
		t.Fatal(err)
	}
	// mine/lnk/../inventory.toml is theirs/inventory.toml to the kernel.
	expectUntrusted(t, CheckTrusted(link+"/../inventory.toml"), bad, "writable by others", "")
	t.Chdir(link)
	expectUntrusted(t, CheckTrusted("../inventory.toml"), bad, "writable by others", "")
}

// A file whose ACL lets another user write is refused, though its mode
// bits (the ACL's mask) would pass for a private group.
func TestCheckTrustedACL(t *testing.T) {
	setfacl := testreq.Tool(t, "setfacl", "the test gives another user write access through an ACL (apt-get install acl)")
	p := filepath.Join(t.TempDir(), "inventory.toml")
	if err := os.WriteFile(p, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(setfacl, "-m", "u:65534:rw", p).CombinedOutput(); err != nil {
		testreq.Missing(t, fmt.Sprintf("setfacl on %s (a file system with ACLs): %v %s", p, err, out))
	}
	var u *UntrustedError
	if err := CheckTrusted(p); !errors.As(err, &u) {
		t.Errorf("a file another user may write through its ACL: %v", err)
	}
}

// MkdirTrusted makes nothing through another user's link, nor where
// another user could get in the way, and makes what is missing in a
// private directory.
func TestMkdirTrusted(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.Mkdir(victim, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "results")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	chownOther(t, link)
	expectUntrusted(t, MkdirTrusted(filepath.Join(link, "topology-sanity"), 0o755), link, "owned by uid 65534", "")
	if ents, _ := os.ReadDir(victim); len(ents) > 0 {
		t.Errorf("a directory was made through another user's link before the refusal: %v", ents)
	}
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o777|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	expectUntrusted(t, MkdirTrusted(filepath.Join(open, "mine", "lab"), 0o755), filepath.Join(open, "mine"), "missing from", "")
	if _, err := os.Lstat(filepath.Join(open, "mine")); err == nil {
		t.Errorf("a directory was made in a directory others can write")
	}
	made := filepath.Join(dir, "a", "b")
	if err := MkdirTrusted(made, 0o755); err != nil {
		t.Errorf("a new directory in a private one: %v", err)
	}
	if st, err := os.Stat(made); err != nil || !st.IsDir() {
		t.Errorf("MkdirTrusted made no directory: %v", err)
	}
}
