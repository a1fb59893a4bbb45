package sim

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"

	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// sessionBounds is what one SSH session has used of its per-session
// bounds (limits.go): the context of its commands carries it, through
// bash -c and sh <<EOF too.
type sessionBounds struct {
	jobs atomic.Int64 // background jobs running (maxJobs)
}

type boundsKey struct{}

// withBounds gives ctx a session's bounds.
func withBounds(ctx context.Context) context.Context {
	return context.WithValue(ctx, boundsKey{}, &sessionBounds{})
}

// boundsOf is ctx's session's bounds; a command run outside a session
// gets bounds of its own.
func boundsOf(ctx context.Context) *sessionBounds {
	if b, ok := ctx.Value(boundsKey{}).(*sessionBounds); ok {
		return b
	}
	return &sessionBounds{}
}

// The hidden commands that count a background job in and out. A name
// starting with NUL cannot come from a script (the parser drops the
// byte); only boundJobs writes them.
const (
	jobStart = "\x00job-start"
	jobEnd   = "\x00job-end"
)

// boundJobs rewrites every background statement X & of prog as
//
//	{ jobStart; (X); jobEnd $?; } &
//
// so that the session counts its running jobs (jobStart refuses one past
// maxJobs, as fork fails) and a job's end is seen whatever X does (exit
// and return end the subshell only; a background job is a subshell
// already, so X means what it meant). jobEnd exits with X's status.
// A line that eval, source or trap read is parsed by the interpreter
// itself and is not rewritten: what runs there is bounded by the
// fleet's process (Spawn's limits).
func boundJobs(prog *syntax.File) {
	var bg []*syntax.Stmt
	syntax.Walk(prog, func(n syntax.Node) bool {
		if st, ok := n.(*syntax.Stmt); ok && (st.Background || st.Disown) && st.Cmd != nil {
			bg = append(bg, st)
		}
		return true
	})
	call := func(args ...syntax.WordPart) *syntax.Stmt {
		words := make([]*syntax.Word, len(args))
		for i, a := range args {
			words[i] = &syntax.Word{Parts: []syntax.WordPart{a}}
		}
		return &syntax.Stmt{Cmd: &syntax.CallExpr{Args: words}}
	}
	for _, st := range bg {
		st.Cmd = &syntax.Block{Stmts: []*syntax.Stmt{
			call(&syntax.Lit{Value: jobStart}),
			{Cmd: &syntax.Subshell{Stmts: []*syntax.Stmt{{Cmd: st.Cmd}}}},
			call(&syntax.Lit{Value: jobEnd}, &syntax.ParamExp{Short: true, Param: &syntax.Lit{Value: "?"}}),
		}}
	}
}

// refuseUnboundedJobs says why a simulated shell does not run script
// for eval or source (what): the interpreter parses and runs it itself,
// where boundJobs cannot count its background jobs (a fork bomb inside
// eval took the fleet's process down). A script with no background job,
// or one that does not parse (the interpreter then says why), runs.
func refuseUnboundedJobs(what, script string) error {
	prog, err := parser().Parse(strings.NewReader(script), "")
	if err != nil {
		return nil
	}
	var bg *syntax.Stmt
	syntax.Walk(prog, func(n syntax.Node) bool {
		if st, ok := n.(*syntax.Stmt); ok && (st.Background || st.Disown) && bg == nil {
			bg = st
		}
		return bg == nil
	})
	if bg != nil {
		return fmt.Errorf("bash: %s: line %d: a background job (&) inside %s is not simulated on this host: run it outside %s, where the host counts its jobs", what, bg.Pos().Line(), what, what)
	}
	return nil
}

// jobHook answers jobStart and jobEnd (see boundJobs); ok is false for
// any other command.
func jobHook(ctx context.Context, args []string) (out []string, ok bool, err error) {
	switch args[0] {
	case jobStart:
		b := boundsOf(ctx)
		if b.jobs.Add(1) > maxJobs {
			b.jobs.Add(-1)
			fmt.Fprintf(interp.HandlerCtx(ctx).Stderr, "bash: fork: retry: Resource temporarily unavailable (a simulated session runs %d background jobs at once at most)\n", maxJobs)
			return nil, true, interp.ExitStatus(254)
		}
		return []string{"true"}, true, nil
	case jobEnd:
		boundsOf(ctx).jobs.Add(-1)
		return append([]string{"exit"}, args[1:]...), true, nil
	}
	return nil, false, nil
}

// nestFrames is how many Go stack frames a command may run under before
// it is refused as bash refuses a function past FUNCNEST: a simulated
// command runs on a goroutine's stack, and f() { f; }; f would grow it to
// the runtime's limit, which ends the whole process. Every level of a
// shell function costs the interpreter framesPerNest frames or fewer.
func nestFrames() int { return maxFuncNest * framesPerNest }

const framesPerNest = 16

// checkNesting refuses a command that runs deeper than nestFrames.
func checkNesting(ctx context.Context) error {
	var pc [1]uintptr
	if runtime.Callers(nestFrames(), pc[:]) > 0 { // a frame past nestFrames: walks the stack, allocates nothing
		fmt.Fprintf(interp.HandlerCtx(ctx).Stderr, "bash: maximum function nesting level exceeded (%d)\n", maxFuncNest)
		return interp.ExitStatus(1)
	}
	return nil
}
