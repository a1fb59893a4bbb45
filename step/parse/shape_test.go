package parse

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestShapesDescribeRealOutputs parses every fixture of every kind and
// checks that each key and value of the JSON it prints is where the
// kind's shape says, with the type it says: the shape lab check holds an
// expression to is the output the lab will read.
func TestShapesDescribeRealOutputs(t *testing.T) {
	seen := 0
	for _, k := range Kinds() {
		shape := k.ShapeOf()
		if shape.Type == "any" {
			t.Errorf("%s: no shape: its parser returns nothing for no input", k.Name)
			continue
		}
		for _, dir := range k.Fixtures {
			files, _ := filepath.Glob(filepath.Join(fixtures, dir, "*"))
			for _, f := range files {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				v, _ := k.Parse(string(data))
				raw, err := json.Marshal(v)
				if err != nil {
					t.Fatal(err)
				}
				var doc any
				if err := json.Unmarshal(raw, &doc); err != nil {
					t.Fatal(err)
				}
				for _, problem := range conform(doc, shape, "out") {
					t.Errorf("%s %s: %s", k.Name, filepath.Base(f), problem)
				}
				seen++
			}
		}
	}
	if seen < 30 {
		t.Fatalf("only %d fixtures checked", seen)
	}
}

// conform lists where doc departs from s.
func conform(doc any, s *Shape, at string) []string {
	if doc == nil || s.Type == "any" {
		return nil // null is what an absent list or pointer writes
	}
	var out []string
	switch d := doc.(type) {
	case map[string]any:
		switch s.Type {
		case "object":
			for key, v := range d {
				f, ok := s.Field(key)
				if !ok {
					out = append(out, at+"."+key+": not in the shape (keys: "+strings.Join(s.Keys(), ", ")+")")
					continue
				}
				out = append(out, conform(v, f.Shape, at+"."+key)...)
			}
			for _, f := range s.Fields {
				if _, ok := d[f.Key]; !ok && !f.Optional {
					out = append(out, at+"."+f.Key+": the shape says it is always there")
				}
			}
		case "map":
			for key, v := range d {
				out = append(out, conform(v, s.Elem, at+"["+key+"]")...)
			}
		default:
			out = append(out, at+": an object, the shape says "+s.Word())
		}
	case []any:
		if s.Type != "list" {
			return []string{at + ": a list, the shape says " + s.Word()}
		}
		for _, v := range d {
			out = append(out, conform(v, s.Elem, at+"[]")...)
		}
	case string:
		if s.Type != "string" {
			out = append(out, at+": a string, the shape says "+s.Word())
		}
	case float64:
		if s.Type != "number" {
			out = append(out, at+": a number, the shape says "+s.Word())
		}
	case bool:
		if s.Type != "bool" {
			out = append(out, at+": a bool, the shape says "+s.Word())
		}
	}
	return out
}

func TestShapeDescribe(t *testing.T) {
	k, _ := Lookup("nvidia-smi-L")
	got := k.ShapeOf().Describe()
	want := `gpus: list(object)
  index: number
  name: string
  uuid: string
  mig_devices: list(object)
    profile: string
    device: number
    uuid: string
`
	if got != want {
		t.Errorf("nvidia-smi-L's shape:\n%s\nwant:\n%s", got, want)
	}
	// A tree that holds itself is written once, not forever.
	type node struct {
		Name     string  `json:"name"`
		Children []*node `json:"children,omitempty"`
		Skip     int     `json:"-"`
		internal int
	}
	s := shapeOf(reflect.TypeFor[node](), map[reflect.Type]*Shape{})
	if got, want := s.Describe(), "name: string\nchildren: list(object) (may be missing)\n  (the same as the node above)\n"; got != want {
		t.Errorf("recursive shape:\n%s\nwant:\n%s", got, want)
	}
}

// Every kind's shape is written as JSON (gpulab parse KIND --shape
// --json): none holds itself, which JSON could not write.
func TestShapesWriteAsJSON(t *testing.T) {
	for _, k := range Kinds() {
		if _, err := json.Marshal(k.ShapeOf()); err != nil {
			t.Errorf("%s: %v", k.Name, err)
		}
	}
}

// A list at the top says what each item is, and does not name the list's
// type again under the "out: list(object)" its caller wrote (a helper read
// the repeated "list(object)" as a list of lists).
func TestDescribeAListSaysEachItem(t *testing.T) {
	k, ok := Lookup("nvidia-smi-nvlink-status")
	if !ok {
		t.Fatal("no nvidia-smi-nvlink-status parser")
	}
	d := k.ShapeOf().Describe()
	if !strings.HasPrefix(d, "each item: object\n  index: number\n") || strings.Count(d, "list(object)") != 1 {
		t.Errorf("Describe:\n%s", d)
	}
}
