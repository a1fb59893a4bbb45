package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"mvdan.cc/sh/v3/interp"
)

// Home is the simulated user's home directory on every simulated host.
const Home = "/home/gpulab"

// vfs is one simulated host's file system: a private temporary directory
// that stands for "/", reached only through an os.Root, so that no path a
// user types (.., absolute links, /etc/passwd) leaves it. /dev/null and the
// /dev/std* names are served here, never from the operator's /dev.
//
// The tree is made on first use: a fleet of 1,000 hosts starts without
// 10,000 mkdirs, and a command that touches no file (nvidia-smi) never
// makes it.
type vfs struct {
	dir      string // the real directory behind the root, for the probe's exec
	hostname string
	empty    string // a fleet's empty directory: the root if the tree cannot be made

	once  sync.Once
	mu    sync.Mutex // guards root and err for usage, beside once
	root  *os.Root
	err   error
	used  atomic.Int64 // bytes written, an upper bound of the tree's size (charge)
	fleet *disk        // the fleet's disk, shared by its hosts (nil: none)
}

func newVFS(dir, hostname, empty string) *vfs {
	return &vfs{dir: dir, hostname: hostname, empty: empty}
}

// r is the tree's root, made on first use. If it cannot be made (a full
// disk), the host's file system is an empty read-only directory and every
// write fails, as on a host whose disk failed; the error stays in v.err.
func (v *vfs) r() *os.Root {
	v.once.Do(func() {
		root, err := v.make()
		if err != nil {
			root, _ = os.OpenRoot(v.empty)
		}
		v.mu.Lock()
		v.root, v.err = root, err
		v.mu.Unlock()
	})
	return v.root
}

// make builds the host's tree: a home, a sticky /tmp, and the few files
// a GPU host answers from.
func (v *vfs) make() (*os.Root, error) {
	if err := os.Mkdir(v.dir, 0o700); err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(v.dir)
	if err != nil {
		return nil, err
	}
	for _, d := range []struct {
		name string
		mode fs.FileMode
	}{{"home/gpulab", 0o700}, {"tmp", 0o777 | fs.ModeSticky}, {"etc/containerd", 0o755}, {"etc/cdi", 0o755}, {"proc/driver/nvidia", 0o755}} {
		if err := r.MkdirAll(d.name, 0o755); err != nil {
			r.Close()
			return nil, err
		}
		if err := r.Chmod(d.name, d.mode); err != nil {
			r.Close()
			return nil, err
		}
	}
	for name, data := range map[string]string{
		"etc/hostname":               v.hostname + "\n",
		"etc/os-release":             osRelease,
		"proc/driver/nvidia/version": nvidiaVersion,
		"etc/containerd/config.toml": containerdConfig,
		"etc/cdi/nvidia.yaml":        cdiSpec(),
	} {
		if err := r.WriteFile(name, []byte(data), 0o444); err != nil {
			r.Close()
			return nil, err
		}
		v.used.Add(int64(len(data)) + entryCost)
	}
	return r, nil
}

// The files a DGX OS 6 (Ubuntu 22.04) host with driver 535.129.03 holds.
const (
	osRelease = `PRETTY_NAME="Ubuntu 22.04.3 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
VERSION="22.04.3 LTS (Jammy Jellyfish)"
VERSION_CODENAME=jammy
ID=ubuntu
ID_LIKE=debian
HOME_URL="https://www.ubuntu.com/"
SUPPORT_URL="https://help.ubuntu.com/"
BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"
PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"
UBUNTU_CODENAME=jammy
`
	nvidiaVersion = `NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  Thu Oct 19 18:56:32 UTC 2023
GCC version:  gcc version 11.4.0 (Ubuntu 11.4.0-1ubuntu1~22.04) 
`
)

// containerdConfig is containerd's config on a GPU node after
// `nvidia-ctk runtime configure --runtime=containerd --set-as-default`
// (the GPU Operator's toolkit writes the same): the nvidia runtime, default.
const containerdConfig = `version = 2

[plugins]

  [plugins."io.containerd.grpc.v1.cri"]

    [plugins."io.containerd.grpc.v1.cri".containerd]
      default_runtime_name = "nvidia"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes]

        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
          privileged_without_host_devices = false
          runtime_engine = ""
          runtime_root = ""
          runtime_type = "io.containerd.runc.v2"

          [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
            BinaryName = "/usr/bin/nvidia-container-runtime"
`

// cdiSpec is the CDI spec `nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`
// writes for eight GPUs, cut to the device nodes (the real one also lists
// the driver's libraries and binaries to mount).
func cdiSpec() string {
	var b strings.Builder
	b.WriteString("---\ncdiVersion: 0.5.0\ncontainerEdits:\n  deviceNodes:\n  - path: /dev/nvidia-modeset\n  - path: /dev/nvidia-uvm\n  - path: /dev/nvidia-uvm-tools\n  - path: /dev/nvidiactl\ndevices:\n")
	for i := 0; i < 8; i++ {
		fmt.Fprintf(&b, "- containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia%d\n  name: \"%d\"\n", i, i)
	}
	b.WriteString("- containerEdits:\n    deviceNodes:\n")
	for i := 0; i < 8; i++ {
		fmt.Fprintf(&b, "    - path: /dev/nvidia%d\n", i)
	}
	b.WriteString("  name: all\nkind: nvidia.com/gpu\n")
	return b.String()
}

// rel turns a simulated absolute (or, with dir, relative) path into the
// name os.Root takes: "." for "/", no leading slash.
func rel(dir, p string) string {
	if !path.IsAbs(p) {
		p = path.Join(dir, p)
	}
	p = path.Clean(p)
	if p == "/" {
		return "."
	}
	return strings.TrimPrefix(p, "/")
}

// abs is the simulated absolute path of p seen from dir.
func abs(dir, p string) string {
	if !path.IsAbs(p) {
		p = path.Join(dir, p)
	}
	return path.Clean(p)
}

// close closes the root; the fleet removes the trees.
func (v *vfs) close() error {
	v.once.Do(func() {}) // never made now
	if v.root == nil {
		return nil
	}
	return v.root.Close()
}

// devNull reads as empty and swallows writes.
type devNull struct{}

func (devNull) Read([]byte) (int, error)          { return 0, io.EOF }
func (devNull) Write(p []byte) (int, error)       { return len(p), nil }
func (devNull) Close() error                      { return nil }
func (devNull) ReadAt([]byte, int64) (int, error) { return 0, io.EOF }

// nopCloser keeps the session's streams open when a command names them.
type nopCloser struct {
	io.Reader
	io.Writer
}

func (nopCloser) Close() error { return nil }

// open is the interpreter's open handler: every redirect and every file a
// simulated tool reads or writes comes through here.
func (v *vfs) open(ctx context.Context, name string, flag int, perm fs.FileMode) (io.ReadWriteCloser, error) {
	hc := interp.HandlerCtx(ctx)
	p := abs(hc.Dir, name)
	switch p {
	case "/dev/null":
		return devNull{}, nil
	case "/dev/stdin", "/dev/fd/0":
		return nopCloser{Reader: hc.Stdin}, nil
	case "/dev/stdout", "/dev/fd/1":
		return nopCloser{Writer: hc.Stdout}, nil
	case "/dev/stderr", "/dev/fd/2":
		return nopCloser{Writer: hc.Stderr}, nil
	}
	if strings.HasPrefix(p, "/dev/") && flag&(os.O_WRONLY|os.O_RDWR) != 0 {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EACCES}
	}
	if flag&os.O_CREATE != 0 {
		if err := v.created(); err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
	}
	f, err := v.r().OpenFile(rel(hc.Dir, name), flag, perm)
	if err != nil {
		return nil, cleanPathErr(name, err)
	}
	return v.writable(f, flag), nil
}

// cleanPathErr keeps the real directory behind the root out of messages:
// the simulated host's paths are all the user ever sees.
func cleanPathErr(name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		e := pe.Err
		if strings.Contains(e.Error(), "escapes from parent") || strings.Contains(e.Error(), "path escapes") {
			e = syscall.EACCES
		}
		return &fs.PathError{Op: pe.Op, Path: name, Err: e}
	}
	return err
}

func (v *vfs) stat(ctx context.Context, name string, follow bool) (fs.FileInfo, error) {
	hc := interp.HandlerCtx(ctx)
	return v.statAt(hc.Dir, name, follow)
}

func (v *vfs) statAt(dir, name string, follow bool) (fs.FileInfo, error) {
	if abs(dir, name) == "/dev/null" {
		return devNullInfo{}, nil
	}
	var fi fs.FileInfo
	var err error
	// A trailing slash resolves the name, links included, as the kernel
	// does: [ -L link/ ] is false where link names a directory.
	if follow || strings.HasSuffix(name, "/") {
		fi, err = v.r().Stat(rel(dir, name))
	} else {
		fi, err = v.r().Lstat(rel(dir, name))
	}
	return fi, cleanPathErr(name, err)
}

// sourcePath is where source NAME reads, as bash finds it, in the host's
// tree: NAME with a slash from dir; otherwise the first regular file
// NAME in path's directories, else dir/NAME. Always absolute.
func (v *vfs) sourcePath(dir, path, name string) string {
	if strings.Contains(name, "/") {
		return abs(dir, name)
	}
	for _, d := range strings.Split(path, ":") {
		if d == "" {
			d = dir
		}
		p := abs(dir, d+"/"+name)
		if fi, err := v.statAt("/", p, true); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return abs(dir, name)
}

func (v *vfs) readDir(ctx context.Context, name string) ([]fs.DirEntry, error) {
	hc := interp.HandlerCtx(ctx)
	f, err := v.r().Open(rel(hc.Dir, name))
	if err != nil {
		return nil, cleanPathErr(name, err)
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// access answers test -r/-w/-x from the file's mode bits (the simulated
// user owns everything in its tree, as root would).
func (v *vfs) access(ctx context.Context, name string, mode interp.AccessMode) error {
	fi, err := v.stat(ctx, name, true)
	if err != nil {
		return err
	}
	perm := fi.Mode().Perm()
	switch {
	case mode&interp.AccessExec != 0 && perm&0o111 == 0,
		mode&interp.AccessWrite != 0 && perm&0o222 == 0,
		mode&interp.AccessRead != 0 && perm&0o444 == 0:
		return &fs.PathError{Op: "access", Path: name, Err: syscall.EACCES}
	}
	return nil
}

type devNullInfo struct{}

func (devNullInfo) Name() string       { return "null" }
func (devNullInfo) Size() int64        { return 0 }
func (devNullInfo) Mode() fs.FileMode  { return fs.ModeDevice | fs.ModeCharDevice | 0o666 }
func (devNullInfo) ModTime() time.Time { return time.Time{} }
func (devNullInfo) IsDir() bool        { return false }
func (devNullInfo) Sys() any           { return nil }

// disk is the space a whole fleet's hosts may use together: each host has
// hostDisk, and together they have at most fleetDisk, so that a fleet of
// 1,000 hosts cannot take 256 GB of the operator's disk.
type disk struct {
	used  atomic.Int64
	limit int64
	trees func() []*vfs
}

// fleetDisk is a fleet of n hosts' disk: 16 MiB a host (a probe is 5 MB),
// at least 4 GiB, and never more than the hosts' own disks together.
func fleetDisk(n int) int64 { return min(int64(n)*hostDisk, max(4<<30, int64(n)*16<<20)) }

// charge accounts n more bytes written on the host (and its fleet). The
// counts only grow (overwrites and removals are not subtracted as they
// happen); when one passes its limit, the trees are measured again before
// a write is refused with ENOSPC.
func (v *vfs) charge(n int) error {
	if v.used.Add(int64(n)) > hostDisk {
		v.used.Store(v.usage() + int64(n))
		if v.used.Load() > hostDisk {
			v.used.Add(-int64(n))
			return syscall.ENOSPC
		}
	}
	if d := v.fleet; d != nil && d.used.Add(int64(n)) > d.limit {
		var total int64
		for _, t := range d.trees() {
			total += t.usage()
		}
		d.used.Store(total + int64(n))
		if d.used.Load() > d.limit {
			d.used.Add(-int64(n))
			v.used.Add(-int64(n))
			return syscall.ENOSPC
		}
	}
	return nil
}

// usage is what the tree holds now: its files' bytes and entryCost a
// file, directory or link. A tree not made holds nothing.
func (v *vfs) usage() int64 {
	v.mu.Lock()
	made := v.root != nil && v.err == nil
	v.mu.Unlock()
	if !made {
		return 0
	}
	var total int64
	_ = fs.WalkDir(v.r().FS(), ".", func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		total += entryCost
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				total += min(max(fi.Size(), 0), hostDisk) // a sum that cannot overflow
			}
		}
		if total > 1<<62 {
			return fs.SkipAll
		}
		return nil
	})
	return total
}

// created charges a new directory entry (a file made by O_CREATE, a
// directory, a link).
func (v *vfs) created() error { return v.charge(entryCost) }

// quotaFile is a file open for writing on a simulated host: its writes
// count against the host's disk. It does not embed *os.File, whose
// ReadFrom would let io.Copy write around the count.
type quotaFile struct {
	f *os.File
	v *vfs
}

func (q quotaFile) Read(p []byte) (int, error)              { return q.f.Read(p) }
func (q quotaFile) ReadAt(p []byte, off int64) (int, error) { return q.f.ReadAt(p, off) }
func (q quotaFile) Seek(off int64, whence int) (int64, error) {
	cur, err := q.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return cur, err
	}
	n, err := q.f.Seek(off, whence)
	if err == nil && n > hostDisk { // a write there would make a file larger than the disk
		_, _ = q.f.Seek(cur, io.SeekStart)
		return cur, &fs.PathError{Op: "seek", Path: q.f.Name(), Err: syscall.EFBIG}
	}
	return n, err
}
func (q quotaFile) Close() error { return q.f.Close() }

func (q quotaFile) Write(p []byte) (int, error) {
	if err := q.v.charge(len(p)); err != nil {
		return 0, &fs.PathError{Op: "write", Path: q.f.Name(), Err: err}
	}
	return q.f.Write(p)
}

func (q quotaFile) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off > hostDisk-int64(len(p)) { // no file is larger than the disk
		return 0, &fs.PathError{Op: "write", Path: q.f.Name(), Err: syscall.EFBIG}
	}
	if err := q.v.charge(len(p)); err != nil {
		return 0, &fs.PathError{Op: "write", Path: q.f.Name(), Err: err}
	}
	return q.f.WriteAt(p, off)
}

// truncate sets the size of the file name (relative to the tree's root),
// as SFTP's setstat does: a file grows no larger than the host's disk,
// and what it grows by is charged (a sparse file's size counts as the
// tree's usage does: two files of 2^62 bytes overflowed the sum, after
// which writes went past the disk).
func (v *vfs) truncate(name string, size uint64) error {
	if size > uint64(hostDisk) {
		return &fs.PathError{Op: "truncate", Path: name, Err: syscall.EFBIG}
	}
	f, err := v.r().OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if grow := int64(size) - fi.Size(); grow > 0 {
		if err := v.charge(int(grow)); err != nil {
			return &fs.PathError{Op: "truncate", Path: name, Err: err}
		}
	}
	return f.Truncate(int64(size))
}

// writable wraps f when flag opens it for writing.
func (v *vfs) writable(f *os.File, flag int) io.ReadWriteCloser {
	if flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return f
	}
	return quotaFile{f: f, v: v}
}

// readBounded reads the file name (relative to dir) of the host's tree,
// up to max bytes (more is an error).
func (v *vfs) readBounded(dir, name string, max int64) ([]byte, error) {
	f, err := v.r().Open(rel(dir, name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(b)) > max {
		err = fmt.Errorf("%s: over %d bytes", name, max)
	}
	return b, err
}
