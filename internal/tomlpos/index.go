// Package tomlpos finds where keys and array elements sit in a TOML document,
// so that loaders can name file:line:column in every error, and decodes TOML
// strictly (unknown keys are errors) on top of github.com/BurntSushi/toml.
//
// BurntSushi/toml reports positions for syntax and type errors only; it keeps
// key positions private and drops array indices from the keys it reports as
// undecoded. The Index built here fills that gap. It is built only from input
// that the toml package has already parsed, so it does not validate; on any
// input it terminates without panicking.
package tomlpos

import (
	"strconv"
	"strings"
)

// Pos is a 1-based line and column (in bytes) in a file.
type Pos struct {
	Line, Col int
}

// Index maps key paths of one document to where they are defined. A path is
// a list of keys and array indices: ("project", 3, "axis", "isolation") names
// the isolation key of the fourth [[project]] table.
type Index struct {
	File  string
	pos   map[string]Pos
	order []string // paths in document order
}

// New indexes src, which should be TOML that has already been parsed
// successfully; file is used in errors only.
func New(file string, src []byte) *Index {
	ix := &Index{File: file, pos: map[string]Pos{}}
	s := &scanner{src: src, line: 1, col: 1, ix: ix, arrays: map[string]int{}}
	s.document()
	return ix
}

// Lookup returns the position of path, if it was seen.
func (ix *Index) Lookup(path ...any) (Pos, bool) {
	if ix == nil {
		return Pos{}, false
	}
	p, ok := ix.pos[joinPath(path)]
	return p, ok
}

// Nearest returns the position of path or, failing that, of its longest
// prefix that was seen; the zero Pos when none was.
func (ix *Index) Nearest(path ...any) Pos {
	for n := len(path); n > 0; n-- {
		if p, ok := ix.Lookup(path[:n]...); ok {
			return p
		}
	}
	return Pos{}
}

// Matches returns, in document order, the positions of every indexed path
// that equals key once its array indices are removed. It maps the index-free
// keys reported by toml.MetaData.Undecoded back to each place they occur.
func (ix *Index) Matches(key []string) []Pos {
	if ix == nil {
		return nil
	}
	want := strings.Join(key, sep)
	var out []Pos
	for _, k := range ix.order {
		if stripIndices(k) == want {
			out = append(out, ix.pos[k])
		}
	}
	return out
}

const sep = "\x1f"

func joinPath(path []any) string {
	parts := make([]string, len(path))
	for i, p := range path {
		switch v := p.(type) {
		case int:
			parts[i] = "#" + strconv.Itoa(v)
		case string:
			parts[i] = v
		default:
			parts[i] = "?"
		}
	}
	return strings.Join(parts, sep)
}

func stripIndices(k string) string {
	parts := strings.Split(k, sep)
	out := parts[:0]
	for _, p := range parts {
		if strings.HasPrefix(p, "#") {
			continue
		}
		out = append(out, p)
	}
	return strings.Join(out, sep)
}

func (ix *Index) record(path []string, p Pos) {
	k := strings.Join(path, sep)
	if _, ok := ix.pos[k]; ok {
		return
	}
	ix.pos[k] = p
	ix.order = append(ix.order, k)
}

// scanner walks the document once. Every loop advances the cursor or stops.
type scanner struct {
	src       []byte
	i         int
	line, col int
	ix        *Index
	table     []string       // current table path, indices included
	arrays    map[string]int // resolved array-of-tables path -> last index
}

func (s *scanner) eof() bool { return s.i >= len(s.src) }

func (s *scanner) peek(n int) byte {
	if s.i+n < len(s.src) {
		return s.src[s.i+n]
	}
	return 0
}

func (s *scanner) advance() {
	if s.eof() {
		return
	}
	if s.src[s.i] == '\n' {
		s.line++
		s.col = 1
	} else {
		s.col++
	}
	s.i++
}

func (s *scanner) here() Pos { return Pos{Line: s.line, Col: s.col} }

func (s *scanner) hasPrefix(p string) bool {
	return strings.HasPrefix(string(s.src[s.i:min(len(s.src), s.i+len(p))]), p)
}

// skipSpace skips blanks and comments, and newlines too when nl is set.
func (s *scanner) skipSpace(nl bool) {
	for !s.eof() {
		c := s.src[s.i]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			s.advance()
		case c == '\n' && nl:
			s.advance()
		case c == '#':
			for !s.eof() && s.src[s.i] != '\n' {
				s.advance()
			}
		default:
			return
		}
	}
}

func (s *scanner) skipLine() {
	for !s.eof() && s.src[s.i] != '\n' {
		s.advance()
	}
}

func (s *scanner) document() {
	for {
		s.skipSpace(true)
		if s.eof() {
			return
		}
		start := s.i
		if s.src[s.i] == '[' {
			s.header()
		} else {
			s.keyValue(s.table)
		}
		s.skipLine()
		if s.i == start { // cannot happen on valid input; never loop
			s.advance()
		}
	}
}

func (s *scanner) header() {
	at := s.here()
	array := s.peek(1) == '['
	s.advance()
	if array {
		s.advance()
	}
	keys := s.key()
	for !s.eof() && s.src[s.i] != '\n' && s.src[s.i] != ']' {
		s.advance()
	}
	var resolved []string
	for i, k := range keys {
		resolved = append(resolved, k)
		if i == len(keys)-1 {
			break
		}
		if n, ok := s.arrays[strings.Join(resolved, sep)]; ok {
			resolved = append(resolved, "#"+strconv.Itoa(n))
		}
	}
	if array {
		base := strings.Join(resolved, sep)
		n, ok := s.arrays[base]
		if ok {
			n++
		}
		s.arrays[base] = n
		s.ix.record(resolved, at)
		resolved = append(resolved, "#"+strconv.Itoa(n))
	}
	s.ix.record(resolved, at)
	s.table = resolved
}

// key reads a dotted key (bare or quoted parts) and stops after it.
func (s *scanner) key() []string {
	var parts []string
	for !s.eof() {
		s.skipSpace(false)
		if s.eof() {
			break
		}
		c := s.src[s.i]
		var part string
		switch c {
		case '"', '\'':
			part = s.quoted()
		default:
			start := s.i
			for !s.eof() && isBare(s.src[s.i]) {
				s.advance()
			}
			if s.i == start {
				return parts
			}
			part = string(s.src[start:s.i])
		}
		parts = append(parts, part)
		s.skipSpace(false)
		if s.eof() || s.src[s.i] != '.' {
			return parts
		}
		s.advance()
	}
	return parts
}

func isBare(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// quoted reads a single-line quoted string and returns its content with the
// common escapes resolved (enough to name keys).
func (s *scanner) quoted() string {
	q := s.src[s.i]
	s.advance()
	var b strings.Builder
	for !s.eof() && s.src[s.i] != q && s.src[s.i] != '\n' {
		if q == '"' && s.src[s.i] == '\\' {
			s.advance()
			if s.eof() {
				break
			}
		}
		b.WriteByte(s.src[s.i])
		s.advance()
	}
	s.advance()
	return b.String()
}

func (s *scanner) keyValue(table []string) {
	at := s.here()
	keys := s.key()
	if len(keys) == 0 {
		s.advance()
		return
	}
	path := append([]string(nil), table...)
	for _, k := range keys {
		path = append(path, k)
		s.ix.record(path, at)
	}
	s.skipSpace(false)
	if !s.eof() && s.src[s.i] == '=' {
		s.advance()
	}
	s.value(path)
}

func (s *scanner) value(path []string) {
	s.skipSpace(false)
	if s.eof() {
		return
	}
	switch {
	case s.hasPrefix(`"""`) || s.hasPrefix(`'''`):
		s.multiline()
	case s.src[s.i] == '"' || s.src[s.i] == '\'':
		s.quoted()
	case s.src[s.i] == '[':
		s.array(path)
	case s.src[s.i] == '{':
		s.inlineTable(path)
	default:
		for !s.eof() && !strings.ContainsRune(",]}\n#", rune(s.src[s.i])) {
			s.advance()
		}
	}
}

func (s *scanner) multiline() {
	q := s.src[s.i]
	delim := strings.Repeat(string(q), 3)
	for range 3 {
		s.advance()
	}
	for !s.eof() {
		if q == '"' && s.src[s.i] == '\\' {
			s.advance()
			s.advance()
			continue
		}
		if s.hasPrefix(delim) {
			for range 3 {
				s.advance()
			}
			for n := 0; n < 2 && !s.eof() && s.src[s.i] == q; n++ { // up to two quotes may precede the delimiter
				s.advance()
			}
			return
		}
		s.advance()
	}
}

func (s *scanner) array(path []string) {
	s.advance() // [
	for n := 0; ; n++ {
		s.skipSpace(true)
		if s.eof() {
			return
		}
		if s.src[s.i] == ']' {
			s.advance()
			return
		}
		elem := append(append([]string(nil), path...), "#"+strconv.Itoa(n))
		s.ix.record(elem, s.here())
		start := s.i
		s.value(elem)
		s.skipSpace(true)
		if !s.eof() && s.src[s.i] == ',' {
			s.advance()
		} else if s.i == start {
			s.advance()
		}
	}
}

func (s *scanner) inlineTable(path []string) {
	s.advance() // {
	for {
		s.skipSpace(true)
		if s.eof() {
			return
		}
		if s.src[s.i] == '}' {
			s.advance()
			return
		}
		start := s.i
		s.keyValue(path)
		s.skipSpace(true)
		if !s.eof() && s.src[s.i] == ',' {
			s.advance()
		} else if s.i == start {
			s.advance()
		}
	}
}
