package tomlpos

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/gpulab/gpulab/internal/problem"
)

const doc = `# comment
title = "x" # trailing
[owner]
name = "a"
"quoted key" = 1
dotted.inner = 2

[[project]]
id = "one"
text = """
multi [line] = not a key
"""
list = [
  "a",
  { k = 1, j = 2 },
]

[[project]]
id = "two"
[project.axis.isolation]
value = "strong"

[[project.link]]
to = "one"
`

func TestIndexPositions(t *testing.T) {
	ix := New("f.toml", []byte(doc))
	tests := []struct {
		path []any
		want Pos
	}{
		{[]any{"title"}, Pos{2, 1}},
		{[]any{"owner"}, Pos{3, 1}},
		{[]any{"owner", "name"}, Pos{4, 1}},
		{[]any{"owner", "quoted key"}, Pos{5, 1}},
		{[]any{"owner", "dotted", "inner"}, Pos{6, 1}},
		{[]any{"project", 0}, Pos{8, 1}},
		{[]any{"project", 0, "id"}, Pos{9, 1}},
		{[]any{"project", 0, "list"}, Pos{13, 1}},
		{[]any{"project", 0, "list", 1}, Pos{15, 3}},
		{[]any{"project", 0, "list", 1, "j"}, Pos{15, 12}},
		{[]any{"project", 1, "id"}, Pos{19, 1}},
		{[]any{"project", 1, "axis", "isolation"}, Pos{20, 1}},
		{[]any{"project", 1, "axis", "isolation", "value"}, Pos{21, 1}},
		{[]any{"project", 1, "link", 0, "to"}, Pos{24, 1}},
	}
	for _, tt := range tests {
		got, ok := ix.Lookup(tt.path...)
		if !ok || got != tt.want {
			t.Errorf("Lookup(%v) = %v, %v; want %v", tt.path, got, ok, tt.want)
		}
	}
	if _, ok := ix.Lookup("project", 0, "multi"); ok {
		t.Errorf("text inside a multi-line string was indexed as a key")
	}
	if got := ix.Nearest("project", 1, "axis", "isolation", "nope"); got != (Pos{20, 1}) {
		t.Errorf("Nearest(missing child) = %v, want the parent's position 20:1", got)
	}
	if got := ix.Matches([]string{"project", "id"}); len(got) != 2 || got[0].Line != 9 || got[1].Line != 19 {
		t.Errorf("Matches(project.id) = %v, want lines 9 and 19", got)
	}
}

type testDoc struct {
	Title   string `toml:"title"`
	Project []struct {
		ID   string `toml:"id"`
		Tags []string
	} `toml:"project"`
}

func TestDecodeUnknownKeys(t *testing.T) {
	src := "title = \"t\"\n[[project]]\nid = \"a\"\n[[project]]\nid = \"b\"\nbogus = 1\n[extra]\nx = 1\n"
	var d testDoc
	_, err := Decode("cat.toml", []byte(src), &d)
	if err == nil {
		t.Fatal("Decode accepted unknown keys")
	}
	msg := err.Error()
	for _, want := range []string{
		`cat.toml:6:1: unknown key "bogus" (expected in project: Tags, id)`,
		`cat.toml:7:1: unknown key "extra" (expected here: project, title)`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("Decode error = %q, want it to contain %q", msg, want)
		}
	}
	if strings.Contains(msg, `"x"`) {
		t.Errorf("Decode error reports a key inside an unknown table: %q", msg)
	}
}

func TestDecodeSyntaxAndTypeErrors(t *testing.T) {
	tests := []struct {
		src, want string
	}{
		{"title = \"t\"\n\nproject = [ 1, \n", "cat.toml:3:"},
		{"title = 5\n", "cat.toml:1:"},
		{"title = \"a\"\ntitle = \"b\"\n", "cat.toml:2:"},
	}
	for _, tt := range tests {
		var d testDoc
		ix, err := Decode("cat.toml", []byte(tt.src), &d)
		var pe *Error
		if !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Decode(%q) = %v, want an *Error starting %q", tt.src, err, tt.want)
		}
		if ix != nil {
			t.Errorf("Decode(%q) returned an index for input that does not parse", tt.src)
		}
	}
}

// Every type error is reported, each at its key, in file order: not only
// the first, which the toml package stops at. A syntax error stops there.
func TestDecodeEveryTypeError(t *testing.T) {
	type step struct {
		ID    string `toml:"id"`
		Count int    `toml:"count"`
	}
	type lab struct {
		Title string `toml:"title"`
		Owner struct {
			Name string `toml:"name"`
			Age  int    `toml:"age"`
		} `toml:"owner"`
		Step []step `toml:"step"`
	}
	src := "title = 5\n[owner]\nname = \"a\"\nage = \"old\"\n[[step]]\nid = \"a\"\ncount = 1\n[[step]]\nid = 7\ncount = [1]\n"
	var l lab
	ix, err := Decode("lab.toml", []byte(src), &l)
	want := []string{
		`lab.toml:1:1: key "title": wrong type: want string, found integer`,
		`lab.toml:4:1: key "owner.age": wrong type: want integer, found string`,
		`lab.toml:9:1: key "step.id": wrong type: want string, found integer`,
		`lab.toml:10:1: key "step.count": wrong type: want integer, found array`,
	}
	var got []string
	for _, e := range problem.Flatten(err) {
		got = append(got, e.Error())
	}
	if ix != nil || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Decode: index %v, errors\n%s\nwant\n%s", ix != nil, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// An unknown key in the same round as the type errors, and the kinds
	// by their TOML names (array, not slice).
	_, err = Decode("lab.toml", []byte("title = \"t\"\nstep = \"oops\"\ncomand = \"x\"\n"), &l)
	got = nil
	for _, e := range problem.Flatten(err) {
		got = append(got, e.Error())
	}
	if want := []string{
		`lab.toml:2:1: key "step": wrong type: want array, found string`,
		`lab.toml:3:1: unknown key "comand" (expected here: owner, step, title)`,
	}; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Decode:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	_, err = Decode("lab.toml", []byte("title = 5\nage = = 3\n"), &l)
	if got := problem.Flatten(err); len(got) != 1 || !strings.HasPrefix(got[0].Error(), "lab.toml:2:") {
		t.Errorf("a syntax error: %v, want it alone", err)
	}
}

// A message quotes at most MaxQuoted bytes of a token, key or value, with
// an ellipsis and its length: a file holding x = aaaa… (7 MB) gave one
// 7,000,077-character error line.
func TestErrorsClipQuotedText(t *testing.T) {
	long := strings.Repeat("a", 1<<20)
	type listDoc struct {
		Title string     `toml:"title"`
		Tags  StringList `toml:"tags"`
	}
	for _, src := range []string{
		"x = " + long + "\n",                                   // a syntax error quotes the token
		"title = \"" + long + "\n",                             // an unterminated string
		"\"" + long + "\" = [\n",                               // the last key
		long + " = 1\n",                                        // an unknown key
		"[" + long + "]\nx = 1\n",                              // an unknown table
		"tags = { a = \"" + long + "\" }\n",                    // the decoder's "found map[a:aaaa…]"
		"tags = [\"a\", " + strings.Repeat("1, ", 1e5) + "]\n", // an element
	} {
		var d listDoc
		_, err := Decode("f.toml", []byte(src), &d)
		if err == nil {
			t.Errorf("Decode(%.40q…) = nil", src)
			continue
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			if len(line) > 5*MaxQuoted {
				t.Errorf("Decode(%.40q…): a %d-byte error line: %.300s…", src, len(line), line)
			}
		}
	}
	ix := New("f.toml", []byte("title = \"t\"\n"))
	e := ix.Errorf([]any{"title"}, "title %q is not %s: %v", long, long, errors.New(long))
	if want := fmt.Sprintf("title %q… (%d bytes) is not %s… (%d bytes)", long[:MaxQuoted], len(long), long[:4*MaxQuoted], len(long)); !strings.HasPrefix(e.Msg, want) || len(e.Msg) > 10*MaxQuoted {
		t.Errorf("Errorf = %.600q, want it to start %q", e.Msg, want)
	}
}

// FuzzIndex checks that indexing terminates without panicking on any input,
// that positions are 1-based, and that a document the index lets through
// (see MaxDepth) is not nested deeper once the toml package parses it.
func FuzzIndex(f *testing.F) {
	f.Add(doc)
	f.Add("a = [[1,2],[3]]\nb = {c = {d = 'x'}}\n")
	f.Add("s = '''\n''''\n")
	f.Add("[[a]]\n[[a.b]]\n[a.b.c]\nd.e = [{f = [[]]}]\n")
	f.Add("x = " + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth) + "\n")
	f.Fuzz(func(t *testing.T, src string) {
		ix, lerr := build("fuzz.toml", []byte(src))
		var walk func(n *node)
		walk = func(n *node) {
			if n.known && (n.pos.Line < 1 || n.pos.Col < 1) {
				t.Fatalf("position %v is not 1-based", n.pos)
			}
			for _, c := range n.keys {
				walk(c)
			}
			for _, c := range n.elems {
				walk(c)
			}
		}
		walk(ix.root)
		var v map[string]any
		if _, err := toml.Decode(src, &v); err == nil && lerr == nil {
			if d := nesting(v); d > MaxDepth {
				t.Fatalf("the index let through a document nested %d levels deep", d)
			}
		}
	})
}

// nesting is how many keys and array indices the longest path in v has.
func nesting(v any) int {
	d := 0
	switch x := v.(type) {
	case map[string]any:
		for _, c := range x {
			d = max(d, 1+nesting(c))
		}
	case []map[string]any:
		for _, c := range x {
			d = max(d, 1+nesting(c))
		}
	case []any:
		for _, c := range x {
			d = max(d, 1+nesting(c))
		}
	}
	return d
}

func TestDecodeUnknownKeyOncePerPlace(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"nested arrays", "x = [[[[1]], [[2]]]]\n", []string{"cat.toml:1:1:"}},
		{"array of inline tables", "x = [{a = 1}, {a = 2}]\n", []string{"cat.toml:1:1:"}},
		{"tables repeated", "[[bogus.x]]\ny = 1\n[[bogus.x]]\ny = 2\n", []string{"cat.toml:1:1:", "cat.toml:3:1:"}},
		{"key in each table", "[[project]]\nid = \"a\"\nz = 1\n[[project]]\nid = \"b\"\nz = 2\n", []string{"cat.toml:3:1:", "cat.toml:6:1:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d testDoc
			_, err := Decode("cat.toml", []byte(tt.src), &d)
			if err == nil {
				t.Fatalf("Decode(%q) accepted unknown keys", tt.src)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("Decode(%q) = %d problems, want %d:\n%v", tt.src, len(lines), len(tt.want), err)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("Decode(%q) problem %d = %q, want it at %s", tt.src, i+1, lines[i], w)
				}
			}
		})
	}
}

// TestDecodeCostIsLinear decodes documents of n tables that each hold an
// unknown key of their own. Placing each key must not walk the whole
// document: four times the tables cost about four times the allocations.
func TestDecodeCostIsLinear(t *testing.T) {
	allocs := func(n int) float64 {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "[[project]]\nid = \"p%d\"\nbogus%d = 1\n", i, i)
		}
		src := []byte(b.String())
		return testing.AllocsPerRun(1, func() {
			var d testDoc
			if _, err := Decode("cat.toml", src, &d); err == nil {
				t.Fatal("Decode accepted unknown keys")
			}
		})
	}
	small, large := allocs(500), allocs(2000)
	if large > 6*small {
		t.Errorf("Decode allocates %.0f times for 500 tables and %.0f for 2000: the cost grows faster than the input", small, large)
	}
}

func TestDecodeRefusesDeepNesting(t *testing.T) {
	deep := MaxDepth + 1
	tests := []struct {
		name, src, at string
	}{
		{"inline tables, 4000 deep", "x = " + strings.Repeat("{a=", 4000) + "1" + strings.Repeat("}", 4000) + "\n", "f.toml:1:" + fmt.Sprint(6+3*(MaxDepth-1)) + ":"},
		{"arrays, 10,000 deep", "title = \"t\"\nx = " + strings.Repeat("[", 10000) + "1" + strings.Repeat("]", 10000) + "\n", "f.toml:2:" + fmt.Sprint(5+MaxDepth) + ":"},
		{"dotted key", "\n" + strings.Repeat("a.", deep) + "b = 1\n", "f.toml:2:1:"},
		{"table header", "[" + strings.Repeat("a.", deep) + "b]\nc = 1\n", "f.toml:1:1:"},
		{"arrays of tables", "[[a]]\n[[a.a]]\n[[a.a." + strings.Repeat("b.", MaxDepth-5) + "c]]\n", "f.toml:3:1:"},
		{"unclosed arrays", "x = " + strings.Repeat("[", 1000), "f.toml:1:" + fmt.Sprint(5+MaxDepth) + ":"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v map[string]any
			ix, err := Decode("f.toml", []byte(tt.src), &v)
			if !errors.Is(err, ErrLimit) || !strings.HasPrefix(err.Error(), tt.at) || !strings.Contains(err.Error(), "levels deep") {
				t.Fatalf("Decode = %.200v, want an error at %s that wraps ErrLimit", err, tt.at)
			}
			if ix != nil {
				t.Errorf("Decode returned an index for a document it refused")
			}
		})
	}
}

func TestDecodeAcceptsMaxDepth(t *testing.T) {
	src := "x = " + strings.Repeat("[", MaxDepth-1) + "1" + strings.Repeat("]", MaxDepth-1) + "\n" +
		"[" + strings.Repeat("a.", MaxDepth-2) + "a]\nb = 1\n"
	var v map[string]any
	ix, err := Decode("f.toml", []byte(src), &v)
	if errors.Is(err, ErrLimit) || ix == nil {
		t.Fatalf("Decode of a document %d levels deep = %v, want it read", MaxDepth, err)
	}
	if d := nesting(v); d != MaxDepth {
		t.Errorf("the document decoded is %d levels deep, want %d", d, MaxDepth)
	}
	deepest := []any{"x"}
	for range MaxDepth - 1 {
		deepest = append(deepest, 0)
	}
	if p, ok := ix.Lookup(deepest...); !ok || p != (Pos{1, 4 + MaxDepth}) {
		t.Errorf("Lookup(the innermost element) = %v, %v; want 1:%d", p, ok, 4+MaxDepth)
	}
}

func TestSizeLimit(t *testing.T) {
	big := make([]byte, MaxFileSize+1)
	for i := range big {
		big[i] = '#'
	}
	var v map[string]any
	if _, err := Decode("big.toml", big, &v); !errors.Is(err, ErrLimit) || !strings.HasPrefix(err.Error(), "big.toml: the file is 8388609 bytes") {
		t.Errorf("Decode(%d bytes) = %v, want an error that names the file and its size and wraps ErrLimit", len(big), err)
	}
	dir := t.TempDir()
	tests := []struct {
		size    int
		refused bool
	}{
		{MaxFileSize, false},
		{MaxFileSize + 1, true},
	}
	for _, tt := range tests {
		path := filepath.Join(dir, fmt.Sprintf("%d.toml", tt.size))
		if err := os.WriteFile(path, big[:tt.size], 0o644); err != nil {
			t.Fatal(err)
		}
		data, err := ReadFile(path)
		switch {
		case tt.refused && (!errors.Is(err, ErrLimit) || !strings.HasPrefix(err.Error(), path+": the file is")):
			t.Errorf("ReadFile(%d bytes) = %v, want an error that names the file and wraps ErrLimit", tt.size, err)
		case tt.refused && data != nil:
			t.Errorf("ReadFile(%d bytes) returned data with its error", tt.size)
		case !tt.refused && (err != nil || len(data) != tt.size):
			t.Errorf("ReadFile(%d bytes) = %d bytes, %v; want it read", tt.size, len(data), err)
		}
	}
	if _, err := ReadFile(filepath.Join(dir, "missing.toml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFile(missing) = %v, want an error that wraps os.ErrNotExist", err)
	}
}

func TestJoin(t *testing.T) {
	problems := func(file string, n int) []error {
		var errs []error
		for i := range n {
			errs = append(errs, &Error{Place: problem.Place{File: file, Line: i + 1}, Msg: "bad"})
		}
		return errs
	}
	tests := []struct {
		name  string
		errs  []error
		lines int
		last  string
	}{
		{"none", []error{nil, nil}, 0, ""},
		{"few", problems("f.toml", 3), 3, "f.toml:3: bad"},
		{"exactly the most", problems("f.toml", MaxProblems), MaxProblems, fmt.Sprintf("f.toml:%d: bad", MaxProblems)},
		{"many", problems("f.toml", 3000), MaxProblems + 1, "f.toml: and 2950 more problems"},
		{"joined again", append([]error{Join(problems("f.toml", 3000)...)}, problems("f.toml", 5)...), MaxProblems + 1, "f.toml: and 2955 more problems"},
		{"several files", append(problems("a.toml", MaxProblems), append(problems("b.toml", 2), errors.New("c"))...), MaxProblems + 1, "and 3 more problems"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Join(tt.errs...)
			if tt.lines == 0 {
				if err != nil {
					t.Fatalf("Join(nils) = %v, want nil", err)
				}
				return
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != tt.lines || lines[len(lines)-1] != tt.last {
				t.Errorf("Join = %d lines ending %q, want %d ending %q", len(lines), lines[len(lines)-1], tt.lines, tt.last)
			}
		})
	}
}
