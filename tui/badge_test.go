package tui

import (
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/gpulab/gpulab/labs"
	"github.com/gpulab/gpulab/render"
	"github.com/gpulab/gpulab/runbooks"
	"github.com/gpulab/gpulab/step"
)

// The workbench draws a verdict and a score in the words the command line
// prints (render's Line), styled; on a simulated fleet the SIM badge
// follows the hosts and nothing else changes.
func TestDrawLineIsTheCommandLinesLine(t *testing.T) {
	st := DefaultStyles()
	for _, l := range []render.Line{
		render.Verdict(runbooks.FoldedGroup{Hosts: "gpu[01-03]", Status: step.Unknown, Summary: "no evidence"}),
		render.Score(labs.ScoreGroup{Score: labs.Score{ID: "mesh", Impact: "critical", Status: step.Fail, Summary: "6 pairs"}, Hosts: "gpu02"}),
	} {
		if got := ansi.Strip(drawLine(st, l, false)); got != l.String() {
			t.Errorf("drawn %q, the command line prints %q", got, l.String())
		}
	}
	l := render.Verdict(runbooks.FoldedGroup{Hosts: "gpu02", Status: step.Fail, Summary: "SYS"})
	if got, want := ansi.Strip(drawLine(st, l, true)), "FAIL    gpu02 SIM: SYS"; got != want {
		t.Errorf("simulated: drawn %q, want %q", got, want)
	}
}
