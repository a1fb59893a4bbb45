package labs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A control character in any of a lab's texts (an escape that retitles or
// clears the terminal, a carriage return, a bidi override) is refused at
// its key, whatever the key; a newline and a tab are text. The record
// escapes them too.
func TestLabTextsArePlain(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("builtin/topology-sanity.toml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(src), `goal = "`, "goal = \"\\u001b]0;PWNED\\u0007\\u001b[2J ", 1)
	text = strings.Replace(text, `description = "`, "description = \"line one\\nline\\ttwo \\u202e", 1)
	if text == string(src) {
		t.Fatal("the fixture lab changed: no goal or description to edit")
	}
	file := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(file, []byte(strings.Replace(text, `id = "topology-sanity"`, `id = "bad-texts"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load([]string{dir})
	for _, want := range []string{"goal has the control character U+001B (character 1)", "description has the control character U+202E (character 19)"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Load: %v; want %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "U+000A") {
		t.Errorf("a newline was refused: %v", err)
	}
	r := &Record{Schema: RecordSchema, Lab: "x", Name: "x\x1b]0;PWNED\a", Principle: "a\x1b[2Jb"}
	if md := r.Markdown(); strings.ContainsAny(md, "\x1b\a") {
		t.Errorf("record.md holds raw control characters:\n%q", md)
	}
}
