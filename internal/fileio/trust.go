package fileio

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// What another local user can write, gpulab does not trust: a config it
// reads (inventory, ssh_config, known_hosts, an identity, a lab, runbook or
// catalog file) decides what runs as the operator, so it must be as safe
// as OpenSSH asks ~/.ssh/config to be, and so must every directory and
// symbolic link on the way to it, since whoever can rename a directory
// can swap what is below it.
//
// The rules, OpenSSH's (with Debian's allowance for a user's private
// group):
//   - a file is owned by the user or root, and neither others nor a group
//     with another member can write it;
//   - a directory on the way is owned by the user or root, and one that
//     others can write has the sticky bit (/tmp): there only an entry's
//     owner can rename it, and that owner is checked at the next step;
//   - a symbolic link on the way is owned by the user or root, and where
//     it points is checked the same way.

// UntrustedError is the error for a path that another user could change.
type UntrustedError struct {
	Path string // the path as the user named it
	At   string // the file, directory or link that fails the rules
	Why  string // "writable by others (mode drwxrwxrwx)"
	Fix  string // "chmod go-w /tmp/sim"
}

func (e *UntrustedError) Error() string {
	at := e.At
	if at != e.Path {
		at = e.Path + ": " + e.At
	}
	return fmt.Sprintf("%s is %s: another local user could change what gpulab reads there and runs as you; refused (fix: %s)", at, e.Why, e.Fix)
}

// maxLinks is how many symbolic links a path may pass through (Linux's
// own limit is 40).
const maxLinks = 40

// CheckTrusted checks that no other local user can change the file at
// path or anything on the way to it (the rules above); a missing file is
// fs.ErrNotExist, as from os.Stat, where no other user could create it,
// and untrusted where one could. The null device passes (ssh -F
// /dev/null).
func CheckTrusted(path string) error {
	return checkTrusted(path, false)
}

// CheckTrustedDir is CheckTrusted for a directory gpulab writes into (sim
// serve's output, a results directory): the directory itself must not be
// writable by another user, sticky or not.
func CheckTrustedDir(dir string) error {
	return checkTrusted(dir, true)
}

func checkTrusted(path string, dirItself bool) error {
	// Not filepath.Abs: it cleans "link/../x" lexically, and the kernel
	// resolves ".." after the link; and the real working directory, not
	// $PWD's name for it.
	abs := path
	if !filepath.IsAbs(path) {
		wd, err := syscall.Getwd()
		if err != nil {
			return err
		}
		abs = wd + "/" + path
	}
	me := os.Geteuid()
	untrusted := func(at, why, fix string) error {
		return &UntrustedError{Path: path, At: at, Why: why, Fix: fix}
	}
	// Walk the path a component at a time, as the kernel resolves it,
	// checking each directory, link and the file itself.
	rest := splitPath(abs)
	cur := "/"
	if err := checkDir(cur, me, untrusted); err != nil {
		return err
	}
	links := 0
	for len(rest) > 0 {
		name := rest[0]
		rest = rest[1:]
		next := filepath.Join(cur, name)
		st, err := os.Lstat(next)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return missingIn(cur, next, me, err, untrusted)
			}
			return err
		}
		if err := checkOwner(next, st, me, untrusted); err != nil {
			return err
		}
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			links++
			if links > maxLinks {
				return &fs.PathError{Op: "resolve", Path: path, Err: syscall.ELOOP}
			}
			target, err := os.Readlink(next)
			if err != nil {
				return err
			}
			if strings.HasPrefix(next, "/proc/") && !strings.HasPrefix(target, "/") && strings.Contains(target, ":") {
				return nil // /proc/PID/fd/N of a pipe or socket: ReadRegular names what it is
			}
			if filepath.IsAbs(target) {
				cur = "/"
			}
			rest = append(splitPath(target), rest...)
			continue
		case len(rest) > 0 || (dirItself && st.IsDir()):
			if !st.IsDir() {
				return &fs.PathError{Op: "resolve", Path: path, Err: syscall.ENOTDIR}
			}
			if err := checkDir(next, me, untrusted); err != nil {
				return err
			}
			if dirItself && len(rest) == 0 {
				if err := checkOwnDir(next, st, me, untrusted); err != nil {
					return err
				}
			}
		default:
			return checkFile(next, st, me, untrusted)
		}
		cur = next
	}
	return nil
}

// checkOwnDir checks a directory gpulab writes into: no other user may
// write it, sticky or not.
func checkOwnDir(dir string, st fs.FileInfo, me int, untrusted func(at, why, fix string) error) error {
	if st.Mode().Perm()&0o022 == 0 || privateGroup(dir, st, me, 0o020) {
		return nil
	}
	fix := "chmod go-w " + quote(dir)
	if st.Mode()&fs.ModeSticky != 0 { // /tmp: not to be closed, but not to write into either
		fix = "write into a directory of your own (mktemp -d makes one; a name of your choosing there, another user could take first)"
	}
	return untrusted(dir, "writable by others (mode "+st.Mode().String()+")", fix)
}

// checkFile checks the file at the end of the path: no other user may
// write it, by its mode or by an access control list.
func checkFile(file string, st fs.FileInfo, me int, untrusted func(at, why, fix string) error) error {
	if !st.Mode().IsRegular() {
		return nil // not a file to read: ReadRegular says what it is
	}
	if st.Mode().Perm()&0o022 != 0 && !privateGroup(file, st, me, 0o020) {
		return untrusted(file, "writable by others (mode "+st.Mode().String()+")", "chmod go-w "+quote(file))
	}
	if hasACL(file) {
		return untrusted(file, "writable by the users its access control list names (ls -l shows +)", "setfacl -b "+quote(file))
	}
	return nil
}

// missingIn is the error for next, missing from the directory cur: the
// ErrNotExist of os.Stat where no other user can create it, an
// *UntrustedError where one can (/tmp): the file gpulab would read or
// create there next could be theirs by then, or a link of theirs (the
// ssh_config library, client-go and a known_hosts append open the path
// again themselves).
func missingIn(cur, next string, me int, notExist error, untrusted func(at, why, fix string) error) error {
	st, err := os.Lstat(cur)
	if err != nil || st.Mode().Perm()&0o022 == 0 || privateGroup(cur, st, me, 0o020) {
		return notExist
	}
	return untrusted(next, "missing from "+cur+", a directory others can write (mode "+st.Mode().String()+"), where another local user could create it first",
		"name a path in a directory of your own, or create the file yourself before gpulab reads it")
}

// checkDir checks a directory on the way: owned by the user or root (its
// owner checked by the caller for all but /), writable by others only with
// the sticky bit.
func checkDir(dir string, me int, untrusted func(at, why, fix string) error) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if err := checkOwner(dir, st, me, untrusted); err != nil {
		return err
	}
	if st.Mode().Perm()&0o022 != 0 && st.Mode()&fs.ModeSticky == 0 && !privateGroup(dir, st, me, 0o020) {
		return untrusted(dir, "a directory writable by others without the sticky bit (mode "+st.Mode().String()+"): anything below it can be renamed away and replaced", "chmod go-w "+quote(dir))
	}
	return nil
}

func checkOwner(p string, st fs.FileInfo, me int, untrusted func(at, why, fix string) error) error {
	uid := ownerOf(st)
	if uid == 0 || uid == me {
		return nil
	}
	who := "uid " + strconv.Itoa(uid)
	if name := userName(uid); name != "" {
		who += " (" + name + ")"
	}
	mine := "you (uid " + strconv.Itoa(me) + ")"
	return untrusted(p, "owned by "+who+", not by "+mine+" or root", "check what it holds, then chown it to yourself or use a copy you own")
}

func ownerOf(st fs.FileInfo) int {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(s.Uid)
	}
	return -1
}

// privateGroup says whether a file that only its group (bits) can write
// (besides its owner) is safe anyway: the group is the owner's private one,
// with the owner its only member (Debian's OpenSSH allows exactly this).
// Writable by others (o+w) is never safe.
func privateGroup(p string, st fs.FileInfo, me int, bits fs.FileMode) bool {
	if st.Mode().Perm()&0o002 != 0 || st.Mode().Perm()&bits == 0 {
		return false
	}
	if hasACL(p) { // with an ACL the group bits are its mask: others may write
		return false
	}
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok || int(s.Uid) != me {
		return false
	}
	gid := strconv.Itoa(int(s.Gid))
	owner := userName(me)
	members := 0
	for _, f := range readColon("/etc/passwd") { // name:x:uid:gid:...
		if len(f) > 3 && f[3] == gid {
			members++
			if f[2] != strconv.Itoa(me) {
				return false
			}
		}
	}
	for _, f := range readColon("/etc/group") { // name:x:gid:members
		if len(f) > 3 && f[2] == gid && f[3] != "" {
			for _, m := range strings.Split(f[3], ",") {
				if m != owner {
					return false
				}
			}
			members++
		}
	}
	return members > 0
}

// hasACL says whether p carries a POSIX access ACL beyond its mode bits
// (which can let named users write whatever the bits say).
func hasACL(p string) bool {
	n, err := syscall.Getxattr(p, "system.posix_acl_access", nil)
	return err == nil && n > 0
}

// userName is uid's login name from /etc/passwd ("" when unknown).
func userName(uid int) string {
	for _, f := range readColon("/etc/passwd") {
		if len(f) > 2 && f[2] == strconv.Itoa(uid) {
			return f[0]
		}
	}
	return ""
}

func readColon(path string) [][]string {
	data, err := ReadRegular(path, MaxConfig)
	if err != nil {
		return nil
	}
	var out [][]string
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, strings.Split(line, ":"))
		}
	}
	return out
}

func splitPath(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

// quote is a path as a shell would need it in the fix it is shown in.
func quote(p string) string {
	if p != "" && strings.Trim(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+,:@") == "" {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}

// ReadTrusted is ReadRegular for a config: the path must pass
// CheckTrusted first (then no one but the user or root can swap it before
// it is read).
func ReadTrusted(path string, max int64) ([]byte, error) {
	if err := CheckTrusted(path); err != nil {
		return nil, err
	}
	return ReadRegular(path, max)
}

// IsUntrusted reports whether err is (or wraps) an *UntrustedError.
func IsUntrusted(err error) bool {
	var u *UntrustedError
	return errors.As(err, &u)
}

// OpenOwned opens a file gpulab writes (flag as for os.OpenFile, O_CREATE
// to create it with perm) without following a symbolic link at path, and
// checks that what it opened is a regular file that the user owns: a link
// planted where results.csv goes, a FIFO, another user's file is refused,
// and nothing is written through it. The null device is let through.
func OpenOwned(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, perm)
	if errors.Is(err, syscall.ELOOP) {
		return nil, &fs.PathError{Op: "open", Path: path, Err: errors.New("a symbolic link: gpulab writes no file through a link; refused, nothing written")}
	}
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if isNull(st) {
		return f, nil // GPULAB_KLOG=/dev/null
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: %s; refused, nothing written", ErrNotRegular, Kind(st.Mode()))}
	}
	if uid := ownerOf(st); uid != os.Geteuid() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("owned by uid %d, not by you (uid %d): refused, nothing written", uid, os.Geteuid())}
	}
	return f, nil
}

// MkdirTrusted makes dir and its missing parents (perm, as os.MkdirAll)
// where no other user can get in the way, and checks the result as
// CheckTrustedDir: nothing is made through a link or below a directory
// another user could change (a results directory that was another
// user's link had its subdirectory made where the link pointed before
// it was refused).
func MkdirTrusted(dir string, perm os.FileMode) error {
	err := CheckTrustedDir(dir)
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(dir, perm); err != nil {
		return err
	}
	return CheckTrustedDir(dir)
}
