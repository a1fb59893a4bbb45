package tomlpos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

type entry struct {
	ID     string `toml:"id"`
	Source string `toml:"-"`
}

func parseEntry(name string, data []byte) (*entry, error) {
	var e entry
	ix, err := Decode(name, data, &e)
	if ix == nil {
		return nil, err
	}
	e.Source = name
	if !ValidID(e.ID) {
		return nil, ix.Errorf([]any{"id"}, "id %q: use lower-case letters, digits and '-'", e.ID)
	}
	return &e, err
}

func entryKey(e *entry) (string, string) { return e.ID, e.Source }

// Load keeps every file's errors, names the file that defines an id a
// second time and the first one, and sorts what it returns by id.
func TestLoadSharedByEveryKind(t *testing.T) {
	builtin := fstest.MapFS{"builtin/b.toml": {Data: []byte(`id = "beta"`)}, "builtin/a.toml": {Data: []byte(`id = "zeta"`)}}
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("1.toml", `id = "alpha"`)
	got, err := Load(builtin, "builtin/*.toml", []string{dir}, "thing", parseEntry, entryKey)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range got {
		ids = append(ids, e.ID)
	}
	if strings.Join(ids, " ") != "alpha beta zeta" {
		t.Errorf("ids %v, want sorted alpha beta zeta", ids)
	}

	write("2.toml", `id = "beta"`)
	write("3.toml", `id = "Bad-"`)
	got, err = Load(builtin, "builtin/*.toml", []string{dir}, "thing", parseEntry, entryKey)
	if got != nil {
		t.Errorf("entries %v returned beside errors", got)
	}
	for _, want := range []string{
		filepath.Join(dir, "2.toml") + `: thing "beta" is already defined in builtin/b.toml`,
		filepath.Join(dir, "3.toml") + `:1:1: id "Bad-"`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestValidID(t *testing.T) {
	for id, want := range map[string]bool{"a": true, "gpu-burn": true, "a1-b2": true, "7": true,
		"": false, "-a": false, "a-": false, "A": false, "a_b": false, "a b": false, "a.b": false} {
		if ValidID(id) != want {
			t.Errorf("ValidID(%q) = %v, want %v", id, !want, want)
		}
	}
}
