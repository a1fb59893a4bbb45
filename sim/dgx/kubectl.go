package dgx

import (
	"context"
	"fmt"
	"strings"
)

func init() {
	tools["kubectl"] = kubectl
}

// kubectl answers as kubectl v1.32.4 (the recorded client) does against
// the fleet's simulated cluster (Host.Cluster): its verbs, flags, tables
// and errors, byte for byte where a recording exists (recorded/kubectl-*)
// and in kubectl's own code's format elsewhere. A host without a cluster
// answers as recorded on a machine with none: kubectl version prints the
// client's lines and every verb is refused (the connection to
// localhost:8080).
//
// What it cannot honestly simulate it refuses in kubectl's error shape
// ("error: ...", exit 1), saying that the cluster is simulated: running
// programs other than sleep, echo, true and nvidia-smi in containers,
// output as JSON or YAML, and the verbs the built-in labs and runbooks do
// not use.
func kubectl(ctx context.Context, h *Host, t *term, args []string) int {
	rec := strings.SplitAfter(recording(recKubectl), "\n")
	client, refused := rec[0]+rec[1], rec[2]
	inv, err := parseKubectl(args[1:])
	if err != nil {
		return t.fail(1, err.Error())
	}
	if o := inv.flags["output"]; inv.verb == "version" && o != "" {
		return t.fail(1, "error: the SIMULATED kubectl prints its version as text only, not -o "+o+"\n")
	}
	if inv.verb == "version" && inv.bool("client") {
		t.print(client)
		return 0
	}
	if h.Cluster == nil {
		if inv.verb == "version" {
			t.print(client)
		}
		t.eprint(refused)
		return 1
	}
	if inv.verb == "version" {
		t.print(client + "Server Version: " + kubeServerVersion + "\n")
		return 0
	}
	k := &kubeRun{ctx: ctx, h: h, t: t, inv: inv}
	return k.run()
}

// kubeVerbs are kubectl's commands: those simulated, and the others,
// which are refused.
var kubeVerbs = map[string]bool{
	"get": true, "describe": true, "version": true, "api-resources": true, "run": true, "create": true, "delete": true,
	"wait": true, "logs": true, "exec": true,
	"annotate": false, "api-versions": false, "apply": false, "attach": false, "auth": false, "autoscale": false,
	"certificate": false, "cluster-info": false, "completion": false, "config": false, "cordon": false, "cp": false,
	"debug": false, "diff": false, "drain": false, "edit": false, "events": false, "explain": false, "expose": false,
	"kustomize": false, "label": false, "options": false, "patch": false, "plugin": false, "port-forward": false,
	"proxy": false, "replace": false, "rollout": false, "scale": false, "set": false, "taint": false, "top": false,
	"uncordon": false, "help": false,
}

// kubeFlag describes a flag: whether it takes a value, and its
// one-letter form.
type kubeFlag struct {
	value bool
	short byte
}

// globalFlags are kubectl's flags every command takes.
var globalFlags = map[string]kubeFlag{
	"namespace": {true, 'n'}, "kubeconfig": {true, 0}, "context": {true, 0}, "cluster": {true, 0}, "user": {true, 0},
	"request-timeout": {true, 0}, "v": {true, 'v'},
}

// verbFlags are each simulated command's own flags.
var verbFlags = map[string]map[string]kubeFlag{
	"get": {"all-namespaces": {false, 'A'}, "output": {true, 'o'}, "field-selector": {true, 0}, "selector": {true, 'l'},
		"no-headers": {false, 0}, "ignore-not-found": {false, 0}, "sort-by": {true, 0}, "watch": {false, 'w'}},
	"describe":      {"all-namespaces": {false, 'A'}, "selector": {true, 'l'}, "show-events": {false, 0}},
	"version":       {"client": {false, 0}, "output": {true, 'o'}},
	"api-resources": {"api-group": {true, 0}, "output": {true, 'o'}, "namespaced": {false, 0}, "no-headers": {false, 0}},
	"run": {"image": {true, 0}, "restart": {true, 0}, "env": {true, 0}, "command": {false, 0}, "overrides": {true, 0},
		"labels": {true, 'l'}, "rm": {false, 0}, "stdin": {false, 'i'}, "tty": {false, 't'}},
	"create": {"filename": {true, 'f'}},
	"delete": {"ignore-not-found": {false, 0}, "wait": {false, 0}, "now": {false, 0}, "force": {false, 0},
		"grace-period": {true, 0}, "all": {false, 0}, "filename": {true, 'f'}},
	"wait":   {"for": {true, 0}, "timeout": {true, 0}, "all": {false, 0}},
	"logs":   {"container": {true, 'c'}, "tail": {true, 0}, "follow": {false, 'f'}, "previous": {false, 'p'}},
	"exec":   {"container": {true, 'c'}, "stdin": {false, 'i'}, "tty": {false, 't'}},
	"events": {},
}

// kubeInvocation is a parsed kubectl command line.
type kubeInvocation struct {
	verb  string
	args  []string          // positional arguments after the verb
	flags map[string]string // by long name; "true" for a boolean
	multi map[string][]string
	dash  []string // after "--"
	seen  bool     // "--" was given
}

func (k *kubeInvocation) bool(name string) bool {
	v, ok := k.flags[name]
	return ok && v != "false"
}

func (k *kubeInvocation) has(name string) bool { _, ok := k.flags[name]; return ok }

// usageError is a flag error as kubectl prints it.
func usageError(verb, msg string) error {
	path := "kubectl"
	if verb != "" {
		path += " " + verb
	}
	return fmt.Errorf("error: %s\nSee '%s --help' for usage.\n", msg, path)
}

// parseKubectl reads a command line as kubectl's flag parser (pflag)
// does: flags anywhere, "--name=value", "--name value", "-n value",
// "-nvalue", bundled one-letter booleans ("-it"), "--" ends them.
func parseKubectl(args []string) (*kubeInvocation, error) {
	inv := &kubeInvocation{flags: map[string]string{}, multi: map[string][]string{}}
	verb := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			verb = a
			break
		}
		// A global flag's value ("-n ns") is not the command.
		if f, ok := lookupFlag(nil, a); ok && f.value && !strings.Contains(a, "=") && (strings.HasPrefix(a, "--") || len(a) == 2) {
			i++
		}
	}
	if verb == "" {
		return nil, fmt.Errorf("error: the simulated kubectl needs a command (kubectl get, describe, ...)\n")
	}
	simulated, known := kubeVerbs[verb]
	if !known {
		return nil, fmt.Errorf("error: unknown command %q for \"kubectl\"%s\n", verb, suggestVerb(verb))
	}
	if !simulated {
		return nil, fmt.Errorf("error: kubectl %s is not simulated: the SIMULATED cluster answers get, describe, version, api-resources, run, create, delete, wait, logs and exec\n", verb)
	}
	inv.verb = verb
	return inv, inv.parseFlags(args)
}

// lookupFlag finds a flag by its word ("--namespace=x", "-n"), among the
// global flags and those of verb.
func lookupFlag(own map[string]kubeFlag, word string) (kubeFlag, bool) {
	if name, ok := strings.CutPrefix(word, "--"); ok {
		name, _, _ = strings.Cut(name, "=")
		for _, set := range []map[string]kubeFlag{globalFlags, own} {
			if f, ok := set[name]; ok {
				return f, true
			}
		}
		return kubeFlag{}, false
	}
	if len(word) >= 2 {
		for _, set := range []map[string]kubeFlag{globalFlags, own} {
			for _, f := range set {
				if f.short == word[1] {
					return f, true
				}
			}
		}
	}
	return kubeFlag{}, false
}

func (inv *kubeInvocation) parseFlags(args []string) error {
	own := verbFlags[inv.verb]
	verbSeen := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			inv.seen, inv.dash = true, args[i+1:]
			return nil
		case strings.HasPrefix(a, "--"):
			n, err := inv.longFlag(own, args, i)
			if err != nil {
				return err
			}
			i = n
		case strings.HasPrefix(a, "-") && a != "-":
			n, err := inv.shortFlags(own, args, i)
			if err != nil {
				return err
			}
			i = n
		case !verbSeen && a == inv.verb:
			verbSeen = true
		default:
			inv.args = append(inv.args, a)
		}
	}
	return nil
}

// set records a flag's value (repeatable ones keep every value).
func (inv *kubeInvocation) set(name, value string) {
	inv.flags[name] = value
	inv.multi[name] = append(inv.multi[name], value)
}

func (inv *kubeInvocation) longFlag(own map[string]kubeFlag, args []string, i int) (int, error) {
	name, value, hasValue := strings.Cut(strings.TrimPrefix(args[i], "--"), "=")
	f, ok := globalFlags[name]
	if !ok {
		f, ok = own[name]
	}
	if !ok {
		return i, usageError(inv.verb, "unknown flag: --"+name)
	}
	switch {
	case hasValue:
	case !f.value:
		value = "true"
	case i+1 < len(args):
		i++
		value = args[i]
	default:
		return i, usageError(inv.verb, "flag needs an argument: --"+name)
	}
	inv.set(name, value)
	return i, nil
}

func (inv *kubeInvocation) shortFlags(own map[string]kubeFlag, args []string, i int) (int, error) {
	word := args[i]
	for k := 1; k < len(word); k++ {
		c := word[k]
		name, f, ok := shortName(own, c)
		if !ok {
			return i, usageError(inv.verb, fmt.Sprintf("unknown shorthand flag: '%c' in %s", c, word))
		}
		if !f.value {
			inv.set(name, "true")
			continue
		}
		rest := strings.TrimPrefix(word[k+1:], "=")
		switch {
		case rest != "":
		case i+1 < len(args):
			i++
			rest = args[i]
		default:
			return i, usageError(inv.verb, fmt.Sprintf("flag needs an argument: '%c' in %s", c, word))
		}
		inv.set(name, rest)
		return i, nil
	}
	return i, nil
}

func shortName(own map[string]kubeFlag, c byte) (string, kubeFlag, bool) {
	for _, set := range []map[string]kubeFlag{globalFlags, own} {
		for name, f := range set {
			if f.short == c {
				return name, f, true
			}
		}
	}
	return "", kubeFlag{}, false
}

// suggestVerb is cobra's "Did you mean this?" for a mistyped command.
func suggestVerb(verb string) string {
	var close []string
	for v := range kubeVerbs {
		if levenshtein(verb, v) <= 2 || strings.HasPrefix(v, verb) {
			close = append(close, v)
		}
	}
	if len(close) == 0 {
		return ""
	}
	return "\n\nDid you mean this?\n\t" + strings.Join(sortedUnique(close), "\n\t")
}

func sortedUnique(s []string) []string {
	m := map[string]bool{}
	for _, v := range s {
		m[v] = true
	}
	return sortedKeys(m)
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// kubeRun is one kubectl command against the cluster.
type kubeRun struct {
	ctx context.Context
	h   *Host
	t   *term
	inv *kubeInvocation
}

// namespace is the command's namespace: -n, or "default".
func (k *kubeRun) namespace() string {
	if ns := k.inv.flags["namespace"]; ns != "" {
		return ns
	}
	return "default"
}

// fail prints an error as kubectl does ("error: ..." or "Error from
// server ...") and returns 1.
func (k *kubeRun) fail(format string, a ...any) int {
	return k.t.fail(1, fmt.Sprintf(format, a...)+"\n")
}

// notFound is the API server's NotFound for a resource's plural name.
func notFound(plural, name string) string {
	return fmt.Sprintf("Error from server (NotFound): %s %q not found", plural, name)
}

func (k *kubeRun) run() int {
	switch k.inv.verb {
	case "get":
		return k.get()
	case "describe":
		return k.describe()
	case "api-resources":
		return k.apiResources()
	case "run":
		defer k.h.Cluster.changed()
		return k.runPod()
	case "create":
		defer k.h.Cluster.changed()
		return k.create()
	case "delete":
		defer k.h.Cluster.changed()
		return k.delete()
	case "wait":
		return k.wait()
	case "logs":
		return k.logs()
	case "exec":
		return k.exec()
	}
	return k.fail("error: kubectl %s is not simulated", k.inv.verb)
}
