// Package ptytest opens pseudo-terminals for tests that run gpulab, or a
// part of it, on a terminal.
package ptytest

import (
	"fmt"
	"os"
	"syscall"
	"testing"
	"unsafe"

	"github.com/gpulab/gpulab/internal/testreq"
)

// Open opens a pseudo-terminal pair of rows×cols: the master, and the
// terminal. Both are closed when the test ends (closing one earlier is
// fine).
func Open(t testing.TB, rows, cols uint16) (ptmx, tty *os.File) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		testreq.Missing(t, fmt.Sprintf("no pseudo-terminals here (a terminal test needs /dev/ptmx): %v", err))
	}
	t.Cleanup(func() { ptmx.Close() })
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, ptmx.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("TIOCGPTN: %v", e)
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, ptmx.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("TIOCSPTLCK: %v", e)
	}
	ws := struct{ rows, cols, x, y uint16 }{rows, cols, 0, 0}
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, ptmx.Fd(), syscall.TIOCSWINSZ, uintptr(unsafe.Pointer(&ws))); e != 0 {
		t.Fatalf("TIOCSWINSZ: %v", e)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close() })
	return ptmx, tty
}
