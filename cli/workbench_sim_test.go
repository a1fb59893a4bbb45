package cli

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/labs"
	"github.com/gpulab/gpulab/landscape"
	"github.com/gpulab/gpulab/sim"
	"github.com/gpulab/gpulab/tui"
)

// driveUntil runs the workbench's commands, feeding their messages back,
// until done says the view is there (or a minute has passed). Commands
// still running when it returns deliver to no one: a test that keeps
// something running across steps (the Cluster tab following its
// cluster) uses one driver throughout.
func driveUntil(t *testing.T, m tea.Model, cmd tea.Cmd, done func(view string) bool) tea.Model {
	t.Helper()
	d := newDriver(t, m)
	d.until(cmd, done)
	return d.m
}

// driver runs a workbench's commands, their messages fed back to it in
// one loop for the whole test.
type driver struct {
	t    *testing.T
	m    tea.Model
	msgs chan tea.Msg
}

func newDriver(t *testing.T, m tea.Model) *driver {
	return &driver{t: t, m: m, msgs: make(chan tea.Msg, 64)}
}

// start runs c (a batch's commands each) in the background.
func (d *driver) start(c tea.Cmd) {
	if c == nil {
		return
	}
	go func() {
		msg := c()
		if b, ok := msg.(tea.BatchMsg); ok {
			for _, c := range b {
				d.start(c)
			}
			return
		}
		d.msgs <- msg
	}()
}

// until starts cmd and feeds the messages of every command started to
// the workbench until done says the view is there; a minute is the
// deadline, against a hang.
func (d *driver) until(cmd tea.Cmd, done func(view string) bool) {
	d.t.Helper()
	d.start(cmd)
	deadline := time.After(time.Minute)
	for !done(d.m.View()) {
		select {
		case msg := <-d.msgs:
			var c tea.Cmd
			d.m, c = d.m.Update(msg)
			d.start(c)
		case <-deadline:
			d.t.Fatalf("the workbench never got there:\n%s", d.m.View())
		}
	}
}

// press sends keys (a name: enter, down, up, right, esc; else runes) and
// starts what they return.
func (d *driver) press(keys ...string) {
	named := map[string]tea.KeyType{"enter": tea.KeyEnter, "down": tea.KeyDown, "up": tea.KeyUp, "right": tea.KeyRight, "esc": tea.KeyEsc}
	for _, k := range keys {
		msg := tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)}
		if kt, ok := named[k]; ok {
			msg = tea.KeyMsg{Type: kt}
		}
		var c tea.Cmd
		d.m, c = d.m.Update(msg)
		d.start(c)
	}
}

// A simulated fleet reached with -H, -F and --known-hosts, with no
// inventory to say it is simulated: once a connection shows it (the hosts'
// SSH handshake), the Fleet marks every host SIM and the header says
// SIMULATED; a lab's record made on those hosts says so too.
func TestWorkbenchFindsASimulatedFleet(t *testing.T) {
	_, files := simFleet(t, sim.Config{Hosts: 4, Seed: 1})
	env := noEnv(t)
	o := &options{env: Env{Getenv: func(k string) string { return env[k] }}}
	w := &workbench{ssh: &sshFlags{hosts: "dgx[01-04]", sshConfig: files.SSHConfig, knownHosts: files.KnownHosts}}
	inv, r, err := w.fleet(o, inventory.Empty())
	if err != nil || r == nil || r.Simulated || inv.Simulated {
		t.Fatalf("fleet(-H dgx[01-04] -F %s) = %v, %v; want hosts not known to be simulated", files.SSHConfig, r, err)
	}
	c, err := landscape.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	ls, err := labs.Load(nil)
	if err != nil {
		t.Fatal(err)
	}
	lipgloss.SetColorProfile(termenv.Ascii)
	opts := tui.Options{Catalog: c, Inventory: inv, Labs: ls, Styles: tui.DefaultStyles()}
	defer o.fleetOptions(&opts, r, inv, t.TempDir(), nil, nil, nil)()
	var m tea.Model = tui.New(opts)
	m, _ = m.Update(tea.WindowSizeMsg{Width: 120, Height: 32})
	for _, k := range []string{"3", ":", "echo hi"} {
		m, _ = m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(k)})
	}
	if v := m.View(); strings.Contains(v, "SIM") {
		t.Fatalf("before any connection the fleet says SIM:\n%s", v)
	}
	m, cmd := m.Update(tea.KeyMsg{Type: tea.KeyEnter})
	m = driveUntil(t, m, cmd, func(v string) bool { return strings.Contains(v, "$ echo hi done") })
	v := m.View()
	if !strings.HasPrefix(v, "gpulab  SIMULATED ") || len(regexp.MustCompile(`(?m)^. dgx0\d SIM +127\.0\.0\.1:\d+ +ok `).FindAllString(v, -1)) != 4 {
		t.Errorf("the header or the 4 hosts do not say SIMULATED:\n%s", v)
	}

	var lab *labs.Lab
	for _, l := range ls {
		if l.ID == "topology-sanity" {
			lab = l
		}
	}
	updates := make(chan app.LabUpdate, 64)
	go opts.LabRunner.RunLab(context.Background(), lab, []int{0, 1, 2, 3}, app.LabRunOptions{}, updates)
	var rec *labs.Record
	for u := range updates {
		if u.Record != nil {
			rec = u.Record
		}
	}
	if rec == nil || !rec.Simulated {
		t.Errorf("the lab's record on the simulated hosts does not say simulated: %+v", rec)
	}
}
