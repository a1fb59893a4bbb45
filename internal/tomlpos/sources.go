package tomlpos

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
)

// Source is one TOML file's name (as errors show it) and content.
type Source struct {
	Name string
	Data []byte
}

// Sources gathers the embedded files matching pattern in builtin (named
// prefix/PATH) and then, for each of dirs, the *.toml files of a
// directory (sorted) or the single file it names. what names the kind of
// file for messages ("catalog", "runbooks", "labs"). A file larger than
// MaxFileSize is an error that wraps ErrLimit.
func Sources(builtin fs.FS, pattern, prefix string, dirs []string, what string) ([]Source, error) {
	var out []Source
	names, err := fs.Glob(builtin, pattern)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		data, err := fs.ReadFile(builtin, n)
		if err != nil {
			return nil, err
		}
		out = append(out, Source{Name: path.Join(prefix, n), Data: data})
	}
	for _, dir := range dirs {
		st, err := os.Stat(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("%s %q does not exist", what, dir)
			}
			return nil, fmt.Errorf("read %s: %w", what, err)
		}
		files := []string{dir}
		if st.IsDir() {
			if files, err = filepath.Glob(filepath.Join(dir, "*.toml")); err != nil {
				return nil, err
			}
			if len(files) == 0 {
				return nil, fmt.Errorf("%s %q has no *.toml files", what, dir)
			}
			sort.Strings(files)
		}
		for _, f := range files {
			data, err := ReadFile(f)
			if errors.Is(err, ErrLimit) {
				return nil, err // names the file and says why
			}
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", what, err)
			}
			out = append(out, Source{Name: f, Data: data})
		}
	}
	return out, nil
}
