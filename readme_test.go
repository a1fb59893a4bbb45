package main

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var updateReadme = flag.Bool("update-readme", false, "rewrite README.md's first-screen capture from the workbench (make readme-screen)")

// readmeScreen is the line that introduces the README's capture of the
// first screen; the fenced block under it is the capture.
const readmeScreen = "The first screen (`make run`, 80×24)"

// TestReadmeFirstScreenIsCurrent: the README's picture of the workbench is
// a real capture of plain gpulab's first screen at 80×24 (the simulated
// fleet, no colour), taken here through tmux, so that it cannot show a
// screen the workbench no longer draws. make readme-screen takes it
// again.
func TestReadmeFirstScreenIsCurrent(t *testing.T) {
	bin := buildGpulab(t)
	s, _ := demoTmux(t, bin, 80, 24, "NO_COLOR=1 ")
	// The fleet is up when the status bar says where it is.
	screen := screenWait(t, s, nil, "gpulab  SIMULATED  [Map]", "3 Fleet: 4 hosts")
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(screen, "\n"), "\n") {
		lines = append(lines, strings.TrimRight(l, " "))
	}
	capture := strings.Join(lines, "\n") + "\n"
	s.keys("q")
	screenWait(t, s, nil, "EXIT=0")

	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	at := strings.Index(readme, readmeScreen)
	open := strings.Index(readme[max(at, 0):], "```\n")
	if at < 0 || open < 0 {
		t.Fatalf("README.md has no %q followed by a fenced block", readmeScreen)
	}
	start := at + open + len("```\n")
	end := strings.Index(readme[start:], "```\n")
	if end < 0 {
		t.Fatal("README.md's first-screen block is not closed")
	}
	if got := readme[start : start+end]; got != capture {
		if *updateReadme {
			if err := os.WriteFile("README.md", []byte(readme[:start]+capture+readme[start+end:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("README.md's first screen is not what gpulab draws (make readme-screen takes it again):\n--- README\n%s--- gpulab\n%s", got, capture)
	}
}
