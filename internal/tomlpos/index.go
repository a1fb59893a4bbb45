// Package tomlpos finds where keys and array elements sit in a TOML document,
// so that loaders can name file:line:column in every error, and decodes TOML
// strictly (unknown keys are errors) on top of github.com/BurntSushi/toml.
//
// BurntSushi/toml reports positions for syntax and type errors only; it keeps
// key positions private and drops array indices from the keys it reports as
// undecoded. The Index built here fills that gap. It does not validate: Decode
// builds it before the toml package parses the input, to refuse input nested
// too deeply (see MaxDepth), and keeps it only when the input parses. On any
// input it terminates without panicking, in time linear in the input.
package tomlpos

import "strings"

// Pos is a 1-based line and column (in bytes) in a file.
type Pos struct {
	Line, Col int
}

// Index maps key paths of one document to where they are defined. A path is
// a list of keys and array indices: ("project", 3, "axis", "isolation") names
// the isolation key of the fourth [[project]] table.
//
// Building it and looking a path up cost time linear in the input and in the
// path: the index is a tree of the document's keys and elements, and a
// second tree of the same keys with array indices left out answers Matches.
type Index struct {
	File   string
	root   *node
	shapes *shape
}

// node is one key or array element of the document.
type node struct {
	pos    Pos
	known  bool             // pos was recorded (headers name their parents without defining them)
	depth  int              // the length of its path
	keys   map[string]*node // child keys
	elems  []*node          // array elements, by index
	tables bool             // elems are [[tables]]
	shape  *shape           // the index-free path of this node
}

// shape is one index-free key path, with the places that define it.
type shape struct {
	keys   map[string]*shape
	places []Pos
}

// New indexes src, which should be TOML that parses; file is used in
// errors only. Past MaxDepth levels of nesting it stops: the index holds the
// document up to the first place nested too deeply.
func New(file string, src []byte) *Index {
	ix, _ := build(file, src)
	return ix
}

// build indexes src and, when it nests deeper than MaxDepth, stops there
// with an error that wraps ErrLimit.
func build(file string, src []byte) (*Index, *Error) {
	root := &shape{}
	ix := &Index{File: file, root: &node{shape: root}, shapes: root}
	s := &scanner{file: file, src: src, line: 1, col: 1, root: ix.root, table: ix.root}
	s.document()
	return ix, s.err
}

// Lookup returns the position of path, if it was seen.
func (ix *Index) Lookup(path ...any) (Pos, bool) {
	if ix == nil {
		return Pos{}, false
	}
	n := ix.root
	for _, p := range path {
		switch v := p.(type) {
		case string:
			n = n.keys[v]
		case int:
			if v < 0 || v >= len(n.elems) {
				return Pos{}, false
			}
			n = n.elems[v]
		default:
			return Pos{}, false
		}
		if n == nil {
			return Pos{}, false
		}
	}
	if !n.known {
		return Pos{}, false
	}
	return n.pos, true
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

// Matches returns, in document order, the places that define key, a path
// without array indices: each place the key is written, and each [[table]]
// header that adds an element to it. It maps the index-free keys reported
// by toml.MetaData.Undecoded back to each place they occur.
func (ix *Index) Matches(key []string) []Pos {
	if ix == nil {
		return nil
	}
	sh := ix.shapes
	for _, k := range key {
		if sh = sh.keys[k]; sh == nil {
			return nil
		}
	}
	return sh.places
}

// key returns n's child k, creating it (without a position) when new.
func (n *node) key(k string) *node {
	c := n.keys[k]
	if c == nil {
		if n.keys == nil {
			n.keys = map[string]*node{}
		}
		sh := n.shape.keys[k]
		if sh == nil {
			if n.shape.keys == nil {
				n.shape.keys = map[string]*shape{}
			}
			sh = &shape{}
			n.shape.keys[k] = sh
		}
		c = &node{depth: n.depth + 1, shape: sh}
		n.keys[k] = c
	}
	return c
}

// elem appends an element to n's array and returns it.
func (n *node) elem() *node {
	c := &node{depth: n.depth + 1, shape: n.shape}
	n.elems = append(n.elems, c)
	return c
}

// record sets where n is defined, unless it was recorded before; a place
// is listed for Matches when it defines a key or a [[table]] element.
func (n *node) record(p Pos, place bool) {
	if n.known {
		return
	}
	n.pos, n.known = p, true
	if pl := n.shape.places; place && (len(pl) == 0 || pl[len(pl)-1] != p) {
		n.shape.places = append(pl, p)
	}
}

// scanner walks the document once. Every loop advances the cursor or stops,
// and all stop once err is set.
type scanner struct {
	file      string
	src       []byte
	i         int
	line, col int
	root      *node
	table     *node  // the current table
	err       *Error // the first place nested too deeply
}

// eof reports the end of the input, or of the scan after an error.
func (s *scanner) eof() bool { return s.err != nil || s.i >= len(s.src) }

// tooDeep reports whether n, written at p, nests deeper than MaxDepth, and
// then stops the scan.
func (s *scanner) tooDeep(n *node, p Pos) bool {
	if n.depth <= MaxDepth {
		return false
	}
	if s.err == nil {
		s.err = depthError(s.file, p)
	}
	return true
}

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
	n := s.root
	for i, k := range keys {
		n = n.key(k)
		if i < len(keys)-1 && len(n.elems) > 0 && n.tables {
			n = n.elems[len(n.elems)-1] // [a.b] after [[a]] is in the last a
		}
		if s.tooDeep(n, at) {
			return
		}
	}
	if array {
		n.tables = true
		n.record(at, true)
		n = n.elem()
		if s.tooDeep(n, at) {
			return
		}
	}
	n.record(at, true)
	s.table = n
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

func (s *scanner) keyValue(table *node) {
	at := s.here()
	keys := s.key()
	if len(keys) == 0 {
		s.advance()
		return
	}
	n := table
	for _, k := range keys {
		n = n.key(k)
		if s.tooDeep(n, at) {
			return
		}
		n.record(at, true)
	}
	s.skipSpace(false)
	if !s.eof() && s.src[s.i] == '=' {
		s.advance()
	}
	s.value(n)
}

func (s *scanner) value(n *node) {
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
		s.array(n)
	case s.src[s.i] == '{':
		s.inlineTable(n)
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

func (s *scanner) array(n *node) {
	s.advance() // [
	for {
		s.skipSpace(true)
		if s.eof() {
			return
		}
		if s.src[s.i] == ']' {
			s.advance()
			return
		}
		elem := n.elem()
		if s.tooDeep(elem, s.here()) {
			return
		}
		elem.record(s.here(), false)
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

func (s *scanner) inlineTable(n *node) {
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
		s.keyValue(n)
		s.skipSpace(true)
		if !s.eof() && s.src[s.i] == ',' {
			s.advance()
		} else if s.i == start {
			s.advance()
		}
	}
}
