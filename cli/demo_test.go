package cli

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gpulab/gpulab/sim"
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
	for i, s := range steps {
		tabs = append(tabs, s.Tab)
		if n := utf8.RuneCountInString(s.Caption) + len(" 8/8   "); n > 80 {
			t.Errorf("step %d's caption is %d columns: %q", i+1, n, s.Caption)
		}
	}
	if got, want := strings.Join(tabs, " "), "Map Matrix Fleet Fleet Runbooks Runbooks Labs Results"; got != want {
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
