package dgx

import (
	"strings"
	"testing"

	"github.com/gpulab/gpulab/sim/spec"
	"github.com/gpulab/gpulab/step/parse"
)

// The simulated controller answers in the formats gpulab's parsers read
// from real recordings, text and JSON alike, and a drain set from one
// host is what every host sees; a drain needs a reason, as Slurm's does.
func TestSlurmControllerAnswersAsScontrol(t *testing.T) {
	s := NewSlurm([]string{"dgx01", "dgx02", "dgx03"})
	a, b := New("dgx01", 0, spec.Faults{}), New("dgx02", 1, spec.Faults{})
	a.Slurm, b.Slurm = s, s
	if _, stderr, code := run(t, a, "scontrol", "update", "NodeName=dgx03", "State=DRAIN"); code != 1 || !strings.Contains(stderr, "You must specify a reason") {
		t.Errorf("a drain without a reason: exit %d %q", code, stderr)
	}
	if _, stderr, code := run(t, a, "scontrol", "update", "NodeName=dgx0[2-3]", "State=DRAIN", "Reason=gpulab: XID 79 (record r1)"); code != 0 {
		t.Fatalf("scontrol update: exit %d %s", code, stderr)
	}
	text, _, _ := run(t, b, "scontrol", "show", "node", "dgx03")
	nodes, err := parse.ParseScontrolShowNode(text)
	if err != nil || len(nodes) != 1 || nodes[0].StateString() != "IDLE+DRAIN" || nodes[0].Reason != "gpulab: XID 79 (record r1)" || nodes[0].ReasonBy != "root" {
		t.Errorf("scontrol show node dgx03 from another host = %+v, %v\n%s", nodes, err, text)
	}
	js, _, _ := run(t, b, "scontrol", "show", "node", "--json")
	all, err := parse.ParseSlurmNodesJSON(js)
	if err != nil || len(all) != 3 || all[0].Drained() || !all[1].Drained() || all[2].Reason != "gpulab: XID 79 (record r1)" || all[2].ReasonAt.IsZero() {
		t.Errorf("scontrol show node --json = %+v, %v", all, err)
	}
	if out, _, _ := run(t, a, "sinfo"); !strings.Contains(out, "1   idle dgx01") || !strings.Contains(out, "2  drain dgx[02-03]") {
		t.Errorf("sinfo:\n%s", out)
	}
	if _, _, code := run(t, a, "scontrol", "update", "NodeName=dgx02", "State=UNDRAIN"); code != 0 {
		t.Fatal("undrain failed")
	}
	if out, _, _ := run(t, a, "sinfo", "-R"); strings.Contains(out, "dgx02") || !strings.Contains(out, "gpulab: XID 79 (reco root      ") {
		t.Errorf("sinfo -R after dgx02's undrain:\n%s", out)
	}
}
