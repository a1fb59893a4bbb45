package tomlpos

import (
	"fmt"
	"regexp"
	"strconv"
	"unicode/utf8"
)

// MaxQuoted is how many bytes of a string from a file an error quotes: a
// key or a token may be megabytes long, and the error names its line and
// column anyway.
const MaxQuoted = 200

// maxMessage is the longest message from another package's text (the
// toml package's, an UnmarshalTOML's): one that prints a value unquoted
// (a decoder's "found [1 1 1 …]") is cut there.
const maxMessage = 4 * MaxQuoted

// clipped is a long string that formats with %q as its first MaxQuoted
// bytes quoted, an ellipsis, and its length in bytes; with %s or %v (a
// sentence a caller made, such as a chain of names) the same at
// maxMessage bytes.
type clipped string

// Format implements fmt.Formatter.
func (c clipped) Format(f fmt.State, verb rune) {
	s := string(c)
	if verb == 'q' {
		if len(s) <= MaxQuoted {
			fmt.Fprintf(f, "%q", s)
			return
		}
		fmt.Fprintf(f, "%q… (%d bytes)", s[:cutAt(s, MaxQuoted)], len(s))
		return
	}
	f.Write([]byte(cut(s, maxMessage)))
}

// cutAt is where to cut s to at most n bytes, not inside a character.
func cutAt(s string, n int) int {
	if len(s) <= n {
		return len(s)
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

// cut returns s, or when it is longer than n bytes its first n bytes, an
// ellipsis, and its length.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:cutAt(s, n)], len(s))
}

// clipArgs clips the strings and errors among args longer than MaxQuoted
// (see clipped), for a message that quotes them.
func clipArgs(args []any) []any {
	for i, a := range args {
		switch v := a.(type) {
		case string:
			if len(v) > MaxQuoted {
				args[i] = clipped(v)
			}
		case error:
			if s := v.Error(); len(s) > MaxQuoted {
				args[i] = clipped(s)
			}
		}
	}
	return args
}

// quotedRE matches a Go-quoted string, as the toml package's messages
// quote the file's tokens and keys.
var quotedRE = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// clipMessage shortens a message that another package wrote about a file:
// each quoted string longer than MaxQuoted is clipped, and the message as
// a whole is cut at maxMessage.
func clipMessage(msg string) string {
	if len(msg) <= MaxQuoted {
		return msg
	}
	msg = quotedRE.ReplaceAllStringFunc(msg, func(q string) string {
		if len(q) <= MaxQuoted+2 {
			return q
		}
		if s, err := strconv.Unquote(q); err == nil {
			return fmt.Sprintf("%q", clipped(s))
		}
		return cut(q, MaxQuoted)
	})
	return cut(msg, maxMessage)
}
