package sim

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/pkg/sftp"
)

// sftpFS serves SFTP (the sftp subsystem: OpenSSH's sftp and scp, and
// gpulab's push) from a simulated host's tree.
type sftpFS struct{ v *vfs }

func (h *host) sftpHandlers() sftp.Handlers {
	s := &sftpFS{v: h.fs}
	return sftp.Handlers{FileGet: s, FilePut: s, FileCmd: s, FileList: s}
}

func (s *sftpFS) name(p string) string { return rel("/", p) }

func (s *sftpFS) Fileread(r *sftp.Request) (io.ReaderAt, error) {
	f, err := s.v.r().Open(s.name(r.Filepath))
	return f, sftpErr(r.Filepath, err)
}

func openFlags(p sftp.FileOpenFlags) int {
	flag := os.O_WRONLY
	if p.Read {
		flag = os.O_RDWR
	}
	if p.Creat {
		flag |= os.O_CREATE
	}
	if p.Trunc {
		flag |= os.O_TRUNC
	}
	if p.Excl {
		flag |= os.O_EXCL
	}
	if p.Append {
		flag |= os.O_APPEND
	}
	return flag
}

func (s *sftpFS) open(r *sftp.Request) (quotaFile, error) {
	perm := fs.FileMode(0o644)
	if r.AttrFlags().Permissions {
		perm = r.Attributes().FileMode().Perm()
	}
	if r.Pflags().Creat {
		if err := s.v.created(); err != nil {
			return quotaFile{}, sftpErr(r.Filepath, &fs.PathError{Op: "open", Path: r.Filepath, Err: err})
		}
	}
	f, err := s.v.r().OpenFile(s.name(r.Filepath), openFlags(r.Pflags()), perm)
	if err != nil {
		return quotaFile{}, sftpErr(r.Filepath, err)
	}
	return quotaFile{f: f, v: s.v}, nil
}

func (s *sftpFS) Filewrite(r *sftp.Request) (io.WriterAt, error) {
	q, err := s.open(r)
	if err != nil {
		return nil, err
	}
	return q, nil
}

func (s *sftpFS) OpenFile(r *sftp.Request) (sftp.WriterAtReaderAt, error) {
	q, err := s.open(r)
	if err != nil {
		return nil, err
	}
	return q, nil
}

func (s *sftpFS) Filecmd(r *sftp.Request) error {
	name := s.name(r.Filepath)
	var err error
	switch r.Method {
	case "Setstat":
		err = s.setstat(name, r)
	case "Rename":
		// SFTP version 3 rename never replaces (OpenSSH's sftp-server).
		if _, lerr := s.v.r().Lstat(s.name(r.Target)); lerr == nil {
			return sftpErr(r.Target, fs.ErrExist)
		}
		err = s.v.r().Rename(name, s.name(r.Target))
	case "PosixRename":
		err = s.v.r().Rename(name, s.name(r.Target))
	case "Rmdir":
		// rmdir(2) removes only a directory (os.Root's Remove takes a file too).
		if fi, lerr := s.v.r().Lstat(name); lerr == nil && !fi.IsDir() {
			return sftpErr(r.Filepath, &fs.PathError{Op: "rmdir", Path: r.Filepath, Err: syscall.ENOTDIR})
		}
		err = s.v.r().Remove(name)
	case "Mkdir":
		if err = s.v.created(); err == nil {
			err = s.v.r().Mkdir(name, 0o755)
		}
	case "Remove":
		if fi, lerr := s.v.r().Lstat(name); lerr == nil && fi.IsDir() {
			return sftpErr(r.Filepath, errors.New("is a directory"))
		}
		err = s.v.r().Remove(name)
	case "Symlink":
		if err = s.v.created(); err == nil {
			err = s.v.r().Symlink(r.Filepath, s.name(r.Target))
		}
	case "Link":
		if err = s.v.created(); err == nil {
			err = s.v.r().Link(name, s.name(r.Target))
		}
	default:
		return sftp.ErrSSHFxOpUnsupported
	}
	return sftpErr(r.Filepath, err)
}

func (s *sftpFS) PosixRename(r *sftp.Request) error {
	return sftpErr(r.Filepath, s.v.r().Rename(s.name(r.Filepath), s.name(r.Target)))
}

func (s *sftpFS) setstat(name string, r *sftp.Request) error {
	a, fl := r.Attributes(), r.AttrFlags()
	if fl.Permissions {
		mode := a.FileMode().Perm()
		if a.Mode&0o1000 != 0 {
			mode |= fs.ModeSticky
		}
		if err := s.v.r().Chmod(name, mode); err != nil {
			return err
		}
	}
	if fl.Size {
		if err := s.v.truncate(name, a.Size); err != nil {
			return err
		}
	}
	if fl.Acmodtime {
		return s.v.r().Chtimes(name, time.Unix(int64(a.Atime), 0), time.Unix(int64(a.Mtime), 0))
	}
	return nil
}

func (s *sftpFS) Filelist(r *sftp.Request) (sftp.ListerAt, error) {
	name := s.name(r.Filepath)
	switch r.Method {
	case "List":
		f, err := s.v.r().Open(name)
		if err != nil {
			return nil, sftpErr(r.Filepath, err)
		}
		defer f.Close()
		ents, err := f.ReadDir(-1)
		var infos lister
		for _, e := range ents {
			if fi, ierr := e.Info(); ierr == nil {
				infos = append(infos, fi)
			}
		}
		return infos, sftpErr(r.Filepath, err)
	case "Stat":
		fi, err := s.v.r().Stat(name)
		return lister{fi}, sftpErr(r.Filepath, err)
	case "Readlink":
		t, err := s.v.r().Readlink(name)
		return lister{linkInfo(t)}, sftpErr(r.Filepath, err)
	}
	return nil, sftp.ErrSSHFxOpUnsupported
}

func (s *sftpFS) Lstat(r *sftp.Request) (sftp.ListerAt, error) {
	fi, err := s.v.r().Lstat(s.name(r.Filepath))
	return lister{fi}, sftpErr(r.Filepath, err)
}

func (s *sftpFS) Readlink(p string) (string, error) {
	t, err := s.v.r().Readlink(s.name(p))
	return t, sftpErr(p, err)
}

func (s *sftpFS) RealPath(p string) (string, error) {
	p = abs(Home, p)
	if real, err := s.v.realpath("/", p); err == nil {
		return real, nil
	}
	return p, nil
}

// sftpErr keeps the real directory out of what the client is told.
func sftpErr(name string, err error) error {
	if err == nil {
		return nil
	}
	return cleanPathErr(name, err)
}

type lister []fs.FileInfo

func (l lister) ListAt(out []fs.FileInfo, off int64) (int, error) {
	if off >= int64(len(l)) {
		return 0, io.EOF
	}
	n := copy(out, l[off:])
	if off+int64(n) >= int64(len(l)) {
		return n, io.EOF
	}
	return n, nil
}

// linkInfo carries a link's target as the name, as SFTP's readlink answers.
type linkInfo string

func (l linkInfo) Name() string       { return string(l) }
func (l linkInfo) Size() int64        { return 0 }
func (l linkInfo) Mode() fs.FileMode  { return fs.ModeSymlink | 0o777 }
func (l linkInfo) ModTime() time.Time { return time.Time{} }
func (l linkInfo) IsDir() bool        { return false }
func (l linkInfo) Sys() any           { return nil }
