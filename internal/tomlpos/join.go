package tomlpos

import "github.com/gpulab/gpulab/internal/problem"

// MaxProblems is how many problems Join keeps; it counts the others.
const MaxProblems = 50

// Join joins errs as errors.Join does, with joined errors among them
// flattened, and keeps the first MaxProblems: the others are counted in a
// last *Error, "FILE: and N more problems" (problem.Join), so that a
// broken file cannot print thousands of lines. That count is carried on
// when the result is joined again. Join returns nil when every error in
// errs is nil.
func Join(errs ...error) error { return problem.Join(MaxProblems, errs...) }
