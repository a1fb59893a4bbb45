package tomlpos

import (
	"errors"
	"fmt"
	"os"

	"github.com/gpulab/gpulab/internal/fileio"
	"github.com/gpulab/gpulab/internal/problem"
)

// Limits on the TOML that gpulab reads. Its TOML files are written by people
// (an inventory, labs, runbooks, catalog entries): the limits are far above
// what a person writes, and low enough that a broken or hostile file is
// refused at once instead of costing minutes and gigabytes.
const (
	// MaxFileSize is the size of the largest file read, 8 MiB.
	MaxFileSize = 8 << 20
	// MaxDepth is how deeply a document may nest. Each part of a table
	// header or of a dotted key is one level, and so is each inline table
	// and array: project.axis.isolation.value = ["a"] in the second
	// [[project]] is 6 levels deep (the element of [[project]] counts).
	MaxDepth = 64
)

// ErrLimit is wrapped by the error for a file over MaxFileSize or MaxDepth:
// gpulab refused to read it, and nothing in it was checked.
var ErrLimit = errors.New("over gpulab's limits for TOML files")

// ReadFile reads the file at path, refusing one larger than MaxFileSize
// before reading it (with an *Error that wraps ErrLimit), and anything but
// a regular file (a FIFO cannot hang it, /dev/zero cannot fill memory).
// Other errors are those of opening and reading the file.
func ReadFile(path string) ([]byte, error) {
	data, err := fileio.ReadTrusted(path, MaxFileSize)
	var tl *fileio.TooLargeError
	if errors.As(err, &tl) {
		size := int64(-1)
		if st, serr := os.Stat(path); serr == nil && st.Mode().IsRegular() {
			size = st.Size()
		}
		return nil, sizeError(path, size)
	}
	return data, err
}

// sizeError refuses file for its size; size is -1 when it is not known.
func sizeError(file string, size int64) *Error {
	msg := fmt.Sprintf("the file is larger than %d MiB, the most gpulab reads", MaxFileSize>>20)
	if size >= 0 {
		msg = fmt.Sprintf("the file is %d bytes (%.1f MiB), more than the %d MiB gpulab reads", size, float64(size)/(1<<20), MaxFileSize>>20)
	}
	return &Error{Place: problem.Place{File: file}, Msg: msg, Err: ErrLimit}
}

// depthError refuses file for nesting too deeply at p.
func depthError(file string, p Pos) *Error {
	return &Error{Place: at(file, p), Msg: fmt.Sprintf("nested more than %d levels deep, the most gpulab reads (tables, dotted keys, inline tables and arrays each count one level)", MaxDepth), Err: ErrLimit}
}
