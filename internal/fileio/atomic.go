package fileio

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// WriteAtomic writes data to path atomically (WriteAtomicFunc).
func WriteAtomic(path string, data []byte) error {
	return WriteAtomicFunc(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteAtomicFunc writes path with write, atomically: a temporary file in
// the same directory, buffered, synced, then renamed into place.
func WriteAtomicFunc(path string, write func(io.Writer) error) error {
	if err := MkdirTrusted(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	bw := bufio.NewWriterSize(f, 256<<10)
	if err := write(bw); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// Lock takes an exclusive lock (flock) on f, waiting for it. A file
// system without locks (ENOLCK, EOPNOTSUPP: NFS whose lock service is not
// there) does without, as gpulab did before results.csv was locked: rows
// are still one O_APPEND write each, and only runs that end at the same
// moment on a results.csv from before the simulated column may then lose
// a row to its update.
func Lock(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
	if errors.Is(err, syscall.ENOLCK) || errors.Is(err, syscall.EOPNOTSUPP) {
		return nil
	}
	return err
}

// MkdirUnique creates the directory base exclusively, or base-2, base-3...
// when another has that name (os.Mkdir, not a check then a create), and
// returns the one it made. base's parent must exist.
func MkdirUnique(base string, perm os.FileMode) (string, error) {
	dir := base
	for i := 2; ; i++ {
		err := os.Mkdir(dir, perm)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, os.ErrExist) || i > 10000 {
			return "", err
		}
		dir = fmt.Sprintf("%s-%d", base, i)
	}
}
