package parse

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"
)

// Shape is what a parser's output looks like as JSON: what a lab's
// `out` holds and what `gpulab parse KIND` prints. It is read off the
// parser's result type, as encoding/json writes it, so it cannot drift
// from the output (TestShapesDescribeRealOutputs holds that on every
// fixture).
type Shape struct {
	// Type is object, list, map (string keys), string, number, bool or
	// any (whatever the input held).
	Type   string  `json:"type"`
	Fields []Field `json:"fields,omitempty"` // an object's keys, in the order they are written
	Elem   *Shape  `json:"elem,omitempty"`   // a list's or map's values
	// Name is the Go type an object comes from, so that a shape that
	// contains itself (a PCI tree's children) is written once.
	Name string `json:"-"`
}

// Field is one key of an object.
type Field struct {
	Key   string `json:"key"`
	Shape *Shape `json:"shape"`
	// Optional: the key may be missing or null (has(out.KEY) tells).
	Optional bool `json:"optional,omitempty"`
}

// Field returns the object's key, or false.
func (s *Shape) Field(key string) (Field, bool) {
	for _, f := range s.Fields {
		if f.Key == key {
			return f, true
		}
	}
	return Field{}, false
}

// Keys are the object's keys, sorted.
func (s *Shape) Keys() []string {
	keys := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		keys[i] = f.Key
	}
	sort.Strings(keys)
	return keys
}

// ShapeOf is the output shape of the parser kind: every parser returns
// one Go type whatever its input, so the type of what it makes of no
// input is the type of everything it makes.
func (k Kind) ShapeOf() *Shape {
	v, _ := k.Parse("")
	if v == nil {
		return &Shape{Type: "any"}
	}
	return ShapeOfType(reflect.TypeOf(v))
}

// ShapeOfType is the shape encoding/json writes a value of type t in.
func ShapeOfType(t reflect.Type) *Shape {
	return shapeOf(t, map[reflect.Type]*Shape{})
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
)

func shapeOf(t reflect.Type, seen map[reflect.Type]*Shape) *Shape {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s, ok := seen[t]; ok {
		return s
	}
	switch {
	case t == timeType:
		return &Shape{Type: "string"}
	case t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType):
		return &Shape{Type: "any"} // it writes itself: nothing to read off its fields
	}
	switch t.Kind() {
	case reflect.Bool:
		return &Shape{Type: "bool"}
	case reflect.String:
		return &Shape{Type: "string"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return &Shape{Type: "number"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return &Shape{Type: "string"} // []byte is base64
		}
		s := &Shape{Type: "list"}
		seen[t] = s
		s.Elem = shapeOf(t.Elem(), seen)
		return s
	case reflect.Map:
		s := &Shape{Type: "map"}
		seen[t] = s
		s.Elem = shapeOf(t.Elem(), seen)
		return s
	case reflect.Struct:
		s := &Shape{Type: "object", Name: t.Name()}
		seen[t] = s
		s.Fields = fieldsOf(t, seen)
		return s
	}
	return &Shape{Type: "any"}
}

// fieldsOf lists a struct's keys as encoding/json writes them: exported
// fields by their json name, "-" left out, embedded structs' keys in
// their place.
func fieldsOf(t reflect.Type, seen map[reflect.Type]*Shape) []Field {
	var out []Field
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if !f.IsExported() && !f.Anonymous || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				out = append(out, fieldsOf(ft, seen)...)
				continue
			}
			if !f.IsExported() {
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		fs := shapeOf(ft, seen)
		if strings.Contains(","+opts+",", ",string,") {
			fs = &Shape{Type: "string"}
		}
		optional := f.Type.Kind() == reflect.Pointer || strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,") ||
			f.Type.Kind() == reflect.Interface
		out = append(out, Field{Key: name, Shape: fs, Optional: optional})
	}
	return out
}

// Describe writes the shape as a lab author reads it, one key a line:
//
//	gpus: list(object)
//	  index: number
//	  uuid: string (may be missing)
func (s *Shape) Describe() string {
	var b strings.Builder
	s.describe(&b, "", map[*Shape]bool{})
	return b.String()
}

func (s *Shape) describe(b *strings.Builder, indent string, open map[*Shape]bool) {
	switch s.Type {
	case "object":
		if open[s] {
			fmt.Fprintf(b, "%s(the same as the %s above)\n", indent, s.Name)
			return
		}
		open[s] = true
		defer delete(open, s)
		for _, f := range s.Fields {
			opt := ""
			if f.Optional {
				opt = " (may be missing)"
			}
			fmt.Fprintf(b, "%s%s: %s%s\n", indent, f.Key, f.Shape.Word(), opt)
			f.Shape.describeInner(b, indent+"  ", open)
		}
	case "list", "map":
		// The caller named the list ("out: list(object)"): what it holds
		// follows, said as such, not its type again.
		each := "each item"
		if s.Type == "map" {
			each = "each value"
		}
		fmt.Fprintf(b, "%s%s: %s\n", indent, each, s.Elem.Word())
		s.describeInner(b, indent+"  ", open)
	}
}

// describeInner writes what a list or map holds, or an object's keys.
func (s *Shape) describeInner(b *strings.Builder, indent string, open map[*Shape]bool) {
	switch s.Type {
	case "object":
		s.describe(b, indent, open)
	case "list", "map":
		if s.Elem.Type == "object" || s.Elem.Type == "list" || s.Elem.Type == "map" {
			s.Elem.describeInner(b, indent, open)
		}
	}
}

// Word is the shape as CEL names types: list(object),
// map(string, number).
func (s *Shape) Word() string {
	switch s.Type {
	case "list":
		return "list(" + s.Elem.Word() + ")"
	case "map":
		return "map(string, " + s.Elem.Word() + ")"
	}
	return s.Type
}
