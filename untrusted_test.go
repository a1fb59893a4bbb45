package main

import (
	"bytes"
	"context"
	"encoding/json"
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

	"github.com/gpulab/gpulab/internal/sshtest"
	"github.com/gpulab/gpulab/internal/testreq"
	"github.com/gpulab/gpulab/internal/visible"
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

// runGpulab runs the binary with a 6 GB address-space limit (a read that
// never ends fails fast instead of taking the machine's memory) and a
// one-minute safety net against a hang, which fails the test: neither is
// a measurement.
func runGpulab(t *testing.T, stdin io.Reader, env []string, args ...string) gpulabRun {
	t.Helper()
	bin := gpulabBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, "sh", append([]string{"-c", `ulimit -v 6000000; exec "$0" "$@"`, bin}, args...)...)
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

	// A record.md that is a FIFO or a link to /dev/zero: the record is
	// said to be unreadable, and why (it was passed over in silence, the
	// Markdown rebuilt from record.json).
	good := filepath.Join(results, "good-lab", "20261129-100000-gpu01")
	mkfifo(t, filepath.Join(good, "record.md"))
	r = runGpulab(t, nil, []string{"HOME=" + t.TempDir()}, "results", "show", "good-lab/20261129-100000-gpu01", "--results", results)
	if want := "gpulab: the record's Markdown is unreadable: read " + filepath.Join(good, "record.md") + ": not a regular file: a FIFO (named pipe) (--json prints record.json)\n"; r.code != 2 || r.stdout != "" || r.stderr != want {
		t.Errorf("gpulab results show RUN (record.md a FIFO): %v\nwant exit 2 and %q", r, want)
	}
	os.Remove(filepath.Join(good, "record.md"))
	if err := os.Symlink("/dev/zero", filepath.Join(good, "record.md")); err != nil {
		t.Fatal(err)
	}
	r = runGpulab(t, nil, []string{"HOME=" + t.TempDir()}, "results", "show", good)
	if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "record.md: not a regular file: a character device") {
		t.Errorf("gpulab results show RUN (record.md a link to /dev/zero): %v\nwant exit 2, unreadable", r)
	}
	os.Remove(filepath.Join(good, "record.md"))
	r = runGpulab(t, nil, []string{"HOME=" + t.TempDir()}, "results", "show", good)
	if r.code != 0 || !strings.Contains(r.stdout, "# Lab record: ") {
		t.Errorf("gpulab results show RUN (no record.md: the Markdown from record.json): %v", r)
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

// TestExecMemoryPerHost: hosts that print 1.5 MB of binary each (past the
// 1 MiB a result keeps) cost gpulab exec a bounded amount of memory per
// host in every output mode: the peak RSS over the same run of `true`,
// divided by the hosts, stays under 4 MiB (the output kept, as much again
// of garbage-collector headroom, and room for the rest). --json still
// carries each host's output, as encoding/json writes it.
func TestExecMemoryPerHost(t *testing.T) {
	const hosts = 8
	f := sshtest.Start(t, hosts, sshtest.Options{})
	dir := t.TempDir()
	var cfg strings.Builder
	for i, s := range f.Servers {
		fmt.Fprintf(&cfg, "Host g%d\n  HostName %s\n  Port %d\n  User %s\n  IdentityFile %s\n  UserKnownHostsFile %s\n", i+1, s.Addr, s.Port, f.User, f.ClientKey, f.KnownHosts)
	}
	cfgPath := filepath.Join(dir, "ssh_config")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	outs := filepath.Join(dir, "outs")
	os.MkdirAll(outs, 0o755)
	// Each host keeps what it printed, to compare with what gpulab shows.
	binary := `f=` + outs + `/$(echo $SSH_CONNECTION | cut -d' ' -f4); head -c 1500000 /dev/urandom >$f; cat $f`
	env := []string{"HOME=" + dir}
	peak := func(mode []string, command string) (float64, gpulabRun, bool) {
		args := append(append([]string{"exec", "-H", fmt.Sprintf("g[1-%d]", hosts), "-F", cfgPath}, mode...), "--", command)
		r, rss := runGpulabRSS(t, env, args...)
		if r.code != 0 || !strings.Contains(r.stderr, fmt.Sprintf("%d hosts: %d ok", hosts, hosts)) {
			t.Errorf("gpulab %s: %.300s", strings.Join(args, " "), r)
			return 0, r, false
		}
		return rss, r, true
	}
	for _, mode := range [][]string{nil, {"--no-fold"}, {"--json"}} {
		idle, _, ok1 := peak(mode, "true")
		full, r, ok2 := peak(mode, binary)
		if !ok1 || !ok2 {
			continue
		}
		perHost := (full - idle) / hosts
		t.Logf("gpulab exec %v: peak RSS %.1f MiB, %.1f MiB with `true`: %.2f MiB per host", mode, full, idle, perHost)
		if perHost > 4 {
			t.Errorf("gpulab exec %v on %d hosts printing 1.5 MB of binary: peak RSS %.1f MiB, %.1f MiB with `true`: %.1f MiB per host, want at most 4",
				mode, hosts, full, idle, perHost)
		}
		if len(mode) == 1 && mode[0] == "--json" {
			checkJSONOutputs(t, r.stdout, f, outs)
		}
	}
}

// checkJSONOutputs compares exec --json's stdout of each host with the
// first MiB of what the host printed.
func checkJSONOutputs(t *testing.T, doc string, f *sshtest.Fleet, outs string) {
	t.Helper()
	var out struct {
		Summary string `json:"summary"`
		Hosts   []struct {
			Host   string `json:"host"`
			Stdout string `json:"stdout"`
			Steps  []struct {
				StdoutBytes int64 `json:"stdout_bytes"`
				Truncated   bool  `json:"truncated"`
			} `json:"steps"`
		} `json:"hosts"`
	}
	if err := json.Unmarshal([]byte(doc), &out); err != nil || len(out.Hosts) != len(f.Servers) || out.Summary == "" {
		t.Fatalf("exec --json: %v, %d hosts, summary %q", err, len(out.Hosts), out.Summary)
	}
	for i, h := range out.Hosts {
		printed, err := os.ReadFile(filepath.Join(outs, fmt.Sprint(f.Servers[i].Port)))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(string(printed[:1<<20]))
		var wantStdout string
		json.Unmarshal(want, &wantStdout)
		if h.Host != fmt.Sprintf("g%d", i+1) || h.Stdout != wantStdout || h.Steps[0].StdoutBytes != 1500000 || !h.Steps[0].Truncated {
			t.Errorf("exec --json host %d: %s, %d bytes of stdout (%d printed, truncated %v); want g%d and the first MiB of what it printed",
				i, h.Host, len(h.Stdout), h.Steps[0].StdoutBytes, h.Steps[0].Truncated, i+1)
		}
	}
}

// runGpulabRSS runs the binary under GNU time and returns its peak RSS in
// MiB too. The child's own rusage cannot be used: Go starts it with
// vfork, and the kernel counts the test process's peak RSS in the child's
// when it execs.
func runGpulabRSS(t *testing.T, env []string, args ...string) (gpulabRun, float64) {
	t.Helper()
	timeBin := testreq.Tool(t, "time", "GNU time measures the peak RSS of gpulab (apt-get install time)")
	bin := gpulabBinary(t)
	rssFile := filepath.Join(t.TempDir(), "rss")
	c := exec.Command(timeBin, append([]string{"-f", "%M", "-o", rssFile, bin}, args...)...)
	c.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	err := c.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("gpulab %s: %v", strings.Join(args, " "), err)
	}
	kb, err := os.ReadFile(rssFile)
	if err != nil {
		t.Fatalf("time -o: %v", err)
	}
	var rss float64
	fields := strings.Fields(string(kb)) // after "Command exited with non-zero status N", if it did
	if len(fields) == 0 {
		t.Fatalf("time -f %%M wrote nothing")
	}
	if _, err := fmt.Sscan(fields[len(fields)-1], &rss); err != nil {
		t.Fatalf("time -f %%M wrote %q: %v", kb, err)
	}
	return gpulabRun{c.ProcessState.ExitCode(), out.String(), errOut.String()}, rss / 1024
}

// pwned retitles the terminal and turns its text red, printed raw.
const pwned = "\x1b]0;pwned\a\x1b[31m"

// pwnedEscaped is how gpulab shows it.
const pwnedEscaped = `\x1b]0;pwned\a\x1b[31m`

// noRawControls fails t if out holds a control character gpulab should
// have escaped (or a bidi or other invisible one, see visible.Unsafe);
// allowed is raw output that must stay as it is.
func noRawControls(t *testing.T, what, out string, allowed ...string) {
	t.Helper()
	for _, a := range allowed {
		out = strings.ReplaceAll(out, a, "")
	}
	if i := strings.IndexFunc(out, func(r rune) bool { return visible.Unsafe(r) && r != '\n' && r != '\t' }); i >= 0 {
		t.Errorf("%s prints a raw control character: %q", what, out[max(0, i-40):min(len(out), i+40)])
	}
}

// TestNamesFromRecordsAreEscaped: a record whose directory, lab id and
// host names hold terminal escapes is listed, shown and compared with the
// escapes made visible, never sent to the terminal.
func TestNamesFromRecordsAreEscaped(t *testing.T) {
	results := t.TempDir()
	run := filepath.Join(results, "lab"+pwned, "20261129-100000-gpu"+pwned)
	record := map[string]any{"schema": 1, "lab": "lab" + pwned, "name": "Name" + pwned + "\u202eflipped\u2028", "started": "2026-11-29T10:00:00Z", "complete": true,
		"hosts":  []map[string]any{{"host": "gpu" + pwned + "01", "class": "ok", "error": "err" + pwned, "metrics": map[string]any{"tp": 1.5}}},
		"result": map[string]any{"workload": "w" + pwned, "mode": "m" + pwned, "unit": "u" + pwned, "throughput": "tp"}}
	data, _ := json.Marshal(record)
	writeRecord(t, run, string(data))
	env := []string{"HOME=" + t.TempDir()}

	r := runGpulab(t, nil, env, "results", "list", "--results", results)
	if r.code != 0 || !strings.Contains(r.stdout, "lab"+pwnedEscaped) || !strings.Contains(r.stdout, "gpu"+pwnedEscaped+"01") {
		t.Errorf("gpulab results list: %v\nwant the lab and host with their escapes shown", r)
	}
	noRawControls(t, "results list", r.stdout+r.stderr)

	r = runGpulab(t, nil, env, "results", "show", run)
	if r.code != 0 || !strings.Contains(r.stdout, "Name"+pwnedEscaped+`\u202eflipped\u2028`) {
		t.Errorf("gpulab results show: %v", r)
	}
	noRawControls(t, "results show (no record.md)", r.stdout+r.stderr)
	if err := os.WriteFile(filepath.Join(run, "record.md"), []byte("# Lab record: "+pwned+"\n\n| a | b |\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runGpulab(t, nil, env, "results", "show", run)
	if r.code != 0 || !strings.Contains(r.stdout, "# Lab record: "+pwnedEscaped+"\n\n| a | b |\n") {
		t.Errorf("gpulab results show (record.md): %v", r)
	}
	noRawControls(t, "results show (record.md)", r.stdout+r.stderr)

	other := filepath.Join(t.TempDir(), "again") // a run is compared with another, never itself
	if err := os.CopyFS(other, os.DirFS(run)); err != nil {
		t.Fatal(err)
	}
	r = runGpulab(t, nil, env, "results", "compare", run, other)
	if r.code != 0 || !strings.Contains(r.stdout, "w"+pwnedEscaped) {
		t.Errorf("gpulab results compare: %v", r)
	}
	noRawControls(t, "results compare", r.stdout+r.stderr)
	r = runGpulab(t, nil, env, "results", "compare", run, run)
	if r.code != 2 || !strings.Contains(r.stderr, "are the same run") {
		t.Errorf("gpulab results compare RUN RUN: %v", r)
	}
	noRawControls(t, "results compare (refused)", r.stdout+r.stderr)

	r = runGpulab(t, nil, env, "results", "list", "--results", results, "--json")
	var refs []struct {
		Record struct {
			Lab string `json:"lab"`
		} `json:"record"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &refs); err != nil || len(refs) != 1 || refs[0].Record.Lab != "lab"+pwned {
		t.Errorf("gpulab results list --json: %v, %v; want the lab id as it is, JSON-escaped", err, r)
	}
	noRawControls(t, "results list --json", r.stdout+r.stderr)
}

// TestInventoryStringsAreEscaped: a host name with control characters is
// refused at its line, and so are an address and a user holding them,
// with the characters escaped in the errors.
func TestInventoryStringsAreEscaped(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("[[host]]\nname = \"gpu01\"\n\n[[host]]\nname = \"gpu\\u001b]0;pwned\\u0007\"\n"), 0o644)
	r := runGpulab(t, nil, []string{"HOME=" + dir}, "inventory", "check", bad)
	if r.code != 2 || !strings.Contains(r.stdout+r.stderr, bad+":5:") {
		t.Errorf("gpulab inventory check (a name with ESC): %v\nwant exit 2 and the name's line (%s:5)", r, bad)
	}
	noRawControls(t, "inventory check", r.stdout+r.stderr)

	odd := filepath.Join(dir, "odd.toml")
	os.WriteFile(odd, []byte("[[host]]\nname = \"gpu01\"\naddress = \"10.0.0.1\\u001b]0;pwned\\u0007\\u001b[31m\"\nuser = \"root\\u009b31m\"\n"), 0o644)
	for _, args := range [][]string{{"inventory", "check", odd}, {"inventory", "list", "--inventory", odd}} {
		r = runGpulab(t, nil, []string{"HOME=" + dir}, args...)
		if r.code == 0 || !strings.Contains(r.stderr, odd+`:3:1: host "gpu01": address "10.0.0.1`+pwnedEscaped+`" holds characters a host name cannot ('\x1b', ';', '\a'): OpenSSH refuses it too`) ||
			!strings.Contains(r.stderr, odd+`:4:1: host "gpu01": user "root\u009b31m" holds characters a user name cannot ('\u009b'): OpenSSH refuses it too`) {
			t.Errorf("gpulab %s: %v\nwant the address and user refused at their lines, escaped", strings.Join(args, " "), r)
		}
		noRawControls(t, strings.Join(args, " "), r.stdout+r.stderr)
	}
}

// TestExecEscapesWhatHostsSayButNotTheirOutput: a host that reports its
// command killed by a "signal" named with terminal escapes gets them
// escaped in exec's headers, errors and summary; the command's own output
// (colours here) is printed as the host sent it, in every text mode.
func TestExecEscapesWhatHostsSayButNotTheirOutput(t *testing.T) {
	const green = "\x1b[32mgreen\x1b[0m\n"
	dir := t.TempDir()
	key, _ := sshtest.WriteKey(t, dir)
	reply := sshtest.Reply{Stdout: []byte(green), Signal: "TERM" + pwned, SignalError: "bye" + pwned}
	var cfg, known strings.Builder
	for i := range 2 {
		f := sshtest.StartFake(t, reply)
		fmt.Fprintf(&cfg, "Host evil%d\n  HostName %s\n  Port %d\n  User gpulab\n  IdentityFile %s\n  UserKnownHostsFile %s\n", i+1, f.Addr, f.Port, key, filepath.Join(dir, "known_hosts"))
		known.WriteString(f.KnownHostsLine() + "\n")
	}
	os.WriteFile(filepath.Join(dir, "known_hosts"), []byte(known.String()), 0o600)
	cfgPath := filepath.Join(dir, "ssh_config")
	os.WriteFile(cfgPath, []byte(cfg.String()), 0o600)
	env := []string{"HOME=" + dir, "SSH_AUTH_SOCK="}
	for _, tc := range []struct {
		mode   []string
		header string
	}{
		{nil, "---------------- evil[1-2] (2 hosts): killed (SIGTERM" + pwnedEscaped + ")\n"},
		{[]string{"--no-fold"}, "evil1: [killed SIGTERM" + pwnedEscaped + "] killed by signal TERM" + pwnedEscaped + "\n"},
		{[]string{"-H", "evil1"}, "[killed SIGTERM" + pwnedEscaped + "] killed by signal TERM" + pwnedEscaped + "\n"},
	} {
		args := append([]string{"exec", "-H", "evil[1-2]", "-F", cfgPath}, tc.mode...)
		r := runGpulab(t, nil, env, append(args, "--", "anything")...)
		if r.code != 1 || !strings.Contains(r.stdout, tc.header) || !strings.Contains(r.stdout, green) {
			t.Errorf("gpulab exec %v: %v\nwant %q and the output as it was sent", tc.mode, r, tc.header)
		}
		noRawControls(t, fmt.Sprintf("exec %v", tc.mode), r.stdout+r.stderr, green)
	}
	r := runGpulab(t, nil, env, "exec", "-H", "gpu"+pwned, "-F", cfgPath, "--", "true")
	if r.code != 2 {
		t.Errorf("gpulab exec -H NAME-WITH-ESC: %v, want exit 2", r)
	}
	noRawControls(t, "exec -H NAME-WITH-ESC", r.stdout+r.stderr)
}
