package parse

import (
	"strings"
	"testing"
)

func TestDmesgXidFixtures(t *testing.T) {
	k, err := ParseDmesgXid(fixture(t, "dmesg-xid", "talos-8x-a100-sxid24007-xid62-xid45.txt"))
	if err != nil || len(k.XIDs) != 5 || !k.XIDs[0].SXid || k.XIDs[0].XID != 24007 || k.XIDs[0].Known {
		t.Fatalf("talos: %v %+v", err, k.XIDs)
	}
	x := k.XIDs[3]
	if x.XID != 45 || *x.PID != 22884 || x.Process != "VLLM::Worker" || x.Time != "2026-04-22T21:25:20.560106789Z" || x.Message != "channel 0x0000000a" || x.Line != 6 {
		t.Errorf("xid 45 = %+v", x)
	}
	if k.GPUs["0000:48:00"] != "GPU-5fc0bcec-c2e1-38dc-8994-2a9f9f3b709e" {
		t.Errorf("gpus = %v", k.GPUs)
	}
	k, _ = ParseDmesgXid(fixture(t, "dmesg-xid", "fallen-off-bus-no-xid-multiline-drv570.txt"))
	if len(k.XIDs) != 0 || len(k.FallenOffBus) != 1 || k.FallenOffBus[0] != "0000:b3:00" {
		t.Errorf("multi-line fallen off the bus without an Xid: %+v", k)
	}
	k, _ = ParseDmesgXid(fixture(t, "dmesg-xid", "gpud-xid13-sm-exceptions-then-xid43-iso-decode.txt"))
	last := k.XIDs[len(k.XIDs)-1]
	if last.XID != 43 || !strings.HasPrefix(last.Time, "2025-01-21T") {
		t.Errorf("iso decode: last = %+v", last)
	}
	k, _ = ParseDmesgXid(fixture(t, "dmesg-xid", "dmesg-ctime-xid13-xid109-ctx-switch-timeout.txt"))
	if x := k.XIDs[3]; x.XID != 109 || x.Known || x.Meaning != "" || *x.PID != 1797828 {
		t.Errorf("xid 109 must be reported as unknown, not guessed: %+v", x)
	}
	k, _ = ParseDmesgXid(fixture(t, "dmesg-xid", "rtx5090-xid79-fallen-off-bus-gsp-rc-no-timestamps.txt"))
	if len(k.FallenOffBus) != 1 || k.XIDs[0].XID != 79 || !k.XIDs[0].Hardware {
		t.Errorf("rtx5090: %+v", k)
	}
}

func FuzzDmesgXid(f *testing.F) {
	f.Add("[ 1.0] NVRM: Xid (PCI:0000:01:00): 79, pid=1, name=x, msg\n               NVRM: more\n")
	f.Add("host: kern: warning: [2026-04-22T21:25:20Z]: NVRM: GPU at PCI:0000:48:00: GPU-1\n")
	f.Fuzz(func(t *testing.T, s string) {
		if k, _ := ParseDmesgXid(s); k == nil {
			t.Fatal("nil")
		}
	})
}
