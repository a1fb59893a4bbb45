package runbooks

import (
	"os"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/step/parse"
)

// The driver writes "GPU has fallen off the bus" beside its Xid 79: one
// event, counted once. A GPU that fell off the bus with no Xid is counted
// on its own (real kernel logs of both kinds).
func TestXidRecentCountsFallenOffBusOnce(t *testing.T) {
	for file, want := range map[string]string{
		"rtx5090-xid79-fallen-off-bus-gsp-rc-no-timestamps.txt": "1 hardware Xid event(s)",
		"fallen-off-bus-no-xid-multiline-drv570.txt":            "1 GPU(s) fallen off the bus without an Xid",
	} {
		data, err := os.ReadFile("../testdata/fixtures/dmesg-xid/" + file)
		if err != nil {
			t.Fatal(err)
		}
		k, err := parse.ParseDmesgXid(string(data))
		if err != nil {
			t.Fatal(err)
		}
		v := JudgeOutput("dmesg-xid", k)["xid-recent"]
		if v.Status != Fail || !strings.HasPrefix(v.Summary, want) {
			t.Errorf("%s: %s %q, want FAIL %q", file, v.Status, v.Summary, want)
		}
	}
}
