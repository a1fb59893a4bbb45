// Package fileio reads the files a user names (and the records gpulab
// finds) without trusting what the path turns out to be: only regular
// files are read, a FIFO is refused without waiting for a writer, and
// nothing is read past a size limit, so /dev/zero, a named pipe or a
// runaway log cannot hang gpulab or exhaust its memory.
package fileio

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Limits for the files gpulab reads. A limit is far above what the file
// holds in practice; it is there so that a wrong path fails fast.
const (
	MiB = 1 << 20
	// MaxParseInput is what gpulab parse reads: one command's output.
	MaxParseInput = 64 * MiB
	// MaxRecord is a lab record (record.json, record.md): up to 1 MiB of
	// output per stream, step and host.
	MaxRecord = 256 * MiB
	// MaxConfig is a configuration file: inventory, ssh_config.
	MaxConfig = 16 * MiB
	// MaxKey is an identity (private key) file.
	MaxKey = 1 * MiB
	// MaxProbe is a probe binary given with --probe-binary.
	MaxProbe = 256 * MiB
	// MaxPush is a file gpulab push sends: it is held in memory.
	MaxPush = 1024 * MiB
)

// ErrNotRegular is the error (wrapped) for a path that is not a regular
// file: a directory, a FIFO, a device, a socket.
var ErrNotRegular = errors.New("not a regular file")

// TooLargeError is the error (wrapped) for input larger than the limit.
type TooLargeError struct {
	Max int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("larger than the %s limit", Size(e.Max))
}

// ReadRegular reads the regular file at path, at most max bytes. The path
// is opened without blocking (a FIFO with no writer does not hang the
// open), and what was opened is checked: anything but a regular file is
// refused with ErrNotRegular, naming what it is, except the null device,
// which reads as empty (ssh -F /dev/null, UserKnownHostsFile /dev/null).
// A file over max bytes is a *TooLargeError; either comes wrapped in an
// *fs.PathError naming path. Errors from opening are returned as they are
// (fs.ErrNotExist holds).
func ReadRegular(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if isNull(st) {
		return []byte{}, nil
	}
	if !st.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: %s", ErrNotRegular, Kind(st.Mode()))}
	}
	if st.Size() > max {
		return nil, &fs.PathError{Op: "read", Path: path, Err: &TooLargeError{Max: max}}
	}
	data, err := readAll(f, max, st.Size())
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return data, nil
}

// CheckRegular returns the error ReadRegular would return for a path that
// is not a regular file (nor the null device), for files that a library
// opens itself (known_hosts). A missing file is fs.ErrNotExist, as from
// os.Stat.
func CheckRegular(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() && !isNull(st) {
		return &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: %s", ErrNotRegular, Kind(st.Mode()))}
	}
	return nil
}

// isNull reports whether st is the null device's.
func isNull(st fs.FileInfo) bool {
	if st.Mode()&fs.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err == nil && os.SameFile(st, null)
}

// ReadAll reads r to its end, at most max bytes: more is a
// *TooLargeError, found by reading one byte past max, never more.
func ReadAll(r io.Reader, max int64) ([]byte, error) {
	return readAll(r, max, 0)
}

func readAll(r io.Reader, max, sizeHint int64) ([]byte, error) {
	buf := make([]byte, 0, min(max, sizeHint)+1) // +1: reaching EOF needs room to try
	data, err := readInto(buf, io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, &TooLargeError{Max: max}
	}
	return data, nil
}

// readInto is io.ReadAll into buf's spare capacity first.
func readInto(b []byte, r io.Reader) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				return b, nil
			}
			return b, err
		}
	}
}

// Kind names a file mode's type for messages: "a directory", "a FIFO".
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsRegular():
		return "a regular file"
	}
	return "a special file (" + m.Type().String() + ")"
}

// Size writes a byte count the way limits are spoken of: "64 MiB".
func Size(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= MiB && n%MiB == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
