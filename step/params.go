package step

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"

	"github.com/gpulab/gpulab/internal/visible"
	"github.com/gpulab/gpulab/orchestrator"
)

// Param is a value the user gives when running a runbook or a lab (--set
// name=value). A command names it as {{name}}. A step whose parameter has no
// value is SKIPPED, saying how to give one.
//
// How a value reaches a command: where {{name}} is a whole word of the
// command (or a word of plain letters around it, as --image={{name}}), the
// value is shell-quoted and may be any text. Anywhere else (inside '…', in a
// heredoc, beside quoted text such as JSON, in "${…}" or arithmetic) shell
// quoting cannot protect the command, so only a plain token may go there:
// the parameter must have a type whose values are tokens, and each value is
// checked to be one (letters, digits and . _ : / @ + = % -, starting with a
// letter or digit). The loader finds these places by parsing the command as
// the shell would, and refuses the file where it cannot tell.
type Param struct {
	Name    string `toml:"name" json:"name"`
	Help    string `toml:"help" json:"help"`
	Default string `toml:"default" json:"default,omitempty"`
	// Type is one of ParamTypes; empty means "string".
	Type string `toml:"type" json:"type,omitempty"`
	// Pattern is a regular expression the whole value must match.
	Pattern string `toml:"pattern" json:"pattern,omitempty"`
	// Min and Max bound an int or number.
	Min *float64 `toml:"min" json:"min,omitempty"`
	Max *float64 `toml:"max" json:"max,omitempty"`
	// Token is set by the loader: the parameter reaches a place in a
	// command where only a plain token is safe.
	Token bool `toml:"-" json:"token,omitempty"`

	re *regexp.Regexp
}

// ParamTypes are the types a parameter may declare, with what they accept.
var ParamTypes = map[string]string{
	"string": "any text on one line",
	"path":   "a file path on one line",
	"int":    "a whole number",
	"number": "a number",
	"name":   "a Kubernetes object name (lower-case letters, digits, '-' and '.')",
	"image":  "a container image reference (registry/name:tag or @sha256:…)",
	"url":    "an http or https URL",
}

// tokenTypes are the types whose valid values are plain tokens (ints and
// numbers are, when not negative: the token check still runs).
var tokenTypes = []string{"int", "number", "name", "image", "url"}

var (
	paramNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	placeholder = regexp.MustCompile(`\{\{\s*([a-z][a-z0-9_]*)\s*\}\}`)
	k8sNameRE   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	// imageRE is the grammar of distribution's reference package: an
	// optional registry host[:port]/, path components, an optional tag and
	// an optional digest.
	imageRE = regexp.MustCompile(`^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]+)?/)?` +
		`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*` +
		`(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$`)
)

// Placeholders lists the {{name}} parameters a command uses.
func Placeholders(command string) []string {
	var out []string
	for _, m := range placeholder.FindAllStringSubmatch(command, -1) {
		out = append(out, m[1])
	}
	return out
}

// ValidParamName reports whether name can name a parameter.
func ValidParamName(name string) bool { return paramNameRE.MatchString(name) }

// IsToken reports whether v is a plain token: safe as it is inside single
// quotes, a heredoc, a JSON string or a YAML plain scalar.
func IsToken(v string) bool {
	if v == "" {
		return false
	}
	for i, r := range v {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case i > 0 && strings.ContainsRune("._:/@+=%-", r):
		default:
			return false
		}
	}
	return true
}

// CheckParamDefs checks parameter declarations: names, types, patterns,
// bounds and defaults. bad gets the parameter's index, the key at fault
// and the message.
func CheckParamDefs(params []Param, bad func(i int, key, msg string)) {
	seen := map[string]bool{}
	for i := range params {
		p := &params[i]
		if !paramNameRE.MatchString(p.Name) || seen[p.Name] {
			bad(i, "name", fmt.Sprintf("parameter name %q is missing, malformed (a-z, 0-9, _) or repeated", p.Name))
		}
		seen[p.Name] = true
		if _, ok := ParamTypes[p.paramType()]; !ok {
			bad(i, "type", fmt.Sprintf("parameter %s: type %q: want one of %s", p.Name, p.Type, strings.Join(slices.Sorted(mapKeys(ParamTypes)), ", ")))
			continue
		}
		if p.Pattern != "" {
			re, err := regexp.Compile(`^(?:` + p.Pattern + `)$`)
			if err != nil {
				bad(i, "pattern", fmt.Sprintf("parameter %s: pattern: %v", p.Name, err))
				continue
			}
			p.re = re
		}
		for _, b := range []*float64{p.Min, p.Max} {
			if b != nil && (math.IsNaN(*b) || math.IsInf(*b, 0)) {
				bad(i, "min", fmt.Sprintf("parameter %s: min and max are finite numbers, not %v", p.Name, *b))
			}
		}
		if (p.Min != nil || p.Max != nil) && p.paramType() != "int" && p.paramType() != "number" {
			bad(i, "min", fmt.Sprintf("parameter %s: min and max bound an int or a number, not a %s", p.Name, p.paramType()))
		}
		if p.Min != nil && p.Max != nil && *p.Min > *p.Max {
			bad(i, "max", fmt.Sprintf("parameter %s: max %v is below min %v", p.Name, *p.Max, *p.Min))
		}
		if p.Default != "" {
			if err := p.Check(p.Default); err != nil {
				bad(i, "default", fmt.Sprintf("parameter %s: default: %v", p.Name, err))
			}
		}
	}
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func (p *Param) paramType() string {
	if p.Type == "" {
		return "string"
	}
	return p.Type
}

// free reports whether the parameter's values may be any text (no type
// or pattern restricts them to tokens).
func (p *Param) free() bool {
	return p.Pattern == "" && !slices.Contains(tokenTypes, p.paramType())
}

// Check says why v is not a valid value of p, or nil.
func (p *Param) Check(v string) error {
	if i := strings.IndexFunc(v, visible.Unsafe); i >= 0 {
		r, _ := utf8.DecodeRuneInString(v[i:])
		return fmt.Errorf("holds a control character or a bidi/format character (%q at byte %d): values are one line of visible text", string(r), i)
	}
	if !utf8Valid(v) {
		return errors.New("is not valid UTF-8")
	}
	switch p.paramType() {
	case "int", "number":
		f, err := strconv.ParseFloat(v, 64)
		if p.paramType() == "int" {
			var n int64
			n, err = strconv.ParseInt(v, 10, 64)
			f = float64(n)
		} else if err == nil && !isNumber(v) {
			err = errors.New("not a finite decimal number")
		}
		if err != nil {
			return fmt.Errorf("%q is not %s", v, aOrAn(p.paramType()))
		}
		if p.Min != nil && f < *p.Min || p.Max != nil && f > *p.Max {
			return fmt.Errorf("%s is out of range (%s)", v, p.bounds())
		}
	case "name":
		if len(v) > 253 || !k8sNameRE.MatchString(v) {
			return fmt.Errorf("%q is not a Kubernetes name: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters", v)
		}
	case "image":
		if len(v) > 512 || !imageRE.MatchString(v) {
			return fmt.Errorf("%q is not a container image reference (registry/name:tag or name@sha256:…)", v)
		}
	case "url":
		if !validURL(v) {
			return fmt.Errorf("%q is not an http or https URL (host[:port], no spaces, quotes or globs)", v)
		}
	case "path", "string":
		if v == "" {
			return errors.New("is empty")
		}
	}
	if p.re != nil && !p.re.MatchString(v) {
		return fmt.Errorf("%q does not match the pattern %s", v, p.Pattern)
	}
	if p.Token && !IsToken(v) {
		return fmt.Errorf("%q is not a plain token (letters, digits and . _ : / @ + = %% -, starting with a letter or digit), which is all that is safe where a command uses {{%s}}", v, p.Name)
	}
	return nil
}

// validURL: an http(s) URL with a host of name characters, a port that is
// a port, and nothing curl would glob ([ ] { }) or a shell would read.
func validURL(v string) bool {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil {
		return false
	}
	if strings.ContainsAny(v, " \"'\\`<>|^{}") || strings.ContainsAny(u.EscapedPath()+u.RawQuery+u.Fragment, "[]") {
		return false
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return false
		}
	}
	return strings.IndexFunc(u.Hostname(), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(".-:%", r))
	}) < 0
}

// isNumber reports whether v is a finite decimal number.
func isNumber(v string) bool {
	f, err := strconv.ParseFloat(v, 64)
	return err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) && !strings.ContainsAny(v, "xXpP_")
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func aOrAn(t string) string {
	if t == "int" {
		return "an int (a whole number)"
	}
	return "a number"
}

func (p *Param) bounds() string {
	switch {
	case p.Min != nil && p.Max != nil:
		return fmt.Sprintf("%v to %v", *p.Min, *p.Max)
	case p.Min != nil:
		return fmt.Sprintf("at least %v", *p.Min)
	}
	return fmt.Sprintf("at most %v", *p.Max)
}

// BindParams checks name=value strings against params (of what, for the
// messages) and returns every parameter's value, defaults filled in. Every
// value is checked against its parameter before anything runs.
func BindParams(what string, params []Param, set []string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range params {
		out[p.Name] = p.Default
	}
	for _, kv := range set {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("--set %q: want name=value", kv)
		}
		if _, known := out[k]; !known {
			var names []string
			for _, p := range params {
				names = append(names, p.Name)
			}
			if len(names) == 0 {
				return nil, fmt.Errorf("--set %s: %s takes no parameters", k, what)
			}
			return nil, fmt.Errorf("--set %s: %s has no parameter %q (it has %s)", k, what, k, strings.Join(names, ", "))
		}
		out[k] = v
	}
	if err := CheckValues(params, out); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// CheckValues checks every non-empty value against its parameter.
func CheckValues(params []Param, values map[string]string) error {
	var errs []error
	for i := range params {
		p := &params[i]
		if v := values[p.Name]; v != "" {
			if err := p.Check(v); err != nil {
				errs = append(errs, fmt.Errorf("parameter %s: %w", p.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// placeKind is how the shell reads the text where a placeholder sits.
type placeKind int

const (
	placeWord    placeKind = iota // a word of its own, or of plain letters: the value is shell-quoted
	placeDQWhole                  // "{{x}}" alone in double quotes: quoted too
	placeToken                    // anywhere else: only a plain token is safe
	placeNumber                   // an argument of a command that runs a command from its arguments: numbers only
)

// sentinel stands for the k-th placeholder while the command is parsed: a
// plain word, read the same in every context.
func sentinel(k int) string { return fmt.Sprintf("zzgpulabparam%dzz", k) }

var sentinelRE = regexp.MustCompile(`zzgpulabparam([0-9]+)zz`)

// places parses command as the shell would and says, for each placeholder
// in order, how the shell reads the place where it sits.
func places(command string) ([]placeKind, []string, error) {
	if strings.Contains(command, "zzgpulabparam") {
		return nil, nil, errors.New("holds gpulab's placeholder marker zzgpulabparam")
	}
	var names []string
	k := 0
	src := placeholder.ReplaceAllStringFunc(command, func(m string) string {
		names = append(names, placeholder.FindStringSubmatch(m)[1])
		s := sentinel(k)
		k++
		return s
	})
	if len(names) == 0 {
		return nil, nil, nil
	}
	kinds, err := placesIn(src, len(names), true)
	var unread *unreadError
	if errors.As(err, &unread) {
		return nil, nil, fmt.Errorf("puts {{%s}} where the shell does not read it as text (a comment?)", names[unread.i])
	}
	if err != nil {
		return nil, nil, err
	}
	return kinds, names, nil
}

// placesIn says how the shell reads each of the n sentinels in src;
// follow judges the variables they are assigned to too (taintedUses).
func placesIn(src string, n int, follow bool) ([]placeKind, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		return nil, fmt.Errorf("cannot be parsed as the shell would parse it, so its parameters cannot be placed safely: %v", err)
	}
	kinds := make([]placeKind, n)
	found := make([]bool, n)
	mark := func(text string, kind placeKind) {
		for _, m := range sentinelRE.FindAllStringSubmatch(text, -1) {
			i, _ := strconv.Atoi(m[1])
			if i < len(kinds) {
				kinds[i], found[i] = kind, true
			}
		}
	}
	var stack []syntax.Node
	hdocs := map[*syntax.Word]bool{}
	delims := map[*syntax.Word]bool{}
	var unsupported error
	syntax.Walk(f, func(n syntax.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		switch n := n.(type) {
		case *syntax.Redirect:
			if n.Op == syntax.Hdoc || n.Op == syntax.DashHdoc {
				hdocs[n.Hdoc] = true
				delims[n.Word] = true
			}
		case *syntax.SglQuoted:
			mark(n.Value, placeToken)
		case *syntax.Lit:
			if sentinelRE.MatchString(n.Value) {
				kind, err := litPlace(n, stack, hdocs, delims)
				if err != nil && unsupported == nil {
					unsupported = err
				}
				mark(n.Value, kind)
			}
		}
		stack = append(stack, n)
		return true
	})
	if unsupported != nil {
		return nil, unsupported
	}
	if follow {
		if err := taintedUses(f, src, n); err != nil {
			return nil, err
		}
	}
	for i, ok := range found {
		if !ok {
			return nil, &unreadError{i}
		}
	}
	return kinds, nil
}

// unreadError is placesIn's error for a sentinel the shell does not read.
type unreadError struct{ i int }

func (e *unreadError) Error() string {
	return "puts a parameter where the shell does not read it as text"
}

// taintedUses follows a parameter's value through the variables it is
// assigned to (x={{x}}; $x): each expansion of such a variable is judged
// as the placeholder itself would be where it sits, and a command with
// parameters sources no file (a value written to one would run as code).
func taintedUses(f *syntax.File, src string, n int) error {
	tainted := map[string]bool{}
	holds := func(n syntax.Node) bool {
		found := false
		syntax.Walk(n, func(m syntax.Node) bool {
			if l, ok := m.(*syntax.Lit); ok && sentinelRE.MatchString(l.Value) {
				found = true
			}
			return !found
		})
		return found
	}
	var sourced bool
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Assign:
			if n.Name != nil && n.Value != nil && holds(n.Value) {
				tainted[n.Name.Value] = true
			}
		case *syntax.WordIter:
			for _, w := range n.Items {
				if holds(w) {
					tainted[n.Name.Value] = true
				}
			}
		case *syntax.CallExpr:
			if len(n.Args) > 0 {
				if name := n.Args[0].Lit(); name == "source" || name == "." {
					sourced = true
				}
			}
		}
		return true
	})
	if sourced {
		return errors.New("sources a file, and has parameters: a value written into that file would run as code")
	}
	if len(tainted) == 0 {
		return nil
	}
	next := n
	for name := range tainted {
		re := regexp.MustCompile(`\$` + regexp.QuoteMeta(name) + `\b|\$\{` + regexp.QuoteMeta(name) + `\}`)
		src = re.ReplaceAllStringFunc(src, func(string) string { next++; return sentinel(next - 1) })
	}
	// Judged as placeholders, once more: only what that refuses counts.
	if _, err := placesIn(src, next, false); err != nil {
		var unread *unreadError
		if errors.As(err, &unread) {
			return nil
		}
		return fmt.Errorf("through a variable it is assigned to: %w", err)
	}
	return nil
}

// litPlace says how the shell reads a literal holding a placeholder, from
// its ancestors.
func litPlace(lit *syntax.Lit, stack []syntax.Node, hdocs, delims map[*syntax.Word]bool) (placeKind, error) {
	if len(stack) == 0 {
		return placeToken, errors.New("puts a parameter outside any command")
	}
	// From the literal outwards, up to the command substitution (or
	// process substitution) that starts a fresh shell context, if any.
outer:
	for i := len(stack) - 1; i >= 0; i-- {
		switch a := stack[i].(type) {
		case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause, *syntax.ParamExp:
			return placeToken, nil // arithmetic and ${…} re-read what they hold
		case *syntax.CmdSubst:
			if a.Backquotes {
				return placeToken, nil
			}
			break outer
		case *syntax.ProcSubst:
			break outer
		case *syntax.Word:
			if delims[a] {
				return placeToken, errors.New("puts a parameter in a heredoc's delimiter")
			}
			if hdocs[a] {
				return placeToken, nil
			}
		}
	}
	if kind, err, decided := commandPlace(lit, stack); decided {
		return kind, err
	}
	switch parent := stack[len(stack)-1].(type) {
	case *syntax.Word:
		for _, part := range parent.Parts {
			if _, ok := part.(*syntax.Lit); !ok {
				return placeToken, nil // beside quoted text or an expansion
			}
		}
		return placeWord, nil
	case *syntax.DblQuoted:
		if len(parent.Parts) == 1 && sentinelRE.FindString(lit.Value) == lit.Value {
			return placeDQWhole, nil
		}
		return placeToken, nil
	}
	return placeToken, fmt.Errorf("puts a parameter where gpulab cannot tell how the shell reads it (%T)", stack[len(stack)-1])
}

// Commands that read some of their arguments as code or as a command.
var (
	codeBuiltins = []string{"eval", "trap", "source", ".", "alias", "exec", "command", "builtin", "fc", "coproc"}
	nameBuiltins = []string{"read", "unset", "readarray", "mapfile", "getopts", "wait"}
	shells       = []string{"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox", "fish", "csh", "tcsh"}
	interpreters = []string{"python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php", "lua", "Rscript", "tclsh", "pwsh"}
	awks         = []string{"awk", "gawk", "mawk", "nawk"}
	// wrappers run a command given in their arguments.
	wrappers = []string{"sudo", "doas", "pkexec", "env", "timeout", "nice", "nohup", "setsid", "stdbuf", "chroot", "time", "watch",
		"xargs", "flock", "ionice", "taskset", "numactl", "runuser", "strace", "ltrace", "nsenter", "unshare", "chrt", "parallel",
		"srun", "mpirun", "mpiexec", "ssh", "su", "sg", "script", "screen", "tmux", "firejail", "systemd-run", "ip"}
)

// commandPlace judges a placeholder by the command it is an argument of:
// the command's name, an argument that command reads as code (eval, sh -c,
// python -c, awk's program), a pipe into a shell or an interpreter are
// refused; the arguments of a command that runs a command from them
// (sudo, timeout, xargs, kubectl exec --) take numbers only; the names
// read, printf -v and [[ ]] take plain tokens. decided is false when the
// command has nothing to say about it.
func commandPlace(lit *syntax.Lit, stack []syntax.Node) (kind placeKind, err error, decided bool) {
	code := func(why string) (placeKind, error, bool) {
		return placeToken, fmt.Errorf("puts a parameter %s: a value there would be run as a command or as code, whatever its quoting", why), true
	}
	// The shell context the placeholder is in ends at a command or process
	// substitution.
	top := 0
	for i := len(stack) - 1; i >= 0; i-- {
		if _, ok := stack[i].(*syntax.CmdSubst); ok {
			top = i + 1
			break
		}
		if _, ok := stack[i].(*syntax.ProcSubst); ok {
			top = i + 1
			break
		}
	}
	for i := len(stack) - 1; i >= top; i-- {
		if a, ok := stack[i].(*syntax.BinaryCmd); ok && (a.Op == syntax.Pipe || a.Op == syntax.PipeAll) && i+1 < len(stack) && stack[i+1] == syntax.Node(a.X) {
			if name := stmtCommand(a.Y); slices.Contains(shells, name) || slices.Contains(interpreters, name) {
				return code("in what is piped into " + name)
			}
		}
	}
	for i := len(stack) - 1; i >= top; i-- {
		switch a := stack[i].(type) {
		case *syntax.TestClause:
			return placeToken, nil, true // [[ ]] evaluates arithmetic operands
		case *syntax.DeclClause:
			if declEvaluates(a) {
				return placeToken, nil, true // declare -i evaluates arithmetic, -n names
			}
		case *syntax.CallExpr:
			if i+1 >= len(stack) {
				return 0, nil, false
			}
			word, ok := stack[i+1].(*syntax.Word)
			ai := slices.Index(a.Args, word)
			if !ok || ai < 0 {
				return 0, nil, false // an assignment's value: data
			}
			if ai == 0 {
				return code("in the command's name")
			}
			prefix := wordPrefix(word, lit)
			name := path.Base(a.Args[0].Lit())
			switch {
			case slices.Contains(codeBuiltins, name): // alias q={{x}}: code, whatever its form
				return code("among the arguments of " + name)
			case name == "sed" && (strings.HasPrefix(prefix, "--expression=") || strings.HasPrefix(prefix, "-e")):
				return code("in sed's script (GNU sed's e command runs a shell)")
			case (name == "docker" || name == "podman" || name == "nerdctl") && (strings.HasPrefix(prefix, "--entrypoint") || (ai > 0 && a.Args[ai-1].Lit() == "--entrypoint")):
				return code("in the container's entrypoint")
			}
			if strings.HasPrefix(prefix, "-") || strings.Contains(prefix, "=") {
				return 0, nil, false // an option's or an assignment's value: data
			}
			return argPlace(a.Args, ai, code)
		}
	}
	return 0, nil, false
}

// argPlace judges argument ai of the command args[0].
func argPlace(args []*syntax.Word, ai int, code func(string) (placeKind, error, bool)) (placeKind, error, bool) {
	name := path.Base(args[0].Lit())
	lits := make([]string, len(args))
	for k, w := range args {
		lits[k] = w.Lit()
	}
	prev := lits[ai-1]
	firstOperand := func(valued ...string) int { // the first argument that is no option
		for k := 1; k < len(lits); k++ {
			switch {
			case slices.Contains(valued, lits[k]):
				k++
			case strings.HasPrefix(lits[k], "-") && lits[k] != "-":
			default:
				return k
			}
		}
		return -1
	}
	switch {
	case slices.Contains(codeBuiltins, name):
		return code("among the arguments of " + name)
	case name == "printf" && prev == "-v", slices.Contains(nameBuiltins, name):
		return placeToken, nil, true
	case slices.Contains(shells, name):
		if ai == firstOperand("-o", "+o") {
			return code("in the script " + name + " runs")
		}
	case slices.Contains(interpreters, name):
		if slices.Contains([]string{"-c", "-e", "-E", "--eval", "-r", "-m", "--command"}, prev) || ai == firstOperand("-W", "-X", "-I") {
			return code("in the program " + name + " runs")
		}
	case slices.Contains(awks, name):
		if !slices.Contains(lits[:ai], "-f") && ai == firstOperand("-v", "-F", "-f") {
			return code("in " + name + "'s program")
		}
	case name == "sed":
		scripted := slices.ContainsFunc(lits[:ai], func(l string) bool {
			return l == "-e" || l == "-f" || strings.HasPrefix(l, "--expression") || strings.HasPrefix(l, "--file")
		})
		if prev == "-e" || prev == "--expression" || (!scripted && ai == firstOperand("-e", "-f", "--expression", "--file", "-l", "--line-length")) {
			return code("in sed's script (GNU sed's e command runs a shell)")
		}
	case name == "find":
		// -exec, -execdir, -ok and -okdir run what follows, to ; or +.
		for k := ai - 1; k > 0; k-- {
			if lits[k] == ";" || lits[k] == "+" {
				break
			}
			if slices.Contains([]string{"-exec", "-execdir", "-ok", "-okdir"}, lits[k]) {
				return placeNumber, nil, true
			}
		}
	case name == "su" && prev == "-c":
		return code("in the command su runs")
	case slices.Contains(wrappers, name):
		return placeNumber, nil, true
	case name == "kubectl" || name == "docker" || name == "podman" || name == "nerdctl" || name == "crictl":
		if slices.Contains(lits[:ai], "--") {
			return placeNumber, nil, true // after --: the command run in the container
		}
		if name != "kubectl" && name != "crictl" && len(lits) > 1 && slices.Contains([]string{"run", "create", "exec"}, lits[1]) {
			// docker run [OPTIONS] IMAGE [COMMAND] [ARG...]: what follows
			// the image (exec: the container) is the command it runs.
			if img := containerOperand(lits); img >= 0 && ai > img {
				return placeNumber, nil, true
			}
		}
	}
	return 0, nil, false
}

// containerRunValued are docker run's (create's, exec's) options that take
// a value as the next argument.
var containerRunValued = []string{"--name", "--network", "--net", "-v", "--volume", "-e", "--env", "--env-file", "-p", "--publish",
	"-u", "--user", "-w", "--workdir", "--entrypoint", "--gpus", "--ipc", "--shm-size", "--mount", "-m", "--memory", "--cpus",
	"--runtime", "--device", "-h", "--hostname", "-l", "--label", "--ulimit", "--cap-add", "--cap-drop", "--security-opt",
	"--pid", "--platform", "--pull", "--restart", "--log-driver", "--log-opt", "--add-host", "--dns", "--tmpfs", "--cidfile",
	"--cgroupns", "--uts", "--userns", "--stop-signal", "--stop-timeout", "--cpuset-cpus", "--cpuset-mems", "--group-add",
	"--volumes-from", "--detach-keys", "--label-file", "--memory-swap", "--oom-score-adj", "--network-alias"}

// containerOperand is the index of docker run's image (exec's
// container) in lits (the command's words, lits[1] the subcommand), -1
// when there is none.
func containerOperand(lits []string) int {
	for k := 2; k < len(lits); k++ {
		switch {
		case slices.Contains(containerRunValued, lits[k]):
			k++
		case strings.HasPrefix(lits[k], "-") && lits[k] != "-":
		default:
			return k
		}
	}
	return -1
}

// declEvaluates reports whether a declare (local, typeset...) evaluates
// its values: -i (integer, arithmetic) or -n (a name reference), or it is
// nameref.
func declEvaluates(d *syntax.DeclClause) bool {
	if d.Variant != nil && d.Variant.Value == "nameref" {
		return true
	}
	for _, a := range d.Args {
		if a.Naked && a.Value != nil {
			if f := a.Value.Lit(); strings.HasPrefix(f, "-") && strings.ContainsAny(f, "in") {
				return true
			}
		}
	}
	return false
}

// stmtCommand is the name of the first command of a statement, "" when it
// is not a plain command with a literal name.
func stmtCommand(st *syntax.Stmt) string {
	if st == nil {
		return ""
	}
	if c, ok := st.Cmd.(*syntax.CallExpr); ok && len(c.Args) > 0 {
		return path.Base(c.Args[0].Lit())
	}
	return ""
}

// wordPrefix is the literal text of word before the placeholder in lit.
func wordPrefix(word *syntax.Word, lit *syntax.Lit) string {
	var b strings.Builder
	for _, part := range word.Parts {
		if part == syntax.WordPart(lit) {
			if loc := sentinelRE.FindStringIndex(lit.Value); loc != nil {
				b.WriteString(lit.Value[:loc[0]])
			}
			break
		}
		if l, ok := part.(*syntax.Lit); ok {
			b.WriteString(l.Value)
		} else {
			b.WriteString("x")
		}
	}
	return b.String()
}

// CheckCommand checks one command's placeholders against params: each must
// name a parameter, the command must parse, and a parameter placed where
// only a plain token is safe must have a type or pattern that keeps its
// values tokens; such parameters are marked Token. It returns one message
// per problem.
func CheckCommand(params []Param, command string) []string {
	kinds, names, err := places(command)
	if err != nil {
		return []string{err.Error()}
	}
	var msgs []string
	for i, name := range names {
		j := slices.IndexFunc(params, func(p Param) bool { return p.Name == name })
		if j < 0 {
			msgs = append(msgs, fmt.Sprintf("uses {{%s}}, which is not a [[param]]", name))
			continue
		}
		p := &params[j]
		if kinds[i] == placeNumber {
			if t := p.paramType(); t != "int" && t != "number" {
				msgs = append(msgs, fmt.Sprintf("puts {{%s}} among the arguments of a command that runs a command from them (sudo, timeout, xargs, kubectl exec --, ...), where a value could name the program to run: only an int or number parameter may go there", name))
			}
			continue
		}
		if kinds[i] != placeToken {
			continue
		}
		if p.free() {
			msgs = append(msgs, fmt.Sprintf("puts {{%s}} inside quotes, a heredoc or beside quoted text, where shell quoting cannot protect the command: give parameter %s a type whose values are plain tokens (%s) or a pattern, or make {{%s}} a word of its own",
				name, name, strings.Join(tokenTypes, ", "), name))
			continue
		}
		p.Token = true
	}
	return slices.Compact(msgs)
}

// Expand puts the parameters' values into a command, each as the place it
// sits in requires (shell-quoted, or a checked plain token); missing names
// the parameters that have no value. A value that is not safe where it
// would go is refused: nothing of the command runs.
func Expand(command string, params map[string]string) (line string, missing []string, err error) {
	kinds, _, err := places(command)
	if err != nil {
		return "", nil, err
	}
	k := 0
	line = placeholder.ReplaceAllStringFunc(command, func(m string) string {
		name := placeholder.FindStringSubmatch(m)[1]
		kind := kinds[k]
		k++
		v := params[name]
		switch {
		case v == "":
			missing = append(missing, name)
			return m
		case strings.ContainsFunc(v, visible.Unsafe):
			err = errors.Join(err, fmt.Errorf("parameter %s holds a control character or a bidi/format character: refused", name))
		case kind == placeNumber && !isNumber(v):
			err = errors.Join(err, fmt.Errorf("parameter %s: %q is not a number, which is all that may go where the command uses {{%s}}: refused", name, v, name))
		case kind == placeWord, kind == placeNumber:
			return orchestrator.Quote(v)
		case kind == placeDQWhole:
			return `"` + orchestrator.Quote(v) + `"`
		case !IsToken(v):
			err = errors.Join(err, fmt.Errorf("parameter %s: %q is not a plain token, which is all that is safe where the command uses {{%s}}: refused", name, v, name))
		}
		return v
	})
	if err != nil {
		return "", nil, err
	}
	return line, missing, nil
}
