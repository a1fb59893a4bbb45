// Package landscape is the catalog of the GPU-infrastructure landscape: the
// three planes (control, data, workload), the four decision axes with their
// levels, the AI-era dimensions, and projects placed on all of them. It is the
// evaluation template made executable: every project answers which plane it
// lives in, where it sits on each axis and why, which acceptance questions
// test it, and which labs give evidence about it.
//
// The built-in catalog is embedded TOML (catalog/*.toml); users extend it
// with files of the same schema. Loading validates strictly and names
// file:line:col in every error. The package draws nothing.
package landscape

import (
	"cmp"
	"slices"
	"strings"

	"github.com/gpulab/gpulab/internal/tomlpos"
)

// Catalog is a loaded, validated catalog. Slices keep file order.
type Catalog struct {
	Planes     []Plane     `json:"planes"`
	Axes       []Axis      `json:"axes"`
	Dimensions []Dimension `json:"dimensions"`
	Labs       []Lab       `json:"labs"`
	// Questions are the acceptance questions every evaluation asks.
	Questions []string  `json:"questions"`
	Projects  []Project `json:"projects"`
}

// Plane is one of the three planes of the map.
type Plane struct {
	ID       string `toml:"id" json:"id"`
	Name     string `toml:"name" json:"name"`
	Question string `toml:"question" json:"question"`
	Summary  string `toml:"summary" json:"summary"`
}

// Axis is a decision axis; its levels are ordered, which is the order the
// Matrix sorts by.
type Axis struct {
	ID       string  `toml:"id" json:"id"`
	Name     string  `toml:"name" json:"name"`
	Short    string  `toml:"short" json:"short"`
	Question string  `toml:"question" json:"question"`
	Levels   []Level `toml:"level" json:"levels"`
}

// Level is one value an axis can take.
type Level struct {
	ID   string `toml:"id" json:"id"`
	Name string `toml:"name" json:"name"`
	// Short is a label of a few letters for narrow tables; the ID when empty.
	Short       string `toml:"short" json:"short,omitempty"`
	Description string `toml:"description" json:"description"`
}

// Label returns the level's name, or its short label when short is set.
func (l Level) Label(short bool) string {
	switch {
	case !short:
		return l.Name
	case l.Short != "":
		return l.Short
	}
	return l.ID
}

// Dimension is an AI-era dimension (attribute-aware allocation, interconnect
// domains, ...), on which projects may be tagged.
type Dimension struct {
	ID          string `toml:"id" json:"id"`
	Name        string `toml:"name" json:"name"`
	Description string `toml:"description" json:"description"`
}

// Lab names a lab that gives evidence about projects.
type Lab struct {
	ID    string `toml:"id" json:"id"`
	Title string `toml:"title" json:"title"`
}

// Project is one project placed on the map and the matrix.
type Project struct {
	ID      string `toml:"id" json:"id"`
	Name    string `toml:"name" json:"name"`
	Plane   string `toml:"plane" json:"plane"`
	Kind    string `toml:"kind" json:"kind"`
	Summary string `toml:"summary" json:"summary"`
	URL     string `toml:"url" json:"url,omitempty"`
	// Spans lists other planes the project also acts in.
	Spans []string `toml:"spans" json:"spans,omitempty"`
	// Axes maps an axis ID to the project's placement on it.
	Axes         map[string]Placement `toml:"axis" json:"axes"`
	Questions    []string             `toml:"questions" json:"questions"`
	Dimensions   []string             `toml:"dimensions" json:"dimensions,omitempty"`
	Labs         []string             `toml:"labs" json:"labs,omitempty"`
	BuildsOn     []string             `toml:"builds_on" json:"builds_on,omitempty"`
	Alternatives []string             `toml:"alternatives" json:"alternatives,omitempty"`
	WorksWith    []string             `toml:"works_with" json:"works_with,omitempty"`
	// Source is where the project is defined ("catalog/projects.toml:12").
	Source string `toml:"-" json:"source"`
}

// Placement is a project's value on one axis, with the reason.
type Placement struct {
	Levels tomlpos.StringList `toml:"value" json:"levels"`
	Why    string             `toml:"why" json:"why"`
}

// Plane returns the plane with the given ID.
func (c *Catalog) Plane(id string) (Plane, bool) {
	return find(c.Planes, id, func(p Plane) string { return p.ID })
}

// Axis returns the axis with the given ID.
func (c *Catalog) Axis(id string) (Axis, bool) {
	return find(c.Axes, id, func(a Axis) string { return a.ID })
}

// Project returns the project with the given ID.
func (c *Catalog) Project(id string) (Project, bool) {
	return find(c.Projects, id, func(p Project) string { return p.ID })
}

// Lab returns the lab with the given ID.
func (c *Catalog) Lab(id string) (Lab, bool) {
	return find(c.Labs, id, func(l Lab) string { return l.ID })
}

// Dimension returns the dimension with the given ID.
func (c *Catalog) Dimension(id string) (Dimension, bool) {
	return find(c.Dimensions, id, func(d Dimension) string { return d.ID })
}

func find[T any](s []T, id string, key func(T) string) (T, bool) {
	for _, v := range s {
		if key(v) == id {
			return v, true
		}
	}
	var zero T
	return zero, false
}

// Level returns the level with the given ID and its rank (0 first).
func (a Axis) Level(id string) (Level, int, bool) {
	for i, l := range a.Levels {
		if l.ID == id {
			return l, i, true
		}
	}
	return Level{}, -1, false
}

// InPlane returns the projects whose primary plane is plane, in catalog order.
func (c *Catalog) InPlane(plane string) []Project {
	var out []Project
	for _, p := range c.Projects {
		if p.Plane == plane {
			out = append(out, p)
		}
	}
	return out
}

// LevelNames returns the display names of a project's levels on an axis,
// joined with " + ".
func (c *Catalog) LevelNames(p Project, axis string) string { return c.LevelLabels(p, axis, false) }

// LevelLabels is LevelNames, or the short labels joined with "+" when short
// is set.
func (c *Catalog) LevelLabels(p Project, axis string, short bool) string {
	a, _ := c.Axis(axis)
	var names []string
	for _, id := range p.Axes[axis].Levels {
		if l, _, ok := a.Level(id); ok {
			names = append(names, l.Label(short))
		} else {
			names = append(names, id)
		}
	}
	if short {
		return strings.Join(names, "+")
	}
	return strings.Join(names, " + ")
}

// ReferencedBy returns the projects that name id in builds_on,
// alternatives or works_with, with the relation as seen from them.
func (c *Catalog) ReferencedBy(id string) []Link {
	var out []Link
	for _, p := range c.Projects {
		for _, l := range p.Links() {
			if l.To == id {
				out = append(out, Link{Kind: l.Kind, To: p.ID})
			}
		}
	}
	return out
}

// Link is a relation from one project to another.
type Link struct {
	Kind string `json:"kind"` // "builds on", "alternative to", "works with"
	To   string `json:"to"`
}

// Links returns the project's outgoing relations.
func (p Project) Links() []Link {
	var out []Link
	for _, r := range []struct {
		kind string
		ids  []string
	}{{"builds on", p.BuildsOn}, {"alternative to", p.Alternatives}, {"works with", p.WorksWith}} {
		for _, id := range r.ids {
			out = append(out, Link{Kind: r.kind, To: id})
		}
	}
	return out
}

// Filter selects projects for the Matrix: by plane, by level on an axis,
// and by a case-insensitive text search over name, kind and summary.
type Filter struct {
	Plane string // plane ID; empty for all
	Axis  string // axis ID, with Level
	Level string // level ID
	Text  string
}

// Match reports whether p passes the filter.
func (f Filter) Match(p Project) bool {
	if f.Plane != "" && p.Plane != f.Plane && !slices.Contains(p.Spans, f.Plane) {
		return false
	}
	if f.Axis != "" && f.Level != "" && !slices.Contains(p.Axes[f.Axis].Levels, f.Level) {
		return false
	}
	if f.Text != "" {
		hay := strings.ToLower(p.ID + " " + p.Name + " " + p.Kind + " " + p.Summary)
		if !strings.Contains(hay, strings.ToLower(f.Text)) {
			return false
		}
	}
	return true
}

// Sort orders projects in place: by plane (catalog order) then catalog order
// when axis is empty, else by the rank of the first level on that axis.
func (c *Catalog) Sort(projects []Project, axis string, desc bool) {
	planeRank := map[string]int{}
	for i, p := range c.Planes {
		planeRank[p.ID] = i
	}
	order := map[string]int{}
	for i, p := range c.Projects {
		order[p.ID] = i
	}
	a, _ := c.Axis(axis)
	rank := func(p Project) int {
		if axis == "" {
			return planeRank[p.Plane]
		}
		lv := p.Axes[axis].Levels
		if len(lv) == 0 {
			return len(a.Levels)
		}
		_, r, _ := a.Level(lv[0])
		return r
	}
	slices.SortStableFunc(projects, func(x, y Project) int {
		r := cmp.Compare(rank(x), rank(y))
		if desc {
			r = -r
		}
		if r != 0 {
			return r
		}
		return cmp.Compare(order[x.ID], order[y.ID])
	})
}
