package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// toolCall is one simulated program running on a host.
type toolCall struct {
	ctx    context.Context
	h      *host
	dir    string
	env    []string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	root   bool  // under sudo
	werr   error // the first failed write to stdout: the tool stops, as on EPIPE or ENOSPC
}

type tool func(t *toolCall, args []string) int

// tools are the programs every simulated host has besides its GPU and
// cluster tools (the machine's). They work on the host's own tree only.
var tools map[string]tool

func init() {
	tools = map[string]tool{
		"cat": toolCat, "head": toolHead, "tail": toolTail, "wc": toolWc, "grep": toolGrep, "egrep": toolGrep, "fgrep": toolGrep,
		"sort": toolSort, "uniq": toolUniq, "cut": toolCut, "tr": toolTr, "seq": toolSeq, "tee": toolTee,
		"ls": toolLs, "mkdir": toolMkdir, "rm": toolRm, "rmdir": toolRmdir, "mv": toolMv, "cp": toolCp, "chmod": toolChmod,
		"touch": toolTouch, "ln": toolLn, "readlink": toolReadlink, "realpath": toolRealpath, "stat": toolStat,
		"sha256sum": toolSum, "md5sum": toolSum, "sha1sum": toolSum, "sync": toolTrue, "mktemp": toolMktemp,
		"basename": toolBasename, "dirname": toolDirname, "sleep": toolSleep, "timeout": toolTimeout,
		"env": toolEnv, "nohup": toolRunRest, "setsid": toolRunRest, "nice": toolNice, "stdbuf": toolStdbuf,
		"sudo": toolSudo, "kill": toolKill, "id": toolID, "whoami": toolWhoami, "uname": toolUname,
		"hostname": toolHostname, "getconf": toolGetconf, "ldd": toolLdd, "date": toolDate, "nproc": toolNproc,
		"uptime": toolUptime, "which": toolWhich, "sh": toolSh, "bash": toolSh, "dash": toolSh,
		"gzip": toolGzip, "gunzip": toolGzip, "zcat": toolGzip, "true": toolTrue, "false": toolFalse,
	}
}

// binDirs are where a simulated tool may be named by its full path.
var binDirs = []string{"/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin", "/usr/local/sbin"}

// errf prints a tool's message, a line, in one write, as a C program's
// message to an unbuffered stderr comes out whole among other processes'.
func (t *toolCall) errf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if !strings.HasSuffix(format, "\n") {
		msg += "\n"
	}
	_, _ = io.WriteString(t.stderr, msg)
}

func (t *toolCall) outf(format string, args ...any) {
	if t.werr != nil {
		return
	}
	if _, err := fmt.Fprintf(t.stdout, format, args...); err != nil {
		t.werr = err
	}
}

// run dispatches one command: a path to a file on the host (the probe), a
// tool every host has, a tool of the machine, or "not found".
func (t *toolCall) run(args []string) int {
	name := args[0]
	switch name {
	case "\x00command-v":
		return t.commandV(args[1:])
	case "\x00umask":
		// The interpreter has no umask; files here are created 0644 (0600
		// through SFTP when asked), so the mask is accepted and reported.
		if len(args) == 1 {
			t.outf("0022\n")
		} else if _, err := strconv.ParseUint(args[len(args)-1], 8, 32); err != nil {
			t.errf("sh: umask: %s: invalid octal number", args[len(args)-1])
			return 1
		}
		return 0
	case "\x00refused":
		// A command the shell refused (callHook said why): status 2, and
		// the script goes on, as after a builtin's usage error.
		t.errf("%s", strings.Join(args[1:], " "))
		return 2
	case "\x00pwd-P":
		p, err := t.h.fs.realpath(t.dir, ".")
		if err != nil {
			t.errf("pwd: %s", errText(err))
			return 1
		}
		t.outf("%s\n", p)
		return 0
	}
	if strings.Contains(name, "/") {
		if d, base := path.Split(path.Clean(abs(t.dir, name))); slices.Contains(binDirs, path.Clean(d)) && t.known(base) {
			if _, err := t.h.fs.statAt("/", name, true); err != nil {
				return t.run(append([]string{base}, args[1:]...))
			}
		}
		return t.execFile(args)
	}
	if f, ok := tools[name]; ok {
		code := f(t, args)
		switch {
		case errors.Is(t.werr, syscall.EPIPE) || errors.Is(t.werr, io.ErrClosedPipe):
			return 141 // the reader went away: SIGPIPE ends a real tool without a word
		case t.werr != nil:
			t.errf("%s: write error: %s", name, errText(t.werr))
			return 1
		}
		return code
	}
	if t.h.machine != nil {
		if code, ok := t.h.machine.run(t.ctx, t.stdin, t.stdout, t.stderr, args); ok {
			return code
		}
	}
	t.errf("sh: %s: not found", name)
	return 127
}

// known reports whether the host has a program of that name.
func (t *toolCall) known(name string) bool {
	if _, ok := tools[name]; ok {
		return true
	}
	return t.h.machine != nil && slices.Contains(t.h.machine.tools(), name)
}

func (t *toolCall) commandV(names []string) int {
	code := 0
	for _, n := range names {
		if strings.HasPrefix(n, "-") { // type -P, -t, -a: the answer is the same
			continue
		}
		switch {
		case isShellBuiltin(n):
			t.outf("%s\n", n)
		case strings.Contains(n, "/"):
			if fi, err := t.h.fs.statAt(t.dir, n, true); err == nil && !fi.IsDir() && fi.Mode().Perm()&0o111 != 0 {
				t.outf("%s\n", n)
			} else {
				code = 1
			}
		case t.known(n):
			t.outf("/usr/bin/%s\n", n)
		default:
			code = 1
		}
	}
	return code
}

func isShellBuiltin(n string) bool {
	switch n {
	case "cd", "echo", "printf", "test", "[", "read", "exit", "export", "set", "unset", "wait", "trap", "eval", "exec", "command", "type", "pwd", ":", "true", "false", "source", ".", "return", "shift", "local", "declare":
		return true
	}
	return false
}

// sub runs args as a command of its own with the same streams (sudo,
// env, timeout and their kind).
func (t *toolCall) sub(args []string) int {
	if len(args) == 0 {
		return 0
	}
	return t.run(args)
}

// errText is the C library's wording of a file error, as tools print it.
func errText(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "No such file or directory"
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EACCES):
		return "Permission denied"
	case errors.Is(err, syscall.EISDIR):
		return "Is a directory"
	case errors.Is(err, syscall.ENOTDIR):
		return "Not a directory"
	case errors.Is(err, syscall.ENOTEMPTY):
		return "Directory not empty"
	case errors.Is(err, fs.ErrExist):
		return "File exists"
	case errors.Is(err, syscall.ELOOP):
		return "Too many levels of symbolic links"
	case errors.Is(err, syscall.ENOSPC):
		return "No space left on device"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// openRead opens a file for a tool to read: "-" is standard input.
func (t *toolCall) openRead(name string) (io.ReadCloser, error) {
	switch abs(t.dir, name) {
	case "/dev/stdin":
		name = "-"
	case "/dev/null":
		return devNull{}, nil
	}
	if name == "-" {
		return io.NopCloser(t.stdin), nil
	}
	f, err := t.h.fs.r().Open(rel(t.dir, name))
	if err != nil {
		return nil, cleanPathErr(name, err)
	}
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		f.Close()
		return nil, &fs.PathError{Op: "read", Path: name, Err: syscall.EISDIR}
	}
	return f, nil
}

// openWrite opens a file for a tool to write.
func (t *toolCall) openWrite(name string, flag int) (io.WriteCloser, error) {
	switch abs(t.dir, name) {
	case "/dev/null":
		return devNull{}, nil
	case "/dev/stdout":
		return nopCloser{Writer: t.stdout}, nil
	case "/dev/stderr":
		return nopCloser{Writer: t.stderr}, nil
	}
	if err := t.h.fs.created(); err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	f, err := t.h.fs.r().OpenFile(rel(t.dir, name), os.O_WRONLY|os.O_CREATE|flag, 0o644)
	if err != nil {
		return nil, cleanPathErr(name, err)
	}
	return t.h.fs.writable(f, os.O_WRONLY), nil
}

// eachInput calls fn with every named input (standard input for none),
// reporting a file that cannot be read as the tool would; it returns 1 if
// any could not be read.
func (t *toolCall) eachInput(tool string, names []string, fn func(name string, r io.Reader) error) int {
	if len(names) == 0 {
		names = []string{"-"}
	}
	code := 0
	for _, n := range names {
		r, err := t.openRead(n)
		if err != nil {
			t.errf("%s: %s: %s", tool, n, errText(err))
			code = 1
			continue
		}
		err = fn(n, r)
		r.Close()
		if err != nil {
			if errors.Is(err, errStop) {
				break
			}
			t.errf("%s: %s: %s", tool, n, errText(err))
			code = 1
		}
	}
	return code
}

var errStop = errors.New("stop")
