package tomlpos

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
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

// Load reads what Sources gathers and parses each file with parse into one
// entry of a kind ("runbook", "lab"), keeping every file's errors; an id
// that a second file defines again is an error at that file. The entries
// come back sorted by id; any error at all returns none.
func Load[T any](builtin fs.FS, pattern string, dirs []string, kind string,
	parse func(name string, data []byte) (*T, error), key func(*T) (id, source string)) ([]*T, error) {
	files, err := Sources(builtin, pattern, "", dirs, kind+"s")
	if err != nil {
		return nil, err
	}
	var out []*T
	var errs []error
	seen := map[string]string{}
	for _, f := range files {
		v, err := parse(f.Name, f.Data)
		errs = append(errs, err)
		if v == nil {
			continue
		}
		id, source := key(v)
		if prev, ok := seen[id]; ok {
			errs = append(errs, fmt.Errorf("%s: %s %q is already defined in %s", source, kind, id, prev))
		}
		seen[id] = source
		out = append(out, v)
	}
	if err := Join(errs...); err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, _ := key(out[i])
		b, _ := key(out[j])
		return a < b
	})
	return out, nil
}

// idRE is what an id in any of gpulab's files looks like: a runbook, a
// lab, a step, a check, a catalog entry.
var idRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// ValidID reports whether id is lower-case letters, digits and '-', not
// starting or ending with '-'.
func ValidID(id string) bool { return idRE.MatchString(id) }
