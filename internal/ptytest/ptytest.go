// Package ptytest opens pseudo-terminals for tests that run gpulab, or a
// part of it, on a terminal.
package ptytest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
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

// Session is a command running on a terminal of its own, and what it
// wrote there.
type Session struct {
	mu   sync.Mutex
	out  bytes.Buffer
	more chan struct{} // a read came
	done chan struct{} // the terminal is closed (the command ended)
}

// Start runs c on a new rows×cols terminal: its stdin, stdout, stderr and
// controlling terminal, in a session of its own. answer, when not nil,
// sees all that was written so far after each read and may reply on the
// terminal's input (as a terminal answers a query).
func Start(t testing.TB, c *exec.Cmd, rows, cols uint16, answer func(seen string, reply io.Writer)) *Session {
	t.Helper()
	ptmx, tty := Open(t, rows, cols)
	c.Stdin, c.Stdout, c.Stderr = tty, tty, tty
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	s := &Session{more: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			s.mu.Lock()
			s.out.Write(buf[:n])
			seen := s.out.String()
			s.mu.Unlock()
			if answer != nil {
				answer(seen, ptmx)
			}
			select {
			case s.more <- struct{}{}:
			default:
			}
			if err != nil { // EIO once the command has closed the terminal
				return
			}
		}
	}()
	return s
}

// Output is all the command wrote on the terminal so far.
func (s *Session) Output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// WaitFor waits until the terminal shows text, or ctx ends (an error
// saying what it waited for, and what the terminal showed).
func (s *Session) WaitFor(ctx context.Context, text string) error {
	for !strings.Contains(s.Output(), text) {
		select {
		case <-s.more:
		case <-s.done:
			if !strings.Contains(s.Output(), text) {
				return fmt.Errorf("the terminal closed without showing %q; it shows %q", text, s.Output())
			}
		case <-ctx.Done():
			return fmt.Errorf("waited for the terminal to show %q (%v); it shows %q", text, ctx.Err(), s.Output())
		}
	}
	return nil
}

// Closed is closed once the command has closed the terminal and all it
// wrote was read.
func (s *Session) Closed() <-chan struct{} { return s.done }
