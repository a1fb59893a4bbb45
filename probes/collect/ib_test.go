package collect

import (
	"path/filepath"
	"testing"

	"github.com/gpulab/gpulab/probes/report"
)

// A real /sys/class/infiniband (an H100 host's, testdata/fixtures/
// sysfs-infiniband): eight NDR InfiniBand ports and a RoCE bond, every
// one up, mlx5_1's link_downed saturated at 255.
func TestReadIBRealSysfs(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "fixtures", "sysfs-infiniband", "h100-8x-ndr-plus-roce-bond")
	s := &report.Snapshot{}
	(&collector{snap: s, opts: Options{IBDir: dir}}).readIB()
	if s.IB == nil || len(s.IB.Ports) != 9 {
		t.Fatalf("%+v %+v", s.IB, s.Errors)
	}
	by := map[string]report.IBPort{}
	for _, p := range s.IB.Ports {
		by[p.Device] = p
		if p.State != "ACTIVE" || p.PhysState != "LinkUp" || p.Port != 1 {
			t.Errorf("%+v", p)
		}
	}
	if p := by["mlx5_0"]; p.LinkLayer != "InfiniBand" || p.RateGbps != 400 || p.Rate != "400 Gb/sec (4X NDR)" || p.Counters["port_rcv_errors"] != 14 || p.Counters["link_downed"] != 0 {
		t.Errorf("mlx5_0: %+v", p)
	}
	if p := by["mlx5_bond_0"]; p.LinkLayer != "Ethernet" || p.RateGbps != 200 {
		t.Errorf("bond: %+v", p)
	}
	if by["mlx5_1"].Counters["link_downed"] != 255 || len(by["mlx5_1"].Counters) != len(IBCounters) {
		t.Errorf("mlx5_1: %+v", by["mlx5_1"].Counters)
	}
	// Judged: the saturated counter is a flap finding, and nothing else.
	var got []string
	for _, f := range report.Findings(s) {
		got = append(got, f.Check+": "+f.Message)
	}
	if len(got) != 1 || got[0] != "ib-link-flaps: mlx5_1 port 1 went down at least 255 times (the 8-bit counter is saturated) since its counters were cleared" {
		t.Errorf("%q", got)
	}
	// No RDMA driver: said, never "no port down".
	s = &report.Snapshot{}
	(&collector{snap: s, opts: Options{IBDir: filepath.Join(dir, "nowhere")}}).readIB()
	if s.IB != nil || len(s.Errors) != 1 || s.Errors[0].Code != "NOT_PRESENT" {
		t.Errorf("%+v %+v", s.IB, s.Errors)
	}
}
