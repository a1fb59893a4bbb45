package main

import (
	"strings"
	"testing"
)

// TestFleetScrollsInTmux runs `seq 1 40` on 8 simulated hosts through the
// real binary at 80×24: the folded pane shows the first lines and says how
// many are below; page down moves on, end reaches the last line (40) and
// says it is the end, home goes back to the group's head. Nothing is cut
// silently.
func TestFleetScrollsInTmux(t *testing.T) {
	bin := buildGpulab(t)
	s, _ := demoTmux(t, bin, 80, 24, "NO_COLOR=1 ", "demo", "--hosts", "8")
	screenWait(t, s, nil, "gpulab  SIMULATED ", "[Map]")
	s.keys("3")
	screenWait(t, s, nil, "8 hosts: dgx[01-08]")
	s.keys(":", "seq 1 40", "Enter")
	screenWait(t, s, nil, "$ seq 1 40 done", "8/8", "dgx[01-08] (8): ok", "more lines below · pgdn")
	s.keys("NPage")
	screenWait(t, s, nil, "above · ↓")
	s.keys("End")
	screen := screenWait(t, s, nil, "\n  40\n", "end of output") // tmux trims the line
	if strings.Contains(screen, "dgx[01-08] (8): ok") {
		t.Errorf("the end of the output still shows its head:\n%s", screen)
	}
	s.keys("Home")
	screenWait(t, s, nil, "dgx[01-08] (8): ok", "more lines below · pgdn")
	s.keys("q")
	screenWait(t, s, nil, "EXIT=0")
}
