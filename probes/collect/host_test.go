package collect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/probes/report"
	"github.com/gpulab/gpulab/sim/spec"
)

// writeProc writes one /proc/PID entry: its stat line and, when fds is
// not nil, its open files (symlinks to their targets).
func writeProc(t *testing.T, root string, pid, stat string, fds []string) {
	t.Helper()
	dir := filepath.Join(root, pid)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o600); err != nil {
		t.Fatal(err)
	}
	if fds == nil {
		return
	}
	if err := os.Mkdir(filepath.Join(dir, "fd"), 0o700); err != nil {
		t.Fatal(err)
	}
	for i, target := range fds {
		if err := os.Symlink(target, filepath.Join(dir, "fd", string(rune('0'+i)))); err != nil {
			t.Fatal(err)
		}
	}
}

// The host scan finds a process in state D that holds a GPU device, says
// so for one whose open files it cannot read, passes over one in state D
// on other files and a zombie NVML does not list, finds a zombie NVML
// lists, and reads a name with spaces and parentheses whole.
func TestStuckProcesses(t *testing.T) {
	root := t.TempDir()
	writeProc(t, root, "100", "100 (python3) D 90 100 100 0 -1\n", []string{"/dev/null", "/dev/nvidia3", "/dev/nvidiactl", "/dev/nvidia3"})
	writeProc(t, root, "101", "101 (kworker/1:2) D 2 0 0 0 -1\n", []string{"/dev/sda"})
	writeProc(t, root, "102", "102 (other user) D 1 102 102 0 -1\n", nil)
	// fd is a file, not a directory: as unreadable as another user's.
	if err := os.WriteFile(filepath.Join(root, "102", "fd"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	writeProc(t, root, "103", "103 (a (b) c) Z 77 103 103 0 -1\n", nil)
	writeProc(t, root, "104", "104 (sh) Z 1 104 104 0 -1\n", nil)
	writeProc(t, root, "105", "105 (sleep) S 1 105 105 0 -1\n", nil)
	// 106: its main thread sleeps, a worker thread waits in the driver;
	// NVML lists it.
	writeProc(t, root, "106", "106 (trainer) S 1 106 106 0 -1\n", []string{"/dev/nvidia1"})
	writeProc(t, filepath.Join(root, "106", "task"), "107", "107 (cuda-worker) D 1 106 106 0 -1\n", nil)
	if err := os.Mkdir(filepath.Join(root, "self"), 0o700); err != nil {
		t.Fatal(err)
	}
	s := &report.Snapshot{Processes: []report.Process{{GPU: 2, PID: 103, UsedMiB: 512}, {GPU: 1, PID: 106, UsedMiB: 512}}}
	c := &collector{snap: s, opts: Options{ProcRoot: root}}
	c.stuckProcesses()
	got := map[int]report.StuckProcess{}
	for _, p := range s.HostState.Stuck {
		got[p.PID] = p
	}
	if !s.HostState.ProcScanned || len(got) != 4 || got[106].State != "D" || strings.Join(got[106].Devices, " ") != "/dev/nvidia1" {
		t.Fatalf("%+v", s.HostState)
	}
	if p := got[100]; p.State != "D" || p.Name != "python3" || p.PPID != 90 || strings.Join(p.Devices, " ") != "/dev/nvidia3 /dev/nvidiactl" || p.FDsUnread {
		t.Errorf("100: %+v", p)
	}
	if p := got[102]; !p.FDsUnread || len(p.Devices) != 0 {
		t.Errorf("102: %+v", p)
	}
	if p := got[103]; p.State != "Z" || p.Name != "a (b) c" || p.PPID != 77 {
		t.Errorf("103: %+v", p)
	}
	// At the window's end 100 is still in D, 102 woke up.
	if err := os.WriteFile(filepath.Join(root, "102", "stat"), []byte("102 (other user) S 1 102 102 0 -1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stuckAgain(s, root)
	for _, p := range s.HostState.Stuck {
		if want := p.PID != 102; p.WholeWindow != want {
			t.Errorf("%d: whole window %v, want %v", p.PID, p.WholeWindow, want)
		}
	}
	// No /proc to read: said, never "nothing stuck".
	s = &report.Snapshot{}
	(&collector{snap: s, opts: Options{ProcRoot: filepath.Join(root, "nowhere")}}).stuckProcesses()
	if s.HostState.ProcScanned || len(s.Errors) != 1 || s.Errors[0].Field != "host.processes" {
		t.Errorf("no /proc: %+v %+v", s.HostState, s.Errors)
	}
}

// The simulated machine's /proc (sim/spec's WriteProc) is read by the
// same scan: a process the knob puts in state D holds its GPU's device.
func TestStuckProcessesOfTheSimulatedMachine(t *testing.T) {
	root := t.TempDir()
	f := spec.Faults{Processes: []spec.Process{{GPU: 4, PID: 700, Name: "python3", State: "D"}, {GPU: 5, PID: 700, Name: "python3", State: "D"}, {GPU: 6, PID: 701, Name: "ok"}}}
	if err := f.WriteProc(root); err != nil {
		t.Fatal(err)
	}
	s := &report.Snapshot{}
	(&collector{snap: s, opts: Options{ProcRoot: root}}).stuckProcesses()
	if len(s.HostState.Stuck) != 1 || strings.Join(s.HostState.Stuck[0].Devices, " ") != "/dev/nvidia-uvm /dev/nvidia4 /dev/nvidia5 /dev/nvidiactl" {
		t.Errorf("%+v", s.HostState)
	}
}

// pstore: each crash record (dmesg-*) listed with its panic line, the
// console log beside them not; a missing directory is said, never "no
// crash".
func TestPstore(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"dmesg-efi-171000000101001": "Panic#1 Part1\n<6>[ 1.0] something\n<0>[ 8123.512007] Kernel panic - not syncing: Fatal exception in interrupt\n",
		"console-ramoops-0":         "no marker here\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := &report.Snapshot{}
	pstore(s, dir)
	ps := s.HostState.Pstore
	// console-ramoops-0 is the last boot's console, not a crash.
	if ps == nil || len(ps.Records) != 1 || ps.Records[0].Panic != "Kernel panic - not syncing: Fatal exception in interrupt" {
		t.Errorf("%+v", ps)
	}
	s = &report.Snapshot{}
	pstore(s, filepath.Join(dir, "absent"))
	if s.HostState.Pstore != nil || len(s.Errors) != 1 || s.Errors[0].Code != "NOT_MOUNTED" {
		t.Errorf("absent: %+v %+v", s.HostState, s.Errors)
	}
}

// /proc mounted hidepid hides other users' processes from a probe that is
// not root: the scan says so instead of finding nothing (mountinfo lines
// as the kernel writes them).
func TestProcHidden(t *testing.T) {
	for _, c := range []struct {
		mountinfo string
		groups    []int
		want      string
	}{
		{"22 28 0:5 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n", nil, ""},
		{"22 28 0:5 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw,hidepid=2\n", nil, "hidepid=2"},
		{"25 1 0:22 / /proc rw,relatime - proc proc rw,hidepid=invisible,gid=27\n", []int{1000}, "hidepid=invisible"},
		{"25 1 0:22 / /proc rw,relatime - proc proc rw,hidepid=invisible,gid=27\n", []int{1000, 27}, ""},
		{"25 1 0:22 / /proc rw,relatime - proc proc rw,hidepid=0\n", nil, ""},
		{"31 25 0:30 / /proc/sys/fs/binfmt_misc rw,relatime shared:13 - binfmt_misc binfmt_misc rw\n", nil, ""},
	} {
		if got := procHidden(c.mountinfo, c.groups); got != c.want {
			t.Errorf("%q, groups %v: %q, want %q", c.mountinfo, c.groups, got, c.want)
		}
	}
}
