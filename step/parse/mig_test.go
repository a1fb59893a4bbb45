package parse

import (
	"fmt"
	"strings"
	"testing"
)

func TestMIGFixtures(t *testing.T) {
	p, err := ParseMIGProfiles(fixture(t, "nvidia-smi-mig-lgip", "h100-80gb-hbm3-all-free-7-profiles.txt"))
	if err != nil || len(p.Rows) != 7 || p.Rows[1].Name != "1g.10gb+me" || p.Rows[1].ID != 20 || p.Rows[6].Total != 1 || *p.Rows[6].SM != 132 {
		t.Errorf("lgip h100: %v %+v", err, p.Rows)
	}
	pl, err := ParseMIGPlacements(fixture(t, "nvidia-smi-mig-lgipp", "a30-24gb.txt"))
	if err != nil || pl[2].ProfileID != 5 || fmt.Sprint(pl[2].Starts) != "[0 2]" || pl[3].Size != 4 {
		t.Errorf("lgipp a30: %v %+v", err, pl)
	}
	gi, err := ParseMIGInstances(fixture(t, "nvidia-smi-mig-lgi", "a100-40gb-2x-3g.20gb.txt"), false)
	if err != nil || len(gi.Rows) != 2 || gi.Rows[1].PlacementStart != 0 || gi.Rows[0].PlacementSize != 4 {
		t.Errorf("lgi: %v %+v", err, gi)
	}
	none, err := ParseMIGInstances(fixture(t, "nvidia-smi-mig-lgi", "a30-no-gpu-instances-found.txt"), false)
	if err != nil || len(none.Rows) != 0 || !strings.HasPrefix(none.Message, "No GPU instances found") {
		t.Errorf("no instances: %v %+v", err, none)
	}
	ci, err := ParseMIGInstances(fixture(t, "nvidia-smi-mig-lci", "a100-40gb-3ci-1g-2g-3g.txt"), true)
	if err != nil || len(ci.Rows) != 3 || *ci.Rows[1].GPUInstanceID != 5 || ci.Rows[2].Name != "3g.20gb" {
		t.Errorf("lci: %v %+v", err, ci)
	}
	cip, err := ParseMIGCIProfiles(fixture(t, "nvidia-smi-mig-lcip", "a30-drv535-gi2-1c.2g.12gb-and-2g.12gb.txt"))
	if err != nil || len(cip.Rows) != 2 || cip.Rows[1].Name != "2g.12gb" || !cip.Rows[1].Default {
		t.Errorf("lcip: %v %+v", err, cip)
	}
	// The prompt lines a poster left in are reported, the table still read.
	cip, err = ParseMIGCIProfiles(fixture(t, "nvidia-smi-mig-lcip", "a100-pcie-40gb-drv460-7gi-1g5gb.txt"))
	if len(cip.Rows) != 7 || err == nil || !strings.Contains(err.Error(), "line 3: line not understood") {
		t.Errorf("lcip with prompts: %v %d rows", err, len(cip.Rows))
	}
}
