package step

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/gpulab/gpulab/internal/visible"
	"github.com/gpulab/gpulab/orchestrator"
)

// DefaultStepTimeout bounds a step that names no timeout.
const DefaultStepTimeout = 60 * time.Second

// CommandResult is one step's command on one host, with why it did not
// exit 0 in a sentence (Problem, empty when it did).
type CommandResult struct {
	Class    orchestrator.Class
	ExitCode int
	Stdout   string
	Stderr   string
	Problem  string
	// Cut says that output was cut at the limit ("stdout cut at 16 MiB of
	// 203 MiB"); empty when all of it was kept.
	Cut string
}

// MaxStepOutput is how much of each stream a step keeps.
const MaxStepOutput = 16 << 20

// RunCommand runs a step's command line on conn the way runbooks and labs
// both do: through `sudo -n` when it needs root and the login is not root
// (never prompting: a password request would hang the fan-out), bounded by
// timeout (DefaultStepTimeout when 0), keeping 16 MiB of output.
func RunCommand(ctx context.Context, conn *orchestrator.Conn, t orchestrator.Target, id, line string, needs []string, timeout time.Duration) CommandResult {
	for _, n := range needs {
		if n == "root" && t.User != "root" {
			line = "sudo -n sh -c " + orchestrator.Quote(line)
		}
	}
	if timeout == 0 {
		timeout = DefaultStepTimeout
	}
	r := conn.Run(ctx, id, line, orchestrator.RunOptions{Timeout: timeout, Inactivity: timeout, MaxOutput: MaxStepOutput})
	// The result's buffers are the step's own once Run returns: taken as
	// strings without a copy (up to 16 MiB each, per host).
	out := CommandResult{Class: r.Class, ExitCode: r.ExitCode, Stdout: bytesString(r.Stdout), Stderr: bytesString(r.Stderr)}
	var cuts []string
	for _, c := range []struct {
		name        string
		kept, total int64
	}{{"stdout", int64(len(r.Stdout)), r.StdoutBytes}, {"stderr", int64(len(r.Stderr)), r.StderrBytes}} {
		if c.total > c.kept {
			cuts = append(cuts, fmt.Sprintf("%s cut at %s of %s", c.name, mib(c.kept), mib(c.total)))
		}
	}
	out.Cut = strings.Join(cuts, ", ")
	switch r.Class {
	case orchestrator.OK:
	case orchestrator.Exit:
		if slices.Contains(needs, "kubectl") && NoKubeconfig(out.Stderr) {
			// Not a cluster that failed: none is configured there. No
			// verdict can come of it, and kubectl's klog lines are no
			// message for a screen.
			out.Problem = NoClusterProblem // the command ran: the host is whole, the verdicts UNKNOWN
			break
		}
		msg := strings.TrimSpace(out.Stderr)
		if msg == "" {
			msg = orchestrator.FirstLine(out.Stdout)
		}
		out.Problem = fmt.Sprintf("exited %d: %s", r.ExitCode, orchestrator.FirstLine(msg))
	default:
		out.Problem = fmt.Sprintf("%s: %s", r.Class, r.Err)
	}
	return out
}

// NoClusterProblem is a kubectl step's problem on a host where kubectl
// has no kubeconfig: its checks are UNKNOWN for it, never FAIL.
const NoClusterProblem = "no cluster configured: kubectl on this host has no kubeconfig for the login user (it fell back to localhost:8080)"

// NoKubeconfig says whether kubectl's stderr is its answer without a
// kubeconfig: it falls back to localhost:8080 and finds nothing there
// ("The connection to the server localhost:8080 was refused").
func NoKubeconfig(stderr string) bool {
	return strings.Contains(stderr, "The connection to the server localhost:8080 was refused") ||
		strings.Contains(stderr, `"http://localhost:8080/api?timeout=`) && strings.Contains(stderr, "connection refused")
}

func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

func mib(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// MissingParams says which parameters a command lacks and how to give
// them: "no value for model (--set model=...)".
func MissingParams(missing []string) string {
	sets := make([]string, len(missing))
	for k, m := range missing {
		sets[k] = "--set " + m + "=..."
	}
	return "no value for " + strings.Join(missing, ", ") + " (" + strings.Join(sets, " ") + ")"
}

// OneLine says what in s is not one line of plain text, drawn in lists
// and headers as it is: its first control or bidi character and where
// ("the control character U+0009 (character 4)"), or "" for none.
func OneLine(s string) string {
	i := strings.IndexFunc(s, visible.Unsafe)
	if i < 0 {
		return ""
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return fmt.Sprintf("the control character %U (character %d)", r, utf8.RuneCountInString(s[:i])+1)
}
