package collect

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gpulab/gpulab/probes/report"
)

// Bounds of the host scan: what a host with a million processes or a
// process with a million files costs the probe.
const (
	maxProcs     = 65536 // /proc entries looked at
	maxFDs       = 4096  // open files read of one process in state D
	maxStuck     = 64    // processes reported
	maxPstore    = 32    // pstore records listed
	pstoreHeadKB = 4     // bytes of a record read for its panic line, in KiB
)

// stuckProcesses finds the processes that hold the GPUs and cannot let
// go: in state D (uninterruptible sleep) with a /dev/nvidia* device open,
// and zombies NVML still lists as GPU processes. It reads /proc (ProcRoot)
// once; Sample reads the ones it found again at the window's end. It
// reports whether the fabric manager's daemon was among the processes.
func (c *collector) stuckProcesses() (managerSeen bool) {
	s := c.snap
	entries, err := os.ReadDir(c.opts.ProcRoot)
	if err != nil {
		s.Errors = append(s.Errors, report.FieldError{Field: "host.processes", Code: "UNREADABLE", Message: err.Error()})
		return false
	}
	if c.opts.ProcRoot == "/proc" && os.Geteuid() != 0 {
		mi, _ := os.ReadFile("/proc/self/mountinfo")
		groups, _ := os.Getgroups()
		if opt := procHidden(string(mi), append(groups, os.Getegid())); opt != "" {
			s.Errors = append(s.Errors, report.FieldError{Field: "host.processes", Code: "RESTRICTED",
				Message: "/proc is mounted with " + opt + ": other users' processes are hidden from a probe that is not root (run it as root)"})
			return false
		}
	}
	listed := map[uint32]bool{}
	for _, p := range s.Processes {
		listed[p.PID] = true
	}
	s.HostState.ProcScanned = true
	for i, e := range entries {
		if i == maxProcs {
			s.HostState.Truncated = true // a process past the bound could be the stuck one
			break
		}
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		name, state, ppid, ok := procStat(c.opts.ProcRoot, pid)
		managerSeen = managerSeen || ok && name == FabricManagerComm
		if ok && state != "D" && state != "Z" && listed[uint32(pid)] && threadInD(c.opts.ProcRoot, pid) {
			// A GPU process whose worker thread waits in the driver while
			// its main thread sleeps is stuck as much as one in D.
			state = "D"
		}
		switch {
		case !ok:
		case len(s.HostState.Stuck) == maxStuck && (state == "D" || state == "Z" && listed[uint32(pid)]):
			s.HostState.Truncated = true
		case state == "D":
			devices, unread := nvidiaFDs(c.opts.ProcRoot, pid)
			if len(devices) > 0 || unread {
				s.HostState.Stuck = append(s.HostState.Stuck, report.StuckProcess{PID: pid, PPID: ppid, Name: name, State: state, Devices: devices, FDsUnread: unread})
			}
		case state == "Z" && listed[uint32(pid)]:
			s.HostState.Stuck = append(s.HostState.Stuck, report.StuckProcess{PID: pid, PPID: ppid, Name: name, State: state})
		}
	}
	return managerSeen
}

// procStat reads a process's name, state and parent from
// /proc/PID/stat: "1234 (python3) D 1200 ...". The name may hold spaces
// and parentheses: it runs to the last ')'.
func procStat(root string, pid int) (name, state string, ppid int, ok bool) {
	b, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", "", 0, false
	}
	t := string(b)
	open, end := strings.IndexByte(t, '('), strings.LastIndexByte(t, ')')
	if open < 0 || end < open {
		return "", "", 0, false
	}
	f := strings.Fields(t[end+1:])
	if len(f) < 2 {
		return "", "", 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	return t[open+1 : end], f[0], ppid, true
}

// maxThreads bounds the threads of one process looked at.
const maxThreads = 4096

// threadInD reports whether a thread of process pid is in state D.
func threadInD(root string, pid int) bool {
	tasks, err := os.ReadDir(filepath.Join(root, strconv.Itoa(pid), "task"))
	if err != nil {
		return false
	}
	for i, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil || i == maxThreads {
			continue
		}
		if _, st, _, ok := procStat(filepath.Join(root, strconv.Itoa(pid), "task"), tid); ok && st == "D" {
			return true
		}
	}
	return false
}

// nvidiaFDs lists the /dev/nvidia* devices a process has open; unread is
// true when its open files could not be read (another user's process,
// without root).
func nvidiaFDs(root string, pid int) (devices []string, unread bool) {
	dir := filepath.Join(root, strconv.Itoa(pid), "fd")
	fds, err := os.ReadDir(dir)
	if err != nil {
		return nil, true
	}
	for i, fd := range fds {
		if i == maxFDs {
			// Past the bound, a GPU device could still be open: unknown,
			// unless one was found already.
			return devices, len(devices) == 0
		}
		target, err := os.Readlink(filepath.Join(dir, fd.Name()))
		if err == nil && strings.HasPrefix(target, "/dev/nvidia") && !slices.Contains(devices, target) {
			devices = append(devices, target)
		}
	}
	slices.Sort(devices)
	return devices, false
}

// stuckAgain reads the stuck processes' state again at the end of the
// sampling window: one still in it was stuck for the whole window.
func stuckAgain(s *report.Snapshot, root string) {
	for i := range s.HostState.Stuck {
		p := &s.HostState.Stuck[i]
		if _, state, _, ok := procStat(root, p.PID); ok && (state == p.State || p.State == "D" && threadInD(root, p.PID)) {
			p.WholeWindow = true
		}
	}
}

// pstore lists the crash records the kernel kept in pstore (dir,
// /sys/fs/pstore) from earlier boots: a kernel panic or oops that
// rebooted the node while nothing watched. Each record's panic line is
// read from its first few KiB.
func pstore(s *report.Snapshot, dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		code := "UNREADABLE"
		if os.IsNotExist(err) {
			code = "NOT_MOUNTED"
		} else if os.IsPermission(err) {
			code = "NO_PERMISSION"
		}
		s.Errors = append(s.Errors, report.FieldError{Field: "host.pstore", Code: code, Message: err.Error()})
		return
	}
	s.HostState.Pstore = &report.Pstore{Records: []report.PstoreRecord{}}
	for _, e := range entries {
		// Crash records are dmesg-* (dmesg-efi-..., dmesg-ramoops-N,
		// dmesg-erst-...); console-ramoops and pmsg are the last boot's
		// console and messages, not crashes. Only regular files are read.
		if !strings.HasPrefix(e.Name(), "dmesg-") || !e.Type().IsRegular() {
			continue
		}
		if len(s.HostState.Pstore.Records) == maxPstore {
			s.HostState.Pstore.More++
			continue
		}
		r := report.PstoreRecord{Name: e.Name()}
		if f, err := os.Open(filepath.Join(dir, e.Name())); err == nil {
			head := make([]byte, pstoreHeadKB<<10)
			n, _ := f.Read(head)
			f.Close()
			r.Panic = panicLine(string(head[:n]))
		}
		s.HostState.Pstore.Records = append(s.HostState.Pstore.Records, r)
	}
}

// panicLine is the line of a crash record that says what happened:
// "Kernel panic - not syncing: ...", "BUG: ...", "Oops: ...".
func panicLine(t string) string {
	for _, l := range strings.Split(t, "\n") {
		for _, mark := range []string{"Kernel panic", "BUG: ", "Oops", "general protection fault", "watchdog: "} {
			if i := strings.Index(l, mark); i >= 0 {
				return strings.TrimSpace(l[i:])
			}
		}
	}
	return ""
}

// procHidden is the hidepid option of the /proc mount in mountinfo
// (/proc/self/mountinfo) that hides other users' processes from a member
// of groups ("hidepid=2", "hidepid=invisible"), or "" when it hides
// nothing from them (no hidepid, hidepid=0, or its gid= among groups).
func procHidden(mountinfo string, groups []int) string {
	for _, l := range strings.Split(mountinfo, "\n") {
		f := strings.Fields(l)
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		dash := slices.Index(f, "-")
		if len(f) < 5 || f[4] != "/proc" || dash < 0 || len(f) < dash+4 || f[dash+1] != "proc" {
			continue
		}
		hide := ""
		exempt := false
		for _, o := range strings.Split(f[dash+3], ",") {
			k, v, _ := strings.Cut(o, "=")
			switch {
			case k == "hidepid" && v != "0" && v != "off":
				hide = o
			case k == "gid":
				gid, err := strconv.Atoi(v)
				exempt = err == nil && slices.Contains(groups, gid)
			}
		}
		if exempt {
			return ""
		}
		return hide
	}
	return ""
}

// hostScan is the host's side of a snapshot: the stuck processes, pstore
// and the RDMA ports when their directories are given, and what the
// inventory expects.
func (c *collector) hostScan() {
	c.fabricScan(c.stuckProcesses())
	if c.opts.PstoreDir != "" {
		pstore(c.snap, c.opts.PstoreDir)
	}
	if c.opts.IBDir != "" {
		c.readIB()
	}
	c.snap.Expect = c.opts.Expect
}
