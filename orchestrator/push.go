package orchestrator

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pkg/sftp"

	"github.com/gpulab/gpulab/internal/clip"
	"github.com/gpulab/gpulab/internal/visible"
)

// PushSpec is a file to place on hosts.
type PushSpec struct {
	Name string // file name; the destination's base name
	Data []byte
	Mode os.FileMode // 0 means 0600
	// Dest is the remote path. Empty means Name in gpulab's private cache
	// directory, ${XDG_CACHE_HOME:-$HOME/.cache}/gpulab, created 0700.
	Dest string
	// NoSFTP forces the plain-session upload (cat into a temporary file).
	NoSFTP bool
	// Compress sends the file gzipped and unpacks it on the host, when the
	// host has gzip (through a plain session; SFTP cannot unpack). Worth it
	// for binaries: the probe is 3.7 MB, 1.3 MB gzipped.
	Compress bool
	// Gzipped, when set, is Data already gzipped (see Gzip): pushing one
	// file to many hosts then compresses it once, not once per host.
	Gzipped []byte
	// SHA256, when set, is Data's sha256 in hex, computed once by the
	// caller that pushes one file to many hosts (a host checks what it
	// received against it, so a wrong one fails the push, never passes it).
	SHA256 string
}

// Gzip compresses data for PushSpec.Gzipped.
func Gzip(data []byte) []byte {
	var z bytes.Buffer
	w, _ := gzip.NewWriterLevel(&z, gzip.DefaultCompression)
	w.Write(data)
	w.Close()
	return z.Bytes()
}

// Sum returns the data's sha256, hex: SHA256 when set.
func (p PushSpec) Sum() string {
	if p.SHA256 != "" {
		return p.SHA256
	}
	s := sha256.Sum256(p.Data)
	return hex.EncodeToString(s[:])
}

// PushResult is a push's outcome on one host.
type PushResult struct {
	Path     string        `json:"path"`    // absolute remote path
	Sent     int64         `json:"sent"`    // bytes of file data sent
	Skipped  bool          `json:"skipped"` // the file was already there, same sha256
	Method   string        `json:"method"`  // "sftp", "session" or "" when skipped
	Class    Class         `json:"class"`   // OK, or why it failed
	Err      string        `json:"error,omitempty"`
	Duration time.Duration `json:"duration_ns"`
}

// Push places spec's file on the host: into a temporary file in the
// destination directory, flushed to disk, checked by sha256 on the host,
// given its mode and renamed into place atomically. When the destination
// already has the same sha256 and mode, nothing is sent. A failed push
// leaves no partial file.
//
// Where it goes: a destination that is a directory (or ends in /) means
// the file goes inside it under its own name, as with scp. A destination
// that is a symbolic link, or not a regular file, is refused: nothing is
// written, compared or chmod-ed through a link. Names and destinations
// holding control characters, or the invisible ones that reorder text
// (visible.Unsafe: bidi controls, line separators, a BOM), are refused. The path reported is where the bytes
// are, with the directory's links resolved. SFTP is used where the server
// offers it.
//
// Through Kubernetes, a push with no destination goes into the node
// pod's own scratch directory (kubeLink.push); one with a destination
// must name an absolute path on the host, and is placed as over a
// session without SFTP.
func (c *Conn) Push(ctx context.Context, spec PushSpec) PushResult {
	if c.kube != nil && spec.Dest == "" {
		return c.kube.push(ctx, c, spec)
	}
	start := time.Now()
	res := PushResult{}
	fail := func(err *pushError) PushResult {
		res.Class, res.Err, res.Duration = err.class, err.msg, time.Since(start)
		return res
	}
	if err := CheckPushName(spec.Name); err != nil {
		return fail(pushErr(Error, "push: %v", err))
	}
	if err := CheckPushDest(spec.Dest); err != nil {
		return fail(pushErr(Error, "push: %v", err))
	}
	if c.kube != nil {
		if !path.IsAbs(spec.Dest) {
			return fail(pushErr(Error, "push: %s: a node reached through Kubernetes has no home directory: give an absolute destination", spec.Dest))
		}
		spec.NoSFTP = true
	}
	mode := spec.Mode.Perm()
	if mode == 0 {
		mode = 0o600
	}
	sum := spec.Sum()
	d, err := c.pushPrepare(ctx, spec)
	if err != nil {
		return fail(err)
	}
	dest := path.Join(d.dir, d.base)
	if !hasControl(d.dir) { // a name that could rewrite the screen is never reported
		res.Path = dest
	}
	if err := d.refused(dest); err != nil {
		return fail(err)
	}
	if d.state == "file" && d.sum == sum {
		if m, err := strconv.ParseUint(d.perm, 8, 32); err == nil && os.FileMode(m) == mode {
			res.Skipped = true // same content and mode: nothing to send
			res.Class, res.Duration = OK, time.Since(start)
			return res
		}
	}
	res.Sent, res.Method, err = c.pushUpload(ctx, spec, d, dest, mode, sum)
	if err != nil {
		return fail(err)
	}
	res.Class, res.Duration = OK, time.Since(start)
	return res
}

// pushError is why a push failed: its class and the message that says so.
type pushError struct {
	class Class
	msg   string
}

func pushErr(class Class, format string, args ...any) *pushError {
	return &pushError{class, fmt.Sprintf(format, args...)}
}

// pushDest is what the host said of the destination before the upload:
// the directory (links resolved) and the file's name in it; state is
// none, file, symlink or special; sum and perm are an existing file's
// sha256 and mode; gzip whether the host can unpack; dirMode the
// directory's mode.
type pushDest struct {
	dir, base, state, sum, perm, dirMode string
	gzip                                 bool
	parents                              string // "MODE DIR\n" for each directory above dir
}

// pushPrepare is one round trip: make the directory, resolve it, look at
// what is at the destination. Fields end in NUL, so no name can split
// them.
func (c *Conn) pushPrepare(ctx context.Context, spec PushSpec) (pushDest, *pushError) {
	var prep string
	if spec.Dest == "" {
		prep = `d="${XDG_CACHE_HOME:-$HOME/.cache}/gpulab"; b=` + Quote(spec.Name) + `; mkdir -p -- "$d" && chmod 700 -- "$d" || exit`
	} else {
		dir, base := path.Split(spec.Dest)
		if base == "" { // "dir/": inside it
			base = spec.Name
		}
		if dir == "" {
			dir = "."
		}
		prep = `d=` + Quote(dir) + `; b=` + Quote(base) + `; n=` + Quote(spec.Name) + `
if [ -d "$d/$b" ] && [ ! -L "$d/$b" ]; then d="$d/$b"; b="$n"; fi
[ -d "$d" ] || mkdir -p -m 700 -- "$d" || exit`
	}
	prep += `
cd -P -- "$d" || exit
pwd -P && printf '\000%s\000' "$b"
if [ -L "$b" ]; then printf 'symlink\000\000\000'
elif [ -e "$b" ] && [ ! -f "$b" ]; then printf 'special\000\000\000'
elif [ -f "$b" ]; then printf 'file\000%s\000%s\000' "$(sha256sum -- "$b" 2>/dev/null | cut -d' ' -f1)" "$(stat -c %a -- "$b" 2>/dev/null)"
else printf 'none\000\000\000'; fi
if command -v gzip >/dev/null 2>&1; then printf 'gzip\000'; else printf 'nogzip\000'; fi
printf '%s\000' "$(stat -c %a . 2>/dev/null)"
p=$(pwd -P); while [ "$p" != / ]; do p=$(dirname -- "$p"); printf '%s %s\n' "$(stat -c %a -- "$p" 2>/dev/null)" "$p"; done; printf '\000'`
	r := c.Run(ctx, "push: prepare", prep, RunOptions{Timeout: c.Target.CommandTimeout, Inactivity: c.Target.InactivityTimeout})
	if r.Class != OK {
		return pushDest{}, pushErr(r.Class, "push: prepare %s: %s", displayDest(spec), failure(r))
	}
	f := strings.Split(string(r.Stdout), "\x00")
	if len(f) < 9 {
		return pushDest{}, pushErr(Exit, "push: prepare %s: unexpected answer %q", displayDest(spec), r.Stdout)
	}
	return pushDest{dir: strings.TrimSuffix(f[0], "\n"), base: f[1], state: f[2], sum: f[3], perm: f[4], gzip: f[5] == "gzip", dirMode: f[6], parents: f[7]}, nil
}

// refused says why nothing may be written at the destination, if so.
func (d pushDest) refused(dest string) *pushError {
	if hasControl(d.dir) {
		return pushErr(Error, "push: destination directory %q (links resolved) holds a control character or a bidi/format character: refused", d.dir)
	}
	switch d.state {
	case "symlink":
		return pushErr(Error, "push: %s is a symbolic link: gpulab never writes, compares or chmods through a link; push to the path it points to", dest)
	case "special":
		return pushErr(Error, "push: %s exists and is not a regular file: refused", dest)
	}
	// In a directory others may write to and that is not sticky, anyone
	// could swap the temporary file for a link between the upload and the
	// rename: no push there (/tmp is sticky; a shared drop directory is not).
	if dm, err := strconv.ParseUint(d.dirMode, 8, 32); err == nil && dm&0o002 != 0 && dm&0o1000 == 0 {
		return pushErr(Error, "push: %s is writable by others and not sticky (mode %s): anyone could swap the file while gpulab writes it; push to a private directory", d.dir, d.dirMode)
	}
	// So is a directory above it: anyone could rename the way down and
	// put a link in its place between the check and the upload.
	for _, p := range strings.Split(strings.TrimSuffix(d.parents, "\n"), "\n") {
		mode, dir, _ := strings.Cut(p, " ")
		if dm, err := strconv.ParseUint(mode, 8, 32); err == nil && dm&0o002 != 0 && dm&0o1000 == 0 {
			return pushErr(Error, "push: %s, above %s, is writable by others and not sticky (mode %s): anyone could swap the way down while gpulab writes; push to a private directory", dir, d.dir, mode)
		}
	}
	return nil
}

// pushFinalize is the script that checks the uploaded temporary file and
// renames it into place. The mode is set on the temporary file, before
// the rename (over the open SFTP handle, or by chmod after checking it is
// still our file, not a link); the rename replaces what is at the
// destination (mv -T: never into a directory or a link's target), after
// checking it is still no link.
func pushFinalize(dir, tmp, dest, sum string, mode os.FileMode, chmod bool) string {
	ch := ""
	if chmod {
		ch = fmt.Sprintf(`chmod %o "$t" && `, mode)
	}
	return staleUploads(dir) + fmt.Sprintf(`t=%s; f=%s; if [ -L "$t" ] || [ ! -f "$t" ]; then rm -f -- "$t"; echo "the temporary file $t was swapped during the push: refused" >&2; exit 6; fi
s=$(sha256sum -- "$t" | cut -d' ' -f1); if [ "$s" != %s ]; then rm -f -- "$t"; echo "checksum mismatch after upload: got $s" >&2; exit 3; fi
if [ -L "$f" ] || { [ -e "$f" ] && [ ! -f "$f" ]; }; then rm -f -- "$t"; echo "$f became a link or a special file during the push: refused" >&2; exit 5; fi
%s{ mv -fT -- "$t" "$f" 2>/dev/null || { [ ! -d "$f" ] && mv -f -- "$t" "$f"; }; } || { rm -f -- "$t"; exit 4; }`,
		Quote(tmp), Quote(dest), sum, ch)
}

// pushUpload sends the file into a temporary file beside dest, over SFTP
// where the server offers it (and the file goes uncompressed), else
// through a session into a file created exclusively, then finalizes it.
// It returns the bytes sent and the method.
func (c *Conn) pushUpload(ctx context.Context, spec PushSpec, d pushDest, dest string, mode os.FileMode, sum string) (int64, string, *pushError) {
	tmp := path.Join(d.dir, "."+d.base[:clip.CutAt(d.base, 160)]+".gpulab-"+randomSuffix())
	var sent atomic.Int64
	payload, unpack := spec.Data, "cat"
	if spec.Compress && d.gzip {
		if spec.Gzipped == nil {
			spec.Gzipped = Gzip(spec.Data)
		}
		payload, unpack = spec.Gzipped, "gzip -dc"
		spec.NoSFTP = true
	}
	if !spec.NoSFTP {
		err := c.sftpUpload(tmp, spec.Data, mode, &sent)
		switch {
		case err == nil:
			fr := c.Run(ctx, "push: verify", pushFinalize(d.dir, tmp, dest, sum, mode, false), RunOptions{Timeout: c.Target.CommandTimeout})
			if fr.Class != OK {
				return sent.Load(), "sftp", pushErr(fr.Class, "push: verify %s: %s", dest, failure(fr))
			}
			return sent.Load(), "sftp", nil
		case c.lostDuring(err):
			// Its temporary file stays on the host: the next push there
			// removes it (staleUploads).
			return sent.Load(), "", pushErr(Lost, "push: upload %s: the connection was lost: %v", dest, err)
		case err != errNoSFTP:
			return sent.Load(), "", pushErr(Exit, "push: upload %s: %v%s", dest, err, c.diagnose(ctx, d.dir, len(spec.Data)))
		}
	}
	// No SFTP: stream the file through a session into the temporary
	// file, created exclusively (noclobber).
	line := fmt.Sprintf(`umask 077; set -C; t=%s; trap 'rm -f -- "$t"' EXIT; %s > "$t" && { sync -- "$t" 2>/dev/null || sync; } && trap - EXIT && %s`, Quote(tmp), unpack, pushFinalize(d.dir, tmp, dest, sum, mode, true))
	counted := &countingReader{r: bytes.NewReader(payload), n: &sent}
	r := c.Run(ctx, "push: upload", line, RunOptions{Raw: true, Stdin: counted, Timeout: c.Target.CommandTimeout})
	method := "session"
	if c.kube != nil {
		method = "exec"
	}
	if unpack != "cat" {
		method += "+gzip"
	}
	if r.Class != OK {
		return sent.Load(), method, pushErr(r.Class, "push: upload %s: %s", dest, failure(r))
	}
	return sent.Load(), method, nil
}

// staleAge is how old a temporary upload of gpulab's must be for a later
// push to take it for one left behind (gpulab killed, the host lost
// mid-upload): older than any push's command timeout.
const staleAge = 60 * time.Minute

// staleUploads is the shell that removes, from dir, the temporary files
// gpulab's pushes left behind: named as Push names them
// (.NAME.gpulab-<12 hex>), the user's own, regular files, older than
// staleAge. A failure to remove one never fails the push.
func staleUploads(dir string) string {
	return fmt.Sprintf(`find %s -maxdepth 1 -type f -name '.*.gpulab-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]' -user "$(id -u)" -mmin +%d -exec rm -f -- {} + 2>/dev/null; `,
		Quote(dir), int(staleAge.Minutes()))
}

// lostDuring says whether an upload's error is the connection's end: the
// transport is gone, or the error is an end of stream or of the socket
// (a write the peer reset) and the transport goes within a few seconds
// (its reader notices after the SFTP channel).
func (c *Conn) lostDuring(err error) bool {
	if !c.alive() {
		return true
	}
	ended := false
	for _, end := range []error{io.EOF, io.ErrUnexpectedEOF, sftp.ErrSSHFxConnectionLost, net.ErrClosed, syscall.ECONNRESET, syscall.EPIPE} {
		ended = ended || errors.Is(err, end)
	}
	if !ended {
		return false
	}
	select {
	case <-c.dead:
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}

// CheckPushName says why name cannot be a pushed file's name (PushSpec.Name),
// or returns nil: it must be one path element, not "." or "..", and hold
// no control character nor an invisible one that reorders text
// (visible.Unsafe). Push checks it; a caller checks it first to refuse a
// bad name once rather than once per host.
func CheckPushName(name string) error {
	switch {
	case strings.ContainsAny(name, "/\x00") || name == "" || name == "." || name == "..":
		return fmt.Errorf("bad file name %q", name)
	case hasControl(name):
		return fmt.Errorf("bad file name %q: it holds a control character or a bidi/format character", name)
	}
	return nil
}

// CheckPushDest says why dest cannot be a push destination
// (PushSpec.Dest), or returns nil: it holds a control character or an
// invisible one that reorders text (visible.Unsafe).
func CheckPushDest(dest string) error {
	if hasControl(dest) {
		return fmt.Errorf("destination %q holds a control character or a bidi/format character: refused", dest)
	}
	return nil
}

// hasControl reports whether s holds a character that gpulab never sends
// in a path: a control character, or an invisible one that reorders or
// hides text (visible.Unsafe).
func hasControl(s string) bool { return strings.ContainsFunc(s, visible.Unsafe) }

func displayDest(spec PushSpec) string {
	if spec.Dest == "" {
		return "the cache directory"
	}
	return spec.Dest
}

var errNoSFTP = fmt.Errorf("the server offers no sftp subsystem")

// diagnose explains a failed SFTP write, since sftp servers answer a full
// disk or a read-only filesystem with a bare "Failure".
func (c *Conn) diagnose(ctx context.Context, dir string, size int) string {
	line := `d=` + Quote(dir) + `; t="$d/.gpulab-probe.$$"; (: > "$t") 2>&1 | sed 's/^[^:]*: [0-9]*: //' || true; rm -f -- "$t"; df -Pk -- "$d" | awk 'NR==2 {print $4}'`
	r := c.Run(ctx, "push: diagnose", line, RunOptions{Timeout: 10 * time.Second})
	if r.Class != OK {
		return ""
	}
	out := strings.Split(strings.TrimSpace(string(r.Stdout)), "\n")
	if len(out) > 1 {
		return " (on the host: " + strings.Join(out[:len(out)-1], "; ") + ")"
	}
	var freeKiB int
	if _, err := fmt.Sscan(out[0], &freeKiB); err == nil && freeKiB*1024 < size {
		return fmt.Sprintf(" (on the host: no space left on device: %d KiB free in %s, the file needs %d KiB)", freeKiB, dir, (size+1023)/1024)
	}
	return ""
}

// sftpUpload writes data to a new file tmp (never an existing one), flushes
// it to disk where the server supports fsync, and removes it on failure.
func (c *Conn) sftpUpload(tmp string, data []byte, mode os.FileMode, sent *atomic.Int64) (err error) {
	client, err := sftp.NewClient(c.client)
	if err != nil {
		return errNoSFTP
	}
	defer client.Close()
	f, err := client.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = client.Remove(tmp)
		}
	}()
	if err := f.Chmod(mode); err != nil { // over the handle: never through a path
		f.Close()
		return err
	}
	if _, err := f.ReadFrom(&countingReader{r: bytes.NewReader(data), n: sent}); err != nil {
		f.Close()
		return err
	}
	if _, ok := client.HasExtension("fsync@openssh.com"); ok {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// PushAll pushes spec to every target, within the engine's window, and
// returns each host's result and push outcome in target order.
func (e *Engine) PushAll(ctx context.Context, targets []Target, spec PushSpec) ([]HostResult, []PushResult) {
	pushes := make([]PushResult, len(targets))
	spec.SHA256 = spec.Sum() // once for every host
	hosts := e.ForEach(ctx, targets, nil, func(i int, _ Target, conn *Conn, hr *HostResult) {
		p := conn.Push(ctx, spec)
		pushes[i] = p
		hr.Class, hr.Err = p.Class, p.Err
	})
	for i, h := range hosts {
		if pushes[i] == (PushResult{}) {
			pushes[i] = PushResult{Class: h.Class, Err: h.Err}
		}
	}
	return hosts, pushes
}

// failure is what a failed step said: its standard error and its own
// error, apart ("…was stopped; killed by signal TERM", where they ran
// together).
func failure(r Result) string {
	parts := []string{}
	if e := strings.TrimSpace(string(r.Stderr)); e != "" {
		parts = append(parts, e)
	}
	if r.Err != "" {
		parts = append(parts, r.Err)
	}
	return strings.Join(parts, "; ")
}
