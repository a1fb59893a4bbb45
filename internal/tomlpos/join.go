package tomlpos

import (
	"errors"
	"fmt"

	"github.com/gpulab/gpulab/internal/problem"
)

// MaxProblems is how many problems Join keeps; it counts the others.
const MaxProblems = 50

// Join joins errs as errors.Join does, with joined errors among them
// flattened, and keeps the first MaxProblems: the others are counted in a
// last *Error, "FILE: and N more problems", so that a broken file cannot
// print thousands of lines. That count is carried on when the result is
// joined again. Join returns nil when every error in errs is nil.
func Join(errs ...error) error {
	var (
		kept  []error
		more  int
		file  string
		files = map[string]bool{}
	)
	var add func(error)
	add = func(err error) {
		switch x := err.(type) {
		case nil:
			return
		case interface{ Unwrap() []error }:
			for _, e := range x.Unwrap() {
				add(e)
			}
			return
		case *Error:
			if x.More > 0 {
				more += x.More
				file, files[x.File] = x.File, true
				return
			}
		}
		if len(kept) < MaxProblems {
			kept = append(kept, err)
			return
		}
		more++
		var pe *Error
		if errors.As(err, &pe) {
			file, files[pe.File] = pe.File, true
		} else {
			files[""] = true
		}
	}
	for _, err := range errs {
		add(err)
	}
	if more > 0 {
		if len(files) > 1 {
			file = "" // the problems left out are in several files
		}
		kept = append(kept, &Error{Place: problem.Place{File: file}, Msg: fmt.Sprintf("and %d more problems", more), More: more})
	}
	return errors.Join(kept...)
}
