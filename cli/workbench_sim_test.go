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

// driveUntil runs the workbench's commands as Bubble Tea would (each on a
// goroutine of its own, their messages fed back to the model) until done
// says the view is there; a minute is the safety net against a hang.
func driveUntil(t *testing.T, m tea.Model, cmd tea.Cmd, done func(view string) bool) tea.Model {
	t.Helper()
	msgs := make(chan tea.Msg, 64)
	var start func(tea.Cmd)
	start = func(c tea.Cmd) {
		if c == nil {
			return
		}
		go func() {
			msg := c()
			if b, ok := msg.(tea.BatchMsg); ok {
				for _, c := range b {
					start(c)
				}
				return
			}
			msgs <- msg
		}()
	}
	start(cmd)
	deadline := time.After(time.Minute)
	for !done(m.View()) {
		select {
		case msg := <-msgs:
			var c tea.Cmd
			m, c = m.Update(msg)
			start(c)
		case <-deadline:
			t.Fatalf("the workbench never got there:\n%s", m.View())
		}
	}
	return m
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
