// Package orchestrator reaches hosts over plain SSH, with nothing installed on
// them: it dials with bounded connect and handshake times, verifies host keys
// against known_hosts, authenticates with ssh-agent and identity files, honours
// ~/.ssh/config (ProxyJump included), and runs commands on many hosts at once
// in a sliding window, one connection per host reused for every step.
//
// Every host gets a result shaped like os/exec's (stdout, stderr, exit code or
// signal, duration) plus a Class that says how it ended; one bad host never
// stops the others. The engine reports progress as Events on a channel and
// knows nothing about who listens: it does not import the TUI.
package orchestrator

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/inventory"
)

// Class says how a host's work ended. Classes are ordered by severity; the
// worst class of a fan-out decides its outcome.
type Class int

// Classes, least severe first.
const (
	OK             Class = iota // every step exited 0
	Exit                        // a command exited non-zero
	Killed                      // a command died by a signal
	Inactive                    // a command printed nothing for the inactivity timeout
	TimeoutCommand              // a command ran past the command timeout
	Lost                        // the connection dropped while a command ran
	TimeoutConnect              // TCP connect or SSH handshake took too long
	Unreachable                 // no route, name not resolved, or network error
	Refused                     // TCP connection refused
	Auth                        // no offered key was accepted
	HostKeyUnknown              // the host is not in known_hosts
	HostKeyChanged              // the host's key differs from known_hosts
	// Reaching a Kubernetes node through the API server (KubeTransport):
	// why its pod did not start, or a command could not reach it.
	Forbidden    // RBAC refused a permission the transport needs (the permission is in the error)
	Admission    // admission refused the node pod (Pod Security, --allow-privileged, a webhook)
	ImagePull    // the node could not pull the pod's image
	NodeNotReady // the node is not Ready: its kubelet does not start the pod
	Quota        // a ResourceQuota or LimitRange refused the pod
	PodFailed    // the pod ended, or its container could not be made, before the work was done
	Cancelled    // the run was cancelled (Ctrl-C) before this host finished
	Error        // a local error (bad configuration, unreadable key)
)

var classNames = [...]string{"ok", "exit", "killed", "inactive", "timeout-command", "lost", "timeout-connect",
	"unreachable", "refused", "auth", "hostkey-unknown", "hostkey-changed",
	"forbidden", "admission", "image-pull", "node-not-ready", "quota", "pod-failed", "cancelled", "error"}

// HostFault says whether c is something that happened to the host rather
// than to one command's result: a command hung past its timeout or silent
// past the inactivity timeout (a hung nvidia-smi is a sick host), the
// connection lost or never made, the run cancelled. A runbook's or lab's
// host whose step ends so takes the class as its own; a command that
// exited non-zero or died by a signal is the checks' to judge.
func (c Class) HostFault() bool { return c >= Inactive }

// Unreached says whether c is a host that could not be reached, or was
// lost: over SSH or through the API server, never a command's own end.
func (c Class) Unreached() bool { return c >= Lost && c <= PodFailed }

func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("class(%d)", int(c))
}

// MarshalText makes classes read as their names in JSON.
func (c Class) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText reads a class back from its name (records written as JSON).
func (c *Class) UnmarshalText(b []byte) error {
	for i, n := range classNames {
		if n == string(b) {
			*c = Class(i)
			return nil
		}
	}
	return fmt.Errorf("unknown class %q", b)
}

// Result is one command's outcome on one host.
type Result struct {
	Step     string        `json:"step"`
	Command  string        `json:"command"`
	Stdout   []byte        `json:"-"`
	Stderr   []byte        `json:"-"`
	ExitCode int           `json:"exit_code"`        // -1 when the command did not exit normally
	Signal   string        `json:"signal,omitempty"` // e.g. "KILL" when killed by a signal
	Class    Class         `json:"class"`
	Duration time.Duration `json:"duration_ns"`
	// StdoutBytes and StderrBytes count everything the command printed;
	// Stdout and Stderr keep at most the engine's output limit.
	StdoutBytes int64  `json:"stdout_bytes"`
	StderrBytes int64  `json:"stderr_bytes"`
	Truncated   bool   `json:"truncated,omitempty"`
	Err         string `json:"error,omitempty"`
}

// HostResult is everything that happened on one host.
type HostResult struct {
	Host    string        `json:"host"`
	Via                   // how the host was reached: "transport", and "context" through Kubernetes
	Address string        `json:"address"`
	Class   Class         `json:"class"`
	Err     string        `json:"error,omitempty"`
	Connect time.Duration `json:"connect_ns"`
	// Reused: the connection came from the engine's Pool (no handshake).
	Reused bool `json:"reused,omitempty"`
	// Simulated: the host is one of gpulab's simulated hosts (it says so
	// in the handshake: SimulatedServerVersion).
	Simulated bool          `json:"simulated,omitempty"`
	Total     time.Duration `json:"total_ns"`
	Steps     []Result      `json:"steps"`
}

// Via is how a host is reached, as results and records say it: transport
// "ssh", or "kube" (through the API server of the kubeconfig context
// Context).
type Via struct {
	Transport string `json:"transport"`
	Context   string `json:"context,omitempty"`
}

// Via is how t is reached.
func (t Target) Via() Via {
	if t.Kube != nil {
		return Via{Transport: "kube", Context: t.Kube.Context}
	}
	return Via{Transport: "ssh"}
}

// Worst returns the most severe class among results (OK for none).
func Worst(results []HostResult) Class {
	w := OK
	for _, r := range results {
		w = max(w, r.Class)
	}
	return w
}

// Summary counts hosts per class, naming the hosts of each failing class in
// node-set form: "50 hosts: 48 ok, 1 auth (gpu09), 1 timeout-connect (gpu07)".
func Summary(results []HostResult) string {
	byClass := map[Class][]string{}
	for _, r := range results {
		byClass[r.Class] = append(byClass[r.Class], r.Host)
	}
	classes := make([]Class, 0, len(byClass))
	for c := range byClass {
		classes = append(classes, c)
	}
	sort.Slice(classes, func(i, j int) bool { return classes[i] < classes[j] })
	parts := make([]string, 0, len(classes))
	for _, c := range classes {
		hosts := byClass[c]
		p := fmt.Sprintf("%d %s", len(hosts), c)
		if c != OK {
			p += " (" + inventory.FoldNames(hosts) + ")"
		}
		parts = append(parts, p)
	}
	return text.Plural(len(results), "host", "hosts") + ": " + strings.Join(parts, ", ")
}

// FirstLine is s trimmed, up to its first line break: the one line of a
// command's output or error worth putting in a sentence.
func FirstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
