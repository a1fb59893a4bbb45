package report

import "strings"

// The probe parses without package regexp: it and the Unicode tables it
// brings are a tenth of the probe's size (docs/probe.md keeps it under
// 4 MB), and these shapes are fixed.

// ContainerFromCgroup reads /proc/PID/cgroup content and returns the
// container id and Kubernetes pod UID the process runs in, empty when it
// runs in neither. Both cgroup v1 and v2 layouts are understood.
func ContainerFromCgroup(content string) (containerID, podUID string) {
	for _, line := range strings.Split(content, "\n") {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		path := parts[2]
		if podUID == "" {
			podUID = podIn(path)
		}
		if containerID == "" {
			containerID = containerAtEnd(path)
		}
	}
	return containerID, podUID
}

// podIn finds a Kubernetes pod UID in a cgroup path: the first "pod"
// followed by a UID, with dashes (".../kubepods/burstable/pod<uid>/...",
// the cgroupfs driver) or underscores (".../kubepods-burstable-pod<uid
// with underscores>.slice/...", the systemd driver); the UID is returned
// with dashes.
func podIn(path string) string {
	for i := 0; ; {
		k := strings.Index(path[i:], "pod")
		if k < 0 {
			return ""
		}
		i += k + 3
		if uid, ok := uidAt(path[i:]); ok {
			return strings.ReplaceAll(uid, "_", "-")
		}
	}
}

// uidAt reads a UID (8-4-4-4-12 lowercase hex digits, joined by dashes
// or underscores) at the start of s.
func uidAt(s string) (string, bool) {
	n := 0
	for g, size := range []int{8, 4, 4, 4, 12} {
		if g > 0 {
			if n >= len(s) || (s[n] != '-' && s[n] != '_') {
				return "", false
			}
			n++
		}
		if !hexRun(s[n:], size) {
			return "", false
		}
		n += size
	}
	return s[:n], true
}

// containerAtEnd finds the container id that ends a cgroup path: 64
// lowercase hex digits, bare or as "cri-containerd-<id>.scope",
// "docker-<id>.scope", "crio-<id>.scope", after the path's start, a "/"
// or a "-".
func containerAtEnd(path string) string {
	path = strings.TrimSuffix(path, ".scope")
	if len(path) < 64 || !hexRun(path[len(path)-64:], 64) {
		return ""
	}
	if k := len(path) - 64; k > 0 && path[k-1] != '/' && path[k-1] != '-' {
		return ""
	}
	return path[len(path)-64:]
}

// hexRun reports whether s starts with n lowercase hex digits.
func hexRun(s string, n int) bool {
	if len(s) < n {
		return false
	}
	for _, c := range []byte(s[:n]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
