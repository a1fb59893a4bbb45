package tui

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/internal/visible"
	"github.com/gpulab/gpulab/render"
)

// Fencer fences and releases the fleet's hosts (app.Workbench): the plan
// first, then, once the person confirms, the action with its evidence.
type Fencer interface {
	PlanFence(ctx context.Context, hosts []int, reason string, release bool) (*app.FenceAction, error)
	ApplyFence(ctx context.Context, a *app.FenceAction) app.Fenced
}

// fenceStage is where a fence dialog is.
type fenceStage int

const (
	fenceReason   fenceStage = iota // typing the reason
	fencePlanning                   // reading the node
	fenceConfirm                    // the plan shown: y applies, esc cancels
	fenceApplying                   // evidence, then the changes
	fenceDone                       // the outcome shown
)

// fencePlanned and fenceApplied come back to the dialog that asked
// (from): one closed and opened again meanwhile ignores the other's.
type fencePlanned struct {
	from   *fenceDialog
	action *app.FenceAction
	err    error
}

type fenceApplied struct {
	from *fenceDialog
	done app.Fenced
}

// fenceDialog fences (or releases) hosts of the workbench (the Fleet's
// selected host, the hosts of a failed check's group): it asks why,
// shows the plan node by node, acts only on y, and shows what was done
// and where the record is. It holds the view while open.
type fenceDialog struct {
	fencer  Fencer
	hosts   []int  // into the workbench's hosts
	name    string // the hosts, as a node set
	release bool
	stage   fenceStage
	input   textinput.Model
	action  *app.FenceAction
	err     string
	done    *app.Fenced
	page    *textPage
	// cancel stops the plan or the action under way (esc).
	cancel context.CancelFunc
	width  int
	height int
}

var (
	fenceKey   = key.NewBinding(key.WithKeys("F"), key.WithHelp("F", "fence the host"))
	releaseKey = key.NewBinding(key.WithKeys("R"), key.WithHelp("R", "release the host"))
	confirmKey = key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "apply"))
	closeKey   = key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "close"))
	enterKey   = key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "plan"))
)

// newFenceDialog opens the dialog on hosts (name: them as a node set),
// its reason field holding reason (what the probe flagged, the check
// that failed); a release asks no reason.
func newFenceDialog(f Fencer, hosts []int, name, reason string, release bool, w, h int) (*fenceDialog, tea.Cmd) {
	ti := textinput.New()
	ti.Prompt = "reason: "
	ti.Placeholder = "why is " + name + " fenced? (enter plans, esc cancels)"
	ti.CharLimit = 1024
	ti.SetValue(reason)
	ti.Width = max(10, w-12)
	d := &fenceDialog{fencer: f, hosts: hosts, name: name, release: release, input: ti, width: w, height: h}
	if release {
		return d, d.plan()
	}
	return d, d.input.Focus()
}

// applying is how many hosts the dialog's action works on while it
// acts, 0 otherwise: a quit waits for it as for a run.
func (d *fenceDialog) applying() int {
	if d == nil || d.stage != fenceApplying {
		return 0
	}
	return len(d.hosts)
}

// stop stops what the dialog has under way (a quit): the action's
// outcome still comes back, and its record says it was interrupted.
func (d *fenceDialog) stop() {
	if d != nil && d.cancel != nil {
		d.cancel()
	}
}

func (d *fenceDialog) verb() string {
	if d.release {
		return "release"
	}
	return "fence"
}

func (d *fenceDialog) plan() tea.Cmd {
	d.stage = fencePlanning
	reason := strings.TrimSpace(d.input.Value())
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	return func() tea.Msg {
		defer cancel()
		a, err := d.fencer.PlanFence(ctx, d.hosts, reason, d.release)
		return fencePlanned{d, a, err}
	}
}

// update handles a key or the dialog's own messages; closed says the
// dialog is done with.
func (d *fenceDialog) update(msg tea.Msg) (cmd tea.Cmd, closed bool) {
	switch msg := msg.(type) {
	case fencePlanned:
		if msg.from != d {
			return nil, false
		}
		d.action, d.stage = msg.action, fenceConfirm
		if msg.err != nil {
			d.err, d.stage = msg.err.Error(), fenceDone
		}
		d.draw()
	case fenceApplied:
		if msg.from != d {
			return nil, false
		}
		d.done, d.stage = &msg.done, fenceDone
		d.draw()
	case tea.KeyMsg:
		return d.key(msg)
	}
	return nil, false
}

func (d *fenceDialog) key(km tea.KeyMsg) (tea.Cmd, bool) {
	switch d.stage {
	case fenceReason:
		switch {
		case key.Matches(km, closeKey):
			return nil, true
		case key.Matches(km, enterKey) && strings.TrimSpace(d.input.Value()) != "":
			d.input.Blur()
			return d.plan(), false
		}
		var cmd tea.Cmd
		d.input, cmd = d.input.Update(km)
		return cmd, false
	case fenceConfirm:
		switch {
		case key.Matches(km, closeKey):
			return nil, true
		case key.Matches(km, confirmKey) && d.action.Changes() > 0:
			d.stage = fenceApplying
			d.draw()
			a := d.action
			ctx, cancel := context.WithCancel(context.Background())
			d.cancel = cancel
			return func() tea.Msg {
				defer cancel()
				return fenceApplied{d, d.fencer.ApplyFence(ctx, a)}
			}, false
		}
	case fencePlanning:
		if key.Matches(km, closeKey) { // nothing done yet: the reads stop, the dialog closes
			d.cancel()
			return nil, true
		}
	case fenceApplying:
		if key.Matches(km, closeKey) { // stopped: the outcome (and the record) say what was done
			d.cancel()
			return nil, false
		}
	case fenceDone:
		if key.Matches(km, closeKey) {
			return nil, true
		}
	}
	if d.page != nil {
		d.page.update(km, DefaultMoveKeys().Up, DefaultMoveKeys().Down, pageKeys())
	}
	return nil, false
}

// lines are what the dialog shows at its stage.
func (d *fenceDialog) lines() []string {
	head := strings.ToUpper(d.verb()[:1]) + d.verb()[1:] + " " + visible.String(d.name)
	if d.action != nil {
		head += " in " + visible.String(d.action.Target)
	}
	out := []string{head, ""}
	if d.err != "" {
		return append(out, "Nothing done: "+visible.String(d.err))
	}
	if d.action != nil {
		out = append(append(out, render.FencePlans(d.action.Plans)...), "")
	}
	switch d.stage {
	case fenceConfirm:
		out = append(out, d.confirmLines()...)
	case fenceApplying:
		out = append(out, "Gathering the evidence, then the changes above... (esc stops: what was done by then is shown and recorded)")
	case fenceDone:
		out = append(out, d.doneLines()...)
	}
	return out
}

func (d *fenceDialog) confirmLines() []string {
	if d.action.Changes() == 0 {
		return []string{"Nothing to do. esc closes."}
	}
	if d.release {
		return []string{"y: run the health runbook again, and release only if the checks that fenced it pass now. esc: cancel, nothing changed."}
	}
	return []string{"y: gather the evidence (runbook health) into a fence record, then make " + text.Plural(d.action.Changes(), "change", "changes") +
		" above. esc: cancel, nothing changed."}
}

func (d *fenceDialog) doneLines() []string {
	out := render.FenceResults(d.done.Results, d.release)
	if d.done.Record != nil {
		out = append(out, "", "record: "+visible.String(filepath.Join(d.done.Record.Dir(), "record.md")))
	}
	if d.done.SaveErr != nil {
		out = append(out, "the record could not be written: "+visible.String(d.done.SaveErr.Error()))
	}
	return append(out, "", "esc closes.")
}

func (d *fenceDialog) draw() {
	d.page = newTextPage(d.lines(), d.width, d.height)
}

func (d *fenceDialog) view(st Styles) string {
	if d.stage == fenceReason {
		return strings.Join([]string{"Fence " + visible.String(d.name), "", d.input.View(), "",
			"The reason goes whole into the fence record and the node's annotations (or the Slurm reason)."}, "\n")
	}
	if d.page == nil {
		d.draw()
	}
	return d.page.view(st)
}

func (d *fenceDialog) keys() []key.Binding {
	switch d.stage {
	case fenceReason:
		return []key.Binding{enterKey, closeKey}
	case fenceConfirm:
		if d.action.Changes() > 0 {
			return []key.Binding{confirmKey, closeKey}
		}
	case fencePlanning:
		return []key.Binding{key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "stop"))}
	case fenceApplying:
		return []key.Binding{key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "stop"))}
	}
	return []key.Binding{closeKey}
}
