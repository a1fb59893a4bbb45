package dgx

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/client-go/util/jsonpath"
)

// The simulated kubectl's JSONPath is kubectl's own: client-go's
// util/jsonpath, with missing keys allowed as kubectl's printer allows
// them (-o jsonpath, --sort-by, wait --for=jsonpath).

// parseJSONPath parses a template (-o jsonpath=TEMPLATE).
func parseJSONPath(tmpl string) (*jsonpath.JSONPath, error) {
	j := jsonpath.New("out")
	j.AllowMissingKeys(true)
	if err := j.Parse(tmpl); err != nil {
		return nil, err
	}
	return j, nil
}

// executeJSONPath runs a parsed template over data.
func executeJSONPath(j *jsonpath.JSONPath, data any) (string, error) {
	var b strings.Builder
	if err := j.Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}

// parsePath parses one path, as --sort-by and wait's jsonpath give it
// (.status.phase, with or without its braces).
func parsePath(p string) (*jsonpath.JSONPath, error) {
	p = strings.TrimSpace(p)
	if !strings.HasPrefix(p, "{") {
		p = "{" + p + "}"
	}
	return parseJSONPath(p)
}

// conditionsPath is each of an object's status conditions.
var conditionsPath, _ = parsePath(".status.conditions[*]")

// evalPath is what a path finds in obj, each value once.
func evalPath(obj any, j *jsonpath.JSONPath) []any {
	results, err := j.FindResults(obj)
	if err != nil {
		return nil
	}
	var out []any
	for _, r := range results {
		for _, v := range r {
			if v.IsValid() && !(v.Kind() == reflect.Interface && v.IsNil()) {
				out = append(out, v.Interface())
			}
		}
	}
	return out
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

// closingBrace finds the "}" closing the "{" at open, past quoted text
// (wait --for=jsonpath={...}=VALUE).
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

// anyMap is m as a JSON object's map.
func anyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
