package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The tests in this file give the real binary what it must not trust:
// paths that are not files, endless input, records and names written by
// someone else.

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// TestMain removes the binary the tests here share.
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// gpulabBinary builds gpulab from the repository root once for the tests
// that share it.
func gpulabBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "gpulab-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "gpulab")
		if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

type gpulabRun struct {
	code           int
	stdout, stderr string
}

// runGpulab runs the binary with a 2 GB address-space limit (a read that
// never ends fails fast instead of taking the machine's memory) and a
// one-minute safety net against a hang, which fails the test: neither is
// a measurement.
func runGpulab(t *testing.T, stdin io.Reader, env []string, args ...string) gpulabRun {
	t.Helper()
	bin := gpulabBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, "sh", append([]string{"-c", `ulimit -v 2000000; exec "$0" "$@"`, bin}, args...)...)
	c.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	c.Stdin = stdin
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	err := c.Run()
	if ctx.Err() != nil {
		t.Fatalf("gpulab %s hung (killed after a minute)\nstderr: %.2000s", strings.Join(args, " "), errOut.String())
	}
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("gpulab %s: %v", strings.Join(args, " "), err)
	}
	return gpulabRun{c.ProcessState.ExitCode(), out.String(), errOut.String()}
}

func (r gpulabRun) String() string {
	return fmt.Sprintf("exit %d\nstdout: %.2000s\nstderr: %.2000s", r.code, r.stdout, r.stderr)
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestParseReadsOnlyFiles: gpulab parse refuses what is not a regular
// file (without waiting on a FIFO), caps standard input, and quotes at
// most the start of a long line in its errors.
func TestParseReadsOnlyFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	mkfifo(t, fifo)
	zero := filepath.Join(dir, "zero.txt")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"/dev/zero", "/dev/zero", "gpulab: parse: read /dev/zero: not a regular file: a character device\n"},
		{"a link to /dev/zero", zero, "gpulab: parse: read " + zero + ": not a regular file: a character device\n"},
		{"a FIFO", fifo, "gpulab: parse: read " + fifo + ": not a regular file: a FIFO (named pipe)\n"},
		{"a directory", dir, "gpulab: parse: read " + dir + ": not a regular file: a directory\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runGpulab(t, nil, nil, "parse", "nvidia-smi-topo", tc.path)
			if r.code != 2 || r.stderr != tc.want || r.stdout != "" {
				t.Errorf("gpulab parse nvidia-smi-topo %s: %v\nwant exit 2 and %q", tc.path, r, tc.want)
			}
		})
	}
	t.Run("endless standard input", func(t *testing.T) {
		r := runGpulab(t, io.LimitReader(zeros{}, 1<<30), nil, "parse", "nvidia-smi-topo", "-")
		want := "gpulab: parse: standard input is larger than the 64 MiB limit\n"
		if r.code != 2 || r.stderr != want {
			t.Errorf("gpulab parse nvidia-smi-topo - < 1 GiB: %v\nwant exit 2 and %q", r, want)
		}
	})
	t.Run("a 4 MiB line", func(t *testing.T) {
		long := strings.Repeat("x", 4<<20)
		in := "GPU0\tGPU1\n" + long + "\n"
		r := runGpulab(t, strings.NewReader(in), nil, "parse", "nvidia-smi-topo")
		quoted := regexp.MustCompile(` "?x{200}"?… \(4194304 bytes\) `)
		if r.code != 1 || len(r.stderr) > 1000 || !quoted.MatchString(r.stderr) {
			t.Errorf("gpulab parse nvidia-smi-topo < a 4 MiB line: %v\nwant exit 1 and the line's first 200 bytes quoted, with its length", r)
		}
	})
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestResultsListSkipsRecordsThatAreNotFiles: a record.json that is a link
// to /dev/zero, or a FIFO, is reported as unreadable; the other records
// are listed.
func TestResultsListSkipsRecordsThatAreNotFiles(t *testing.T) {
	results := t.TempDir()
	writeRecord(t, filepath.Join(results, "good-lab", "20261129-100000-gpu01"), `{"schema": 1, "lab": "good-lab", "started": "2026-11-29T10:00:00Z", "complete": true, "passed": true, "hosts": [{"host": "gpu01", "class": "ok"}]}`)
	zeroDir := filepath.Join(results, "zero-lab", "20261129-110000-gpu02")
	os.MkdirAll(zeroDir, 0o755)
	if err := os.Symlink("/dev/zero", filepath.Join(zeroDir, "record.json")); err != nil {
		t.Fatal(err)
	}
	fifoDir := filepath.Join(results, "fifo-lab", "20261129-120000-gpu03")
	os.MkdirAll(fifoDir, 0o755)
	mkfifo(t, filepath.Join(fifoDir, "record.json"))

	r := runGpulab(t, nil, []string{"HOME=" + t.TempDir()}, "results", "list", "--results", results)
	if r.code != 0 || !strings.Contains(r.stdout, "good-lab") || !strings.Contains(r.stderr, "gpulab: 2 unreadable record(s), first: read ") ||
		!strings.Contains(r.stderr, ": not a regular file: a ") {
		t.Errorf("gpulab results list: %v\nwant good-lab listed and 2 unreadable records", r)
	}
	r = runGpulab(t, nil, []string{"HOME=" + t.TempDir()}, "results", "show", fifoDir)
	if want := "gpulab: read " + filepath.Join(fifoDir, "record.json") + ": not a regular file: a FIFO (named pipe)\n"; r.code != 2 || r.stderr != want {
		t.Errorf("gpulab results show FIFO-RECORD: %v\nwant exit 2 and %q", r, want)
	}
}

func writeRecord(t *testing.T, dir, record string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "record.json"), []byte(record), 0o644); err != nil {
		t.Fatal(err)
	}
}
