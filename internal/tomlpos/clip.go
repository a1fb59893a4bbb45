package tomlpos

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/gpulab/gpulab/internal/clip"
)

// MaxQuoted is how many bytes of a string from a file an error quotes: a
// key or a token may be megabytes long, and the error names its line and
// column anyway.
const MaxQuoted = clip.Quoted

// maxMessage is the longest message from another package's text (the
// toml package's, an UnmarshalTOML's): one that prints a value unquoted
// (a decoder's "found [1 1 1 …]") is cut there.
const maxMessage = 4 * MaxQuoted

// clipArgs clips the strings and errors among args for a message that
// quotes them (clip.Args).
func clipArgs(args []any) []any { return clip.Args(args, maxMessage) }

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
			return fmt.Sprintf("%q", clip.Value{S: s, Plain: maxMessage})
		}
		return clip.Cut(q, MaxQuoted)
	})
	return clip.Cut(msg, maxMessage)
}
