package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// ibErrorCounters are the counters whose rise in the sampling window is
// a sick link (link_downed has its own check: flaps).
var ibErrorCounters = []string{"symbol_error", "port_rcv_errors", "link_error_recovery", "local_link_integrity_errors", "excessive_buffer_overrun_errors"}

// ibFindings are the host's RDMA ports' findings:
//
//   - ib-port-down: a port not ACTIVE and LinkUp (a cable, a transceiver,
//     the switch port): NCCL loses that rail.
//   - ib-port-count: fewer active InfiniBand ports than the inventory's
//     expect.ib_ports.
//   - ib-port-rate: an active InfiniBand port below expect.ib_rate_gbps,
//     or, with no expectation, below the host's fastest InfiniBand port.
//   - ib-link-flaps: the port went down since its counters were cleared
//     (link_downed), or while sampled: a flapping link.
//   - ib-port-errors: symbol, receive, integrity or overrun errors rose
//     while sampled.
func ibFindings(s *Snapshot) []Finding {
	var out []Finding
	ib := s.IB
	if ib == nil {
		if s.Expect != nil && s.Expect.IBPorts > 0 && fieldError(s, "ib") != "not asked for" {
			out = append(out, Finding{Check: "ib-port-count", Fatal: true, Action: ActionContactSupport,
				Message:  fmt.Sprintf("no RDMA device where the inventory expects %d InfiniBand ports", s.Expect.IBPorts),
				Evidence: []string{"/sys/class/infiniband: " + fieldError(s, "ib")}})
		}
		return out
	}
	layer := fabricLayer(ib.Ports)
	fastest, active, maybe := 0.0, 0, 0
	for _, p := range ib.Ports {
		switch {
		case p.LinkLayer == layer && portUp(p):
			fastest, active = max(fastest, p.RateGbps), active+1
		case p.LinkLayer == "" && portUp(p):
			maybe++ // its link layer unread: it may be one of the fabric's
		}
	}
	for _, p := range ib.Ports {
		out = append(out, ibPortFindings(s, p, layer, fastest)...)
	}
	if e := s.Expect; e != nil && e.IBPorts > 0 && active+maybe < e.IBPorts {
		out = append(out, Finding{Check: "ib-port-count", Fatal: true, Action: ActionContactSupport,
			Message:  fmt.Sprintf("%d active %s port(s) where the inventory expects %d", active, layerName(layer), e.IBPorts),
			Evidence: []string{fmt.Sprintf("/sys/class/infiniband: %d port(s), %d %s ACTIVE/LinkUp", len(ib.Ports), active, layerName(layer))}})
	}
	return out
}

// fabricLayer is the link layer of the host's RDMA fabric, the ports
// expect.ib_ports counts and expect.ib_rate_gbps judges: InfiniBand
// where the host has an InfiniBand port (its Ethernet ones are other
// networks), Ethernet (RoCE) where it has none.
func fabricLayer(ports []IBPort) string {
	switch {
	case slices.ContainsFunc(ports, func(p IBPort) bool { return p.LinkLayer == "InfiniBand" }):
		return "InfiniBand"
	case slices.ContainsFunc(ports, func(p IBPort) bool { return p.LinkLayer == "Ethernet" }):
		return "Ethernet"
	}
	return "none" // no port whose link layer was read
}

// layerName names a link layer's RDMA ports: InfiniBand, RoCE.
func layerName(layer string) string {
	switch layer {
	case "Ethernet":
		return "RoCE"
	case "none":
		return "RDMA"
	}
	return layer
}

func portUp(p IBPort) bool { return p.State == "ACTIVE" && p.PhysState == "LinkUp" }

func portName(p IBPort) string { return fmt.Sprintf("%s port %d", p.Device, p.Port) }

// ibPortFindings are one port's findings; fastest is the host's fastest
// active port of its fabric's link layer (layer), whose ports alone are
// judged by their rate.
func ibPortFindings(s *Snapshot, p IBPort, layer string, fastest float64) []Finding {
	var out []Finding
	// The port is named in the message and evidence: the health events'
	// entities are NVSentinel's GPU, GPU_UUID, PCI and NVLINK.
	name := portName(p)
	if !portUp(p) {
		// A port of the host's RDMA fabric down loses a rail; one of
		// another network (a RoCE port on an InfiniBand host: storage,
		// or nothing plugged in) is worth a look, not a drain.
		out = append(out, Finding{Check: "ib-port-down", Fatal: p.LinkLayer == layer || p.LinkLayer == "", Action: ActionContactSupport,
			Message:  fmt.Sprintf("%s (%s) is %s, %s", name, cmp.Or(p.LinkLayer, "link layer not read"), cmp.Or(p.State, "state not read"), cmp.Or(p.PhysState, "physical state not read")),
			Evidence: []string{fmt.Sprintf("%s: state %s, phys_state %s", name, p.State, p.PhysState)}})
		return out
	}
	if p.LinkLayer == layer {
		want, why := fastest, "the host's fastest "+layerName(layer)+" port"
		if s.Expect != nil && s.Expect.IBRateGbps > 0 {
			want, why = float64(s.Expect.IBRateGbps), "the inventory's expect.ib_rate_gbps"
		}
		if p.RateGbps > 0 && p.RateGbps < want {
			out = append(out, Finding{Check: "ib-port-rate", Action: ActionContactSupport,
				Message:  fmt.Sprintf("%s at %g Gb/s, below %g Gb/s (%s)", name, p.RateGbps, want, why),
				Evidence: []string{fmt.Sprintf("%s: rate %s", name, p.Rate)}})
		}
	}
	if f, ok := flapFinding(p); ok {
		out = append(out, f)
	}
	var rose []string
	for _, c := range ibErrorCounters {
		if d := p.WindowDelta[c]; d > 0 {
			rose = append(rose, fmt.Sprintf("%s +%d", c, d))
		}
	}
	if len(rose) > 0 {
		out = append(out, Finding{Check: "ib-port-errors", Action: ActionContactSupport,
			Message:  fmt.Sprintf("%s: errors rose in the %gs window: %s", name, s.WindowSeconds, strings.Join(rose, ", ")),
			Evidence: []string{name + " counters over the window: " + strings.Join(rose, ", ")}})
	}
	return out
}

// flapFinding is a port's flaps: link_downed since the counters were
// cleared, and its rise while sampled (a link flapping now).
func flapFinding(p IBPort) (Finding, bool) {
	down, rose := p.Counters["link_downed"], p.WindowDelta["link_downed"]
	if down == 0 && rose == 0 {
		return Finding{}, false
	}
	name := portName(p)
	times := fmt.Sprintf("%d time(s)", down)
	if down == 255 {
		times = "at least 255 times (the 8-bit counter is saturated)"
	}
	msg := fmt.Sprintf("%s went down %s since its counters were cleared", name, times)
	if rose > 0 {
		msg = fmt.Sprintf("%s is flapping: down %d time(s) in the sampling window, %s since its counters were cleared", name, rose, times)
	}
	return Finding{Check: "ib-link-flaps", Action: ActionContactSupport, Codes: []string{"link_downed"}, Message: msg,
		Evidence: []string{fmt.Sprintf("%s: counters/link_downed %d (+%d in the window); clear with perfquery -x after the fix", name, down, rose)}}, true
}

// ibChecks are the probe checks of the RDMA ports, and whether a
// snapshot holds their evidence.
var ibChecks = []probeCheck{
	{name: "ib-port-down", host: true, why: ibWhy("a port's state was not read"), read: ibReadWords, applies: noPorts, ready: func(s *Snapshot) bool {
		return ibRead(s) && !slices.ContainsFunc(s.IB.Ports, func(p IBPort) bool { return p.State == "" || p.PhysState == "" })
	}},
	{name: "ib-port-count", host: true, why: ibWhy("an active port's link layer was not read"), read: ibReadWords, applies: expects("ib_ports", func(e *Expect) int { return e.IBPorts }),
		ready: func(s *Snapshot) bool {
			return s.Expect != nil && s.Expect.IBPorts > 0 && (ibRead(s) && !slices.ContainsFunc(s.IB.Ports, func(p IBPort) bool { return portUp(p) && p.LinkLayer == "" }) ||
				s.IB == nil && fieldError(s, "ib") != "not asked for")
		}},
	{name: "ib-port-rate", host: true, why: ibWhy("an active port's rate or link layer was not read"), read: ibReadWords, applies: noPorts, ready: func(s *Snapshot) bool {
		// A port up whose link layer was not read could be the fabric's.
		return ibRead(s) && !slices.ContainsFunc(s.IB.Ports, func(p IBPort) bool {
			return portUp(p) && (p.LinkLayer == "" || p.LinkLayer == fabricLayer(s.IB.Ports) && p.RateGbps <= 0)
		})
	}},
	{name: "ib-link-flaps", host: true, why: ibWhy("a port's link_downed counter was not read"), read: ibReadWords, applies: noPorts, ready: func(s *Snapshot) bool {
		return ibRead(s) && !slices.ContainsFunc(s.IB.Ports, func(p IBPort) bool { _, ok := p.Counters["link_downed"]; return portUp(p) && !ok })
	}},
	{name: "ib-port-errors", host: true, read: ibReadWords, applies: noPorts, ready: func(s *Snapshot) bool {
		return ibRead(s) && s.WindowSeconds > 0 && !slices.ContainsFunc(s.IB.Ports, func(p IBPort) bool { return portUp(p) && p.WindowDelta == nil })
	}, why: func(s *Snapshot) string {
		if ibRead(s) && s.WindowSeconds == 0 {
			return "the probe took one reading, no sampling window: a rise needs two"
		}
		return ibWhy("a port's error counters were not read at both ends of the window, or went down (cleared) in it")(s)
	}},
}

// noPorts is the port checks' applies: none where sysfs was read and
// lists no RDMA port (nothing to judge; ib-port-count judges the count).
func noPorts(s *Snapshot) string {
	if s.IB != nil && !s.IB.Truncated && len(s.IB.Ports) == 0 {
		return "/sys/class/infiniband lists no RDMA port"
	}
	return ""
}

// ibWhy says why an RDMA check's evidence is missing: sysfs not read,
// not every port read, or detail.
func ibWhy(detail string) func(*Snapshot) string {
	return func(s *Snapshot) string {
		switch {
		case s.IB == nil:
			return "/sys/class/infiniband was not read: " + fieldError(s, "ib")
		case s.IB.Truncated:
			return "not every RDMA port was read (more than the probe reads, or a device's ports unreadable)"
		}
		return detail
	}
}

// ibReadWords is what an RDMA check read where it found nothing.
func ibReadWords(s *Snapshot) string {
	return fmt.Sprintf("/sys/class/infiniband read: %d RDMA port(s)%s", len(s.IB.Ports), windowWords(s))
}

// ibRead reports whether every RDMA port was read.
func ibRead(s *Snapshot) bool { return s.IB != nil && !s.IB.Truncated }
