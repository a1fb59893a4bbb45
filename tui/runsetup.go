package tui

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/internal/visible"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/step"
)

const hostsPlaceholder = "gpu[01-08], @group, @label=value, !gpu05 (enter sets, esc cancels)"

// runSetup is what a run is started with, shared by the Runbooks and Labs
// tabs: the hosts, chosen with an inventory expression as -H takes it, and
// each runbook's or lab's parameters, edited one field at a time.
type runSetup struct {
	inv   *inventory.Inventory
	hosts func() []app.FleetHost

	expr  string
	idx   []int // into hosts()
	err   string
	input textinput.Model
	// editing is "" (not typing), "hosts", or the id whose params[param]
	// is being edited.
	editing string
	pdefs   []step.Param
	param   int
	params  map[string]map[string]string // by runbook or lab id
	width   int                          // the view's
}

// hostLister is what runs on the fleet's hosts (a RunbookRunner, a
// LabRunner); nil when the workbench has no hosts.
type hostLister interface{ Hosts() []app.FleetHost }

func newRunSetup(inv *inventory.Inventory, runner hostLister) *runSetup {
	hosts := func() []app.FleetHost { return nil }
	if runner != nil {
		hosts = runner.Hosts
	}
	ti := textinput.New()
	ti.CharLimit = 1024
	s := &runSetup{inv: inv, hosts: hosts, expr: "*", input: ti, params: map[string]map[string]string{}}
	for i := range hosts() {
		s.idx = append(s.idx, i)
	}
	return s
}

func (s *runSetup) typing() bool    { return s.editing != "" }
func (s *runSetup) setWidth(w int)  { s.width = w; s.fitInput() }
func (s *runSetup) hostCount() int  { return len(s.idx) }
func (s *runSetup) indices() []int  { return append([]int(nil), s.idx...) }
func (s *runSetup) canChoose() bool { return len(s.hosts()) > 0 }

// names are the chosen hosts' names.
func (s *runSetup) names() []string {
	all := s.hosts()
	out := make([]string, len(s.idx))
	for i, h := range s.idx {
		out[i] = all[h].Name
	}
	return out
}

func (s *runSetup) editHosts() tea.Cmd {
	s.editing = "hosts"
	// The field opens empty, the selection in its placeholder: what is
	// typed replaces it (appended to it, "*dgx01" was a parse error and
	// "…!dgx02dgx01" silently every host); ↑ brings it back to edit.
	s.input.Prompt, s.input.Placeholder = "hosts: ", hostsPlaceholder
	if s.expr != "" && s.expr != "*" {
		s.input.Placeholder = s.expr + "  (type to replace, ↑ to edit, enter keeps it)"
	}
	s.fitInput()
	s.input.SetValue("")
	return s.input.Focus()
}

// fitInput sizes the field to the view less its prompt: a field wider
// than the line is cut at its far end.
func (s *runSetup) fitInput() {
	s.input.Width = max(10, s.width-lipgloss.Width(s.input.Prompt)-2)
}

// editParams opens the first of id's parameters.
func (s *runSetup) editParams(id string, defs []step.Param) tea.Cmd {
	s.pdefs = defs
	return s.editParam(id, 0)
}

func (s *runSetup) editParam(id string, i int) tea.Cmd {
	if i >= len(s.pdefs) {
		s.editing = ""
		s.input.Blur()
		return nil
	}
	p := s.pdefs[i]
	s.editing, s.param = id, i
	s.input.Prompt, s.input.Placeholder = p.Name+": ", "enter sets, esc cancels"
	s.fitInput()
	val, ok := s.params[id][p.Name]
	if !ok {
		val = p.Default
	}
	s.input.SetValue(val)
	s.input.CursorEnd()
	return s.input.Focus()
}

// update handles a key while a field is open.
func (s *runSetup) update(km tea.KeyMsg) tea.Cmd {
	switch km.Type {
	case tea.KeyEsc:
		s.editing, s.err = "", ""
		s.input.Blur()
		return nil
	case tea.KeyEnter:
		if s.editing != "hosts" {
			id := s.editing
			p := s.pdefs[s.param]
			val := strings.TrimSpace(s.input.Value())
			if val != "" {
				if err := p.Check(val); err != nil { // checked before anything can run it
					s.err = p.Name + ": " + err.Error()
					return nil
				}
			}
			if s.params[id] == nil {
				s.params[id] = map[string]string{}
			}
			s.params[id][p.Name], s.err = val, ""
			return s.editParam(id, s.param+1)
		}
		expr := strings.TrimSpace(s.input.Value())
		if expr == "" {
			expr = cmp.Or(s.expr, "*") // enter on the empty field keeps the selection
		}
		idx, err := s.selectHosts(expr)
		if err != nil {
			s.err = err.Error()
			return nil
		}
		s.expr, s.idx, s.err, s.editing = expr, idx, "", ""
		s.input.Blur()
		return nil
	}
	if km.Type == tea.KeyUp && s.editing == "hosts" && s.input.Value() == "" {
		s.input.SetValue(s.expr)
		s.input.CursorEnd()
		return nil
	}
	var c tea.Cmd
	s.input, c = s.input.Update(km)
	return c
}

// selectHosts resolves a host expression against the inventory, keeping
// the fleet's order.
func (s *runSetup) selectHosts(expr string) ([]int, error) {
	if s.inv == nil {
		return nil, fmt.Errorf("no inventory to select from")
	}
	hs, err := s.inv.Select(expr)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, h := range hs {
		want[h.Name] = true
	}
	var idx []int
	for i, h := range s.hosts() {
		if want[h.Name] {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil, fmt.Errorf("%q selects no host of the fleet", expr)
	}
	return idx, nil
}

// values returns id's parameter values: the defaults, then what was set.
func (s *runSetup) values(id string, defs []step.Param) map[string]string {
	out := map[string]string{}
	for _, p := range defs {
		out[p.Name] = p.Default
		if val, ok := s.params[id][p.Name]; ok {
			out[p.Name] = val
		}
	}
	return out
}

// head is what a run tab draws above its list: its title and the run
// setup's lines (the field being typed, or the hosts and parameters a run
// takes), or, with no hosts to run on and nothing typed, only noHosts,
// which says how to get some.
func (s *runSetup) head(st Styles, title []string, hostless bool, noHosts, paramsKey string, simulated bool) []string {
	if hostless && !s.typing() {
		return append(wrap(st.Hint.Render(noHosts), s.width-2), "")
	}
	return append(title, s.lines(st, paramsKey, simulated)...)
}

// lines is the setup as the list views show it: the open field (with the
// parameter's help and any error), or the chosen hosts.
func (s *runSetup) lines(st Styles, paramsKey string, simulated bool) []string {
	if s.typing() {
		var out []string
		if s.editing != "hosts" { // wrapped: a parameter's help is a sentence or two
			for _, l := range wrap(visible.String(s.pdefs[s.param].Help), max(20, s.width-2)) {
				out = append(out, st.CardMuted.Render(l))
			}
		}
		out = append(out, s.input.View())
		if s.err != "" { // wrapped: the reason is at the end of the error
			for _, l := range wrap(visible.String(s.err), max(20, s.width-2)) {
				out = append(out, st.Error.Render(l))
			}
		}
		return append(out, "")
	}
	hint := "h chooses, enter runs"
	if paramsKey != "" {
		hint = "h chooses, " + paramsKey + " sets parameters, enter runs"
	}
	return []string{st.CardMuted.Render(fmt.Sprintf("hosts: %s → %s", s.expr, inventory.FoldNames(s.names()))) + hostBadge(st, simulated, false) +
		st.CardMuted.Render(fmt.Sprintf(" (%d); %s", len(s.idx), hint)), ""}
}

// paramLine shows id's parameter values, "(not set)" for empty ones.
func (s *runSetup) paramLine(st Styles, id string, defs []step.Param, key string) string {
	vals := s.values(id, defs)
	var parts []string
	for _, p := range defs {
		val := vals[p.Name]
		if val == "" {
			val = "(not set)"
		}
		parts = append(parts, p.Name+" = "+val)
	}
	return st.CardMuted.Render("parameters (" + key + " sets): " + strings.Join(parts, ", "))
}

// fieldHelp is the status bar while a field is open.
func fieldHelp() []key.Binding {
	return []key.Binding{key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "set")), key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "cancel"))}
}
