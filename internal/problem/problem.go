// Package problem is gpulab's one shape for an error that has a place: a
// host, a file's line and column (an inventory, a lab, a runbook, a
// catalog), or a line of a tool's output. Its text is "place: message",
// the form editors and terminals link to ("labs/mig.toml:12:3: ...",
// "dgx01: ...", "line 4: ..."); --json writes it as a Problem. Errors of
// other shapes that know their host (orchestrator's dial and host-key
// errors) say so with a Where method, and List places them too.
package problem

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Place is where a problem is; every part may be empty.
type Place struct {
	Host   string `json:"host,omitempty"`
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
}

// String is the place as an error's text starts: "dgx01",
// "file:line:col", "file:line", "file", "line 4", or "".
func (p Place) String() string {
	var at string
	switch {
	case p.File == "" && p.Line > 0:
		at = fmt.Sprintf("line %d", p.Line)
	case p.File == "":
	case p.Line == 0:
		at = p.File
	case p.Column == 0:
		at = fmt.Sprintf("%s:%d", p.File, p.Line)
	default:
		at = fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Column)
	}
	switch {
	case p.Host == "":
		return at
	case at == "":
		return p.Host
	}
	return p.Host + ": " + at
}

// Error is a problem at a Place.
type Error struct {
	Place
	Msg string
	// Err, when set, is a cause that callers test with errors.Is (a
	// limit reached); Msg says it in words.
	Err error
	// More counts the problems a list left out that this one stands
	// for ("and 12 more problems").
	More int
}

func (e *Error) Error() string {
	if at := e.Place.String(); at != "" {
		return at + ": " + e.Msg
	}
	return e.Msg
}

// Unwrap returns e.Err.
func (e *Error) Unwrap() error { return e.Err }

// Problem is one error as --json writes it: where, and what.
type Problem struct {
	Place
	Message string `json:"message"`
}

// Placed is an error of another shape that knows where it happened.
type Placed interface {
	error
	Where() Place
}

// Flatten is the errors joined in err (errors.Join, at any depth), in
// order; err alone when it joins none; nil for nil.
func Flatten(err error) []error {
	var out []error
	var walk func(error)
	walk = func(e error) {
		switch x := e.(type) {
		case nil:
		case interface{ Unwrap() []error }:
			for _, inner := range x.Unwrap() {
				walk(inner)
			}
		default:
			out = append(out, e)
		}
	}
	walk(err)
	return out
}

// List flattens err (joined errors included) into Problems, each placed
// where the error says: an *Error by its Place, a Placed error by Where,
// any other by its text alone. A wrapper that only adds a prefix
// ("catalog: ") says nothing new and is looked through.
func List(err error) []Problem {
	var out []Problem
	for _, e := range Flatten(err) {
		switch x := e.(type) {
		case *Error:
			out = append(out, Problem{Place: x.Place, Message: x.Msg})
			continue
		case Placed:
			where := x.Where()
			msg := strings.TrimPrefix(x.Error(), where.String()+": ")
			out = append(out, Problem{Place: where, Message: msg})
			continue
		}
		if inner := errors.Unwrap(e); inner != nil && strings.HasSuffix(e.Error(), inner.Error()) {
			out = append(out, List(inner)...)
			continue
		}
		out = append(out, Problem{Message: e.Error()})
	}
	return out
}

// Sorted is err's problems in the order of their places (file, line,
// column; the unplaced first, as they come), each file's count of those
// left out last: a check finds problems in several passes, and a reader
// goes through the file top to bottom.
func Sorted(err error) error {
	errs := Flatten(err)
	key := func(e error) (more bool, p Place) {
		var pe *Error
		if errors.As(e, &pe) {
			return pe.More > 0, pe.Place
		}
		return false, Place{}
	}
	slices.SortStableFunc(errs, func(a, b error) int {
		ma, pa := key(a)
		mb, pb := key(b)
		return cmp.Or(cmp.Compare(pa.Host, pb.Host), cmp.Compare(pa.File, pb.File), compareBool(ma, mb),
			cmp.Compare(pa.Line, pb.Line), cmp.Compare(pa.Column, pb.Column))
	})
	return errors.Join(errs...)
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// Join joins errs as errors.Join does, flattened, and keeps the first
// max: the others are counted in a last *Error, "FILE: and N more
// problems" (no file when they are in several), so that a broken input
// cannot print thousands of lines. A count in errs (an *Error with More)
// is carried on. Join returns nil when every error in errs is nil.
func Join(max int, errs ...error) error {
	var (
		kept  []error
		more  int
		file  string
		files = map[string]bool{}
	)
	for _, err := range Flatten(errors.Join(errs...)) {
		var pe *Error
		placed := errors.As(err, &pe)
		switch {
		case placed && pe == err && pe.More > 0:
			more += pe.More
		case len(kept) < max:
			kept = append(kept, err)
			continue
		default:
			more++
		}
		if placed {
			file, files[pe.File] = pe.File, true
		} else {
			files[""] = true
		}
	}
	if more > 0 {
		if len(files) > 1 {
			file = "" // the problems left out are in several files
		}
		kept = append(kept, &Error{Place: Place{File: file}, Msg: fmt.Sprintf("and %d more problems", more), More: more})
	}
	return errors.Join(kept...)
}
