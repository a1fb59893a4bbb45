package cli

import (
	"os"
	"path/filepath"

	"github.com/gpulab/gpulab/internal/fileio"
)

// stderrLog is where the process's stderr (file descriptor 2) points
// while the workbench runs: whatever writes there behind Bubble Tea's
// back (a kubeconfig's exec credential plugin, which client-go runs with
// the process's stderr and offers no hook to change; a library's stray
// print; a panic's stack) would tear the screen. It is $GPULAB_KLOG's
// file when that is set, otherwise a private file under
// ${XDG_CACHE_HOME:-~/.cache}/gpulab, named on exit when it holds
// anything and removed when it does not.
type stderrLog struct {
	path    string
	private bool     // made here: removed when empty
	file    *os.File // the log
	start   int64    // its size when opened ($GPULAB_KLOG's is appended to)
	saved   *os.File // the terminal's stderr, while diverted
}

// openStderrLog opens the file stderr goes to while the workbench runs.
func openStderrLog(getenv func(string) string) (*stderrLog, error) {
	if path := getenv(EnvKlog); path != "" {
		f, err := fileio.OpenOwned(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, err
		}
		l := &stderrLog{path: path, file: f}
		if fi, err := f.Stat(); err == nil {
			l.start = fi.Size()
		}
		return l, nil
	}
	dir := getenv("XDG_CACHE_HOME")
	if dir == "" {
		dir = filepath.Join(getenv("HOME"), ".cache")
	}
	dir = filepath.Join(dir, "gpulab")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, "workbench-stderr-*.log") // 0600
	if err != nil {
		return nil, err
	}
	return &stderrLog{path: f.Name(), private: true, file: f}, nil
}

// close closes the log once stderr is restored and reports whether
// anything was written to it; an empty private log is removed.
func (s *stderrLog) close() bool {
	fi, err := s.file.Stat()
	s.file.Close()
	wrote := err == nil && fi.Size() > s.start
	if s.private && err == nil && !wrote {
		os.Remove(s.path)
	}
	return wrote
}
