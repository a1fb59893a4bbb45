package report

import (
	"strings"
	"testing"
)

// The RDMA ports' findings, and which checks are made: a port down, a
// port below the expected rate, flaps since the counters were cleared and
// in the window, errors rising in the window, fewer active ports than
// expected; with no sysfs read, nothing is called clean.
func TestIBFindings(t *testing.T) {
	up := func(dev string, rate float64, counters, delta map[string]uint64) IBPort {
		return IBPort{Device: dev, Port: 1, LinkLayer: "InfiniBand", State: "ACTIVE", PhysState: "LinkUp", RateGbps: rate,
			Rate: "x", Counters: counters, WindowDelta: delta}
	}
	zero := map[string]uint64{"link_downed": 0, "symbol_error": 0}
	s := &Snapshot{NVML: NVMLState{Available: true}, GPUs: []GPU{{Index: 0}}, WindowSeconds: 2,
		Expect: &Expect{IBPorts: 4, IBRateGbps: 200},
		IB: &IBState{Ports: []IBPort{
			up("mlx5_0", 200, zero, map[string]uint64{"link_downed": 0, "symbol_error": 0}),
			up("mlx5_1", 100, map[string]uint64{"link_downed": 40}, map[string]uint64{"link_downed": 2}),
			up("mlx5_2", 200, zero, map[string]uint64{"symbol_error": 7, "port_rcv_errors": 3}),
			{Device: "mlx5_3", Port: 1, LinkLayer: "InfiniBand", State: "DOWN", PhysState: "Polling", Counters: zero},
		}}}
	var got []string
	for _, f := range Findings(s) {
		got = append(got, f.Check+" "+map[bool]string{true: "fatal", false: "warn"}[f.Fatal]+" "+f.Message)
	}
	want := []string{
		"ib-port-rate warn mlx5_1 port 1 at 100 Gb/s, below 200 Gb/s (the inventory's expect.ib_rate_gbps)",
		"ib-link-flaps warn mlx5_1 port 1 is flapping: down 2 time(s) in the sampling window, 40 time(s) since its counters were cleared",
		"ib-port-errors warn mlx5_2 port 1: errors rose in the 2s window: symbol_error +7, port_rcv_errors +3",
		"ib-port-down fatal mlx5_3 port 1 (InfiniBand) is DOWN, Polling",
		"ib-port-count fatal 3 active InfiniBand port(s) where the inventory expects 4",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, c := range []string{"ib-port-down", "ib-port-count", "ib-port-rate", "ib-link-flaps", "ib-port-errors"} {
		if !CheckMade(s, c) {
			t.Errorf("%s not made: %s", c, WhyNotMade(s, c))
		}
	}
	// One reading: no rise to judge; no sysfs: nothing made; no
	// expectation: the count does not apply.
	s.WindowSeconds = 0
	if CheckMade(s, "ib-port-errors") {
		t.Error("ib-port-errors made without a window")
	}
	// Counters not read at both ends (or cleared in the window), a rate
	// not read, ports past the probe's bound: those checks unmade.
	s.WindowSeconds = 2
	s.IB.Ports[0].WindowDelta, s.IB.Ports[2].RateGbps = nil, 0
	for _, c := range []string{"ib-port-errors", "ib-port-rate"} {
		if CheckMade(s, c) {
			t.Errorf("%s made with a port unread", c)
		}
	}
	s.IB.Truncated = true
	if CheckMade(s, "ib-port-down") || !strings.Contains(WhyNotMade(s, "ib-port-down"), "not every RDMA port was read") {
		t.Errorf("truncated: %q", WhyNotMade(s, "ib-port-down"))
	}
	s.IB, s.Errors = nil, []FieldError{{Field: "ib", Code: "NOT_PRESENT", Message: "open /sys/class/infiniband: no such file or directory"}}
	if CheckMade(s, "ib-port-down") || !strings.Contains(WhyNotMade(s, "ib-port-down"), "NOT_PRESENT") {
		t.Errorf("no sysfs: %q", WhyNotMade(s, "ib-port-down"))
	}
	if f := Findings(s); len(f) != 1 || f[0].Check != "ib-port-count" || !f[0].Fatal {
		t.Errorf("expected ports, no RDMA device: %+v", f)
	}
	s.Expect = nil
	if NotApplicable(s, "ib-port-count") == "" || NotApplicable(s, "gpu-count") == "" || NotApplicable(s, "ib-port-down") != "" {
		t.Error("NotApplicable")
	}
}

// gpu-count: fewer GPUs than the inventory expects.
func TestGPUCount(t *testing.T) {
	s := &Snapshot{NVML: NVMLState{Available: true}, GPUs: []GPU{{Index: 0}, {Index: 1}}, Expect: &Expect{GPUs: 3}}
	if f := gpuCountFinding(s); len(f) != 1 || f[0].Message != "NVML counts 2 GPU(s) where the inventory expects 3" || !f[0].Fatal {
		t.Errorf("%+v", f)
	}
	s.Expect.GPUs = 2
	if f := gpuCountFinding(s); len(f) != 0 || !CheckMade(s, "gpu-count") {
		t.Errorf("%+v", f)
	}
}

// --expect: the inventory's expectation as the probe takes it, and back.
func TestParseExpect(t *testing.T) {
	e, err := ParseExpect("gpus=8,ib_ports=8,ib_rate_gbps=200")
	if err != nil || *e != (Expect{GPUs: 8, IBPorts: 8, IBRateGbps: 200}) || e.Arg() != "gpus=8,ib_ports=8,ib_rate_gbps=200" {
		t.Fatalf("%+v %v", e, err)
	}
	if e, err := ParseExpect(""); e != nil || err != nil {
		t.Errorf("empty: %+v %v", e, err)
	}
	for in, want := range map[string]string{"gpus=8,gpus=4": "gpus given twice", "nics=2": "the keys are gpus", "gpus=-1": "want KEY=N", "gpus": "want KEY=N"} {
		if _, err := ParseExpect(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

// A RoCE fabric (no InfiniBand port) is judged as one: its ports are
// counted against expect.ib_ports and judged by expect.ib_rate_gbps; on
// a host with InfiniBand, its Ethernet ports are another network. A host
// whose sysfs lists no port has no port to judge (SKIPPED).
func TestRoCEFabric(t *testing.T) {
	port := func(dev, layer string, rate float64) IBPort {
		return IBPort{Device: dev, Port: 1, LinkLayer: layer, State: "ACTIVE", PhysState: "LinkUp", RateGbps: rate, Rate: "x",
			Counters: map[string]uint64{"link_downed": 0}, WindowDelta: map[string]uint64{}}
	}
	checks := func(s *Snapshot) []string {
		var out []string
		for _, f := range Findings(s) {
			out = append(out, f.Check+": "+f.Message)
		}
		return out
	}
	roce := &Snapshot{NVML: NVMLState{Available: true}, GPUs: []GPU{{Index: 0}}, WindowSeconds: 2, Expect: &Expect{IBPorts: 4, IBRateGbps: 400},
		IB: &IBState{Ports: []IBPort{port("mlx5_0", "Ethernet", 400), port("mlx5_1", "Ethernet", 400), port("mlx5_2", "Ethernet", 400), port("mlx5_3", "Ethernet", 100)}}}
	if got := checks(roce); len(got) != 1 || got[0] != "ib-port-rate: mlx5_3 port 1 at 100 Gb/s, below 400 Gb/s (the inventory's expect.ib_rate_gbps)" {
		t.Errorf("RoCE fabric: %q", got)
	}
	mixed := &Snapshot{NVML: NVMLState{Available: true}, GPUs: []GPU{{Index: 0}}, WindowSeconds: 2, Expect: &Expect{IBPorts: 2, IBRateGbps: 400},
		IB: &IBState{Ports: []IBPort{port("mlx5_0", "InfiniBand", 400), port("mlx5_1", "InfiniBand", 400), port("mlx5_bond_0", "Ethernet", 100)}}}
	if got := checks(mixed); len(got) != 0 {
		t.Errorf("InfiniBand with a 100 Gb/s Ethernet port beside it: %q", got)
	}
	none := &Snapshot{NVML: NVMLState{Available: true}, GPUs: []GPU{{Index: 0}}, WindowSeconds: 2, IB: &IBState{Ports: []IBPort{}}}
	for _, c := range []string{"ib-port-down", "ib-port-rate", "ib-link-flaps", "ib-port-errors"} {
		if NotApplicable(none, c) == "" {
			t.Errorf("%s applies to a host with no RDMA port", c)
		}
	}
}

// An active port whose link layer was not read could be the fabric's:
// neither its rate nor the count is judged without it.
func TestIBLinkLayerUnread(t *testing.T) {
	port := func(dev, layer string, rate float64) IBPort {
		return IBPort{Device: dev, Port: 1, LinkLayer: layer, State: "ACTIVE", PhysState: "LinkUp", RateGbps: rate, Rate: "x",
			Counters: map[string]uint64{"link_downed": 0}, WindowDelta: map[string]uint64{}}
	}
	s := &Snapshot{NVML: NVMLState{Available: true}, GPUs: []GPU{{Index: 0}}, WindowSeconds: 2, Expect: &Expect{IBPorts: 4, IBRateGbps: 200},
		IB: &IBState{Ports: []IBPort{port("mlx5_0", "InfiniBand", 200), port("mlx5_1", "InfiniBand", 200), port("mlx5_2", "InfiniBand", 200), port("mlx5_3", "", 100)}}}
	for _, f := range Findings(s) {
		t.Errorf("a finding where the ports unread could be the fabric's: %+v", f)
	}
	for _, c := range []string{"ib-port-rate", "ib-port-count"} {
		if CheckMade(s, c) {
			t.Errorf("%s made with mlx5_3's link layer unread", c)
		}
		if why := WhyNotMade(s, c); !strings.Contains(why, "link layer was not read") {
			t.Errorf("%s: why %q", c, why)
		}
	}
}

// A port of another network down (a RoCE port on an InfiniBand host) is
// worth a look, not a drain; a port of the fabric down is fatal.
func TestPortDownOutsideTheFabric(t *testing.T) {
	up := IBPort{Device: "mlx5_0", Port: 1, LinkLayer: "InfiniBand", State: "ACTIVE", PhysState: "LinkUp", RateGbps: 400, Rate: "x", Counters: map[string]uint64{}, WindowDelta: map[string]uint64{}}
	roce := IBPort{Device: "mlx5_bond_0", Port: 1, LinkLayer: "Ethernet", State: "DOWN", PhysState: "Disabled", Counters: map[string]uint64{}}
	ibDown := IBPort{Device: "mlx5_1", Port: 1, LinkLayer: "InfiniBand", State: "DOWN", PhysState: "Polling", Counters: map[string]uint64{}}
	s := &Snapshot{NVML: NVMLState{Available: true}, GPUs: []GPU{{Index: 0}}, WindowSeconds: 2, IB: &IBState{Ports: []IBPort{up, roce, ibDown}}}
	fatal := map[string]bool{}
	for _, f := range Findings(s) {
		if f.Check == "ib-port-down" {
			fatal[f.Message[:strings.Index(f.Message, " ")]] = f.Fatal
		}
	}
	if len(fatal) != 2 || fatal["mlx5_bond_0"] || !fatal["mlx5_1"] {
		t.Errorf("fatal by port: %v", fatal)
	}
}
