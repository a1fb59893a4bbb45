package dgx

import (
	"fmt"
	"io"
	"strings"
)

// term is a running tool's standard streams.
type term struct {
	out, err io.Writer
	in       io.Reader
}

func (t *term) print(s string)                { io.WriteString(t.out, s) }
func (t *term) printf(f string, a ...any)     { fmt.Fprintf(t.out, f, a...) }
func (t *term) eprint(s string)               { io.WriteString(t.err, s) }
func (t *term) eprintf(f string, a ...any)    { fmt.Fprintf(t.err, f, a...) }
func (t *term) lines(ls []string)             { t.print(strings.Join(ls, "\n") + "\n") }
func (t *term) fail(code int, msg string) int { t.eprint(msg); return code }

// flags is a simple view of a command line: which words it holds, and
// the value after an option ("-i 3", "-i=3", "--id=3").
type flags []string

// has reports whether any of names appears as a word.
func (f flags) has(names ...string) bool {
	for _, a := range f {
		for _, n := range names {
			if a == n {
				return true
			}
		}
	}
	return false
}

// value returns the value of the first of names given ("-i 3" or
// "--id=3"), and whether it was given at all.
func (f flags) value(names ...string) (string, bool) {
	for k, a := range f {
		for _, n := range names {
			if a == n && k+1 < len(f) {
				return f[k+1], true
			}
			if a == n {
				return "", true
			}
			if v, ok := strings.CutPrefix(a, n+"="); ok {
				return v, true
			}
		}
	}
	return "", false
}
