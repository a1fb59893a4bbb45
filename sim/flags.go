package sim

import (
	"fmt"
	"strings"
)

// opts is a command line parsed the way GNU tools parse theirs: short
// flags may be grouped (-rf), a flag that takes a value takes the rest of
// its group or the next word (-n5, -n 5), long options are --name or
// --name=value, and "--" ends the options.
type opts struct {
	set  map[string]bool
	val  map[string]string
	args []string
}

func (o opts) has(names ...string) bool {
	for _, n := range names {
		if o.set[n] {
			return true
		}
	}
	return false
}

func (o opts) get(names ...string) (string, bool) {
	for _, n := range names {
		if v, ok := o.val[n]; ok {
			return v, true
		}
	}
	return "", false
}

// parseOpts reads args (without the command name). withValue lists the
// short flags that take a value ("n", "k"...), longValue the long ones.
// Operands and options may be mixed, as GNU allows, unless posix is set
// (then the first operand ends the options, as for env, sudo and timeout).
func parseOpts(args []string, withValue, longValue string, posix bool) (opts, error) {
	o := opts{set: map[string]bool{}, val: map[string]string{}}
	takes := func(list, name string) bool {
		for _, f := range strings.Split(list, ",") {
			if f == name {
				return true
			}
		}
		return false
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			o.args = append(o.args, args[i+1:]...)
			return o, nil
		case strings.HasPrefix(a, "--"):
			name, v, hasV := strings.Cut(a[2:], "=")
			if takes(longValue, name) && !hasV {
				if i+1 >= len(args) {
					return o, fmt.Errorf("option '--%s' requires an argument", name)
				}
				i++
				v, hasV = args[i], true
			}
			o.set[name] = true
			if hasV {
				o.val[name] = v
			}
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				name := a[j : j+1]
				o.set[name] = true
				if takes(withValue, name) {
					v := a[j+1:]
					if v == "" {
						if i+1 >= len(args) {
							return o, fmt.Errorf("option requires an argument -- '%s'", name)
						}
						i++
						v = args[i]
					}
					o.val[name] = v
					break
				}
			}
		default:
			if posix {
				o.args = append(o.args, args[i:]...)
				return o, nil
			}
			o.args = append(o.args, a)
		}
	}
	return o, nil
}

// numericFlag turns the old forms head -5 and tail -5 into -n 5.
func numericFlag(args []string) []string {
	out := make([]string, 0, len(args))
	for _, a := range args {
		if len(a) > 1 && a[0] == '-' && strings.Trim(a[1:], "0123456789") == "" {
			out = append(out, "-n", a[1:])
			continue
		}
		out = append(out, a)
	}
	return out
}

// operands drops a tool's flags (single letters among known, as -Rf,
// anywhere before "--", as GNU tools take them) and the "--", keeping the
// command name: for tools whose operands are all that matters.
func operands(args []string, known string) []string {
	out := []string{args[0]}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i+1:]...)
		}
		if len(a) > 1 && a[0] == '-' && strings.Trim(a[1:], known) == "" {
			continue
		}
		out = append(out, a)
	}
	return out
}

// check returns an error naming the first option that is not among short
// (letters) and long: a simulated tool refuses what it does not simulate,
// rather than give a wrong answer without a word.
func (o opts) check(_, short string, long ...string) error {
	for name := range o.set {
		if len(name) == 1 && strings.Contains(short, name) {
			continue
		}
		if len(name) > 1 && slicesContains(long, name) {
			continue
		}
		if len(name) == 1 {
			return fmt.Errorf("option -%s is not simulated on this host", name)
		}
		return fmt.Errorf("option --%s is not simulated on this host", name)
	}
	return nil
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
