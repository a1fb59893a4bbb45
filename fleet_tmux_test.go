package main

import (
	"regexp"
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
	screenWait(t, s, nil, "$ seq 1 40 done", "8/8", "dgx[01-08] (8 hosts): ok", "more lines below · pgdn")
	s.keys("NPage")
	screenWait(t, s, nil, "above · ↓")
	s.keys("End")
	screen := screenWait(t, s, nil, "\n  40\n", "end of output") // tmux trims the line
	if strings.Contains(screen, "dgx[01-08] (8 hosts): ok") {
		t.Errorf("the end of the output still shows its head:\n%s", screen)
	}
	s.keys("Home")
	screenWait(t, s, nil, "dgx[01-08] (8 hosts): ok", "more lines below · pgdn")
	s.keys("q")
	screenWait(t, s, nil, "EXIT=0")
}

// TestFleetEmojiInTmux: host output with an emoji that tmux counts wider
// than a grapheme cluster (a thumb with a skin tone, a ZWJ family) must not
// shift the frame: the tab bar stays on the first line and the status bar
// is drawn once, on the last.
func TestFleetEmojiInTmux(t *testing.T) {
	bin := buildGpulab(t)
	s, _ := demoTmux(t, bin, 80, 24, "NO_COLOR=1 ")
	screenWait(t, s, nil, "gpulab  SIMULATED  [Map]")
	s.keys("3")
	screenWait(t, s, nil, "4 hosts: dgx[01-04]")
	twice := regexp.MustCompile(`(?s)q quit.*q quit`) // a second status bar: the frame slid
	for _, c := range []struct{ command, shown string }{
		{"echo 'ok 👍🏽 done'", "ok 👍 done"},
		{"echo 'a 👨‍👩‍👧 family'", "a 👨 family"},
	} {
		s.keys(":", c.command, "Enter")
		screen := screenWait(t, s, twice, "done ", "4/4", "dgx[01-04] (4 hosts): ok", "  "+c.shown)
		lines := strings.Split(strings.TrimRight(screen, "\n"), "\n")
		if len(lines) != 24 || !strings.HasPrefix(lines[0], "gpulab  SIMULATED ") || !strings.Contains(lines[0], " Matrix [Fleet] Runbooks ") {
			t.Errorf("%s: the tab bar is not on the first line of 24:\n%s", c.command, screen)
		}
		if n := strings.Count(screen, "? help  q quit"); n != 1 || !strings.HasSuffix(lines[len(lines)-1], "? help  q quit") {
			t.Errorf("%s: the status bar is drawn %d times, or not last:\n%s", c.command, n, screen)
		}
	}
	s.keys("q")
	screenWait(t, s, nil, "EXIT=0")
}
