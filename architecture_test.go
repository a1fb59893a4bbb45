package main

import (
	"errors"
	"go/ast"
	"go/build"
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
	for _, dir := range packageDirs(t) {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
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
		}
	}
	if n < 1000 {
		t.Fatalf("read %d functions: the walk no longer finds the module's code", n)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// layers are the packages' layers as ARCHITECTURE.md draws them, the
// highest first: a package imports only packages of a lower rank.
// internal/* are below all (internal packages may import each other: Go
// refuses the cycles). besides are programs of their own beside the
// layers (the simulated fleet, the NVML probe): they may import the
// transport row and below and each other, and only the command line
// imports them.
var layers = map[string]int{
	"":                 100, // main.go
	"cli":              90,
	"tui":              80,
	"render":           70,
	"app":              70,
	"runbooks":         60,
	"labs":             60,
	"fence":            60,
	"step":             50,
	"orchestrator":     40,
	"cluster":          40,
	"probes/remote":    40,
	"step/parse":       37, // below cluster, which reads the scheduler's messages with it
	"probes/report":    35, // the snapshot, read by the probe, the parsers and the cluster
	"probes/bundle":    30, // the embedded probe builds: data
	"inventory":        20,
	"landscape":        20,
	"labs/charts":      15,
	"internal/":        10,
	"bench/bareclient": 0, // a benchmark's client, imports nothing of gpulab
}

var besides = []string{"sim", "probes/nvmlprobe", "probes/collect", "probes/nvmlsim"}

// withinRow are the edges allowed between packages drawn in one row,
// with why.
var withinRow = map[[2]string]string{
	{"probes/remote", "orchestrator"}: "pushing the probe is an orchestrator push",
}

// TestLayersImportOnlyDownward: every import of one gpulab package by
// another, outside tests, goes down the layers: tui never imports cli,
// runbooks and labs never import each other, nothing imports a program
// beside the layers but the command line.
func TestLayersImportOnlyDownward(t *testing.T) {
	const module = "github.com/gpulab/gpulab"
	rank := func(pkg string) (int, bool) {
		for _, b := range besides {
			if pkg == b || strings.HasPrefix(pkg, b+"/") {
				return 0, false
			}
		}
		if strings.HasPrefix(pkg, "internal/") {
			return layers["internal/"], true
		}
		r, ok := layers[pkg]
		if !ok {
			t.Errorf("package %s has no layer: add it to layers (and to ARCHITECTURE.md's drawing)", pkg)
		}
		return r, ok
	}
	edges := 0
	for _, dir := range packageDirs(t) {
		p, err := build.Default.ImportDir(dir, 0)
		var noGo *build.NoGoError
		if errors.As(err, &noGo) {
			continue // tests alone (bench/)
		}
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		from := strings.TrimPrefix(strings.TrimPrefix(filepath.ToSlash(dir), "."), "/")
		for _, imp := range p.Imports {
			to, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			edges++
			rf, rankedFrom := rank(from)
			rt, rankedTo := rank(to)
			switch {
			case !rankedTo && from != "" && from != "cli" && rankedFrom:
				t.Errorf("%s imports %s, a program beside the layers: only main and cli may", from, to)
			case !rankedFrom && rankedTo && rt > layers["orchestrator"]:
				t.Errorf("%s, beside the layers, imports %s (rank %d): it may use the transport row and below", from, to, rt)
			case rankedFrom && rankedTo && rt >= rf && !(rf == layers["internal/"] && rt == rf) && withinRow[[2]string{from, to}] == "":
				t.Errorf("%s (rank %d) imports %s (rank %d): a layer imports only layers below it", from, rf, to, rt)
			}
		}
	}
	if edges < 100 {
		t.Fatalf("%d imports between gpulab packages: the walk no longer reads them", edges)
	}
}

// packageDirs are the module's directories with Go files (none hidden,
// no testdata, no other module's).
func packageDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || fileExists(filepath.Join(path, "go.mod"))) {
			return filepath.SkipDir
		}
		if gos, _ := filepath.Glob(filepath.Join(path, "*.go")); len(gos) > 0 {
			dirs = append(dirs, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}
