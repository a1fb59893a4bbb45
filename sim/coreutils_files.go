package sim

import (
	"compress/gzip"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// realpath resolves every link in p inside the host's tree, as
// realpath(3) does, to an absolute simulated path.
func (v *vfs) realpath(dir, p string) (string, error) {
	todo := strings.Split(strings.TrimPrefix(abs(dir, p), "/"), "/")
	done := "/"
	for hops := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			done = path.Dir(done)
			continue
		}
		next := path.Join(done, c)
		fi, err := v.r().Lstat(rel("/", next))
		if err != nil {
			return "", cleanPathErr(p, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = next
			continue
		}
		if hops++; hops > 40 {
			return "", &fs.PathError{Op: "realpath", Path: p, Err: syscall.ELOOP}
		}
		target, err := v.r().Readlink(rel("/", next))
		if err != nil {
			return "", cleanPathErr(p, err)
		}
		if path.IsAbs(target) {
			done = "/"
		}
		todo = append(strings.Split(strings.TrimPrefix(target, "/"), "/"), todo...)
	}
	return done, nil
}

func toolLs(t *toolCall, args []string) int {
	o, err := parseOpts(args[1:], "", "", false)
	if err != nil {
		t.errf("ls: %v", err)
		return 2
	}
	names := o.args
	if len(names) == 0 {
		names = []string{"."}
	}
	code := 0
	for _, n := range names {
		fi, err := t.h.fs.statAt(t.dir, n, true)
		if err != nil {
			t.errf("ls: cannot access '%s': %s", n, errText(err))
			code = 2
			continue
		}
		if !fi.IsDir() || o.has("d") {
			t.lsEntry(o, n, fi)
			continue
		}
		f, err := t.h.fs.r().Open(rel(t.dir, n))
		if err != nil {
			t.errf("ls: cannot open directory '%s': %s", n, errText(err))
			code = 2
			continue
		}
		ents, _ := f.ReadDir(-1)
		f.Close()
		// Sorted by name, as GNU ls does in the C.UTF-8 locale (the
		// directory's own order is the file system's).
		slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
		if len(names) > 1 {
			t.outf("%s:\n", n)
		}
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") && !o.has("a", "A") {
				continue
			}
			if info, err := e.Info(); err == nil {
				t.lsEntry(o, e.Name(), info)
			}
		}
	}
	return code
}

func (t *toolCall) lsEntry(o opts, name string, fi fs.FileInfo) {
	if !o.has("l") {
		t.outf("%s\n", name)
		return
	}
	t.outf("%s 1 %s %s %8d %s %s\n", modeString(fi.Mode()), User, User, fi.Size(), fi.ModTime().UTC().Format("Jan _2 15:04"), name)
}

func parseMode(s string, old fs.FileMode) (fs.FileMode, error) {
	if m, err := strconv.ParseUint(s, 8, 32); err == nil {
		return fs.FileMode(m&0o777) | fs.FileMode(m&0o1000)*(fs.ModeSticky/0o1000), nil
	}
	mode := old.Perm()
	for _, clause := range strings.Split(s, ",") {
		i := strings.IndexAny(clause, "+-=")
		if i < 0 {
			return 0, fmt.Errorf("invalid mode: '%s'", s)
		}
		who, op, perms := clause[:i], clause[i], clause[i+1:]
		if who == "" || who == "a" {
			who = "ugo"
		}
		var bits fs.FileMode
		for _, p := range perms {
			for _, w := range who {
				shift := map[rune]uint{'u': 6, 'g': 3, 'o': 0}[w]
				switch p {
				case 'r':
					bits |= 4 << shift
				case 'w':
					bits |= 2 << shift
				case 'x':
					bits |= 1 << shift
				default:
					return 0, fmt.Errorf("invalid mode: '%s'", s)
				}
			}
		}
		switch op {
		case '+':
			mode |= bits
		case '-':
			mode &^= bits
		case '=':
			mode = bits
		}
	}
	return mode, nil
}

func toolMkdir(t *toolCall, args []string) int {
	o, err := parseOpts(args[1:], "m", "mode", false)
	if err != nil || len(o.args) == 0 {
		t.errf("mkdir: missing operand\nTry 'mkdir --help' for more information.")
		return 1
	}
	mode := fs.FileMode(0o755)
	if v, ok := o.get("m", "mode"); ok {
		if mode, err = parseMode(v, 0o777); err != nil {
			t.errf("mkdir: %v", err)
			return 1
		}
	}
	code := 0
	for _, n := range o.args {
		r := rel(t.dir, n)
		if err := t.h.fs.created(); err != nil {
			t.errf("mkdir: cannot create directory '%s': %s", n, errText(err))
			code = 1
			continue
		}
		if o.has("p", "parents") {
			err = t.h.fs.r().MkdirAll(r, 0o755)
		} else {
			err = t.h.fs.r().Mkdir(r, mode)
		}
		if err == nil {
			err = t.h.fs.r().Chmod(r, mode)
		}
		if err != nil {
			t.errf("mkdir: cannot create directory '%s': %s", n, errText(err))
			code = 1
		}
	}
	return code
}

func toolRm(t *toolCall, args []string) int {
	o, err := parseOpts(args[1:], "", "", false)
	if err != nil {
		t.errf("rm: %v", err)
		return 1
	}
	if len(o.args) == 0 && !o.has("f", "force") {
		t.errf("rm: missing operand\nTry 'rm --help' for more information.")
		return 1
	}
	code := 0
	for _, n := range o.args {
		r := rel(t.dir, n)
		if r == "." {
			t.errf("rm: it is dangerous to operate recursively on '/'\nrm: use --no-preserve-root to override this failsafe")
			code = 1
			continue
		}
		fi, err := t.h.fs.r().Lstat(r)
		switch {
		case err != nil && o.has("f", "force") && errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			t.errf("rm: cannot remove '%s': %s", n, errText(err))
			code = 1
			continue
		case fi.IsDir() && !o.has("r", "R", "recursive"):
			t.errf("rm: cannot remove '%s': Is a directory", n)
			code = 1
			continue
		}
		if fi.IsDir() {
			err = t.h.fs.r().RemoveAll(r)
		} else {
			err = t.h.fs.r().Remove(r)
		}
		if err != nil {
			t.errf("rm: cannot remove '%s': %s", n, errText(err))
			code = 1
		}
	}
	return code
}

func toolRmdir(t *toolCall, args []string) int {
	args = operands(args, "pv")
	code := 0
	for _, n := range args[1:] {
		if err := t.h.fs.r().Remove(rel(t.dir, n)); err != nil {
			t.errf("rmdir: failed to remove '%s': %s", n, errText(err))
			code = 1
		}
	}
	return code
}

// target is where mv and cp put src: into dst when dst is a directory
// (not with -T), else dst itself.
func (t *toolCall) target(src, dst string, noTarget bool) string {
	if !noTarget {
		if fi, err := t.h.fs.statAt(t.dir, dst, true); err == nil && fi.IsDir() {
			return path.Join(abs(t.dir, dst), path.Base(src))
		}
	}
	return abs(t.dir, dst)
}

func toolMv(t *toolCall, args []string) int {
	o, err := parseOpts(args[1:], "", "", false)
	if err != nil || len(o.args) != 2 {
		t.errf("mv: missing file operand\nTry 'mv --help' for more information.")
		return 1
	}
	src, dst := o.args[0], t.target(o.args[0], o.args[1], o.has("T", "no-target-directory"))
	if fi, err := t.h.fs.statAt("/", dst, false); err == nil && fi.IsDir() {
		t.errf("mv: cannot overwrite directory '%s' with non-directory", o.args[1])
		return 1
	}
	if err := t.h.fs.r().Rename(rel(t.dir, src), rel("/", dst)); err != nil {
		t.errf("mv: cannot move '%s' to '%s': %s", src, o.args[1], errText(err))
		return 1
	}
	return 0
}

func toolCp(t *toolCall, args []string) int {
	o, err := parseOpts(args[1:], "", "", false)
	if err != nil || len(o.args) != 2 {
		t.errf("cp: missing file operand\nTry 'cp --help' for more information.")
		return 1
	}
	src := o.args[0]
	r, err := t.openRead(src)
	if err != nil {
		t.errf("cp: cannot stat '%s': %s", src, errText(err))
		return 1
	}
	defer r.Close()
	dst := t.target(src, o.args[1], o.has("T"))
	w, err := t.openWrite(dst, os.O_TRUNC)
	if err != nil {
		t.errf("cp: cannot create regular file '%s': %s", o.args[1], errText(err))
		return 1
	}
	_, err = io.Copy(w, r)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if fi, serr := t.h.fs.statAt(t.dir, src, true); serr == nil {
		_ = t.h.fs.r().Chmod(rel("/", dst), fi.Mode().Perm())
	}
	if err != nil {
		t.errf("cp: error writing '%s': %s", o.args[1], errText(err))
		return 1
	}
	return 0
}

func toolChmod(t *toolCall, args []string) int {
	args = operands(args, "Rfvc")
	if len(args) < 3 {
		t.errf("chmod: missing operand\nTry 'chmod --help' for more information.")
		return 1
	}
	code := 0
	for _, n := range args[2:] {
		fi, err := t.h.fs.statAt(t.dir, n, true)
		if err != nil {
			t.errf("chmod: cannot access '%s': %s", n, errText(err))
			code = 1
			continue
		}
		mode, err := parseMode(args[1], fi.Mode())
		if err != nil {
			t.errf("chmod: %v", err)
			return 1
		}
		if err := t.h.fs.r().Chmod(rel(t.dir, n), mode); err != nil {
			t.errf("chmod: changing permissions of '%s': %s", n, errText(err))
			code = 1
		}
	}
	return code
}

func toolTouch(t *toolCall, args []string) int {
	args = operands(args, "acm")
	code := 0
	now := time.Now()
	for _, n := range args[1:] {
		w, err := t.openWrite(n, 0)
		if err == nil {
			err = w.Close()
		}
		if err == nil {
			err = t.h.fs.r().Chtimes(rel(t.dir, n), now, now)
		}
		if err != nil {
			t.errf("touch: cannot touch '%s': %s", n, errText(err))
			code = 1
		}
	}
	return code
}

func toolLn(t *toolCall, args []string) int {
	o, err := parseOpts(args[1:], "", "", false)
	if err != nil || len(o.args) != 2 {
		t.errf("ln: missing file operand\nTry 'ln --help' for more information.")
		return 1
	}
	dst := rel(t.dir, o.args[1])
	if err := t.h.fs.created(); err != nil {
		t.errf("ln: failed to create link '%s': %s", o.args[1], errText(err))
		return 1
	}
	if o.has("f", "force") {
		_ = t.h.fs.r().Remove(dst)
	}
	if o.has("s", "symbolic") {
		err = t.h.fs.r().Symlink(o.args[0], dst)
	} else {
		err = t.h.fs.r().Link(rel(t.dir, o.args[0]), dst)
	}
	if err != nil {
		t.errf("ln: failed to create link '%s': %s", o.args[1], errText(err))
		return 1
	}
	return 0
}

func toolReadlink(t *toolCall, args []string) int {
	o, err := parseOpts(args[1:], "", "", false)
	if err != nil || len(o.args) == 0 {
		t.errf("readlink: missing operand")
		return 1
	}
	if o.has("f", "e", "m", "canonicalize") {
		return toolRealpath(t, append([]string{"realpath"}, o.args...))
	}
	code := 0
	for _, n := range o.args {
		target, err := t.h.fs.r().Readlink(rel(t.dir, n))
		if err != nil {
			code = 1
			continue
		}
		t.outf("%s\n", target)
	}
	return code
}

func toolRealpath(t *toolCall, args []string) int {
	args = operands(args, "esmqLP")
	code := 0
	for _, n := range args[1:] {
		p, err := t.h.fs.realpath(t.dir, n)
		if err != nil {
			t.errf("%s: %s: %s", args[0], n, errText(err))
			code = 1
			continue
		}
		t.outf("%s\n", p)
	}
	return code
}

func toolStat(t *toolCall, args []string) int {
	o, err := parseOpts(args[1:], "c", "format", false)
	if err != nil || len(o.args) == 0 {
		t.errf("stat: missing operand\nTry 'stat --help' for more information.")
		return 1
	}
	format, hasFormat := o.get("c", "format")
	code := 0
	for _, n := range o.args {
		fi, err := t.h.fs.statAt(t.dir, n, o.has("L", "dereference"))
		if err != nil {
			t.errf("stat: cannot statx '%s': %s", n, errText(err))
			code = 1
			continue
		}
		if !hasFormat {
			t.outf("  File: %s\n  Size: %d\nAccess: (%04o/%s)\nModify: %s\n", n, fi.Size(), unixPerm(fi.Mode()), modeString(fi.Mode()), fi.ModTime().UTC().Format("2006-01-02 15:04:05.000000000 -0700"))
			continue
		}
		t.outf("%s\n", statFormat(format, n, fi))
	}
	return code
}

// modeString is a mode as ls -l prints it: drwxrwxrwt for /tmp, where
// Go's FileMode.String says dtrwxrwxrwx.
func modeString(m fs.FileMode) string {
	b := []byte("-rwxrwxrwx")
	switch {
	case m.IsDir():
		b[0] = 'd'
	case m&fs.ModeSymlink != 0:
		b[0] = 'l'
	case m&fs.ModeCharDevice != 0:
		b[0] = 'c'
	case m&fs.ModeNamedPipe != 0:
		b[0] = 'p'
	}
	for i := 0; i < 9; i++ {
		if m&(1<<uint(8-i)) == 0 {
			b[i+1] = '-'
		}
	}
	if m&fs.ModeSticky != 0 {
		if b[9] == 'x' {
			b[9] = 't'
		} else {
			b[9] = 'T'
		}
	}
	return string(b)
}

// unixPerm is the mode's permission bits with the sticky bit as stat
// prints them (1777 for /tmp).
func unixPerm(m fs.FileMode) uint32 {
	p := uint32(m.Perm())
	if m&fs.ModeSticky != 0 {
		p |= 0o1000
	}
	return p
}

func statFormat(format, name string, fi fs.FileInfo) string {
	kind := "regular file"
	switch {
	case fi.IsDir():
		kind = "directory"
	case fi.Mode()&fs.ModeSymlink != 0:
		kind = "symbolic link"
	case fi.Size() == 0 && fi.Mode().IsRegular():
		kind = "regular empty file"
	}
	return strings.NewReplacer("%a", strconv.FormatUint(uint64(unixPerm(fi.Mode())), 8), "%s", strconv.FormatInt(fi.Size(), 10),
		"%n", name, "%F", kind, "%U", User, "%G", User, "%Y", strconv.FormatInt(fi.ModTime().Unix(), 10),
		"%A", modeString(fi.Mode()), "%u", "1000", "%g", "1000", "%%", "%").Replace(format)
}

func toolSum(t *toolCall, args []string) int {
	o, err := parseOpts(args[1:], "", "", false)
	if err != nil {
		t.errf("%s: %v", args[0], err)
		return 1
	}
	newHash := map[string]func() hash.Hash{"sha256sum": sha256.New, "md5sum": md5.New, "sha1sum": sha1.New}[args[0]]
	return t.eachInput(args[0], o.args, func(name string, r io.Reader) error {
		h := newHash()
		if _, err := io.Copy(h, r); err != nil {
			return err
		}
		t.outf("%s  %s\n", hex.EncodeToString(h.Sum(nil)), name)
		return nil
	})
}

func toolMktemp(t *toolCall, args []string) int {
	o, err := parseOpts(args[1:], "p", "tmpdir", false)
	if err != nil {
		t.errf("mktemp: %v", err)
		return 1
	}
	tmpl := "tmp.XXXXXXXXXX"
	if len(o.args) > 0 {
		tmpl = o.args[0]
	}
	dir := "/tmp"
	if d, ok := o.get("p", "tmpdir"); ok {
		dir = d
	} else if strings.Contains(tmpl, "/") && !o.has("t") {
		dir = "."
	}
	x := len(tmpl) - len(strings.TrimRight(tmpl, "X"))
	if x < 3 {
		t.errf("mktemp: too few X's in template '%s'", tmpl)
		return 1
	}
	b := make([]byte, x)
	rand.Read(b)
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	for i := range b {
		b[i] = letters[int(b[i])%len(letters)]
	}
	p := path.Join(abs(t.dir, dir), tmpl[:len(tmpl)-x]+string(b))
	if err := t.h.fs.created(); err != nil {
		t.errf("mktemp: failed to create file via template '%s': %s", tmpl, errText(err))
		return 1
	}
	if o.has("d", "directory") {
		err = t.h.fs.r().Mkdir(rel("/", p), 0o700)
	} else {
		var f *os.File
		if f, err = t.h.fs.r().OpenFile(rel("/", p), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err == nil {
			f.Close()
		}
	}
	if err != nil {
		t.errf("mktemp: failed to create file via template '%s': %s", tmpl, errText(err))
		return 1
	}
	t.outf("%s\n", p)
	return 0
}

func toolBasename(t *toolCall, args []string) int {
	args = operands(args, "")
	if len(args) < 2 {
		t.errf("basename: missing operand\nTry 'basename --help' for more information.")
		return 1
	}
	b := path.Base(args[1])
	if len(args) > 2 {
		b = strings.TrimSuffix(b, args[2])
	}
	t.outf("%s\n", b)
	return 0
}

func toolDirname(t *toolCall, args []string) int {
	args = operands(args, "")
	if len(args) < 2 {
		t.errf("dirname: missing operand\nTry 'dirname --help' for more information.")
		return 1
	}
	for _, a := range args[1:] {
		t.outf("%s\n", path.Dir(a))
	}
	return 0
}

// toolGzip decompresses (gzip -d, gunzip, zcat) or compresses, between
// standard input and standard output, or file to file.
func toolGzip(t *toolCall, args []string) int {
	o, err := parseOpts(args[1:], "", "", false)
	if err != nil {
		t.errf("gzip: %v", err)
		return 1
	}
	decompress := o.has("d", "decompress") || args[0] != "gzip"
	toStdout := o.has("c", "stdout") || args[0] == "zcat" || len(o.args) == 0
	if !toStdout {
		t.errf("%s: writing files in place is not simulated: use -c", args[0])
		return 1
	}
	return t.eachInput(args[0], o.args, func(_ string, r io.Reader) error {
		if decompress {
			return gunzip(t.h.fleet, t.stdout, r)
		}
		zw := gzip.NewWriter(t.stdout)
		if _, err := io.Copy(zw, r); err != nil {
			return err
		}
		return zw.Close()
	})
}
