package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/orchestrator"
)

// Folded output cut at the limit on some hosts says so, naming them,
// after the groups (their last lines are gone, so the fold cannot).
func TestFoldedSaysOutputWasCut(t *testing.T) {
	res := []orchestrator.HostResult{
		{Host: "gpu01", Class: orchestrator.OK, Steps: []orchestrator.Result{{Stdout: []byte("000\n"), Truncated: true, StdoutBytes: 2000010, Class: orchestrator.OK}}},
		{Host: "gpu02", Class: orchestrator.OK, Steps: []orchestrator.Result{{Stdout: []byte("000\n"), Truncated: true, StdoutBytes: 2000010, Class: orchestrator.OK}}},
		{Host: "gpu03", Class: orchestrator.OK, Steps: []orchestrator.Result{{Stdout: []byte("000\n1\n"), Class: orchestrator.OK}}},
	}
	var b bytes.Buffer
	if err := printFolded(&b, &b, res); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(b.String(), "[output cut at the limit on gpu[01-02]: the rest was not kept (--json says how much came)]\n") {
		t.Errorf("folded output does not say it was cut:\n%s", b.String())
	}
}
