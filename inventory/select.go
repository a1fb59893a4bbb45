package inventory

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Select returns the hosts a host expression names, inventory hosts in
// inventory order followed by names the inventory does not have (as Adhoc
// hosts, in natural order), so that gpulab also works on hosts known only
// to ~/.ssh/config.
//
// The syntax is ClusterShell's, read left to right:
//
//	gpu[001-128]            a node set
//	gpu[01-04,07],login1    "," is union
//	gpu[01-16]!gpu07        "!" removes
//	@a100&@rack=r12         "&" keeps what both sides have
//	@a100^@h100             "^" keeps what exactly one side has
//	@train                  a group
//	@gpu=a100               hosts whose label gpu is a100; @gpu=* any value
//	* or @all               every inventory host
//	@slurm:partition=gpu    the Slurm cluster's nodes of partition gpu
//	                        (also state=drain, feature=a100, @slurm:all)
//
// An expression names at most MaxHosts hosts, and its terms at most
// MaxGroupNames in all (a host counting each time it is named); a node set
// is weighed before it is expanded, so that a typo such as a[0-999]b[0-999]
// is an error naming its size, not a minute of work.
func (inv *Inventory) Select(expr string) ([]Host, error) {
	budget := MaxGroupNames
	set, err := inv.evaluate(expr, inv.groupRef, false, &budget)
	if errors.Is(err, errNamesBudget) {
		return nil, fmt.Errorf("host expression %q: its terms name more than %d hosts in all (a host counts each time it is named)", expr, MaxGroupNames)
	}
	if err != nil {
		return nil, err
	}
	return inv.hostsFor(set), nil
}

func (inv *Inventory) groupRef(name string) ([]string, error) {
	m, ok := inv.Groups[name]
	if !ok {
		known := inv.GroupNames()
		if len(known) == 0 {
			return nil, fmt.Errorf("unknown group @%s (the inventory defines no groups)", name)
		}
		return nil, fmt.Errorf("unknown group @%s (groups: %s)", name, strings.Join(known, ", "))
	}
	return m, nil
}

type setOp byte

// errNamesBudget is returned by evaluate when the names its terms yield
// exceed what is left of its budget.
var errNamesBudget = errors.New("too many host names")

// evaluate returns the set of host names expr names, at most MaxHosts;
// ref resolves @group; strict refuses names that are not in the inventory.
// budget, when not nil, is decreased by the number of names each term
// yields (a node set's before it is expanded), and going below zero is
// errNamesBudget.
func (inv *Inventory) evaluate(expr string, ref func(string) ([]string, error), strict bool, budget *int) (map[string]bool, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, fmt.Errorf("empty host expression")
	}
	var (
		result = map[string]bool{}
		depth  int
		start  int
		op     = setOp(',')
	)
	apply := func(end int) error {
		term := strings.TrimSpace(expr[start:end])
		if term == "" {
			return fmt.Errorf("host expression %q: column %d: missing a host or group before %q", expr, column(expr, end), string(byte(op)))
		}
		names, err := inv.term(term, ref, strict, budget)
		if errors.Is(err, errNamesBudget) {
			return err
		}
		if err != nil {
			return fmt.Errorf("host expression %q: %w", expr, err)
		}
		set := make(map[string]bool, len(names))
		for _, n := range names {
			set[n] = true
		}
		switch op {
		case ',':
			for n := range set {
				result[n] = true
			}
		case '!':
			for n := range set {
				delete(result, n)
			}
		case '&':
			for n := range result {
				if !set[n] {
					delete(result, n)
				}
			}
		case '^':
			for n := range set {
				if result[n] {
					delete(result, n)
				} else {
					result[n] = true
				}
			}
		}
		if len(result) > MaxHosts {
			return fmt.Errorf("host expression %q names at least %d hosts, more than the %d a host expression may name", expr, len(result), MaxHosts)
		}
		return nil
	}
	for i := 0; i < len(expr); i++ {
		switch c := expr[i]; c {
		case '[':
			depth++
		case ']':
			depth--
		case ',', '!', '&', '^':
			if depth > 0 {
				continue
			}
			if i == 0 && c == '!' {
				return nil, fmt.Errorf("host expression %q: column 1: '!' needs a set to remove from (for example \"@all!gpu07\")", expr)
			}
			if err := apply(i); err != nil {
				return nil, err
			}
			op, start = setOp(c), i+1
		}
	}
	if err := apply(len(expr)); err != nil {
		return nil, err
	}
	return result, nil
}

// term resolves one operand: a node set, @group, @label=value or @all.
// budget, when not nil, is charged the names the operand yields; a node
// set is charged before it is expanded.
func (inv *Inventory) term(t string, ref func(string) ([]string, error), strict bool, budget *int) ([]string, error) {
	names, err := inv.termNames(t, ref, strict, budget)
	if err != nil {
		return nil, err
	}
	if budget != nil {
		if *budget -= len(names); *budget < 0 {
			return nil, errNamesBudget
		}
	}
	return names, nil
}

// termNames is term but for what it charges the names it yields.
func (inv *Inventory) termNames(t string, ref func(string) ([]string, error), strict bool, budget *int) ([]string, error) {
	if t == "*" || t == "@all" || t == "@*" {
		names := make([]string, len(inv.Hosts))
		for i, h := range inv.Hosts {
			names[i] = h.Name
		}
		return names, nil
	}
	if rest, ok := strings.CutPrefix(t, "@slurm:"); ok {
		return inv.Slurm.term(rest)
	}
	if rest, ok := strings.CutPrefix(t, "@"); ok {
		if key, value, isLabel := strings.Cut(rest, "="); isLabel {
			if key == "" || value == "" {
				return nil, fmt.Errorf("label selector %q: want @key=value", t)
			}
			var names []string
			add := func(hosts []int) {
				for _, i := range hosts {
					names = append(names, inv.Hosts[i].Name)
				}
			}
			if value != "*" {
				add(inv.byLabel[key][value])
				return names, nil
			}
			for _, hosts := range inv.byLabel[key] {
				add(hosts)
			}
			return names, nil
		}
		return ref(rest)
	}
	size, err := NodeSetSize(t)
	if err != nil {
		return nil, err
	}
	if size > MaxHosts {
		return nil, fmt.Errorf("node set %q names %s hosts, more than the %d a host expression may name", t, sizeText(size), MaxHosts)
	}
	if budget != nil && (*budget < 0 || size > uint64(*budget)) {
		*budget = -1
		return nil, errNamesBudget
	}
	names, err := ExpandPattern(t)
	if err != nil {
		return nil, err
	}
	if strict {
		for _, n := range names {
			if _, ok := inv.byName[n]; !ok {
				return nil, fmt.Errorf("host %q is not in the inventory", n)
			}
		}
	}
	return names, nil
}

func (inv *Inventory) hostsFor(set map[string]bool) []Host {
	var known []int
	var adhoc []string
	for n := range set {
		if i, ok := inv.byName[n]; ok {
			known = append(known, i)
		} else {
			adhoc = append(adhoc, n)
		}
	}
	slices.Sort(known)
	slices.SortFunc(adhoc, CompareNames)
	out := make([]Host, 0, len(set))
	for _, i := range known {
		out = append(out, inv.Hosts[i])
	}
	for _, n := range adhoc {
		out = append(out, inv.adhoc(n))
	}
	return out
}

// Names returns the hosts' names.
func Names(hosts []Host) []string {
	out := make([]string, len(hosts))
	for i, h := range hosts {
		out[i] = h.Name
	}
	return out
}
