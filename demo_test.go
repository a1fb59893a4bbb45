package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpulab/gpulab/internal/testreq"
	"github.com/gpulab/gpulab/sim"
	"github.com/gpulab/gpulab/sim/dgx"
)

// The demo's fleet as gpulab demo starts it (4 hosts, seed 0): which host
// is sick and which NVLink its plan took down. The plan is the simulator's,
// so the tests follow it rather than a name written here.
func demoPlan(t *testing.T) (sick string, sickIndex int, pair string) {
	t.Helper()
	i, faults := dgx.Plan(0, 4)
	if i < 0 || len(faults[i].NVLinkDown) == 0 {
		t.Fatalf("the simulator's plan for seed 0 has no sick host with an NVLink down: %d %+v", i, faults)
	}
	p := faults[i].NVLinkDown[0]
	return sim.HostName(i, 4), i, fmt.Sprintf("GPU%d–GPU%d", p[0], p[1])
}

// demoTmux starts gpulab with args in tmux at w×h with no inventory
// anywhere: HOME and XDG_CONFIG_HOME are empty directories, and
// GPULAB_INVENTORY and GPULAB_RESULTS are unset; env adds variables
// ("NO_COLOR=1 "). TMPDIR is a directory of its own, returned, so that the
// test can see the fleet's directory come and go.
func demoTmux(t *testing.T, bin string, w, h int, env string, args ...string) (*tmuxSession, string) {
	t.Helper()
	tmux := testreq.Tool(t, "tmux", "the demo's end-to-end test drives the workbench in it (apt-get install tmux)")
	home, tmp := t.TempDir(), t.TempDir()
	cmd := fmt.Sprintf("unset GPULAB_INVENTORY GPULAB_RESULTS XDG_DATA_HOME NO_COLOR; %sHOME=%s XDG_CONFIG_HOME=%s TMPDIR=%s SSH_AUTH_SOCK= %s %s",
		env, home, filepath.Join(home, ".config"), tmp, bin, strings.Join(args, " "))
	return newTmux(t, tmux, w, h, cmd), tmp
}

// buildGpulab is the binary under test (gpulabBinary), which must embed a
// simulator probe (make build builds one): the demo's hosts run it.
func buildGpulab(t *testing.T) string {
	t.Helper()
	if ms, _ := filepath.Glob("probes/bundle/bin/nvmlsim-linux-*.gz"); len(ms) == 0 {
		testreq.Missing(t, "no embedded simulator probe (make build builds it): the demo's Fleet probe needs it")
	}
	return gpulabBinary(t)
}

// screenWait polls the screen until it holds every one of want, failing on
// any screen that matches forbid (nil: none). A busy machine only makes it
// slower: the deadline is a safety net against a hang, not a bound.
func screenWait(t *testing.T, s *tmuxSession, forbid *regexp.Regexp, want ...string) string {
	t.Helper()
	return pollScreen(t, func() (string, bool) { return s.capture(), true }, forbid, want...)
}

// wholeScreenWait is screenWait for a screen the workbench has finished
// drawing (captureWhole): a step's screen as it was going forward, which
// the presenter test compares with the same step entered again.
func wholeScreenWait(t *testing.T, s *tmuxSession, want ...string) string {
	t.Helper()
	return pollScreen(t, s.captureWhole, nil, want...)
}

// pollScreen polls capture until it gives a whole screen holding every
// one of want, failing on any screen that matches forbid (nil: none).
func pollScreen(t *testing.T, capture func() (string, bool), forbid *regexp.Regexp, want ...string) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		screen, whole := capture()
		if forbid != nil {
			if loc := forbid.FindStringIndex(screen); loc != nil {
				t.Fatalf("%q is on the screen:\n%s", screen[loc[0]:loc[1]], screen)
			}
		}
		missing := ""
		for _, w := range want {
			if !strings.Contains(screen, w) {
				missing = w
				break
			}
		}
		if missing == "" && whole {
			return screen
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 2 minutes for %q (a whole screen: %v); screen:\n%s", missing, whole, screen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// screenWaitAny polls the screen until it holds one of want.
func screenWaitAny(t *testing.T, s *tmuxSession, want ...string) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		screen := s.capture()
		for _, w := range want {
			if strings.Contains(screen, w) {
				return screen
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 2 minutes for one of %q; screen:\n%s", want, screen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fleetDirs lists the demo's directories in tmp.
func fleetDirs(t *testing.T, tmp string) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(tmp, "gpulab-demo-*"))
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// TestDemoInTmux is the default experience, through the real binary: with
// no inventory, gpulab demo opens on a SIMULATED fleet; the Fleet's probe
// flags the sick host; the topology and health runbooks FAIL it, with the
// evidence one key away; topology-sanity is scored live (PASS and FAIL),
// then step by step; Results lists the records, compares one with a
// baseline and opens one; q quits and the fleet's directory is gone.
func TestDemoInTmux(t *testing.T) {
	bin := buildGpulab(t)
	sick, _, pair := demoPlan(t)
	s, tmp := demoTmux(t, bin, 160, 48, "", "demo")
	screenWait(t, s, nil, "gpulab  SIMULATED ", "[Map]", "CONTROL PLANE")
	if dirs := fleetDirs(t, tmp); len(dirs) != 1 {
		t.Fatalf("the running demo has %d directories in TMPDIR, want 1: %v", len(dirs), dirs)
	}

	s.keys("3")
	screen := screenWait(t, s, nil, "4 hosts: dgx[01-04]", "127.0.0.1:")
	s.keys("p")
	screen = screenWait(t, s, nil, "$ gpulab probe done", "4/4  3 ok, 1 flagged ("+sick+")", "⚑ "+sick+": NVLink "+pair+" down (SYS)")
	s.keys("1")
	screenWait(t, s, nil, "[Map]", "3 Fleet: 4 hosts, 1 flagged")
	s.keys("3")
	screenWait(t, s, nil, "$ gpulab probe done")
	if !regexp.MustCompile(`(?m)^. ` + sick + ` SIM +127\.0\.0\.1:\d+ +ok FLAGGED `).MatchString(screen) {
		t.Errorf("the sick host's row is not flagged:\n%s", screen)
	}
	if n := strings.Count(screen, "ok FLAGGED"); n != 1 {
		t.Errorf("%d hosts flagged, want 1:\n%s", n, screen)
	}

	s.keys("4", "End")
	screenWait(t, s, nil, "▶ topology ")
	s.keys("Enter")
	screenWait(t, s, nil, "done 4/4", "FAIL    "+sick+" SIM: "+pair+" SYS (NVLink down)", "PASS    ")
	s.keys("e")
	screenWait(t, s, nil, "── evidence", "topology of "+sick)
	s.keys("Escape")
	screenWait(t, s, nil, "▶ topology ")
	s.keys("Home", "Down")
	screenWait(t, s, nil, "▶ health ")
	s.keys("Enter")
	screenWait(t, s, nil, "health: GPU health", "done 4/4", "FAIL    "+sick+" SIM: uncorrectable ECC errors")
	s.keys("Escape")
	screenWait(t, s, nil, "▶ health ")

	s.keys("5", "End")
	screenWait(t, s, nil, "▶ topology-sanity ")
	s.keys("Enter")
	screenWait(t, s, nil, "FAILED", "✗ FAIL    nvlink-mesh (critical) "+sick+" SIM: ", "✓ PASS    nvlink-mesh ", "record: ")
	s.keys("Escape")
	screenWait(t, s, nil, "▶ topology-sanity ")
	s.keys("t")
	screenWait(t, s, nil, "Next: step 1/2", "waiting for you at step 1/2 (", ") · step by step")
	s.keys("Enter")
	screenWait(t, s, nil, "Next: step 2/2", "✗ FAIL    nvlink-mesh (critical) "+sick+" SIM: ")
	s.keys("Enter")
	screenWait(t, s, nil, "FAILED: nvlink-mesh (critical) FAIL on "+sick+" · step by step", "record: ")
	s.keys("Escape")
	screenWait(t, s, nil, "▶ topology-sanity ")

	s.keys("6")
	screen = screenWait(t, s, nil, "Results  lab records in "+tmp, "Removed when the demo quits; GPULAB_RESULTS=DIR gpulab demo keeps them in DIR.")
	if n := strings.Count(screen, "topology-sanity      dgx[01-04]       failed"); n != 2 {
		t.Fatalf("Results lists %d topology-sanity records, want 2:\n%s", n, screen)
	}
	s.keys("End", "b")
	screenWait(t, s, nil, "failed     base")
	s.keys("Home", "c")
	screenWait(t, s, nil, "Comparison (the first row is the baseline", "topology-sanity on "+sick+": failed")
	s.keys("Escape")
	screenWait(t, s, nil, "failed     base")
	s.keys("Enter")
	screenWait(t, s, nil, "Lab: topology-sanity", "Conclusion: FAILED") // the record, rendered
	s.keys("Escape")
	screenWait(t, s, nil, "failed     base")

	s.keys("q")
	screenWait(t, s, nil, "EXIT=0")
	if dirs := fleetDirs(t, tmp); len(dirs) != 0 {
		t.Errorf("the fleet's directory is still there after quitting: %v", dirs)
	}
}

// TestDemoPresentMaskedInTmux walks gpulab demo --present --mask through
// every step with n: each step's caption is shown, and no screen at any
// moment shows a host's name or address.
func TestDemoPresentMaskedInTmux(t *testing.T) {
	bin := buildGpulab(t)
	sick, i, pair := demoPlan(t)
	masked := fmt.Sprintf("host-%d", i+1)
	unmasked := regexp.MustCompile(`dgx0|127\.0\.0\.1|` + regexp.QuoteMeta(sick))
	steps := []struct{ caption, shows string }{
		{"1/9  Three planes: who gets GPUs, how a GPU is shared, what runs on it", "CONTROL PLANE"},
		{"2/9  Each project on four axes: unit, isolation, fragmentation, governance", "[Matrix]"},
		{"3/9  " + masked + " is flagged: NVLink " + pair + " is down (SYS)", "1 flagged (" + masked + ")"},
		{"4/9  " + masked + "'s GPUs: " + pair + " at SYS; GPU", "SIMULATED   driver 535"},
		{"5/9  topology: FAIL on " + masked + " (" + pair + " at SYS), PASS on the other 3", "FAIL    " + masked + " SIM: " + pair + " SYS"},
		{"6/9  The evidence: nvidia-smi topo -m on " + masked + ", and what to check next", "topology of " + masked},
		{"7/9  topology-sanity, live: nvlink-mesh FAIL on " + masked + ", PASS on the other 3", "✗ FAIL    nvlink-mesh (critical) " + masked + " SIM"},
		{"8/9  The cluster: why the 8-GPU job waits", "llm-finetune-8gpu"},
		{"9/9  The end: the lab record; b marks it the baseline", "Conclusion: FAILED"}, // the record, rendered
	}
	for _, sz := range []struct{ w, h int }{{80, 24}, {160, 48}} {
		t.Run(fmt.Sprintf("%dx%d", sz.w, sz.h), func(t *testing.T) {
			s, tmp := demoTmux(t, bin, sz.w, sz.h, "", "demo", "--present", "--mask")
			screenWait(t, s, unmasked, "SIMULATED", "Presenter mode: 9 steps. n next step")
			for _, st := range steps {
				s.keys("n")
				screenWait(t, s, unmasked, st.caption, st.shows)
			}
			// The end says so; stepping back shows each step as it was
			// shown going forward: the evidence closed at 5, the host's
			// GPUs closed at 3.
			s.keys("n")
			screenWait(t, s, unmasked, "9/9  That was the last step: p goes back, q quits")
			s.keys("p", "p", "p")
			screenWait(t, s, unmasked, steps[5].caption, steps[5].shows)
			s.keys("p")
			if screen := screenWait(t, s, unmasked, steps[4].caption, steps[4].shows); strings.Contains(screen, "topology of "+masked) {
				t.Errorf("back at step 5, step 6's evidence is still open:\n%s", screen)
			}
			s.keys("p", "p")
			if screen := screenWait(t, s, unmasked, steps[2].caption, "  HOST "); strings.Contains(screen, "SIMULATED   driver 535") {
				t.Errorf("back at step 3, step 4's GPUs are still open:\n%s", screen)
			}
			// The command prompt is off, and says so (esc first, and wait
			// for it to land: an esc and a key that arrive together read as
			// alt+key).
			s.keys("3", "Escape")
			screenWait(t, s, unmasked, "  HOST           ") // ADDRESS gives way at 80 columns
			s.keys(":")
			screenWait(t, s, unmasked, "presenter mode: running commands is off")
			s.keys("q")
			// A run of the walkthrough may still be finishing on a busy
			// machine (its cleanup after the record): q then asks, and a
			// second q stops it and waits for its cleanup.
			if screen := screenWaitAny(t, s, "EXIT=0", "a run is going: q or ctrl+c again quits"); !strings.Contains(screen, "EXIT=0") {
				t.Logf("a run was still going at the end of the walkthrough; q again")
				s.keys("q")
				screenWait(t, s, nil, "EXIT=0")
			}
			if dirs := fleetDirs(t, tmp); len(dirs) != 0 {
				t.Errorf("the fleet's directory is still there after quitting: %v", dirs)
			}
		})
	}
}

// TestDemoSignalsInTmux: SIGTERM, and SIGHUP when the terminal goes away,
// end the demo with its fleet closed and its directory removed; SIGTERM's
// exit status is 130, never a clean quit's 0.
func TestDemoSignalsInTmux(t *testing.T) {
	bin := buildGpulab(t)
	pgrep := testreq.Tool(t, "pgrep", "the test finds the demo's process to signal it (apt-get install procps)")
	for _, sig := range []string{"TERM", "HUP"} {
		t.Run(sig, func(t *testing.T) {
			s, tmp := demoTmux(t, bin, 120, 30, "", "demo")
			screenWait(t, s, nil, "gpulab  SIMULATED ", "[Map]")
			if dirs := fleetDirs(t, tmp); len(dirs) != 1 {
				t.Fatalf("the running demo has %d directories in TMPDIR, want 1: %v", len(dirs), dirs)
			}
			switch sig {
			case "TERM":
				shell := strings.TrimSpace(s.run("list-panes", "-t", "smoke", "-F", "#{pane_pid}"))
				out, err := exec.Command(pgrep, "-P", shell).Output()
				pids := strings.Fields(string(out))
				if err != nil || len(pids) != 1 {
					t.Fatalf("pgrep -P %s: %q, %v; want the demo's one pid", shell, out, err)
				}
				if err := exec.Command("kill", "-TERM", pids[0]).Run(); err != nil {
					t.Fatal(err)
				}
				// Ended by a signal, not quit: 130, as every command says.
				screenWait(t, s, nil, "EXIT=130")
			case "HUP": // the terminal goes away: tmux hangs up on the pane
				s.run("kill-session", "-t", "smoke")
			}
			for deadline := time.Now().Add(2 * time.Minute); len(fleetDirs(t, tmp)) > 0; time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("SIG%s: the fleet's directory is still there 2 minutes later: %v", sig, fleetDirs(t, tmp))
				}
			}
		})
	}
}

// TestDefaultIsTheDemoInTmux: plain gpulab with no inventory anywhere
// opens on the simulated fleet, and says so in words without colour.
func TestDefaultIsTheDemoInTmux(t *testing.T) {
	bin := buildGpulab(t)
	s, tmp := demoTmux(t, bin, 80, 24, "NO_COLOR=1 ")
	// The first screen says where the fleet is.
	screenWait(t, s, nil, "gpulab  SIMULATED  [Map]", "3 Fleet: 4 hosts  ")
	if esc := s.run("capture-pane", "-e", "-p", "-t", "smoke"); strings.Contains(esc, "\x1b[38") || strings.Contains(esc, "\x1b[48") || strings.Contains(esc, "\x1b[7m") {
		t.Errorf("NO_COLOR is set but the screen has colour escapes:\n%q", esc)
	}
	s.keys("3")
	screenWait(t, s, nil, "4 hosts: dgx[01-04]", "dgx01 SIM      -") // at 80 columns: no ADDRESS
	if dirs := fleetDirs(t, tmp); len(dirs) != 1 {
		t.Errorf("the running workbench has %d directories in TMPDIR, want its fleet's: %v", len(dirs), dirs)
	}
	s.keys("q")
	screenWait(t, s, nil, "EXIT=0")
	if dirs := fleetDirs(t, tmp); len(dirs) != 0 {
		t.Errorf("the fleet's directory is still there after quitting: %v", dirs)
	}
}

// At 80×24, what says whether a GPU is sick is on screen without
// scrolling sideways: the Matrix shows every axis as marks beside whole
// project names (it cut nearly every cell to "job/mo…"), and the sick
// host's GPU table shows its uncorrectable ECC errors and findings (its
// ECC column needed >).
func TestDemoAt80ColumnsInTmux(t *testing.T) {
	bin := buildGpulab(t)
	sick, i, _ := demoPlan(t)
	s, _ := demoTmux(t, bin, 80, 24, "NO_COLOR=1 ", "demo")
	screenWait(t, s, nil, "[Map]")
	s.keys("2")
	screen := screenWait(t, s, nil, "[Matrix]", "NVIDIA Container Toolkit / CDI", "MIG (Multi-Instance GPU)")
	for _, l := range strings.Split(screen, "\n")[3:14] { // the rows: no cell is cut
		if strings.Contains(l, "…") {
			t.Errorf("a Matrix row at 80 columns cuts a cell: %q\n%s", l, screen)
		}
	}

	s.keys("3", "p")
	screenWait(t, s, nil, "$ gpulab probe done", "1 flagged ("+sick+")")
	for range i {
		s.keys("Down")
	}
	s.keys("Enter")
	screen = screenWait(t, s, nil, sick+"  SIMULATED", "GPUs\nGPU ")
	sickGPU := regexp.MustCompile(`(?m)^\d +.*on [1-9]\d* UE \d+ CE .*$`).FindString(screen)
	if sickGPU == "" || strings.HasSuffix(strings.TrimSpace(sickGPU), " -") {
		t.Errorf("the sick host's GPU table at 80 columns does not show its uncorrectable ECC errors and their finding unscrolled (%q):\n%s", sickGPU, screen)
	}
	// The NVLink down is the sick host's first finding: its column stays.
	if !regexp.MustCompile(`(?m)^\d +.* 10/12 up `).MatchString(screen) {
		t.Errorf("the GPU table at 80 columns does not show the NVLinks down (10/12 up):\n%s", screen)
	}
	if !strings.Contains(screen, "not shown: ") {
		t.Errorf("the GPU table at 80 columns does not name the columns it leaves out:\n%s", screen)
	}
	s.keys("Escape", "q")
	screenWait(t, s, nil, "EXIT=0")
}
