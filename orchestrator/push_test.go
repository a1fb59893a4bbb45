package orchestrator_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpulab/gpulab/internal/sshtest"
	"github.com/gpulab/gpulab/internal/testreq"
	"github.com/gpulab/gpulab/orchestrator"
)

func dial(t *testing.T, f *sshtest.Fleet, s *sshtest.Server) *orchestrator.Conn {
	t.Helper()
	c, err := (&orchestrator.Dialer{Keys: &orchestrator.Keyring{}}).Dial(context.Background(), target(f, s))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

func TestPushToCacheDir(t *testing.T) {
	for _, mode := range []struct {
		name   string
		opts   sshtest.Options
		noSFTP bool
		method string
	}{
		{"sftp", sshtest.Options{}, false, "sftp"},
		{"session-forced", sshtest.Options{}, true, "session"},
		{"server-without-sftp", sshtest.Options{NoSFTP: true}, false, "session"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			cache := t.TempDir()
			mode.opts.Env = map[string]string{"XDG_CACHE_HOME": cache}
			f := sshtest.Start(t, 1, mode.opts)
			c := dial(t, f, f.Servers[0])
			spec := orchestrator.PushSpec{Name: "nvmlprobe", Data: payload(300_000), Mode: 0o755, NoSFTP: mode.noSFTP}
			want := filepath.Join(cache, "gpulab", "nvmlprobe")

			first := c.Push(context.Background(), spec)
			if first.Class != orchestrator.OK || first.Path != want || first.Sent != 300_000 || first.Skipped || first.Method != mode.method {
				t.Fatalf("first push = %+v", first)
			}
			checkFile(t, want, spec.Data, 0o755)
			if st, _ := os.Stat(filepath.Dir(want)); st.Mode().Perm() != 0o700 {
				t.Errorf("cache dir mode %v, want 0700", st.Mode().Perm())
			}
			second := c.Push(context.Background(), spec)
			if second.Class != orchestrator.OK || second.Sent != 0 || !second.Skipped {
				t.Errorf("second push sent %d bytes (skipped %v), want 0: %+v", second.Sent, second.Skipped, second)
			}
			// A corrupted copy is replaced.
			if err := os.WriteFile(want, []byte("garbage"), 0o755); err != nil {
				t.Fatal(err)
			}
			third := c.Push(context.Background(), spec)
			if third.Class != orchestrator.OK || third.Sent != 300_000 {
				t.Errorf("push over a corrupted copy = %+v", third)
			}
			checkFile(t, want, spec.Data, 0o755)
			assertOnly(t, filepath.Dir(want), "nvmlprobe")
		})
	}
}

func checkFile(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("%s: %d bytes, %v; want the %d bytes pushed", path, len(got), err, len(data))
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != mode {
		t.Errorf("%s: mode %v, want %v", path, st.Mode().Perm(), mode)
	}
}

// assertOnly fails if dir holds anything but names: no temporary files left.
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("%s holds %v, want only %v (a partial or temporary file was left)", dir, got, names)
	}
}

func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		testreq.Missing(t, "mount tmpfs (needs root): "+strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

func TestPushFailuresLeaveNothing(t *testing.T) {
	f := sshtest.Start(t, 1, sshtest.Options{})
	c := dial(t, f, f.Servers[0])
	for _, noSFTP := range []bool{false, true} {
		full := mountTmpfs(t, "64k")
		r := c.Push(context.Background(), orchestrator.PushSpec{Name: "big", Data: payload(400_000), Dest: filepath.Join(full, "big"), NoSFTP: noSFTP})
		if r.Class == orchestrator.OK || !strings.Contains(strings.ToLower(r.Err), "no space left") && !strings.Contains(r.Err, "failure") {
			t.Errorf("push to a full disk (noSFTP=%v) = %+v, want a failure saying the disk is full", noSFTP, r)
		}
		assertOnly(t, full)
		t.Logf("full disk (noSFTP=%v): %s", noSFTP, r.Err)

		ro := mountTmpfs(t, "1m")
		if out, err := exec.Command("mount", "-o", "remount,ro", ro).CombinedOutput(); err != nil {
			t.Fatalf("remount ro: %v %s", err, out)
		}
		r = c.Push(context.Background(), orchestrator.PushSpec{Name: "x", Data: payload(1000), Dest: filepath.Join(ro, "x"), NoSFTP: noSFTP})
		if r.Class == orchestrator.OK || !strings.Contains(strings.ToLower(r.Err), "read-only") && !strings.Contains(strings.ToLower(r.Err), "permission denied") {
			t.Errorf("push to a read-only filesystem (noSFTP=%v) = %+v, want a failure saying so", noSFTP, r)
		}
		assertOnly(t, ro)
		t.Logf("read-only (noSFTP=%v): %s", noSFTP, r.Err)
	}
	if r := c.Push(context.Background(), orchestrator.PushSpec{Name: "../escape", Data: []byte("x")}); r.Class != orchestrator.Error {
		t.Errorf("push with a path in the name = %+v, want a local error", r)
	}
}

func TestPushAll(t *testing.T) {
	cache := t.TempDir()
	f := sshtest.Start(t, 6, sshtest.Options{Env: map[string]string{"XDG_CACHE_HOME": cache}})
	e := newEngine()
	spec := orchestrator.PushSpec{Name: "p", Data: payload(50_000), Dest: filepath.Join(t.TempDir(), "p-$(id)"), Mode: 0o700}
	hosts, pushes := e.PushAll(context.Background(), targets(f), spec)
	// All six hosts share this machine's filesystem: one wins the upload,
	// and every push must end OK with the file in place and no leftovers.
	for i, p := range pushes {
		if hosts[i].Class != orchestrator.OK || p.Class != orchestrator.OK || p.Path != spec.Dest {
			t.Errorf("%s: %+v %+v", hosts[i].Host, hosts[i], p)
		}
	}
	checkFile(t, spec.Dest, spec.Data, 0o700)
	assertOnly(t, filepath.Dir(spec.Dest), "p-$(id)")
}

func TestPushCompressed(t *testing.T) {
	f := sshtest.Start(t, 1, sshtest.Options{})
	c := dial(t, f, f.Servers[0])
	data := bytes.Repeat([]byte("nvml probe text compresses well "), 30000) // 960 kB
	dest := filepath.Join(t.TempDir(), "probe")
	r := c.Push(context.Background(), orchestrator.PushSpec{Name: "probe", Data: data, Dest: dest, Mode: 0o700, Compress: true})
	if r.Class != orchestrator.OK || r.Method != "session+gzip" || r.Sent >= int64(len(data))/10 {
		t.Fatalf("compressed push = %+v (sent %d of %d)", r, r.Sent, len(data))
	}
	checkFile(t, dest, data, 0o700)
	assertOnly(t, filepath.Dir(dest), "probe")
}

// Push writes only its destination: a directory destination takes the
// file under its own name (as scp) and keeps no temporary; links at the
// destination are refused, never written, compared or chmod-ed through;
// names with control characters are refused; the reported path is where
// the bytes are. Both upload paths (SFTP and a plain session).
func TestPushWritesOnlyItsDestination(t *testing.T) {
	f := sshtest.Start(t, 1, sshtest.Options{})
	c := dial(t, f, f.Servers[0])
	data := payload(10_000)
	for _, noSFTP := range []bool{false, true} {
		name := map[bool]string{false: "sftp", true: "session"}[noSFTP]
		t.Run(name, func(t *testing.T) {
			push := func(dest string, mode os.FileMode) orchestrator.PushResult {
				return c.Push(context.Background(), orchestrator.PushSpec{Name: "probe", Data: data, Dest: dest, Mode: mode, NoSFTP: noSFTP})
			}
			root := t.TempDir()

			// An existing directory: the file goes inside it, twice over.
			dir := filepath.Join(root, "dir")
			os.Mkdir(dir, 0o755)
			for i := range 2 {
				if r := push(dir, 0o755); r.Class != orchestrator.OK || r.Path != filepath.Join(dir, "probe") || r.Skipped != (i == 1) {
					t.Errorf("push %d into a directory = %+v", i+1, r)
				}
			}
			checkFile(t, filepath.Join(dir, "probe"), data, 0o755)
			assertOnly(t, dir, "probe")
			assertOnly(t, root, "dir")

			// d/.. is a directory too: the file goes where it points.
			sub := filepath.Join(root, "up")
			os.MkdirAll(filepath.Join(sub, "d"), 0o755)
			if r := push(filepath.Join(sub, "d", ".."), 0o644); r.Class != orchestrator.OK || r.Path != filepath.Join(sub, "probe") {
				t.Errorf("push to d/.. = %+v", r)
			}
			assertOnly(t, sub, "d", "probe")

			// A link to a directory: refused, the victim untouched.
			victim := filepath.Join(root, "victim")
			os.Mkdir(victim, 0o755)
			os.Symlink(victim, filepath.Join(root, "link"))
			if r := push(filepath.Join(root, "link"), 0o644); r.Class != orchestrator.Error || !strings.Contains(r.Err, "symbolic link") {
				t.Errorf("push to a link to a directory = %+v, want refused", r)
			}
			assertOnly(t, victim)

			// A planted link to a file with the same content: refused, and
			// the victim's mode is not changed through it.
			vfile := filepath.Join(root, "victim-file")
			os.WriteFile(vfile, data, 0o644)
			planted := filepath.Join(root, "dest.txt")
			os.Symlink(vfile, planted)
			if r := push(planted, 0o600); r.Class != orchestrator.Error || r.Skipped {
				t.Errorf("push over a planted link = %+v, want refused", r)
			}
			checkFile(t, vfile, data, 0o644)
			if target, err := os.Readlink(planted); err != nil || target != vfile {
				t.Errorf("the planted link was changed: %q %v", target, err)
			}

			// A newline in the destination: refused before anything runs;
			// the file the split name would reach is untouched.
			os.WriteFile(filepath.Join(root, "keep"), []byte("keep"), 0o644)
			if r := push(root+"/x\n"+root+"/keep", 0o644); r.Class != orchestrator.Error || !strings.Contains(r.Err, "control character") {
				t.Errorf("push to a name with a newline = %+v, want refused", r)
			}
			if got, _ := os.ReadFile(filepath.Join(root, "keep")); string(got) != "keep" {
				t.Errorf("a file outside the destination was overwritten: %q", got)
			}

			// Bidi controls, line separators and a BOM show a name other
			// than the one written: refused in the destination and the name.
			for _, dest := range []string{root + "/notes\u202etxt.sh", root + "/a\u2028b", root + "/\ufeffx", root + "/a\u2066b\u2069"} {
				if r := push(dest, 0o644); r.Class != orchestrator.Error || !strings.Contains(r.Err, "bidi/format character") {
					t.Errorf("push to %q = %+v, want refused", dest, r)
				}
			}
			if r := c.Push(context.Background(), orchestrator.PushSpec{Name: "probe\u202e", Data: data, Dest: root + "/", NoSFTP: noSFTP}); r.Class != orchestrator.Error || !strings.Contains(r.Err, "bad file name") {
				t.Errorf("push of a name holding U+202E = %+v, want refused", r)
			}
			assertOnly(t, root, "dest.txt", "dir", "keep", "link", "up", "victim", "victim-file")

			// A directory reached through a link whose target holds a
			// newline: refused once the host resolves it.
			odd := filepath.Join(root, "odd\ndir")
			os.Mkdir(odd, 0o755)
			os.Symlink(odd, filepath.Join(root, "via"))
			if r := push(filepath.Join(root, "via", "probe"), 0o644); r.Class != orchestrator.Error || !strings.Contains(r.Err, "control character") {
				t.Errorf("push through a link to a directory named with a newline = %+v, want refused", r)
			}
			assertOnly(t, odd)
			bidi := filepath.Join(root, "bidi\u202edir")
			os.Mkdir(bidi, 0o755)
			os.Symlink(bidi, filepath.Join(root, "via2"))
			if r := push(filepath.Join(root, "via2", "probe"), 0o644); r.Class != orchestrator.Error || !strings.Contains(r.Err, "bidi/format character") {
				t.Errorf("push through a link to a directory named with U+202E = %+v, want refused", r)
			}
			assertOnly(t, bidi)

			// A FIFO is no regular file: refused, not read (no hang).
			fifo := filepath.Join(root, "fifo")
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Fatal(err)
			}
			if r := push(fifo, 0o644); r.Class != orchestrator.Error || !strings.Contains(r.Err, "not a regular file") {
				t.Errorf("push to a FIFO = %+v, want refused", r)
			}

			// A directory others may write to and that is not sticky is
			// refused (anyone there could swap the temporary file); a
			// sticky one, as /tmp, is fine.
			open := filepath.Join(root, "open")
			os.Mkdir(open, 0o755)
			os.Chmod(open, 0o777)
			if r := push(open, 0o644); r.Class != orchestrator.Error || !strings.Contains(r.Err, "writable by others and not sticky") {
				t.Errorf("push into a world-writable directory = %+v, want refused", r)
			}
			assertOnly(t, open)
			// So is a private directory below one: anyone could rename
			// the way down and put a link in its place.
			below := filepath.Join(open, "private")
			os.Mkdir(below, 0o700)
			if r := push(below+"/", 0o644); r.Class != orchestrator.Error || !strings.Contains(r.Err, open+", above "+below+", is writable by others and not sticky") {
				t.Errorf("push below a world-writable directory = %+v, want refused", r)
			}
			assertOnly(t, below)
			os.Chmod(open, os.ModeSticky|0o777)
			if r := push(open, 0o644); r.Class != orchestrator.OK {
				t.Errorf("push into a sticky world-writable directory = %+v", r)
			}
			if r := push(below+"/", 0o644); r.Class != orchestrator.OK {
				t.Errorf("push below a sticky world-writable directory = %+v", r)
			}

			// The same content with another mode is sent again, and the
			// mode is on the file renamed into place.
			if r := push(filepath.Join(dir, "probe"), 0o700); r.Class != orchestrator.OK || r.Skipped {
				t.Errorf("push with a new mode = %+v, want sent", r)
			}
			checkFile(t, filepath.Join(dir, "probe"), data, 0o700)
			assertOnly(t, dir, "probe")
		})
	}
}

// Temporary uploads that a killed gpulab or a lost host left behind are
// removed by the next push there: gpulab's own by name, the user's, older
// than an hour; a fresh one (another push under way) and other files stay.
func TestPushRemovesStaleUploads(t *testing.T) {
	for _, noSFTP := range []bool{false, true} {
		cache := t.TempDir()
		f := sshtest.Start(t, 1, sshtest.Options{Env: map[string]string{"XDG_CACHE_HOME": cache}})
		c := dial(t, f, f.Servers[0])
		dir := filepath.Join(cache, "gpulab")
		os.MkdirAll(dir, 0o700)
		old := time.Now().Add(-2 * time.Hour)
		for name, age := range map[string]time.Time{
			".nvmlprobe-v1.gpulab-0123456789ab": old,        // a killed run's
			".other.gpulab-aaaaaaaaaaaa":        time.Now(), // a push under way
			".notours-0123456789ab":             old,
		} {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
				t.Fatal(err)
			}
			os.Chtimes(p, age, age)
		}
		r := c.Push(context.Background(), orchestrator.PushSpec{Name: "nvmlprobe-v2", Data: payload(10_000), NoSFTP: noSFTP})
		if r.Class != orchestrator.OK {
			t.Fatalf("push (noSFTP=%v): %+v", noSFTP, r)
		}
		assertOnly(t, dir, ".notours-0123456789ab", ".other.gpulab-aaaaaaaaaaaa", "nvmlprobe-v2")
	}
}

// A host lost in the middle of an SFTP upload is lost, not a failed
// command; the temporary file it keeps is removed by a later push.
func TestPushHostLostDuringSFTP(t *testing.T) {
	f := sshtest.Start(t, 1, sshtest.Options{})
	s := f.Servers[0]
	c := dial(t, f, s)
	dir := t.TempDir()
	done := make(chan orchestrator.PushResult, 1)
	// The payload goes with the test: other tests here measure the heap.
	t.Cleanup(func() { runtime.GC(); debug.FreeOSMemory() })
	go func() {
		done <- c.Push(context.Background(), orchestrator.PushSpec{Name: "big", Data: payload(96 << 20), Dest: filepath.Join(dir, "big")})
	}()
	// Wait for the upload to be under way: its temporary file has bytes.
	var tmp string
	for deadline := time.Now().Add(time.Minute); tmp == ""; {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if info, err := e.Info(); err == nil && strings.Contains(e.Name(), ".gpulab-") && info.Size() > 0 {
				tmp = filepath.Join(dir, e.Name())
			}
		}
		if tmp == "" && time.Now().After(deadline) {
			t.Fatalf("waited a minute for the upload's temporary file in %s", dir)
		}
		if tmp == "" {
			time.Sleep(10 * time.Millisecond)
		}
	}
	s.Kill()
	var r orchestrator.PushResult
	select {
	case r = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("waited 2 minutes for the push to end after its host was killed")
	}
	if r.Class != orchestrator.Lost || !strings.Contains(r.Err, "the connection was lost") {
		t.Errorf("a host killed mid-upload: %+v, want class lost", r)
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Fatalf("the lost host's temporary file is not there to be cleaned: %v", err)
	}
	// An hour on, the host is back: the next push there removes it.
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(tmp, old, old)
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	c2 := dial(t, f, s)
	if r := c2.Push(context.Background(), orchestrator.PushSpec{Name: "small", Data: payload(1000), Dest: filepath.Join(dir, "small")}); r.Class != orchestrator.OK {
		t.Fatalf("push after the restart: %+v", r)
	}
	assertOnly(t, dir, "small")
}
