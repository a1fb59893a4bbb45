package report

import (
	"regexp"
	"strings"
)

var (
	// Kubernetes pod cgroups: ".../kubepods/burstable/pod<uid>/..." (cgroupfs
	// driver) or ".../kubepods-burstable-pod<uid_with_underscores>.slice/..."
	// (systemd driver).
	podRE = regexp.MustCompile(`pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})`)
	// Container ids: 64 hex digits, bare or in "cri-containerd-<id>.scope",
	// "docker-<id>.scope", "crio-<id>.scope".
	containerRE = regexp.MustCompile(`(?:^|[/-])([0-9a-f]{64})(?:\.scope)?$`)
)

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
			if m := podRE.FindStringSubmatch(path); m != nil {
				podUID = strings.ReplaceAll(m[1], "_", "-")
			}
		}
		if containerID == "" {
			if m := containerRE.FindStringSubmatch(path); m != nil {
				containerID = m[1]
			}
		}
	}
	return containerID, podUID
}
