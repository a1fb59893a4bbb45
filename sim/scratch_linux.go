package sim

import "syscall"

// memScratchBase is /dev/shm when it is a memory filesystem (tmpfs) with
// at least 1 GiB free, else "".
func memScratchBase() string {
	const base, tmpfsMagic, room = "/dev/shm", 0x01021994, 1 << 30
	var s syscall.Statfs_t
	if syscall.Statfs(base, &s) != nil || s.Type != tmpfsMagic || s.Bavail*uint64(s.Bsize) < room {
		return ""
	}
	return base
}
