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
	"strings"
	"sync/atomic"
	"syscall"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/gpulab/gpulab/orchestrator"
)

// User is the login every simulated host accepts. It is not root: steps
// that need root go through `sudo -n`, as on a real fleet, and the
// simulated sudo lets it.
const User = "gpulab"

// shellPath is the simulated user's login shell ($SHELL).
const shellPath = "/bin/bash"

// call is one command line running on a simulated host: its streams, its
// environment and its cancellation (a session's signal, or the wrapper
// seeing its standard input close).
type call struct {
	h      *host
	env    []string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// noclobber is set -C: a redirection > does not overwrite an existing
	// file (the interpreter has no such option: see noclobberArgs).
	noclobber atomic.Bool
}

// errKilled is how a command stopped by a signal ends: the session then
// reports exit-signal TERM, as sshd does for a shell killed so.
var errKilled = errors.New("killed by SIGTERM")

// baseEnv is the environment sshd gives a login on the host.
func (h *host) baseEnv() []string {
	return []string{
		"HOME=" + Home, "USER=" + User, "LOGNAME=" + User, "SHELL=" + shellPath,
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"LANG=C.UTF-8", "HOSTNAME=" + h.name, "UID=1000", "EUID=1000", "GID=1000",
	}
}

// runLine runs one command line as `$SHELL -c LINE` would, and returns
// its exit status (errKilled when a signal stopped it).
func (c *call) runLine(ctx context.Context, line string, params ...string) (int, error) {
	prog, err := parser().Parse(strings.NewReader(line), "")
	if err != nil {
		fmt.Fprintf(c.stderr, "%s: -c: %s\n", path.Base(shellPath), shellSyntaxError(err))
		return 2, nil
	}
	if err := refuseProcSubst(prog); err != nil {
		fmt.Fprintf(c.stderr, "%s: -c: %v\n", path.Base(shellPath), err)
		return 2, nil
	}
	boundJobs(prog)
	r, done, err := c.runner(params)
	if err != nil {
		return 1, err
	}
	defer done()
	err = r.Run(ctx, prog)
	if err != nil && ctx.Err() != nil {
		return 143, errKilled
	}
	if st, ok := interp.IsExitStatus(err); ok {
		return int(st), nil
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "%s: %v\n", path.Base(shellPath), err)
		return 1, nil
	}
	return 0, nil
}

func shellSyntaxError(err error) string {
	var pe syntax.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf("line %d: syntax error: %s", pe.Pos.Line(), pe.Text)
	}
	return err.Error()
}

// runner is an interpreter whose every file, directory and command goes
// through the host: nothing reaches the operator's machine but the
// simulator probe (see exec). done releases its standard input: call it
// when the runner has finished.
func (c *call) runner(params []string) (r *interp.Runner, done func(), err error) {
	h := c.h
	stdin, done, err := stdinFile(c.stdin)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			done()
		}
	}()
	env := &hostEnviron{Environ: expand.ListEnviron(c.env...), starting: true}
	opts := []interp.RunnerOption{
		interp.StdIO(stdin, c.stdout, c.stderr),
		interp.Env(env),
		interp.ExecHandlers(func(interp.ExecHandlerFunc) interp.ExecHandlerFunc { return c.exec }),
		interp.CallHandler(c.callHook),
		interp.OpenHandler(c.open),
		interp.StatHandler(h.fs.stat),
		interp.ReadDirHandler2(h.fs.readDir),
		interp.AccessHandler(h.fs.access),
		func(r *interp.Runner) error { r.Dir = c.dir(); return nil },
	}
	if len(params) > 0 {
		opts = append(opts, interp.Params(append([]string{"--"}, params...)...))
	}
	r, err = interp.New(opts...)
	if err != nil {
		return nil, nil, err
	}
	r.Reset() // reads TMPDIR, once: noPipeDir (see hostEnviron)
	env.starting = false
	return r, done, nil
}

// stdinFile is in as the file the interpreter reads its standard input
// from, and what closes it. The interpreter takes any other reader
// through a pipe and a goroutine copying into it of its own, and never
// closes that pipe: the goroutine, stuck on a full pipe when the command
// did not read what the client sent, and the pipe's two descriptors
// stayed until a garbage collection. This pipe is closed when done is
// called; the copy then ends, at once or when in ends (the session's
// channel, closed with the session).
func stdinFile(in io.Reader) (*os.File, func(), error) {
	if f, ok := in.(*os.File); ok {
		return f, func() {}, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	go func() {
		_, _ = io.Copy(pw, in)
		pw.Close()
	}()
	return pr, func() { pr.Close() }, nil
}

// noPipeDir is where the interpreter would make the named pipes of
// process substitution, <(...) and >(...): a directory no file can be made
// in. The interpreter makes them with mkfifo on the operator's file
// system, in $TMPDIR (which a command may set), and opens any
// $TMPDIR/sh-interp-* that a redirect names itself, bypassing the host's
// tree; with noPipeDir both fail, harmlessly. The shell refuses process
// substitution before it runs a line (refuseProcSubst); this guards a
// line that reaches the interpreter otherwise (eval, source).
const noPipeDir = "/dev/null"

// hostEnviron is the environment a simulated shell starts from, with two
// answers of the host's own rather than of the operator's machine: $TMPDIR
// while the interpreter starts (noPipeDir; the shell's own $TMPDIR after
// that), and the home directory ~USER expands to: the simulated user's
// and root's, and for any other name none (the tilde stays, as bash
// leaves ~nosuchuser), where the interpreter would look the name up in
// the operator's user database.
type hostEnviron struct {
	expand.Environ
	starting bool
}

// Get implements expand.Environ.
func (e *hostEnviron) Get(name string) expand.Variable {
	if name == "TMPDIR" && e.starting {
		return expand.Variable{Set: true, Kind: expand.String, Str: noPipeDir}
	}
	if u, ok := strings.CutPrefix(name, "HOME "); ok { // how the interpreter asks for ~u
		home := "~" + u
		switch u {
		case User:
			home = Home
		case "root":
			home = "/root"
		}
		return expand.Variable{Set: true, Kind: expand.String, Str: home}
	}
	return e.Environ.Get(name)
}

// refuseProcSubst says why a simulated host does not run prog: process
// substitution needs named pipes, which the simulation does not make (see
// noPipeDir).
func refuseProcSubst(prog *syntax.File) error {
	var err error
	syntax.Walk(prog, func(n syntax.Node) bool {
		if ps, ok := n.(*syntax.ProcSubst); ok && err == nil {
			err = fmt.Errorf("line %d: process substitution %s...) is not available on a simulated host (it makes no named pipes): use a pipe or a temporary file", ps.Pos().Line(), ps.Op)
		}
		return err == nil
	})
	return err
}

// dir is where a new shell starts: $PWD when a parent shell set it and it
// is a directory on the host, else the home.
func (c *call) dir() string {
	for _, kv := range c.env {
		if d, ok := strings.CutPrefix(kv, "PWD="); ok && path.IsAbs(d) {
			if fi, err := c.h.fs.statAt("/", d, true); err == nil && fi.IsDir() {
				return path.Clean(d)
			}
		}
	}
	return Home
}

// runWrapped runs command as gpulab's wrapper does on a real host: the
// command reads /dev/null, and when watch (the session's standard input)
// ends while it still runs, it is stopped, as the wrapper's watcher sends
// SIGTERM to the process group.
func (c *call) runWrapped(ctx context.Context, command string, watch io.Reader) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, watch)
		cancel()
	}()
	inner := &call{h: c.h, env: c.env, stdin: devNull{}, stdout: c.stdout, stderr: c.stderr}
	return inner.runLine(ctx, command)
}

// exec runs a command that is neither a builtin nor a function.
func (c *call) exec(ctx context.Context, args []string) (err error) {
	hc := interp.HandlerCtx(ctx)
	// The interpreter runs pipeline stages and background jobs in
	// goroutines of its own: a bug in a tool must end that tool, not the
	// process the fleet (or the workbench) runs in.
	defer func() {
		if v := recover(); v != nil {
			fmt.Fprintf(hc.Stderr, "gpulab sim: internal error in %s: %v\n", args[0], v)
			err = interp.ExitStatus(70)
		}
	}()
	stdout := hc.Stdout
	if b, ok := stdout.(*strings.Builder); ok { // a command substitution's: held in memory
		stdout = substWriter{b}
	}
	t := &toolCall{ctx: ctx, h: c.h, dir: hc.Dir, env: environ(hc.Env), stdin: hc.Stdin, stdout: stdout, stderr: hc.Stderr}
	code := t.run(args)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if code != 0 {
		return interp.ExitStatus(uint8(code))
	}
	return nil
}

// substWriter is a command substitution's output as the host's tools
// write it: it holds maxInput at most (x=$(seq 1 1e12) ends there, with
// "write error: Cannot allocate memory", as a shell out of memory would).
type substWriter struct{ b *strings.Builder }

func (w substWriter) Write(p []byte) (int, error) {
	if int64(w.b.Len())+int64(len(p)) > maxInput {
		return 0, syscall.ENOMEM
	}
	return w.b.Write(p)
}

// callHook rewrites the builtins whose real implementation would look at
// the operator's file system (command -v and type search the real PATH,
// pwd -P resolves real links) or that the interpreter lacks (cd -P, cd --).
func (c *call) callHook(ctx context.Context, args []string) ([]string, error) {
	if err := checkNesting(ctx); err != nil {
		return nil, err
	}
	if out, ok, err := jobHook(ctx, args); ok {
		return out, err
	}
	switch args[0] {
	case "[", "test":
		return resolvedLinkTest(args), nil
	case "builtin":
		// builtin NAME runs the interpreter's own NAME: the same rewrite.
		if len(args) > 1 {
			rest, err := c.callHook(ctx, args[1:])
			if err != nil || strings.HasPrefix(rest[0], "\x00") {
				return rest, err
			}
			return append([]string{"builtin"}, rest...), nil
		}
	case "command":
		if len(args) > 1 && (strings.HasPrefix(args[1], "-v") || strings.HasPrefix(args[1], "-V")) {
			return append([]string{"\x00command-v"}, args[2:]...), nil
		}
		if len(args) > 1 && !strings.HasPrefix(args[1], "-") {
			rest, err := c.callHook(ctx, args[1:])
			if err != nil || strings.HasPrefix(rest[0], "\x00") {
				return rest, err
			}
			return append([]string{"command"}, rest...), nil
		}
	case "source", ".":
		if len(args) > 1 {
			return c.sourceArgs(ctx, args), nil
		}
	case "trap":
		// A trap's action is parsed by the interpreter when it fires: no
		// background job in it either (see eval).
		if len(args) > 2 && !strings.HasPrefix(args[1], "-") {
			if err := refuseUnboundedJobs("trap", args[1]); err != nil {
				return []string{"\x00refused", err.Error()}, nil
			}
		}
	case "eval":
		if err := refuseUnboundedJobs("eval", strings.Join(args[1:], " ")); err != nil {
			return []string{"\x00refused", err.Error()}, nil
		}
	case "type", "hash":
		return append([]string{"\x00command-v"}, args[1:]...), nil
	case "umask":
		return append([]string{"\x00umask"}, args[1:]...), nil
	case "pwd":
		// pwd -P, and pwd after cd -P's links, resolve in the host's tree.
		if slices.Contains(args[1:], "-P") {
			return []string{"\x00pwd-P"}, nil
		}
	case "set":
		return c.noclobberArgs(args), nil
	case "cd":
		return c.cdArgs(ctx, args), nil
	}
	return args, nil
}

// sourceArgs is source (or .) FILE as the interpreter should run it. The
// interpreter looks a sourced name up in PATH on the real filesystem
// (PATH=/etc source shadow told whether the operator's /etc/shadow
// exists): the host's tree answers, and the interpreter gets an absolute
// path, which it opens through the tree whatever the real filesystem
// holds. A file that starts background jobs without bound, or that cannot
// be checked, is refused.
func (c *call) sourceArgs(ctx context.Context, args []string) []string {
	hc := interp.HandlerCtx(ctx)
	out := slices.Clone(args)
	out[1] = c.h.fs.sourcePath(hc.Dir, hc.Env.Get("PATH").String(), args[1])
	b, err := c.h.fs.readBounded(hc.Dir, out[1], maxScript)
	if err == nil {
		err = refuseUnboundedJobs(args[0], string(b))
	} else if !errors.Is(err, fs.ErrNotExist) {
		// A file that cannot be checked is not run.
		err = fmt.Errorf("bash: %s: %s: %v", args[0], args[1], err)
	} else {
		err = nil // the interpreter says it is not there
	}
	if err != nil {
		return []string{"\x00refused", err.Error()}
	}
	return out
}

// cdArgs is cd as the interpreter should run it: cd -P resolves the
// directory's links in the host's tree first.
func (c *call) cdArgs(ctx context.Context, args []string) []string {
	var rest []string
	physical := false
	for i, a := range args[1:] {
		if a == "--" {
			rest = append(rest, args[i+2:]...)
			break
		}
		if a == "-P" || a == "-L" {
			physical = a == "-P"
			continue
		}
		rest = append(rest, args[i+1:]...)
		break
	}
	if physical && len(rest) == 1 {
		hc := interp.HandlerCtx(ctx)
		if p, err := c.h.fs.realpath(hc.Dir, rest[0]); err == nil {
			rest[0] = p
		}
	}
	return append([]string{"cd"}, rest...)
}

// noclobberArgs takes set's -C and +C (also in a group, -eC, and as -o
// noclobber) for the shell itself, which the interpreter would refuse
// ("set: invalid option"), and passes the rest on. gpulab's push creates
// its temporary file under set -C.
func (c *call) noclobberArgs(args []string) []string {
	out := []string{args[0]}
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i:]...)
		case (a == "-o" || a == "+o") && i+1 < len(args) && args[i+1] == "noclobber":
			c.noclobber.Store(a == "-o")
			i++
			continue
		case len(a) > 1 && (a[0] == '-' || a[0] == '+') && strings.Contains(a[1:], "C") && !strings.ContainsAny(a[1:], "-o"):
			c.noclobber.Store(a[0] == '-')
			if a = strings.ReplaceAll(a, "C", ""); len(a) == 1 {
				continue
			}
		}
		out = append(out, a)
	}
	if len(out) == 1 && len(args) > 1 { // only -C: a bare set would print every variable
		return []string{":"}
	}
	return out
}

// open is the host's open, with set -C: a redirection that would truncate
// an existing file fails instead, as sh's does.
func (c *call) open(ctx context.Context, name string, flag int, perm fs.FileMode) (io.ReadWriteCloser, error) {
	if c.noclobber.Load() && flag&os.O_CREATE != 0 && flag&os.O_TRUNC != 0 {
		f, err := c.h.fs.open(ctx, name, flag|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("cannot overwrite existing file")}
		}
		return f, err
	}
	return c.h.fs.open(ctx, name, flag, perm)
}

// environ lists the exported variables of a shell's environment.
func environ(env expand.Environ) []string {
	var out []string
	env.Each(func(name string, vr expand.Variable) bool {
		if vr.Exported && vr.IsSet() {
			out = append(out, name+"="+vr.String())
		}
		return true
	})
	return out
}

// unwrap recognises gpulab's command wrapper (orchestrator.Wrap), which
// every non-raw command comes in, and returns the command inside it.
func unwrap(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, wrapPrefix)
	if !ok {
		return "", false
	}
	prog, err := syntax.NewParser().Parse(strings.NewReader(": "+rest), "")
	if err != nil || len(prog.Stmts) != 1 {
		return "", false
	}
	ce, isCall := prog.Stmts[0].Cmd.(*syntax.CallExpr)
	if !isCall || len(ce.Args) != 2 {
		return "", false
	}
	// A fresh Config each time: a nil one shares a global (a data race).
	// Fields, not Literal: it removes the backslash of '\''.
	fs, err := expand.Fields(&expand.Config{}, ce.Args[1])
	if err != nil || len(fs) != 1 || orchestrator.Quote(fs[0]) != rest {
		return "", false
	}
	return fs[0], true
}

// isWrapper reports whether sh's arguments are the wrapper's own
// (sh -c SCRIPT gpulab COMMAND), for a wrapped line that reached the
// shell rather than the session's fast path.
func isWrapper(args []string) (string, bool) {
	if len(args) != 5 || args[1] != "-c" || args[3] != "gpulab" {
		return "", false
	}
	if orchestrator.Wrap(args[4]) != "exec sh -c "+orchestrator.Quote(args[2])+" gpulab "+orchestrator.Quote(args[4]) {
		return "", false
	}
	return args[4], true
}

var wrapPrefix = strings.TrimSuffix(orchestrator.Wrap("x"), orchestrator.Quote("x"))

func parser() *syntax.Parser { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }

// exitStatus reads a finished run's status.
func exitStatus(err error) (int, bool) {
	if err == nil {
		return 0, true
	}
	if st, ok := interp.IsExitStatus(err); ok {
		return int(st), true
	}
	return 1, false
}

// resolvedLinkTest gives [ -L NAME/ ] (or -h, after an optional !) the
// kernel's answer: a name ending in a slash is resolved, its links
// followed, so it is never a link. The interpreter cleans the name
// before it looks, and would answer for NAME itself; the operand becomes
// /, which is no link either.
func resolvedLinkTest(args []string) []string {
	end := len(args)
	if args[0] == "[" {
		if args[end-1] != "]" {
			return args
		}
		end--
	}
	i := 1
	if i < end && args[i] == "!" {
		i++
	}
	if end-i != 2 || args[i] != "-L" && args[i] != "-h" || !strings.HasSuffix(args[i+1], "/") {
		return args
	}
	out := slices.Clone(args)
	out[i+1] = "/"
	return out
}
