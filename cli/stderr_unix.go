//go:build unix

package cli

import (
	"os"
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// divert points file descriptor 2 at the log, keeping the terminal's
// stderr to restore it; a crash (an unrecovered panic, a fatal error)
// is written to the terminal's stderr as well as to the log, so that it
// still reaches the user.
func (s *stderrLog) divert() error {
	fd, err := unix.Dup(2)
	if err != nil {
		return err
	}
	unix.CloseOnExec(fd)
	s.saved = os.NewFile(uintptr(fd), "/dev/stderr")
	if err := unix.Dup2(int(s.file.Fd()), 2); err != nil {
		s.saved.Close()
		s.saved = nil
		return err
	}
	_ = debug.SetCrashOutput(s.saved, debug.CrashOptions{})
	return nil
}

// restore points file descriptor 2 back at the terminal.
func (s *stderrLog) restore() {
	if s.saved == nil {
		return
	}
	_ = debug.SetCrashOutput(nil, debug.CrashOptions{})
	_ = unix.Dup2(int(s.saved.Fd()), 2)
	s.saved.Close()
	s.saved = nil
}
