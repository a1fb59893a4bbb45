package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gpulab/gpulab/sim"
	"github.com/gpulab/gpulab/sim/dgx"
)

func TestDemoUsage(t *testing.T) {
	env := noEnv(t)
	run(t, env, "demo").expect(t, 2, "", "the workbench needs a terminal")
	run(t, env, "demo", "--present", "--mask").expect(t, 2, "", "the workbench needs a terminal")
	run(t, env, "demo", "--json").expect(t, 2, "", "demo: --json does not apply")
	run(t, env, "demo", "--inventory", "inventory.toml").expect(t, 2, "", "demo: --inventory does not apply")
	run(t, env, "demo", "--hosts", "0").expect(t, 2, "", "demo: --hosts 0: between 1 and")
	run(t, env, "demo", "extra").expect(t, 2, "", `unknown command "extra"`)
	run(t, env, "demo", "--help").expect(t, 0, "gpulab demo --present --mask", "")
}

// TestPresentSteps: the walkthrough's captions name the fleet's sick host
// and what its plan broke, and each fits 80 columns with its step number.
func TestPresentSteps(t *testing.T) {
	f, err := sim.Start(context.Background(), sim.Config{Hosts: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	steps := presentSteps(f.Hosts())
	var sick string
	for _, h := range f.Hosts() {
		if h.Sick {
			sick = h.Name
		}
	}
	var tabs []string
	for _, s := range steps {
		tabs = append(tabs, s.Tab)
	}
	if got, want := strings.Join(tabs, " "), "Map Matrix Fleet Fleet Runbooks Runbooks Labs Cluster Results"; got != want {
		t.Errorf("the steps show %s, want %s", got, want)
	}
	if got, want := steps[2].Caption, sick+" is flagged: NVLink GPU"; !strings.HasPrefix(got, want) || !strings.HasSuffix(got, " is down (SYS)") {
		t.Errorf("the probe's caption = %q, want %q… is down (SYS)", got, want)
	}
	if steps[2].Run != "probe" || steps[4].Run != "topology" || steps[6].Run != "topology-sanity" {
		t.Errorf("the steps start %q, %q, %q; want probe, topology, topology-sanity", steps[2].Run, steps[4].Run, steps[6].Run)
	}
	if !strings.Contains(steps[3].Caption, "uncorrected ECC, remap pending") {
		t.Errorf("the sick host's caption = %q, want its ECC errors and pending remap", steps[3].Caption)
	}
}

// TestPresentCaptionsFit: whichever host is sick and however many there
// are, every caption fits 80 columns with its step number.
func TestPresentCaptionsFit(t *testing.T) {
	for _, n := range []int{1, 4, 16, 128} {
		for seed := range int64(10) {
			sick, faults := dgx.Plan(seed, n)
			hosts := make([]sim.Host, n)
			for i := range hosts {
				hosts[i] = sim.Host{Name: sim.HostName(i, n), Sick: i == sick}
				if i == sick {
					js, err := json.Marshal(faults[i])
					if err != nil {
						t.Fatal(err)
					}
					hosts[i].Faults = string(js)
				}
			}
			for i, s := range presentSteps(hosts) {
				if w := utf8.RuneCountInString(s.Caption) + len(" 9/9   "); w > 80 {
					t.Errorf("%d hosts, seed %d: step %d's caption is %d columns: %q", n, seed, i+1, w, s.Caption)
				}
			}
		}
	}
}
