package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpulab/gpulab/internal/problem"
	"github.com/gpulab/gpulab/landscape"
	"github.com/gpulab/gpulab/render"
	"github.com/gpulab/gpulab/tui"
)

// mapOptions are gpulab map's flags, bound by newMapCmd.
type mapOptions struct {
	*options
	plane string
	c     *landscape.Catalog // Complete loads it
}

func newMapCmd(o *options) *cobra.Command {
	mo := &mapOptions{options: o}
	cmd := &cobra.Command{
		Use:   "map",
		Short: "Print the three-plane map: each plane and the projects that live in it",
		Long: `Print the Map as text: the control, data and workload planes, the question
each answers, and the projects that live in each (a project that also acts in
another plane says so).`,
		Example: `  gpulab map
  gpulab map --plane data
  gpulab map --json | jq '.planes[] | {plane: .id, projects: [.projects[].id]}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := mo.Complete(); err != nil {
				return err
			}
			if err := mo.Validate(); err != nil {
				return err
			}
			return mo.Run(cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&mo.plane, "plane", "", "show only this `PLANE` (control, data, workload)")
	return cmd
}

// Complete loads the catalog.
func (mo *mapOptions) Complete() (err error) {
	mo.c, err = mo.loadCatalog()
	return err
}

// Validate checks --plane against the catalog's planes.
func (mo *mapOptions) Validate() error {
	if mo.plane != "" {
		if _, ok := mo.c.Plane(mo.plane); !ok {
			return usageErr("--plane %q: want one of: %s", mo.plane, planeIDs(mo.c))
		}
	}
	return nil
}

// Run prints the map (text or --json).
func (mo *mapOptions) Run(w io.Writer) error { return printMap(w, mo.c, mo.plane, mo.json) }

type mapJSON struct {
	Planes []mapPlaneJSON `json:"planes"`
}

type mapPlaneJSON struct {
	landscape.Plane
	Projects []mapProjectJSON `json:"projects"`
}

type mapProjectJSON struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Kind    string   `json:"kind"`
	Summary string   `json:"summary"`
	Spans   []string `json:"spans,omitempty"`
}

func printMap(w io.Writer, c *landscape.Catalog, only string, asJSON bool) error {
	var m mapJSON
	for _, pl := range c.Planes {
		if only != "" && pl.ID != only {
			continue
		}
		mp := mapPlaneJSON{Plane: pl, Projects: []mapProjectJSON{}}
		for _, p := range c.InPlane(pl.ID) {
			mp.Projects = append(mp.Projects, mapProjectJSON{ID: p.ID, Name: p.Name, Kind: p.Kind, Summary: p.Summary, Spans: p.Spans})
		}
		m.Planes = append(m.Planes, mp)
	}
	if asJSON {
		return writeJSON(w, m)
	}
	for i, pl := range m.Planes {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s: %s\n", strings.ToUpper(pl.Name), pl.Question)
		t := render.Table{Columns: make([]render.Column, 3), Indent: "  "}
		for _, p := range pl.Projects {
			also := ""
			if len(p.Spans) > 0 {
				also = " (also " + strings.Join(p.Spans, ", ") + ")"
			}
			t.Add(p.ID, p.Name, p.Kind+also)
		}
		if err := t.WriteRows(w); err != nil {
			return err
		}
	}
	return nil
}

// matrixOptions are gpulab matrix's flags, bound by newMatrixCmd.
type matrixOptions struct {
	*options
	plane, search, sortBy string
	filters               []string
	desc, why             bool

	c      *landscape.Catalog // Complete loads it
	levels []landscape.Filter // each --filter, all of them to pass (Validate)
}

func newMatrixCmd(o *options) *cobra.Command {
	mo := &matrixOptions{options: o}
	cmd := &cobra.Command{
		Use:   "matrix",
		Short: "Print the decision-axis matrix: projects × resource unit, isolation, fragmentation, governance",
		Long: `Print the Matrix as a text table: every project's level on each of the four
decision axes. Filter by plane, by a level of an axis and by text, and sort
by an axis (levels are ordered: e.g. isolation none < soft < strong <
verifiable). --why adds the one-sentence reason under each row.`,
		Example: `  gpulab matrix
  gpulab matrix --filter isolation=strong
  gpulab matrix --filter isolation=soft --filter fragmentation=topology   # both
  gpulab matrix --plane data --sort isolation --desc
  gpulab matrix --search nvlink --why
  gpulab matrix --json | jq '.projects[] | select(.axes.isolation.levels | index("strong")) | .name'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := mo.Complete(); err != nil {
				return err
			}
			if err := mo.Validate(); err != nil {
				return err
			}
			return mo.Run(cmd.OutOrStdout())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&mo.plane, "plane", "", "only projects that act in `PLANE`")
	fl.StringArrayVar(&mo.filters, "filter", nil, "only projects at `AXIS=LEVEL` (e.g. isolation=strong); repeated, a project must pass each")
	fl.StringVar(&mo.search, "search", "", "only projects whose name, kind or summary contains `TEXT`")
	fl.StringVar(&mo.sortBy, "sort", "", "sort by `AXIS` (level order) or plane")
	fl.BoolVar(&mo.desc, "desc", false, "sort descending")
	fl.BoolVar(&mo.why, "why", false, "print each placement's reason under the row")
	return cmd
}

// Complete loads the catalog.
func (mo *matrixOptions) Complete() (err error) {
	mo.c, err = mo.loadCatalog()
	return err
}

// Validate checks --plane, each --filter and --sort against the catalog.
func (mo *matrixOptions) Validate() error {
	if mo.plane != "" {
		if _, ok := mo.c.Plane(mo.plane); !ok {
			return usageErr("--plane %q: want one of: %s", mo.plane, planeIDs(mo.c))
		}
	}
	for _, filter := range mo.filters {
		axis, level, ok := strings.Cut(filter, "=")
		if axis == "plane" {
			return usageErr("--filter %q: plane is not an axis: use --plane %s", filter, level)
		}
		a, found := mo.c.Axis(axis)
		if !ok || !found {
			return usageErr("--filter %q: want AXIS=LEVEL, AXIS one of: %s", filter, axisIDs(mo.c))
		}
		if _, _, ok := a.Level(level); !ok {
			return usageErr("--filter %q: axis %s has levels: %s", filter, axis, levelIDs(a))
		}
		mo.levels = append(mo.levels, landscape.Filter{Axis: axis, Level: level})
	}
	if mo.sortBy != "" && mo.sortBy != "plane" {
		if _, ok := mo.c.Axis(mo.sortBy); !ok {
			return usageErr("--sort %q: want plane or an axis: %s", mo.sortBy, axisIDs(mo.c))
		}
	}
	return nil
}

// Run prints the projects that pass every filter, sorted as asked.
func (mo *matrixOptions) Run(w io.Writer) error {
	f := landscape.Filter{Plane: mo.plane, Text: mo.search}
	var rows []landscape.Project
	for _, p := range mo.c.Projects {
		if f.Match(p) && !slices.ContainsFunc(mo.levels, func(l landscape.Filter) bool { return !l.Match(p) }) {
			rows = append(rows, p)
		}
	}
	if mo.sortBy != "" {
		mo.c.Sort(rows, strings.TrimPrefix(mo.sortBy, "plane"), mo.desc)
	}
	return printMatrix(w, mo.c, rows, mo.why, mo.json)
}

type matrixJSON struct {
	Axes     []landscape.Axis    `json:"axes"`
	Projects []matrixProjectJSON `json:"projects"`
}

type matrixProjectJSON struct {
	ID    string                   `json:"id"`
	Name  string                   `json:"name"`
	Plane string                   `json:"plane"`
	Spans []string                 `json:"spans,omitempty"`
	Axes  map[string]placementJSON `json:"axes"`
}

type placementJSON struct {
	Levels []string `json:"levels"`
	Names  []string `json:"names"`
	Why    string   `json:"why"`
}

func printMatrix(w io.Writer, c *landscape.Catalog, rows []landscape.Project, why, asJSON bool) error {
	if asJSON {
		m := matrixJSON{Axes: c.Axes, Projects: []matrixProjectJSON{}}
		for _, p := range rows {
			mp := matrixProjectJSON{ID: p.ID, Name: p.Name, Plane: p.Plane, Spans: p.Spans, Axes: map[string]placementJSON{}}
			for _, a := range c.Axes {
				pl := p.Axes[a.ID]
				var names []string
				for _, id := range pl.Levels {
					l, _, _ := a.Level(id)
					names = append(names, l.Name)
				}
				mp.Axes[a.ID] = placementJSON{Levels: slices.Clone([]string(pl.Levels)), Names: names, Why: pl.Why}
			}
			m.Projects = append(m.Projects, mp)
		}
		return writeJSON(w, m)
	}
	// The table is aligned alone; each row's reasons are written under it
	// afterwards, so that they do not widen the PROJECT column.
	var table bytes.Buffer
	head := []string{"PROJECT", "PLANE"}
	for _, a := range c.Axes {
		head = append(head, strings.ToUpper(a.Name))
	}
	t := render.NewTable(head...)
	for _, p := range rows {
		cells := []string{p.Name, strings.Join(append([]string{p.Plane}, p.Spans...), " +")}
		for _, a := range c.Axes {
			cells = append(cells, c.LevelNames(p, a.ID))
		}
		t.Add(cells...)
	}
	if err := t.WriteText(&table); err != nil {
		return err
	}
	lines := strings.SplitAfter(table.String(), "\n")
	if _, err := io.WriteString(w, lines[0]); err != nil {
		return err
	}
	for i, p := range rows {
		fmt.Fprint(w, strings.TrimRight(lines[i+1], " \n")+"\n")
		if why {
			for _, a := range c.Axes {
				fmt.Fprintf(w, "  %s: %s\n", a.Short, p.Axes[a.ID].Why)
			}
		}
	}
	if len(rows) == 0 {
		fmt.Fprintln(w, "(no project matches)")
	}
	return nil
}

func newCatalogCmd(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "Show projects and validate catalog files",
		Long: `The catalog is the landscape the Map and Matrix draw: planes, axes with their
levels, AI-era dimensions, labs and projects. The built-in catalog is embedded;
--catalog DIR adds your own files of the same schema (see docs/catalog.md).`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "check DIR|FILE",
		Short: "Validate catalog files on top of the built-in catalog",
		Long: `Validate a contributor's catalog files against the schema and the built-in
catalog: unknown keys, missing axes, unknown levels, planes and links are
reported with file:line:column. Exit 0 when valid, 2 when not (a
configuration error, as for any command that reads an invalid catalog), or
when a file is over gpulab's limits (larger than 8 MiB, or nested more than
64 levels).`,
		Example: `  gpulab catalog check my-projects/
  gpulab catalog check my-projects/scheduler.toml --json`,
		Args: exactArgs(1, "a directory or a .toml file"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := landscape.Check(args[0])
			return reportCheck(cmd.OutOrStdout(), o.json, args[0], err, func() string {
				return fmt.Sprintf("%s: ok (catalog now has %d projects)", args[0], len(c.Projects))
			})
		},
	})
	so := &catalogShowOptions{options: o}
	show := &cobra.Command{
		Use:               "show PROJECT",
		ValidArgsFunction: completeWith(o.projectIDs, false),
		Short:             "Print a project's card: axes with reasons, acceptance questions, labs, links",
		Example: `  gpulab catalog show mig
  gpulab catalog show hami --json`,
		Args: exactArgs(1, "a project id (gpulab map lists them)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return so.Run(cmd.OutOrStdout(), args[0])
		},
	}
	show.Flags().IntVar(&so.width, "width", 80, "wrap at `COLUMNS`")
	cmd.AddCommand(show)
	return cmd
}

// reportCheck prints a check's outcome: ok, or its problems, each placed
// where it can be (exit 2). With --json the outcome is always the one
// document, a file that could not be read or is over gpulab's limits
// included (its one problem says why), so that a script reads every
// failure the same way.
func reportCheck(w io.Writer, asJSON bool, subject string, err error, ok func() string) error {
	if err != nil {
		err = problem.Sorted(err)
	}
	if asJSON {
		out := struct {
			Subject  string    `json:"subject"`
			OK       bool      `json:"ok"`
			Problems []Problem `json:"problems"`
		}{Subject: subject, OK: err == nil, Problems: []Problem{}}
		if err != nil {
			out.Problems = problems(err)
		}
		if werr := writeJSON(w, out); werr != nil {
			return werr
		}
		if err != nil {
			return &exitError{code: ExitUsage, err: errors.New("")}
		}
		return nil
	}
	if err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	_, werr := fmt.Fprintln(w, ok())
	return werr
}

func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErr("%s: want %s, got %d arguments", cmd.CommandPath(), what, len(args))
		}
		return nil
	}
}

func planeIDs(c *landscape.Catalog) string {
	var ids []string
	for _, p := range c.Planes {
		ids = append(ids, p.ID)
	}
	return strings.Join(ids, ", ")
}

func axisIDs(c *landscape.Catalog) string {
	var ids []string
	for _, a := range c.Axes {
		ids = append(ids, a.ID)
	}
	return strings.Join(ids, ", ")
}

func levelIDs(a landscape.Axis) string {
	var ids []string
	for _, l := range a.Levels {
		ids = append(ids, l.ID)
	}
	return strings.Join(ids, ", ")
}

// catalogShowOptions is gpulab catalog show: the width the card wraps at.
type catalogShowOptions struct {
	*options
	width int
}

// Run prints the project's card, or its JSON.
func (so *catalogShowOptions) Run(w io.Writer, id string) error {
	c, err := so.loadCatalog()
	if err != nil {
		return err
	}
	p, ok := c.Project(id)
	if !ok {
		return usageErr("no project %q in the catalog (gpulab map lists them)", id)
	}
	if so.json {
		return writeJSON(w, p)
	}
	_, err = fmt.Fprintln(w, tui.PlainCard(c, p, so.width))
	return err
}
