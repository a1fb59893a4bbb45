package main

import (
	"os"
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
