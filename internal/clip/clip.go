// Package clip shortens the strings from input that an error message
// quotes: a line, a token or a key may be megabytes long, and the message
// names where it is anyway. Parsers and the TOML loaders share it.
package clip

import (
	"fmt"
	"unicode/utf8"
)

// Quoted is how many bytes of a string from input a message quotes.
const Quoted = 200

// Value is a long string that formats with %q as its first Quoted bytes
// quoted, an ellipsis and its length in bytes; with %s or %v the same at
// Plain bytes (a sentence a caller built, such as a chain of names, may run
// longer than a quoted token).
type Value struct {
	S     string
	Plain int
}

// Format implements fmt.Formatter.
func (v Value) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		if len(v.S) <= Quoted {
			fmt.Fprintf(f, "%q", v.S)
			return
		}
		fmt.Fprintf(f, "%q… (%d bytes)", v.S[:CutAt(v.S, Quoted)], len(v.S))
		return
	}
	f.Write([]byte(Cut(v.S, v.Plain)))
}

// Args wraps the strings and errors among args longer than Quoted in a
// Value (plain: how long an unquoted one may run), for a message that
// quotes them.
func Args(args []any, plain int) []any {
	for i, a := range args {
		switch v := a.(type) {
		case string:
			if len(v) > Quoted {
				args[i] = Value{v, plain}
			}
		case error:
			if s := v.Error(); len(s) > Quoted {
				args[i] = Value{s, plain}
			}
		}
	}
	return args
}

// CutAt is where to cut s to at most n bytes, not inside a character.
func CutAt(s string, n int) int {
	if len(s) <= n {
		return len(s)
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

// Cut returns s, or when it is longer than n bytes its first n bytes, an
// ellipsis, and its length.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:CutAt(s, n)], len(s))
}
