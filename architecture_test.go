package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestArchitectureWalksRealCode: every file:function ARCHITECTURE.md names
// in its walks ("runbooks/run.go:Execute", "cli/exec.go:(*sshFlags).check")
// is a function or method defined in that file, so that the walk cannot
// go on describing code that moved.
func TestArchitectureWalksRealCode(t *testing.T) {
	doc, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	ref := regexp.MustCompile("`([a-z][a-z0-9_/]*\\.go):(\\((?:\\*)?([A-Za-z]+)\\)\\.)?([A-Za-z][A-Za-z0-9]*)")
	refs := ref.FindAllStringSubmatch(string(doc), -1)
	if len(refs) < 30 {
		t.Fatalf("%d file:function references in ARCHITECTURE.md: the pattern no longer reads them", len(refs))
	}
	for _, m := range refs {
		file, recv, name := m[1], m[3], m[4]
		src, err := os.ReadFile(file)
		if err != nil {
			t.Errorf("ARCHITECTURE.md names %s, which does not exist", file)
			continue
		}
		def := `(?m)^func ` + regexp.QuoteMeta(name) + `[\[(]`
		if recv != "" {
			def = `(?m)^func \(\w+ \*?` + regexp.QuoteMeta(recv) + `(\[[^]]*\])?\) ` + regexp.QuoteMeta(name) + `\(`
		}
		if !regexp.MustCompile(def).Match(src) && !strings.Contains(string(src), "type "+name+" ") {
			t.Errorf("ARCHITECTURE.md names %s:%s, which %s does not define", file, strings.TrimPrefix(m[0], "`"+file+":"), file)
		}
	}
}

// maxFuncLines is the longest a function may be: past it, a reader holds
// more than one idea at once (the review that split ParseTopo, resolve
// and Record.Markdown set it).
const maxFuncLines = 80

// TestNoFunctionOver80Lines: no function or method outside tests is
// longer than maxFuncLines, counted from its func line to its closing
// brace, so that the next long one is split when it is written.
func TestNoFunctionOver80Lines(t *testing.T) {
	fset := token.NewFileSet()
	n := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || fileExists(filepath.Join(path, "go.mod"))) {
			return filepath.SkipDir // hidden, test data, or another module (tools/kube)
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			n++
			lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if lines > maxFuncLines {
				t.Errorf("%s: %s is %d lines, over %d: split it", fset.Position(fn.Pos()), fn.Name.Name, lines, maxFuncLines)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 1000 {
		t.Fatalf("read %d functions: the walk no longer finds the module's code", n)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
