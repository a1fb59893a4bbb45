package tomlpos

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/gpulab/gpulab/internal/clip"
	"github.com/gpulab/gpulab/internal/problem"
)

// Error is a problem at a place in a file (problem.Error, gpulab's one
// error shape). Its text reads "file:line:col: message", the form
// editors and terminals link to.
type Error = problem.Error

// at is the place of pos in file.
func at(file string, pos Pos) problem.Place {
	return problem.Place{File: file, Line: pos.Line, Column: pos.Col}
}

// Errorf returns an *Error placed at path, or at its nearest indexed parent.
// Strings and errors among args that it quotes (%q) are cut at MaxQuoted
// bytes, with an ellipsis and their length, those it prints (%s, %v) at
// four times that: a message quotes the file's keys and values.
func (ix *Index) Errorf(path []any, format string, args ...any) *Error {
	return &Error{Place: at(ix.File, ix.Nearest(path...)), Msg: fmt.Sprintf(format, clipArgs(args)...)}
}

// Decode decodes src into v (a pointer to a struct) and rejects what v has no
// place for. Syntax and type errors and every unknown key come back as
// *Error values joined with Join (at most MaxProblems); the Index is returned for the
// caller's own validation messages, and is nil when src does not parse.
//
// A document over MaxFileSize or nested deeper than MaxDepth is refused
// before it is parsed, with an *Error that wraps ErrLimit: the toml
// package's time and memory grow with the square of the nesting depth.
func Decode(file string, src []byte, v any) (*Index, error) {
	if len(src) > MaxFileSize {
		return nil, sizeError(file, int64(len(src)))
	}
	ix, lerr := build(file, src)
	if lerr != nil {
		return nil, lerr
	}
	md, err := toml.NewDecoder(bytes.NewReader(src)).Decode(v)
	if err != nil {
		return nil, typeErrors(ix, src, v, err)
	}
	return ix, Join(unknownKeys(ix, v, md.Undecoded())...)
}

// unknownKeys are the errors for keys v has no place for, one for each
// place a key is written; a key inside an unknown table is not reported
// again, nor is a key v does have a place for (its value was refused).
func unknownKeys(ix *Index, v any, undecoded []toml.Key) []error {
	var errs []error
	var reported keyTree
	for _, k := range undecoded {
		exp := expectedKeys(reflect.TypeOf(v), k[:len(k)-1])
		if exp == nil && len(k) > 1 && knownPath(reflect.TypeOf(v), k[:len(k)-1]) || slices.Contains(exp, k[len(k)-1]) {
			continue // a known key (its value refused), or a key of a map or of a value of its own
		}
		if reported.add(k) {
			continue // k, or the table it is in, is reported already
		}
		msg := fmt.Sprintf("unknown key %q", clipArgs([]any{k[len(k)-1]})...)
		if len(exp) > 0 {
			where := "here"
			if len(k) > 1 {
				where = "in " + clip.Cut(strings.Join(k[:len(k)-1], "."), MaxQuoted)
			}
			msg += fmt.Sprintf(" (expected %s: %s)", where, strings.Join(exp, ", "))
		}
		places := ix.Matches(k)
		if len(places) == 0 {
			places = []Pos{{}}
		}
		for _, p := range places {
			errs = append(errs, &Error{Place: at(ix.File, p), Msg: msg})
		}
	}
	return errs
}

var (
	typeErrRE = regexp.MustCompile(`^toml: (?:line (\d+) )?\(last key "(.*)"\): (.*)$`)
	badTypeRE = regexp.MustCompile(`^incompatible types: TOML value has type (.+); destination has type (.+)$`)
)

// typeError places the toml package's decode errors, which carry a line and
// an index-free key in their text only.
func typeError(file string, src []byte, err error) *Error {
	m := typeErrRE.FindStringSubmatch(err.Error())
	if m == nil {
		return &Error{Place: problem.Place{File: file}, Msg: clipMessage(strings.TrimPrefix(err.Error(), "toml: "))}
	}
	line, _ := strconv.Atoi(m[1])
	key, msg := m[2], m[3]
	if b := badTypeRE.FindStringSubmatch(msg); b != nil {
		msg = fmt.Sprintf("wrong type: want %s, found %s", tomlKind(b[2]), tomlType(b[1]))
	}
	pos := Pos{Line: line}
	for _, p := range New(file, src).Matches(strings.Split(key, ".")) {
		if p.Line == line || line == 0 {
			pos = p
			break
		}
	}
	return &Error{Place: at(file, pos), Msg: fmt.Sprintf("key %q: %s", clipArgs([]any{key})[0], clipMessage(msg))}
}

// typeErrors is every type error of src decoded into v, not only the
// first, which the toml package stops at (first): each key of a table and
// each table of an array of tables is decoded on its own, so that an
// author fixes them all in one round; one error a line. A syntax error
// stops there: what follows it cannot be read.
func typeErrors(ix *Index, src []byte, v any, first error) error {
	file := ix.File
	var doc toml.Primitive
	md, err := toml.NewDecoder(bytes.NewReader(src)).Decode(&doc)
	if err != nil {
		return decodeError(file, src, first)
	}
	var errs []error
	lines := map[int]bool{}
	add := func(err error) {
		e := decodeError(file, src, err)
		if len(errs) < MaxProblems && !lines[e.Line] {
			lines[e.Line] = true
			errs = append(errs, e)
		}
	}
	add(first)
	decodePieces(md, doc, reflect.TypeOf(v), add)
	// The keys v has no place for, in the same round: every key of the
	// document, those v has a place for left out by unknownKeys.
	for _, e := range unknownKeys(ix, v, md.Keys()) {
		if len(errs) < MaxProblems {
			errs = append(errs, e)
		}
	}
	return problem.Sorted(Join(errs...))
}

// decodeError places an error of the toml package: a syntax error, or a
// value's own UnmarshalTOML (both toml.ParseError), at its position; a
// type error at its key (typeError).
func decodeError(file string, src []byte, err error) *Error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return &Error{Place: at(file, Pos{Line: pe.Position.Line, Col: pe.Position.Col}), Msg: parseMessage(pe)}
	}
	return typeError(file, src, err)
}

// decodePieces decodes p into a value of type t a piece at a time (see
// typeErrors), calling add with each piece's error.
func decodePieces(md toml.MetaData, p toml.Primitive, t reflect.Type, add func(error)) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	leaf := reflect.PointerTo(t).Implements(unmarshalerType)
	switch {
	case !leaf && t.Kind() == reflect.Struct:
		var keys map[string]toml.Primitive
		if md.PrimitiveDecode(p, &keys) == nil {
			for k, kp := range keys {
				if f, ok := fieldByKey(t, k); ok {
					decodePieces(md, kp, f.Type, add)
				}
			}
			return
		}
	case !leaf && t.Kind() == reflect.Slice && elem(t).Kind() == reflect.Struct:
		var items []toml.Primitive
		if md.PrimitiveDecode(p, &items) == nil {
			for _, ip := range items {
				decodePieces(md, ip, t.Elem(), add)
			}
			return
		}
	}
	if err := md.PrimitiveDecode(p, reflect.New(t).Interface()); err != nil {
		add(err)
	}
}

// tomlType is a TOML value's type by its TOML name: the toml package
// names it by the Go type it decoded it to.
func tomlType(goType string) string {
	switch goType {
	case "int64":
		return "integer"
	case "float64":
		return "float"
	case "bool":
		return "boolean"
	case "string":
		return "string"
	case "time.Time", "toml.LocalDate", "toml.LocalTime", "toml.LocalDatetime":
		return "datetime"
	case "map[string]interface {}":
		return "table"
	}
	if strings.HasPrefix(goType, "[]") {
		return "array"
	}
	return goType
}

// tomlKind is the TOML name of the kind of Go value the toml package
// names as a type error's destination.
func tomlKind(kind string) string {
	switch {
	case kind == "slice" || kind == "array":
		return "array"
	case kind == "struct" || kind == "map":
		return "table"
	case strings.HasPrefix(kind, "int") || strings.HasPrefix(kind, "uint"):
		return "integer"
	case strings.HasPrefix(kind, "float"):
		return "float"
	case kind == "bool":
		return "boolean"
	}
	return kind
}

// parseMessage is the toml package's message for a syntax error, the
// tokens and the key it quotes clipped to MaxQuoted bytes.
func parseMessage(pe toml.ParseError) string {
	msg := clipMessage(pe.Message)
	if pe.LastKey != "" {
		msg = fmt.Sprintf("%s (key %q)", msg, clipArgs([]any{pe.LastKey})[0])
	}
	return msg
}

// keyTree is a set of keys stored part by part, so that finding whether
// a key or one of its parents is in it costs the key's length.
type keyTree struct {
	in   bool
	next map[string]*keyTree
}

// add adds k and reports whether k or one of its parents was in t already.
func (t *keyTree) add(k toml.Key) bool {
	for _, part := range k {
		if t.in {
			return true
		}
		c := t.next[part]
		if c == nil {
			if t.next == nil {
				t.next = map[string]*keyTree{}
			}
			c = &keyTree{}
			t.next[part] = c
		}
		t = c
	}
	if t.in {
		return true
	}
	t.in = true
	return false
}

var unmarshalerType = reflect.TypeFor[toml.Unmarshaler]()

// expectedKeys lists the TOML keys that the type at path accepts, for error
// messages; nil when the type there is not a struct.
func expectedKeys(t reflect.Type, path []string) []string {
	t = elem(t)
	for _, k := range path {
		if t.Kind() != reflect.Struct {
			if t.Kind() == reflect.Map {
				t = elem(t.Elem())
				continue
			}
			return nil
		}
		f, ok := fieldByKey(t, k)
		if !ok {
			return nil
		}
		t = elem(f.Type)
	}
	if t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	var keys []string
	for f := range t.Fields() {
		if name := tomlName(f); name != "" {
			keys = append(keys, name)
		}
	}
	sort.Strings(keys)
	return keys
}

// knownPath reports whether path leads through struct fields, maps and
// lists all the way: a key under it is a map's, or a value's of its own
// (UnmarshalTOML), when the type there is no struct.
func knownPath(t reflect.Type, path []string) bool {
	t = elem(t)
	for _, k := range path {
		switch t.Kind() {
		case reflect.Map:
			t = elem(t.Elem())
		case reflect.Struct:
			f, ok := fieldByKey(t, k)
			if !ok {
				return false
			}
			t = elem(f.Type)
		default:
			return false
		}
	}
	return true
}

func elem(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	return t
}

func fieldByKey(t reflect.Type, k string) (reflect.StructField, bool) {
	for f := range t.Fields() {
		if tomlName(f) == k {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func tomlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	tag := f.Tag.Get("toml")
	name, _, _ := strings.Cut(tag, ",")
	switch name {
	case "-":
		return ""
	case "":
		return f.Name
	}
	return name
}
