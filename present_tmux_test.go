package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// volatile is what differs between two showings of the same step and is
// no part of it: how long a connection or a run took, and when a record
// was written (its path and its times), and how often the simulated
// quota has refused a Job so far.
var volatile = regexp.MustCompile(`\d+(\.\d+)?(ms|µs|s)\b|\d{8}-\d{6}|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ|\(×\d+\)|:\d{4,5}\b`)

// stepBody is a screen without its status bar (the last line), whose
// live parts (the fleet flagged once the probe ran, a run's progress) are
// no part of a step, and with volatile parts written as #.
func stepBody(screen string) string {
	screen = strings.TrimRight(screen, "\n")
	if i := strings.LastIndex(screen, "\n"); i >= 0 {
		screen = screen[:i]
	}
	return volatile.ReplaceAllString(screen, "#")
}

// TestPresentStrayKeysInTmux: through the real binary, the walkthrough
// forward, then backward and forward again with keys the presenter
// pressed by mistake between the steps; every step, entered from either
// side, shows the screen it showed going forward.
func TestPresentStrayKeysInTmux(t *testing.T) {
	bin := buildGpulab(t)
	s, _ := demoTmux(t, bin, 120, 40, "", "demo", "--present")
	screenWait(t, s, nil, "SIMULATED", "Presenter mode: 9 steps. n next step")
	// What marks each step's screen as whole: its caption, and the end of
	// the work it shows (the probe's, the runbook's, the lab's).
	done := []string{
		"CONTROL PLANE",
		"[Matrix]",
		"4/4  3 ok, 1 flagged",
		"MIG layout",
		"done 4/4  3 PASS, 1 FAIL",
		"topology of ",
		"record: ",
		"Reconciliation 4 of 4 nodes probed",
		"Conclusion: FAILED",
	}
	forward := make([]string, len(done))
	for i, d := range done {
		s.keys("n")
		forward[i] = stepBody(wholeScreenWait(t, s, fmt.Sprintf(" %d/9  ", i+1), d))
	}
	// waitStep waits for step i's forward screen.
	waitStep := func(i int, how string) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			screen, whole := s.captureWhole()
			got := stepBody(screen)
			if whole && got == forward[i] {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: waited 2 minutes for step %d's screen as it was going forward; screen:\n%s\nwant:\n%s", how, i+1, got, forward[i])
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// Stray keys: a row down, enter, e (the evidence, where there is
	// some), esc, and a row down again, so that the esc never reaches the
	// next key as its alt.
	stray := []string{"Down", "Enter", "e", "Escape", "Down"}
	for i := len(done) - 2; i >= 0; i-- {
		s.keys("p")
		waitStep(i, fmt.Sprintf("p into step %d", i+1))
		s.keys(stray...)
	}
	for i := 1; i < len(done); i++ {
		s.keys(stray...)
		s.keys("n")
		waitStep(i, fmt.Sprintf("n into step %d after stray keys", i+1))
	}
	s.keys("q")
	if screen := screenWaitAny(t, s, "EXIT=0", "a run is going: q or ctrl+c again quits"); !strings.Contains(screen, "EXIT=0") {
		s.keys("q")
		screenWait(t, s, nil, "EXIT=0")
	}
}
