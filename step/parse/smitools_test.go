package parse

import (
	"strings"
	"testing"
)

func TestSMIToolsFixtures(t *testing.T) {
	d, err := ParseDmon(fixture(t, "nvidia-smi-dmon", "a10-dmon-s-mutc-o-TD.txt"))
	if err != nil || len(d.Columns) != 16 || d.Units[12] != "MB/s" || d.Samples[1]["rxpci"] != "217" || d.Samples[0]["pclk"] != "1695" {
		t.Errorf("dmon: %v %+v", err, d)
	}
	s, err := ParseNVLinkStatus(fixture(t, "nvidia-smi-nvlink-status", "h100-18links-elided.txt"))
	if err != nil || len(s) != 1 || !s[0].Elided || s[0].Links[1].Link != 17 || *s[0].Links[1].GBps != 26.562 {
		t.Errorf("nvlink status: %v %+v", err, s)
	}
	e, err := ParseNVLinkErrors(fixture(t, "nvidia-smi-nvlink-e", "h100-18links-elided.txt"))
	if err != nil || len(e[0].Links) != 3 || e[0].Links[2].Counters["CRC Errors"] != 0 || len(e[0].Links[2].Counters) != 3 {
		t.Errorf("nvlink -e: %v %+v", err, e)
	}
	p, err := ParseTopoP2P(fixture(t, "nvidia-smi-topo-p2p", "l4-2gpu-p2p-r-cns.txt"))
	if err != nil || p.Status["GPU1"]["GPU0"] != "CNS" {
		t.Errorf("p2p: %v %+v", err, p)
	}
	if _, err := ParseNVLinkStatus("GPU 0: A (UUID: x)\n Link 0: <inactive>\n Link 1: fast\n"); err == nil || !strings.Contains(err.Error(), `line 3: link 1: "fast" is not a speed`) {
		t.Errorf("bad speed: %v", err)
	}
	if _, err := ParseDmon("# gpu sm\n# Idx %\n 0 1 2\n"); err == nil || !strings.Contains(err.Error(), "line 3: 3 values for 2 columns") {
		t.Errorf("dmon row: %v", err)
	}
}
