package step

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gpulab/gpulab/internal/visible"
)

// PlainTexts reports each string in v (a runbook's or a lab's decoded
// file, walked by its toml keys) that holds a control character: an
// escape, a carriage return, a bell, a bidi override. Those texts are drawn
// on the workbench's screens and written into records, and a terminal acts
// on them (ESC ] 0 ; ... BEL retitles it, ESC [ 2 J clears it). A newline
// and a tab are text. whose names the file's kind in the message ("a
// lab's"); the top-level keys in skip have checks of their own.
func PlainTexts(v any, whose string, skip []string, bad func(path []any, msg string)) {
	unsafe := func(r rune) bool { return r != '\n' && r != '\t' && visible.Unsafe(r) }
	check := func(path []any, s string) {
		if i := strings.IndexFunc(s, unsafe); i >= 0 {
			r, _ := utf8.DecodeRuneInString(s[i:])
			bad(path, fmt.Sprintf("%s has the control character %U (character %d): %s texts are plain text, drawn on screens and written into records",
				keyPath(path), r, utf8.RuneCountInString(s[:i])+1, whose))
		}
	}
	var walk func(v reflect.Value, path []any)
	walk = func(v reflect.Value, path []any) {
		sub := func(k any) []any { return append(path[:len(path):len(path)], k) }
		switch v.Kind() {
		case reflect.String:
			check(path, v.String())
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				f := v.Type().Field(i)
				key, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
				if !f.IsExported() || key == "" || key == "-" || len(path) == 0 && slices.Contains(skip, key) {
					continue
				}
				walk(v.Field(i), sub(key))
			}
		case reflect.Slice, reflect.Array:
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i), sub(i))
			}
		case reflect.Map:
			for _, k := range v.MapKeys() {
				if k.Kind() == reflect.String {
					check(sub(k.String()), k.String())
					walk(v.MapIndex(k), sub(k.String()))
				}
			}
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem(), path)
			}
		}
	}
	walk(reflect.ValueOf(v), nil)
}

// keyPath is a TOML key path as a person reads it: "criterion[2].description".
func keyPath(path []any) string {
	var b strings.Builder
	for _, k := range path {
		switch k := k.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", k+1)
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, k)
		}
	}
	return b.String()
}
