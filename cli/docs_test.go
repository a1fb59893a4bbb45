package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestCommandReferenceIsCurrent: docs/reference is what the commands say
// of themselves (gpulab docs), page for page, so that it cannot drift
// from --help; make docs writes it again.
func TestCommandReferenceIsCurrent(t *testing.T) {
	pages, err := ReferencePages(newRoot(&options{env: Env{Getenv: func(string) string { return "" }}}), false)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("..", "docs", "reference")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, e := range entries {
		have = append(have, e.Name())
		want, ok := pages[e.Name()]
		if !ok {
			t.Errorf("%s documents no command gpulab has: remove it (make docs)", e.Name())
			continue
		}
		got, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what the command says of itself: run make docs", e.Name())
		}
	}
	for name := range pages {
		if !slices.Contains(have, name) {
			t.Errorf("no %s in docs/reference: run make docs", name)
		}
	}
	if len(pages) < 30 {
		t.Errorf("%d reference pages: the walk missed commands", len(pages))
	}
}

// TestManPages: every command has a man page in section 1 that names it.
func TestManPages(t *testing.T) {
	pages, err := ReferencePages(newRoot(&options{env: Env{Getenv: func(string) string { return "" }}}), true)
	if err != nil {
		t.Fatal(err)
	}
	page, ok := pages["gpulab-lab-run.1"]
	if !ok || !bytes.Contains(page, []byte(`.TH "GPULAB-LAB-RUN" "1"`)) || !bytes.Contains(page, []byte("score each criterion live")) {
		t.Errorf("gpulab-lab-run.1 (%v): %.300s", ok, page)
	}
}
