package orchestrator

import (
	"fmt"
	"hash/maphash"
	"sort"
	"strings"
	"unicode/utf8"
	"unsafe"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/gpulab/gpulab/inventory"
)

// Group is the hosts that gave the same answer to one step: the same class,
// exit status, standard output and standard error. Hosts that failed before
// the step ran (connection errors) group by class; their errors, which name
// addresses, are kept per host.
//
// Stdout and Stderr are the first host's output itself, not a copy: on a
// fan-out where every host printed a megabyte, a copy would double the
// memory. A result's output is never written after the command ends;
// callers must not write it either while its groups are in use.
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
// Hosts are matched by a hash of their output, then compared in full.
func Fold(results []HostResult, step int) []Group {
	seed := maphash.MakeSeed()
	byKey := map[string][]*Group{} // several when outputs' hashes collide
	var order []*Group
	for i, hr := range results {
		var r *Result
		var key string
		if step < len(hr.Steps) {
			r = &hr.Steps[step]
			key = fmt.Sprintf("step\x00%d\x00%d\x00%s\x00%s\x00%x\x00%x", r.Class, r.ExitCode, r.Signal, r.Err,
				maphash.Bytes(seed, r.Stdout), maphash.Bytes(seed, r.Stderr))
		} else {
			key = fmt.Sprintf("host\x00%d", hr.Class)
		}
		var g *Group
		for _, c := range byKey[key] {
			if r == nil || (c.Stdout == string(r.Stdout) && c.Stderr == string(r.Stderr)) {
				g = c
				break
			}
		}
		if g == nil {
			g = &Group{Class: hr.Class, ExitCode: -1, first: i}
			if r != nil {
				g.Class, g.ExitCode, g.Signal, g.Stdout, g.Stderr = r.Class, r.ExitCode, r.Signal, shared(r.Stdout), shared(r.Stderr)
			}
			byKey[key] = append(byKey[key], g)
			order = append(order, g)
		}
		g.Hosts = append(g.Hosts, hr.Host)
		e := hr.Err
		if r != nil {
			e = r.Err
		}
		if e != "" {
			if g.Errors == nil {
				g.Errors = map[string]string{}
			}
			g.Errors[hr.Host] = e
		}
	}
	groups := make([]Group, 0, len(order))
	for _, g := range order {
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

// shared is b as a string without a copy (see Group).
func shared(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}
