package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/internal/fileio"
	"github.com/gpulab/gpulab/internal/problem"
	"github.com/gpulab/gpulab/internal/suggest"
	"github.com/gpulab/gpulab/sim/spec"
)

// faultsExample is a --mock-faults file in one line, for messages.
const faultsExample = `{"gpu04": {"nvlink_down": [[0, 1]], "ecc": {"3": {"volatile_uncorrected": 2}}}}`

// readHostFaults reads --mock-faults FILE: a JSON object of host name to
// faults, each validated, returned as the probe's compact JSON by host.
// A value of the wrong kind is named by its place in the file (line and
// column), its path (host, key, GPU index, list index) and what it takes.
func readHostFaults(file string, r *app.Fleet) (map[string]string, error) {
	hosts, err := parseHostFaults("--mock-faults", file, r.Names(), "the hosts -H selects")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for name, ft := range hosts {
		compact, _ := json.Marshal(ft)
		out[name] = string(compact)
	}
	return out, nil
}

// parseHostFaults reads a faults FILE given to flag: a JSON object of host
// name to faults, each validated and among names (which among says).
func parseHostFaults(flag, file string, names []string, among string) (map[string]spec.Faults, error) {
	if file == "" {
		return nil, nil
	}
	data, err := fileio.ReadRegular(file, 1<<20)
	if err != nil {
		return nil, usageErr("%s: %v", flag, err)
	}
	hosts, err := faultsByHost(file, data)
	if err != nil {
		return nil, usageErr("%s: %v", flag, err)
	}
	out := map[string]spec.Faults{}
	for _, h := range hosts {
		at := placeIn(file, data, h.offset)
		if !slices.Contains(names, h.name) {
			return nil, usageErr("%s: %v", flag, &problem.Error{Place: at, Msg: fmt.Sprintf("host %q is not among %s", h.name, among)})
		}
		ft, err := decodeFaults(file, data, h)
		if err != nil {
			return nil, usageErr("%s: %v", flag, err)
		}
		if err := ft.Validate(); err != nil {
			return nil, usageErr("%s: %v", flag, &problem.Error{Place: at, Msg: fmt.Sprintf("host %q: %v", h.name, err)})
		}
		if compact, _ := json.Marshal(ft); len(compact) > maxHostFaults {
			return nil, usageErr("%s: %v", flag, &problem.Error{Place: at, Msg: fmt.Sprintf("host %q: its faults are %d bytes as JSON; they reach its probe as one argument: %d KiB at most", h.name, len(compact), maxHostFaults>>10)})
		}
		out[h.name] = ft
	}
	return out, nil
}

// maxHostFaults bounds one host's faults as compact JSON: they reach the
// host's probe as one command-line argument, which Linux caps at 128 KiB
// (MAX_ARG_STRLEN), with room left for the rest.
const maxHostFaults = 64 << 10

// hostFaults is one host's entry in a faults file: its value as written,
// and where that value starts in the file.
type hostFaults struct {
	name   string
	raw    json.RawMessage
	offset int64
}

// faultsByHost splits a faults file into its hosts, in the file's order.
// Its errors are placed at file:line:column.
func faultsByHost(file string, data []byte) ([]hostFaults, error) {
	// Syntax only: a number's range is the shape check's, with its
	// place (a number too large for any Go type failed here, unplaced).
	if !json.Valid(data) {
		err := json.Unmarshal(data, new(any))
		at := problem.Place{File: file}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			at = placeIn(file, data, se.Offset)
		}
		return nil, &problem.Error{Place: at, Msg: fmt.Sprintf("%v (want a JSON object of host name to faults, such as %s)", err, faultsExample)}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if tok, _ := dec.Token(); tok != json.Delim('{') {
		return nil, &problem.Error{Place: placeIn(file, data, 0), Msg: fmt.Sprintf("want an object of host name to faults, such as %s, not %s", faultsExample, tokenText(tok))}
	}
	var hosts []hostFaults
	for dec.More() {
		key, _ := dec.Token()
		name, _ := key.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		h := hostFaults{name: name, raw: raw, offset: dec.InputOffset() - int64(len(raw))}
		if slices.ContainsFunc(hosts, func(o hostFaults) bool { return o.name == name }) {
			return nil, &problem.Error{Place: placeIn(file, data, h.offset), Msg: fmt.Sprintf("host %q is named twice", name)}
		}
		hosts = append(hosts, h)
	}
	return hosts, nil
}

// decodeFaults checks one host's value against what spec.Faults takes,
// then decodes it.
func decodeFaults(file string, data []byte, h hostFaults) (spec.Faults, error) {
	dec := json.NewDecoder(bytes.NewReader(h.raw))
	dec.UseNumber()
	s := &shapeChecker{dec: dec, raw: h.raw}
	if err := s.check(reflect.TypeFor[spec.Faults](), ""); err != nil {
		se := err.(*shapeError)
		where := fmt.Sprintf("host %q", h.name)
		if se.path != "" {
			where += ", " + se.path
		}
		return spec.Faults{}, &problem.Error{Place: placeIn(file, data, h.offset+se.offset), Msg: where + ": " + se.msg}
	}
	var ft spec.Faults
	dec = json.NewDecoder(bytes.NewReader(h.raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ft); err != nil {
		return ft, &problem.Error{Place: placeIn(file, data, h.offset), Msg: fmt.Sprintf("host %q: %v", h.name, err)}
	}
	return ft, nil
}

// placeIn is where a byte offset of file's data is: its line, and its
// column in characters.
func placeIn(file string, data []byte, off int64) problem.Place {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line := 1 + bytes.Count(before, []byte("\n"))
	col := 1 + utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:])
	return problem.Place{File: file, Line: line, Column: col}
}

// shapeError is a value of the wrong kind: where it starts (a byte offset
// of the value checked), its path, and what the place takes.
type shapeError struct {
	offset int64
	path   string
	msg    string
}

func (e *shapeError) Error() string { return e.path + ": " + e.msg }

// shapeChecker walks a JSON value's tokens along a Go type, as
// encoding/json would decode it, and stops at the first value that does
// not fit, with its path in the file's terms: keys, GPU indexes, list
// indexes, as jq writes them ("xids[1].code", `ecc."3".volatile_uncorrected`).
type shapeChecker struct {
	dec *json.Decoder
	raw []byte
}

func (s *shapeChecker) check(t reflect.Type, path string) error {
	start := s.dec.InputOffset()
	for start < int64(len(s.raw)) && strings.IndexByte(" \t\r\n:,", s.raw[start]) >= 0 {
		start++
	}
	tok, err := s.dec.Token()
	if err != nil {
		return &shapeError{start, path, err.Error()}
	}
	bad := func(want string) error {
		return &shapeError{start, path, "want " + want + ", not " + tokenText(tok)}
	}
	if t.Kind() == reflect.Pointer {
		if tok == nil {
			return nil
		}
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		if tok != json.Delim('{') {
			return bad(describeType(t))
		}
		if t.Kind() == reflect.Struct {
			return s.object(t, path)
		}
		return s.gpuMap(t, path)
	case reflect.Slice, reflect.Array:
		if tok != json.Delim('[') {
			return bad(describeType(t))
		}
		return s.list(t, path, start)
	case reflect.String:
		if _, ok := tok.(string); !ok {
			return bad(describeType(t))
		}
	case reflect.Bool:
		if _, ok := tok.(bool); !ok {
			return bad(describeType(t))
		}
	default: // numbers
		n, ok := tok.(json.Number)
		if !ok {
			return bad(describeType(t))
		}
		if json.Unmarshal([]byte(n), reflect.New(t).Interface()) != nil {
			// 1e9 is a whole number in range that encoding/json will not
			// take as an integer: say how to write it, not that it is out
			// of range.
			if f, err := n.Float64(); err == nil && f == math.Trunc(f) && strings.ContainsAny(string(n), "eE.") &&
				json.Unmarshal([]byte(strconv.FormatFloat(f, 'f', -1, 64)), reflect.New(t).Interface()) == nil {
				return &shapeError{start, path, fmt.Sprintf("write %s as %s: a whole number here takes no exponent or fraction", n, strconv.FormatFloat(f, 'f', -1, 64))}
			}
			return bad(describeType(t))
		}
	}
	return nil
}

// object checks a JSON object's keys against a struct's fields.
func (s *shapeChecker) object(t reflect.Type, path string) error {
	fields := map[string]reflect.Type{}
	var names []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		fields[name] = f.Type
		names = append(names, name)
	}
	for s.dec.More() {
		at := s.dec.InputOffset()
		key, _ := s.dec.Token()
		k, _ := key.(string)
		ft, ok := fields[k]
		if !ok {
			for at < int64(len(s.raw)) && strings.IndexByte(" \t\r\n,", s.raw[at]) >= 0 {
				at++
			}
			msg := fmt.Sprintf("unknown key %q", k)
			if c := suggest.Closest(k, names); c != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", c)
			}
			return &shapeError{at, path, msg + "; the keys here are " + strings.Join(names, ", ")}
		}
		if err := s.check(ft, joinPath(path, k)); err != nil {
			return err
		}
	}
	_, err := s.dec.Token() // }
	return err
}

// gpuMap checks an object's values; a map keyed by integers is keyed by
// GPU index ("0" to "7"), one keyed by strings (ib's device names,
// pstore's record names) by any name, which the faults' Validate judges.
func (s *shapeChecker) gpuMap(t reflect.Type, path string) error {
	for s.dec.More() {
		at := s.dec.InputOffset()
		key, _ := s.dec.Token()
		k, _ := key.(string)
		if _, err := strconv.Atoi(k); err != nil && t.Key().Kind() != reflect.String {
			for at < int64(len(s.raw)) && strings.IndexByte(" \t\r\n,", s.raw[at]) >= 0 {
				at++
			}
			return &shapeError{at, path, fmt.Sprintf("key %q is not a GPU index: want %s", k, describeType(t))}
		}
		if err := s.check(t.Elem(), joinPath(path, strconv.Quote(k))); err != nil {
			return err
		}
	}
	_, err := s.dec.Token() // }
	return err
}

// list checks a JSON list's elements; a Go array takes exactly its length.
func (s *shapeChecker) list(t reflect.Type, path string, start int64) error {
	n := 0
	for s.dec.More() {
		if t.Kind() == reflect.Array && n == t.Len() {
			return &shapeError{start, path, fmt.Sprintf("want %s, not a list of more", describeType(t))}
		}
		if err := s.check(t.Elem(), fmt.Sprintf("%s[%d]", path, n)); err != nil {
			return err
		}
		n++
	}
	if t.Kind() == reflect.Array && n != t.Len() {
		return &shapeError{start, path, fmt.Sprintf("want %s, not a list of %d", describeType(t), n)}
	}
	_, err := s.dec.Token() // ]
	return err
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// describeType says what a JSON value must be to decode into t, in the
// faults file's terms.
func describeType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return describeType(t.Elem())
	case reflect.Struct:
		var names []string
		for f := range t.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			names = append(names, name)
		}
		return "an object with keys among " + strings.Join(names, ", ")
	case reflect.Map:
		return `an object of GPU index ("0" to "7") to ` + describeType(t.Elem())
	case reflect.Array:
		if t.Len() == 2 && t.Elem().Kind() == reflect.Int {
			return "a pair of GPU indexes such as [0, 1]"
		}
		return fmt.Sprintf("a list of %d, each %s", t.Len(), describeType(t.Elem()))
	case reflect.Slice:
		return "a list, each " + describeType(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if t.Bits() == 64 {
			return "a whole number, 0 or more"
		}
		return fmt.Sprintf("a whole number from 0 to %d", uint64(1)<<t.Bits()-1)
	}
	return "a number"
}

// tokenText names a JSON token as a message shows what was found.
func tokenText(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '{' {
			return "an object"
		}
		return "a list"
	case string:
		return fmt.Sprintf("the string %q", v)
	case json.Number:
		return "the number " + v.String()
	case bool:
		return fmt.Sprint(v)
	case nil:
		return "null"
	}
	return fmt.Sprint(tok)
}

// checkMockFlags refuses --mock-faults where it cannot apply, saying
// which flags it needs and why, before any file is read.
func checkMockFlags(pf probeFlags, faultsFile string) error {
	switch {
	case faultsFile == "":
		return nil
	case pf.local:
		return usageErr("--mock-faults gives each host -H selects its own simulated faults (keyed by host name), so it needs -H HOSTS and --mock dgxa100, not --local; --local --mock dgxa100 probes a healthy simulated DGX A100 on this machine")
	case pf.mock == "":
		return usageErr("--mock-faults needs --mock dgxa100: the faults are those of the simulated DGX A100 each host probes (add --mock dgxa100)")
	}
	return nil
}

// mockOnSimulated refuses --mock (and --mock-faults) on a simulated
// fleet before the faults file is read: its hosts' probe simulates a DGX
// A100 already, with the faults the fleet gave each host.
func mockOnSimulated(r *app.Fleet, pf probeFlags, faultsFile string) error {
	if !r.Simulated || pf.mock == "" {
		return nil
	}
	flags := "--mock"
	if faultsFile != "" {
		flags = "--mock and --mock-faults"
	}
	return usageErr("%s: %s is a simulated fleet (gpulab sim): each host's probe simulates a DGX A100 already, with the faults the fleet gave it; run without %s (for other faults, start the fleet with another --seed)", flags, r.Inv.File, flags)
}
