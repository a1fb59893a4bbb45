// Package visible escapes control characters in text that gpulab prints
// but did not write itself: host names, run ids and lab ids from records,
// addresses from the inventory, messages that quote what a host sent. A
// terminal acts on control characters (ESC ] 0 ; … BEL retitles the
// window, ESC [ 31 m recolours the text, a carriage return hides what came
// before it); escaped, they show as what they are. So are the invisible
// characters that reorder or hide text (see Unsafe): U+202E makes a
// terminal show "gpu01\u202e10upg" as "gpu0101gpu".
//
// The escapes are Go's (\x1b, \a, \r, \u009b, \u202e) except for DEL,
// \u007f: text that is JSON may hold DEL, the C1 controls and the bidi
// characters raw (encoding/json leaves them so), and \u escapes keep such
// JSON valid and its meaning unchanged. Invalid UTF-8 bytes show as \xNN.
package visible

import (
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// Unsafe reports whether r is a character that gpulab escapes when it
// prints text and refuses in what it sends to a host (a push destination,
// a runbook parameter): a control character (C0, DEL, C1), a bidi
// embedding, override or isolate (U+202A–U+202E, U+2066–U+2069), a bidi
// mark (U+200E, U+200F, U+061C), a line or paragraph separator (U+2028,
// U+2029), or a byte order mark (U+FEFF). Each changes what a terminal or
// an editor shows without showing itself.
func Unsafe(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r < 0x61c:
		return false
	}
	switch r {
	case 0x61c, 0x200e, 0x200f, 0x2028, 0x2029, 0xfeff:
		return true
	}
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// String returns s with every control character escaped, line breaks and
// tabs included: for a name, which is one line.
func String(s string) string {
	b := []byte(s)
	if clean(b, false) {
		return s
	}
	return string(escape(nil, b, false))
}

// Text returns s with every control character escaped but line breaks
// and tabs: for messages and documents of several lines.
func Text(s string) string {
	b := []byte(s)
	if clean(b, true) {
		return s
	}
	return string(escape(nil, b, true))
}

// clean reports whether p has nothing to escape.
func clean(p []byte, lines bool) bool {
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(p[i:])
			if r == utf8.RuneError && size == 1 || Unsafe(r) {
				return false
			}
			i += size - 1
		case c < ' ' && !(lines && (c == '\n' || c == '\t')), c == 0x7f:
			return false
		}
	}
	return true
}

// escape appends p to out, escaped.
func escape(out, p []byte, lines bool) []byte {
	const hex = "0123456789abcdef"
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = append(out, '\\', 'x', hex[p[i]>>4], hex[p[i]&0xf])
		case lines && (r == '\n' || r == '\t'):
			out = append(out, byte(r))
		case r < ' ':
			if e := strings.IndexByte("\a\b\f\n\r\t\v", byte(r)); e >= 0 {
				out = append(out, '\\', "abfnrtv"[e])
			} else {
				out = append(out, '\\', 'x', hex[r>>4], hex[r&0xf])
			}
		case Unsafe(r): // DEL, C1, bidi and the others: \u, as in JSON
			out = append(out, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
		default:
			out = append(out, p[i:i+size]...)
		}
		i += size
	}
	return out
}

// Writer escapes what is written to it as Text does and writes the result
// to w. A character split across two writes (a buffered writer's chunks
// end anywhere) is held back until the next write completes it; Flush
// writes what is held, escaped, at the end. Writes from several
// goroutines (a progress line, an interrupt's notice) are serialised.
type Writer struct {
	w       io.Writer
	mu      sync.Mutex
	pending []byte // the start of a character, waiting for its end
	buf     []byte // escaped text, reused
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write implements io.Writer. It reports len(p) written when the escaped
// text was written whole.
func (v *Writer) Write(p []byte) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := len(p)
	for len(v.pending) > 0 && len(p) > 0 && !utf8.FullRune(v.pending) { // complete the held character
		v.pending, p = append(v.pending, p[0]), p[1:]
	}
	if utf8.FullRune(v.pending) {
		if err := v.flush(); err != nil {
			return 0, err
		}
	}
	for k := 1; k < utf8.UTFMax && k <= len(p); k++ { // hold back a character's start
		if utf8.RuneStart(p[len(p)-k]) {
			if !utf8.FullRune(p[len(p)-k:]) {
				v.pending = append(v.pending, p[len(p)-k:]...)
				p = p[:len(p)-k]
			}
			break
		}
	}
	if err := v.write(p); err != nil {
		return 0, err
	}
	return n, nil
}

// Flush writes a character's start held back by Write (escaped: nothing
// completed it).
func (v *Writer) Flush() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.flush()
}

func (v *Writer) flush() error {
	err := v.write(v.pending)
	v.pending = v.pending[:0]
	return err
}

func (v *Writer) write(p []byte) error {
	if len(p) == 0 {
		return nil
	}
	if !clean(p, true) {
		v.buf = escape(v.buf[:0], p, true)
		p = v.buf
	}
	_, err := v.w.Write(p)
	return err
}
