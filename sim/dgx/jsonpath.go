package dgx

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// kubectl's JSONPath templates (client-go's util/jsonpath), the part
// gpulab's labs use: text, quoted strings ({"\n"}), field paths with
// escaped dots (.nvidia\.com/gpu), [*], [N], filters [?(@.f=="v")], and
// {range ...}{end}. Missing keys print nothing, as kubectl allows them
// by default. Several results of one expression are joined by spaces;
// maps and lists print as JSON.

// jpNode is a parsed template piece.
type jpNode struct {
	text  string   // literal text (when path is nil and not range/end)
	path  []jpStep // an expression
	rng   bool     // {range path}
	end   bool     // {end}
	isLit bool
}

// jpStep is one step of a path.
type jpStep struct {
	field  string // a map key
	all    bool   // [*]
	index  *int   // [N]
	filter *jpFilter
}

type jpFilter struct {
	path  []jpStep
	op    string // "==" or "!="
	value string
}

// parseJSONPath parses a template, or says what is wrong with it as
// kubectl does.
func parseJSONPath(tmpl string) ([]jpNode, error) {
	var nodes []jpNode
	for len(tmpl) > 0 {
		open := strings.IndexByte(tmpl, '{')
		if open < 0 {
			nodes = append(nodes, jpNode{text: tmpl, isLit: true})
			break
		}
		if open > 0 {
			nodes = append(nodes, jpNode{text: tmpl[:open], isLit: true})
		}
		end := closingBrace(tmpl, open)
		if end < 0 {
			return nil, fmt.Errorf("unclosed action")
		}
		n, err := parseAction(strings.TrimSpace(tmpl[open+1 : end]))
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
		tmpl = tmpl[end+1:]
	}
	return nodes, nil
}

// closingBrace finds the "}" closing the "{" at open, past quoted text.
func closingBrace(s string, open int) int {
	inQuote := false
	for i := open + 1; i < len(s); i++ {
		switch {
		case s[i] == '\\' && inQuote:
			i++
		case s[i] == '"':
			inQuote = !inQuote
		case s[i] == '}' && !inQuote:
			return i
		}
	}
	return -1
}

func parseAction(a string) (jpNode, error) {
	switch {
	case a == "end":
		return jpNode{end: true}, nil
	case strings.HasPrefix(a, "range "):
		p, err := parsePath(strings.TrimSpace(a[len("range "):]))
		return jpNode{rng: true, path: p}, err
	case strings.HasPrefix(a, `"`):
		s, err := strconv.Unquote(a)
		if err != nil {
			return jpNode{}, fmt.Errorf("invalid string %s", a)
		}
		return jpNode{text: s, isLit: true}, nil
	}
	p, err := parsePath(a)
	return jpNode{path: p}, err
}

// parsePath reads ".a.b[*].c\.d[?(@.x=="y")]" (a leading "$" or "@" is
// the current object).
func parsePath(p string) ([]jpStep, error) {
	p = strings.TrimPrefix(strings.TrimPrefix(p, "$"), "@")
	var steps []jpStep
	for len(p) > 0 {
		switch p[0] {
		case '.':
			name, rest := fieldName(p[1:])
			if name != "" {
				steps = append(steps, jpStep{field: name})
			}
			p = rest
		case '[':
			end := strings.IndexByte(p, ']')
			if strings.HasPrefix(p, "[?(") {
				end = strings.Index(p, ")]") + 1
			}
			if end <= 0 {
				return nil, fmt.Errorf("unterminated array")
			}
			st, err := parseBracket(p[1:end])
			if err != nil {
				return nil, err
			}
			steps = append(steps, st)
			p = p[end+1:]
		default:
			return nil, fmt.Errorf("unrecognized character in action: %q", p[:1])
		}
	}
	return steps, nil
}

// fieldName reads a key up to the next unescaped "." or "[".
func fieldName(p string) (string, string) {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch {
		case p[i] == '\\' && i+1 < len(p):
			i++
			b.WriteByte(p[i])
		case p[i] == '.' || p[i] == '[' || p[i] == ' ':
			return b.String(), p[i:]
		default:
			b.WriteByte(p[i])
		}
	}
	return b.String(), ""
}

func parseBracket(in string) (jpStep, error) {
	switch {
	case in == "*":
		return jpStep{all: true}, nil
	case strings.HasPrefix(in, "?(") && strings.HasSuffix(in, ")"):
		cond := in[2 : len(in)-1]
		for _, op := range []string{"==", "!="} {
			if l, r, ok := strings.Cut(cond, op); ok {
				path, err := parsePath(strings.TrimSpace(l))
				v := strings.TrimSpace(r)
				if u, err := strconv.Unquote(v); err == nil {
					v = u
				} else if strings.HasPrefix(v, "'") && strings.HasSuffix(v, "'") && len(v) >= 2 {
					v = v[1 : len(v)-1]
				}
				return jpStep{filter: &jpFilter{path: path, op: op, value: v}}, err
			}
		}
		return jpStep{}, fmt.Errorf("unsupported filter %q", in)
	}
	n, err := strconv.Atoi(in)
	if err != nil {
		return jpStep{}, fmt.Errorf("unsupported index %q", in)
	}
	return jpStep{index: &n}, nil
}

// evalPath applies a path to the values in.
func evalPath(in []any, steps []jpStep) []any {
	cur := in
	for _, st := range steps {
		var next []any
		for _, v := range cur {
			next = append(next, evalStep(v, st)...)
		}
		cur = next
	}
	return cur
}

func evalStep(v any, st jpStep) []any {
	switch {
	case st.field != "":
		if m, ok := v.(map[string]any); ok {
			if x, ok := m[st.field]; ok {
				return []any{x}
			}
		}
	case st.all:
		switch x := v.(type) {
		case []any:
			return x
		case map[string]any:
			var out []any
			for _, k := range sortedKeys(x) {
				out = append(out, x[k])
			}
			return out
		}
	case st.index != nil:
		if l, ok := v.([]any); ok {
			i := *st.index
			if i < 0 {
				i += len(l)
			}
			if i >= 0 && i < len(l) {
				return []any{l[i]}
			}
		}
	case st.filter != nil:
		var out []any
		if l, ok := v.([]any); ok {
			for _, e := range l {
				got := evalPath([]any{e}, st.filter.path)
				match := len(got) == 1 && jpText(got[0]) == st.filter.value
				if match == (st.filter.op == "==") {
					out = append(out, e)
				}
			}
		}
		return out
	}
	return nil
}

// jpText prints a value as a template does.
func jpText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any, []any:
		b, _ := json.Marshal(x)
		return string(b)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// executeJSONPath runs a parsed template over data.
func executeJSONPath(nodes []jpNode, data any) (string, error) {
	var b strings.Builder
	_, err := execNodes(&b, nodes, data)
	return b.String(), err
}

// execNodes runs nodes until an unmatched {end}; it returns how many it
// used.
func execNodes(b *strings.Builder, nodes []jpNode, cur any) (int, error) {
	for i := 0; i < len(nodes); i++ {
		n := nodes[i]
		switch {
		case n.end:
			return i, nil
		case n.isLit:
			b.WriteString(n.text)
		case n.rng:
			body := nodes[i+1:]
			var used int
			items := evalPath([]any{cur}, n.path)
			if len(items) == 1 {
				if l, ok := items[0].([]any); ok && len(n.path) > 0 && !n.path[len(n.path)-1].all {
					items = l
				}
			}
			for _, it := range items {
				u, err := execNodes(b, body, it)
				if err != nil {
					return 0, err
				}
				used = u
			}
			if len(items) == 0 {
				used = skipToEnd(body)
			}
			if used >= len(body) {
				return 0, fmt.Errorf("not in range, nothing to end")
			}
			i += used + 1
		default:
			var parts []string
			for _, v := range evalPath([]any{cur}, n.path) {
				parts = append(parts, jpText(v))
			}
			b.WriteString(strings.Join(parts, " "))
		}
	}
	return len(nodes), nil
}

// skipToEnd finds the {end} of a range body that did not run.
func skipToEnd(body []jpNode) int {
	depth := 0
	for i, n := range body {
		switch {
		case n.rng:
			depth++
		case n.end && depth == 0:
			return i
		case n.end:
			depth--
		}
	}
	return len(body)
}

// anyMap turns a string map into the map a template walks.
func anyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
