package tui

import (
	"slices"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/gpulab/gpulab/landscape"
)

// cardRenderer draws a project's card: what it is, its plane, its place on
// each axis and why, the acceptance questions and the labs that give
// evidence about it.
type cardRenderer struct {
	cat    *landscape.Catalog
	styles Styles
}

// compact draws the card in few lines, for the space under the Map at
// 80 columns: identity, summary, the four axes.
func (r cardRenderer) compact(p landscape.Project, width, height int) string {
	st := r.styles
	lines := []string{r.titleLine(p, width)}
	lines = append(lines, wrap(st.CardText.Render(p.Summary), width)...)
	var cells []string
	for _, a := range r.cat.Axes {
		cells = append(cells, st.CardLabel.Render(a.Short+":")+" "+st.CardText.Render(r.cat.LevelNames(p, a.ID)))
	}
	lines = append(lines, flow(cells, width, "   ")...)
	if len(p.Labs) > 0 {
		lines = append(lines, st.CardLabel.Render("Evidence:")+" "+st.CardText.Render(strings.Join(p.Labs, ", ")))
	}
	lines = append(lines, st.Hint.Render("enter: full card (axes explained, acceptance questions, links)"))
	if len(lines) > height {
		lines = append(lines[:height-1], lines[len(lines)-1])
	}
	return strings.Join(lines, "\n")
}

// full draws everything the catalog knows about the project.
func (r cardRenderer) full(p landscape.Project, width int) string {
	st := r.styles
	var b []string
	add := func(lines ...string) { b = append(b, lines...) }
	section := func(title string) { add("", st.CardLabel.Render(title)) }

	add(r.titleLine(p, width))
	add(wrap(st.CardText.Render(p.Summary), width)...)
	if p.URL != "" {
		add(wrap(st.CardMuted.Render(p.URL), width)...)
	}
	section("Decision axes")
	labelW := 0
	for _, a := range r.cat.Axes {
		labelW = max(labelW, lipgloss.Width(a.Name))
	}
	for _, a := range r.cat.Axes {
		pl := p.Axes[a.ID]
		head := "  " + st.CardLabel.Render(pad(a.Name, labelW)) + "  " + st.CardTitle.Render(r.cat.LevelNames(p, a.ID))
		add(head)
		indent := strings.Repeat(" ", labelW+4)
		for _, l := range wrap(st.CardText.Render(pl.Why), width-len(indent)) {
			add(indent + l)
		}
	}
	section("Acceptance questions")
	for _, q := range p.Questions {
		add(bullet(st.CardText.Render(q), width)...)
	}
	add(wrap(st.CardMuted.Render("  and the template's: "+strings.Join(shortQuestions, "; ")), width)...)
	if len(p.Labs) > 0 {
		section("Evidence from labs")
		for _, id := range p.Labs {
			l, _ := r.cat.Lab(id)
			add(bullet(st.CardText.Render(id+": "+l.Title), width)...)
		}
	}
	if links := r.links(p); len(links) > 0 {
		section("Links")
		for _, l := range links {
			add(bullet(l, width)...)
		}
	}
	if len(p.Dimensions) > 0 {
		section("AI-era dimensions")
		for _, id := range p.Dimensions {
			d, _ := r.cat.Dimension(id)
			add(bullet(st.CardText.Render(d.Name+": "+d.Description), width)...)
		}
	}
	add("", st.CardMuted.Render("Defined in "+p.Source))
	return strings.Join(b, "\n")
}

// shortQuestions are the template's questions in a few words each.
var shortQuestions = []string{"throughput", "P99", "interference coefficient", "fragmentation", "quota fulfilment and penetration", "ops complexity"}

func (r cardRenderer) titleLine(p landscape.Project, width int) string {
	st := r.styles
	plane, _ := r.cat.Plane(p.Plane)
	where := plane.Name
	if len(p.Spans) > 0 {
		where += ", also " + strings.Join(p.Spans, ", ")
	}
	left := st.CardTitle.Render(p.Name) + st.CardMuted.Render(" · "+p.Kind)
	right := st.planeTitle(p.Plane).Render(where)
	if gap := width - lipgloss.Width(left) - lipgloss.Width(right); gap >= 2 {
		return left + strings.Repeat(" ", gap) + right
	}
	return left + "\n" + right
}

func (r cardRenderer) links(p landscape.Project) []string {
	name := func(id string) string {
		if q, ok := r.cat.Project(id); ok {
			return q.Name
		}
		return id
	}
	byKind := map[string][]string{}
	var kinds []string
	addLink := func(kind, id string) {
		if _, ok := byKind[kind]; !ok {
			kinds = append(kinds, kind)
		}
		byKind[kind] = append(byKind[kind], name(id))
	}
	for _, l := range p.Links() {
		addLink(l.Kind, l.To)
	}
	for _, l := range r.cat.ReferencedBy(p.ID) {
		kind := map[string]string{"builds on": "built on by", "alternative to": "alternative to", "works with": "works with"}[l.Kind]
		if slices.Contains(byKind[kind], name(l.To)) {
			continue
		}
		addLink(kind, l.To)
	}
	out := make([]string, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, r.styles.CardLabel.Render(k+":")+" "+r.styles.CardText.Render(strings.Join(byKind[k], ", ")))
	}
	return out
}

// wrap word-wraps styled text to width columns.
func wrap(s string, width int) []string {
	if width < 10 {
		width = 10
	}
	return strings.Split(ansi.Wrap(s, width, " -"), "\n")
}

func bullet(s string, width int) []string {
	lines := wrap(s, width-4)
	for i := range lines {
		if i == 0 {
			lines[i] = "  • " + lines[i]
		} else {
			lines[i] = "    " + lines[i]
		}
	}
	return lines
}

// flow lays cells out left to right, starting a new line when one is full.
func flow(cells []string, width int, gap string) []string {
	var lines []string
	cur := ""
	for _, c := range cells {
		switch {
		case cur == "":
			cur = c
		case lipgloss.Width(cur)+len(gap)+lipgloss.Width(c) <= width:
			cur += gap + c
		default:
			lines = append(lines, cur)
			cur = c
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

func pad(s string, width int) string {
	if w := lipgloss.Width(s); w < width {
		return s + strings.Repeat(" ", width-w)
	}
	return s
}
