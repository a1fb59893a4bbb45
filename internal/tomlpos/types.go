package tomlpos

import "fmt"

// StringList is a TOML value that may be one string or an array of strings.
type StringList []string

// UnmarshalTOML implements toml.Unmarshaler.
func (l *StringList) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case string:
		*l = StringList{x}
		return nil
	case []any:
		out := make(StringList, 0, len(x))
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				return fmt.Errorf("element %d: want a string, found %v", i+1, e)
			}
			out = append(out, s)
		}
		*l = out
		return nil
	}
	return fmt.Errorf("want a string or an array of strings, found %v", v)
}
