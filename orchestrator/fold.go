package orchestrator

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/gpulab/gpulab/inventory"
)

// Group is the hosts that gave the same answer to one step: the same class,
// exit status, standard output and standard error. Hosts that failed before
// the step ran (connection errors) group by class; their errors, which name
// addresses, are kept per host.
type Group struct {
	Hosts    []string          `json:"hosts"`
	NodeSet  string            `json:"nodeset"`
	Class    Class             `json:"class"`
	ExitCode int               `json:"exit_code"`
	Signal   string            `json:"signal,omitempty"`
	Stdout   string            `json:"stdout"`
	Stderr   string            `json:"stderr"`
	Errors   map[string]string `json:"errors,omitempty"`
	first    int
}

// Fold groups the hosts' results for step (an index into Plan.Steps) the
// way ClusterShell's clubak does: largest group first, ties in plan order.
func Fold(results []HostResult, step int) []Group {
	byKey := map[string]*Group{}
	var order []string
	for i, hr := range results {
		g := Group{Class: hr.Class, ExitCode: -1, first: i}
		var key string
		if step < len(hr.Steps) {
			r := hr.Steps[step]
			g.Class, g.ExitCode, g.Signal, g.Stdout, g.Stderr = r.Class, r.ExitCode, r.Signal, string(r.Stdout), string(r.Stderr)
			key = fmt.Sprintf("step\x00%d\x00%d\x00%s\x00%s\x00%s\x00%s", r.Class, r.ExitCode, r.Signal, r.Stdout, r.Stderr, r.Err)
			if r.Err != "" {
				g.Errors = map[string]string{hr.Host: r.Err}
			}
		} else {
			key = fmt.Sprintf("host\x00%d", hr.Class)
			if hr.Err != "" {
				g.Errors = map[string]string{hr.Host: hr.Err}
			}
		}
		if prev, ok := byKey[key]; ok {
			prev.Hosts = append(prev.Hosts, hr.Host)
			for h, e := range g.Errors {
				if prev.Errors == nil {
					prev.Errors = map[string]string{}
				}
				prev.Errors[h] = e
			}
			continue
		}
		g.Hosts = []string{hr.Host}
		byKey[key] = &g
		order = append(order, key)
	}
	groups := make([]Group, 0, len(order))
	for _, k := range order {
		g := byKey[k]
		g.NodeSet = inventory.FoldNames(g.Hosts)
		groups = append(groups, *g)
	}
	sort.SliceStable(groups, func(i, j int) bool {
		if len(groups[i].Hosts) != len(groups[j].Hosts) {
			return len(groups[i].Hosts) > len(groups[j].Hosts)
		}
		return groups[i].first < groups[j].first
	})
	return groups
}

// Diff shows how b's output differs from a's, as a unified diff of standard
// output (and of standard error when that differs too). Output that is not
// UTF-8 text is binary, as diff(1) says of such files: Diff says that it
// differs and how long each side is.
func Diff(a, b Group) string {
	var out strings.Builder
	diff := func(stream, suffix, x, y string) {
		switch {
		case x == y:
		case !utf8.ValidString(x) || !utf8.ValidString(y):
			fmt.Fprintf(&out, "binary %s differs: %s printed %d bytes, %s %d bytes\n", stream, a.NodeSet, len(x), b.NodeSet, len(y))
		default:
			out.WriteString(udiff.Unified(a.NodeSet+suffix, b.NodeSet+suffix, x, y))
		}
	}
	diff("standard output", "", a.Stdout, b.Stdout)
	diff("standard error", " (stderr)", a.Stderr, b.Stderr)
	return out.String()
}
