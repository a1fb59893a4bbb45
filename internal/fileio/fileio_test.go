package fileio

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.txt")
	if err := os.WriteFile(small, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		max        int64
		want       string // content, or the error's text
		is         error
	}{
		{"regular", small, 10, "0123456789", nil},
		{"the null device", os.DevNull, 10, "", nil},
		{"over the limit", small, 9, "read " + small + ": larger than the 9 bytes limit", nil},
		{"a FIFO with no writer", fifo, 10, "read " + fifo + ": not a regular file: a FIFO (named pipe)", ErrNotRegular},
		{"a symlink to /dev/zero", zero, 10, "read " + zero + ": not a regular file: a character device", ErrNotRegular},
		{"a directory", dir, 10, "read " + dir + ": not a regular file: a directory", ErrNotRegular},
		{"missing", filepath.Join(dir, "nope"), 10, "no such file or directory", fs.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := ReadRegular(tc.path, tc.max)
			got := string(data)
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Errorf("ReadRegular(%s, %d) = %q, want %q (is %v)", tc.path, tc.max, got, tc.want, tc.is)
			}
		})
	}
	if err := CheckRegular(fifo); !errors.Is(err, ErrNotRegular) {
		t.Errorf("CheckRegular(fifo) = %v, want ErrNotRegular", err)
	}
	for _, ok := range []string{small, os.DevNull} {
		if err := CheckRegular(ok); err != nil {
			t.Errorf("CheckRegular(%s) = %v", ok, err)
		}
	}
}

// endless counts what is read from it and never ends.
type endless struct{ n int64 }

func (e *endless) Read(p []byte) (int, error) {
	clear(p)
	e.n += int64(len(p))
	return len(p), nil
}

func TestReadAllStopsOneBytePastTheLimit(t *testing.T) {
	src := &endless{}
	_, err := ReadAll(src, 1000)
	var tl *TooLargeError
	if !errors.As(err, &tl) || err.Error() != "larger than the 1000 bytes limit" {
		t.Fatalf("ReadAll(endless, 1000) = %v, want a TooLargeError", err)
	}
	if src.n != 1001 {
		t.Errorf("ReadAll(endless, 1000) read %d bytes, want 1001", src.n)
	}
	data, err := ReadAll(strings.NewReader(strings.Repeat("x", 1000)), 1000)
	if err != nil || len(data) != 1000 {
		t.Errorf("ReadAll(1000 bytes, 1000) = %d bytes, %v", len(data), err)
	}
	if _, err := ReadAll(io.MultiReader(strings.NewReader("x"), errReader{}), 10); err == nil || err.Error() != "boom" {
		t.Errorf("ReadAll(failing reader) = %v, want boom", err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("boom") }

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{64 << 20: "64 MiB", 1 << 30: "1 GiB", 4096: "4 KiB", 1000: "1000 bytes", MiB + 1: "1048577 bytes"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
