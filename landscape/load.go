package landscape

import (
	"embed"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gpulab/gpulab/internal/tomlpos"
)

//go:embed catalog/*.toml
var builtin embed.FS

// fileSchema is one catalog file as written. Every table is optional in a
// file; the merged catalog is validated as a whole.
type fileSchema struct {
	Plane     []Plane     `toml:"plane"`
	Axis      []Axis      `toml:"axis"`
	Dimension []Dimension `toml:"dimension"`
	Lab       []Lab       `toml:"lab"`
	Template  struct {
		Questions []string `toml:"questions"`
	} `toml:"template"`
	Project []Project `toml:"project"`
}

// Builtin returns the embedded catalog. It is validated by the tests, so an
// error here means a broken build.
func Builtin() (*Catalog, error) {
	return Load(nil)
}

// Load reads the built-in catalog and then every *.toml file in each of
// dirs (sorted by name), and validates the result.
func Load(dirs []string) (*Catalog, error) {
	files, err := tomlpos.Sources(builtin, "catalog/*.toml", "builtin", dirs, "catalog")
	if err != nil {
		return nil, err
	}
	return build(files)
}

// Check validates the files in dir on top of the built-in catalog, as
// `gpulab catalog check DIR` does; dir may also name a single file.
func Check(dir string) (*Catalog, error) { return Load([]string{dir}) }

// placed remembers where an entry was defined, for errors found after merging.
type placed struct {
	ix   *tomlpos.Index
	path []any
}

func (p placed) errorf(format string, args ...any) error {
	return p.ix.Errorf(p.path, format, args...)
}

func (p placed) at(keys ...any) placed {
	return placed{ix: p.ix, path: append(slices.Clone(p.path), keys...)}
}

func (p placed) String() string {
	pos := p.ix.Nearest(p.path...)
	return fmt.Sprintf("%s:%d", p.ix.File, pos.Line)
}

func build(files []tomlpos.Source) (*Catalog, error) {
	c := &Catalog{}
	var errs []error
	where := map[string]placed{} // "kind/id" -> definition
	define := func(kind, id string, p placed) {
		switch {
		case id == "":
			errs = append(errs, p.errorf("%s has no id", kind))
		case !tomlpos.ValidID(id):
			errs = append(errs, p.at("id").errorf("%s id %q: use lower-case letters, digits and '-'", kind, id))
		default:
			if prev, dup := where[kind+"/"+id]; dup {
				errs = append(errs, p.at("id").errorf("%s %q is already defined at %s", kind, id, prev))
				return
			}
		}
		where[kind+"/"+id] = p
	}
	parsed := true
	for _, f := range files {
		var fsch fileSchema
		ix, err := tomlpos.Decode(f.Name, f.Data, &fsch)
		if err != nil {
			errs = append(errs, err)
		}
		if ix == nil {
			parsed = false // its entries are missing: checking references would mislead
			continue
		}
		for i, v := range fsch.Plane {
			define("plane", v.ID, placed{ix, []any{"plane", i}})
			c.Planes = append(c.Planes, v)
		}
		for i, v := range fsch.Axis {
			p := placed{ix, []any{"axis", i}}
			define("axis", v.ID, p)
			for j, l := range v.Levels {
				define("level/"+v.ID, l.ID, p.at("level", j))
			}
			c.Axes = append(c.Axes, v)
		}
		for i, v := range fsch.Dimension {
			define("dimension", v.ID, placed{ix, []any{"dimension", i}})
			c.Dimensions = append(c.Dimensions, v)
		}
		for i, v := range fsch.Lab {
			define("lab", v.ID, placed{ix, []any{"lab", i}})
			c.Labs = append(c.Labs, v)
		}
		c.Questions = append(c.Questions, fsch.Template.Questions...)
		for i, v := range fsch.Project {
			p := placed{ix, []any{"project", i}}
			define("project", v.ID, p)
			v.Source = p.String()
			c.Projects = append(c.Projects, v)
		}
	}
	if !parsed {
		return nil, tomlpos.Join(errs...)
	}
	for _, p := range c.Projects {
		errs = append(errs, c.checkProject(p, where["project/"+p.ID])...)
	}
	for _, a := range c.Axes {
		if len(a.Levels) == 0 {
			errs = append(errs, where["axis/"+a.ID].errorf("axis %q has no levels", a.ID))
		}
	}
	if len(c.Planes) == 0 || len(c.Axes) == 0 {
		errs = append(errs, fmt.Errorf("catalog: no planes or no axes defined"))
	}
	if err := tomlpos.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Catalog) checkProject(p Project, at placed) []error {
	var errs []error
	need := func(key, val string) {
		if strings.TrimSpace(val) == "" {
			errs = append(errs, at.errorf("project %q: %s is missing", p.ID, key))
		}
	}
	need("name", p.Name)
	need("kind", p.Kind)
	need("summary", p.Summary)
	if p.Plane == "" {
		errs = append(errs, at.errorf("project %q: plane is missing (want one of: %s)", p.ID, c.planeIDs()))
	} else if _, ok := c.Plane(p.Plane); !ok {
		errs = append(errs, at.at("plane").errorf("project %q: unknown plane %q (want one of: %s)", p.ID, p.Plane, c.planeIDs()))
	}
	for i, s := range p.Spans {
		if _, ok := c.Plane(s); !ok || s == p.Plane {
			errs = append(errs, at.at("spans", i).errorf("project %q: spans %q is not another plane (want one of: %s)", p.ID, s, c.planeIDs()))
		}
	}
	for _, a := range c.Axes {
		pl, ok := p.Axes[a.ID]
		if !ok || len(pl.Levels) == 0 {
			errs = append(errs, at.errorf("project %q: no value on axis %q (add [project.axis.%s] with value = one of: %s)", p.ID, a.ID, a.ID, levelIDs(a)))
			continue
		}
		for i, lv := range pl.Levels {
			if _, _, ok := a.Level(lv); !ok {
				errs = append(errs, at.at("axis", a.ID, "value", i).errorf("project %q: axis %q has no level %q (want one of: %s)", p.ID, a.ID, lv, levelIDs(a)))
			}
		}
		if strings.TrimSpace(pl.Why) == "" {
			errs = append(errs, at.at("axis", a.ID).errorf("project %q: axis %q needs a why (one sentence: why this level)", p.ID, a.ID))
		}
	}
	axisIDs := make([]string, 0, len(p.Axes))
	for id := range p.Axes {
		axisIDs = append(axisIDs, id)
	}
	sort.Strings(axisIDs)
	for _, id := range axisIDs {
		if _, ok := c.Axis(id); !ok {
			errs = append(errs, at.at("axis", id).errorf("project %q: unknown axis %q", p.ID, id))
		}
	}
	if len(p.Questions) == 0 {
		errs = append(errs, at.errorf("project %q: no acceptance questions", p.ID))
	}
	refs := []struct {
		key  string
		ids  []string
		find func(string) bool
	}{
		{"dimensions", p.Dimensions, func(id string) bool { _, ok := c.Dimension(id); return ok }},
		{"labs", p.Labs, func(id string) bool { _, ok := c.Lab(id); return ok }},
		{"builds_on", p.BuildsOn, func(id string) bool { _, ok := c.Project(id); return ok && id != p.ID }},
		{"alternatives", p.Alternatives, func(id string) bool { _, ok := c.Project(id); return ok && id != p.ID }},
		{"works_with", p.WorksWith, func(id string) bool { _, ok := c.Project(id); return ok && id != p.ID }},
	}
	for _, r := range refs {
		for i, id := range r.ids {
			if !r.find(id) {
				errs = append(errs, at.at(r.key, i).errorf("project %q: %s names %q, which is not defined", p.ID, r.key, id))
			}
		}
	}
	return errs
}

func (c *Catalog) planeIDs() string {
	ids := make([]string, len(c.Planes))
	for i, p := range c.Planes {
		ids[i] = p.ID
	}
	return strings.Join(ids, ", ")
}

func levelIDs(a Axis) string {
	ids := make([]string, len(a.Levels))
	for i, l := range a.Levels {
		ids[i] = l.ID
	}
	return strings.Join(ids, ", ")
}
