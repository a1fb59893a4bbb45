package tui

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// rootFiles compose the pages: the root model builds every page and the
// presenter's walkthrough sets each page's state. They may name anything.
var rootFiles = []string{"app.go", "present.go"}

// pageOf is the page a file belongs to: page_fleet.go and
// page_fleet_host.go are both "fleet". Every other file is the shared kit
// (keys, styles, layout, scroller, the run stream, run setup, masker, cells).
func pageOf(file string) string {
	name, ok := strings.CutPrefix(strings.TrimSuffix(file, ".go"), "page_")
	if !ok {
		return ""
	}
	page, _, _ := strings.Cut(name, "_")
	return page
}

// TestPagesShareOnlyTheKit holds the TUI's layout: a page (page_*.go)
// uses the shared kit and its own files, never another page's; the kit
// uses no page; only the root files put pages together. A name a page
// needs from another goes into the kit, so that changing one tab can
// break only that tab.
func TestPagesShareOnlyTheKit(t *testing.T) {
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	declaredIn := map[string]string{} // top-level name -> file
	files := map[string]*ast.File{}
	pages := map[string]bool{}
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, 0) // with object resolution: f.Unresolved
		if err != nil {
			t.Fatal(err)
		}
		files[p] = f
		if pg := pageOf(p); pg != "" {
			pages[pg] = true
		}
		for _, name := range topLevelNames(f) {
			declaredIn[name] = p
		}
	}
	for _, want := range []string{"map", "matrix", "fleet", "runbooks", "labs", "results", "cluster"} {
		if !pages[want] {
			t.Errorf("no page_%s.go: every tab is a page (the test would pass vacuously without them)", want)
		}
	}

	checked := 0
	for file, f := range files {
		if slices.Contains(rootFiles, file) {
			continue
		}
		from := pageOf(file)
		var bad []string
		for _, id := range f.Unresolved { // names this file takes from other files of the package
			other, ok := declaredIn[id.Name]
			if !ok || other == file {
				continue
			}
			checked++
			to := pageOf(other)
			switch {
			case slices.Contains(rootFiles, other):
				bad = append(bad, id.Name+" (root "+other+")")
			case to != "" && to != from:
				bad = append(bad, id.Name+" ("+other+")")
			}
		}
		if len(bad) > 0 {
			sort.Strings(bad)
			what := "the kit file " + file
			if from != "" {
				what = "page " + from + "'s " + file
			}
			t.Errorf("%s uses %s: move what both need into the kit", what, strings.Join(slices.Compact(bad), ", "))
		}
	}
	if checked == 0 {
		t.Fatal("no name crossed a file: the parser's resolution found nothing to check")
	}
}

func topLevelNames(f *ast.File) []string {
	var names []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				names = append(names, d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					names = append(names, s.Name.Name)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						names = append(names, n.Name)
					}
				}
			}
		}
	}
	return names
}
