package tui

import (
	"fmt"
	"strings"

	"github.com/gpulab/gpulab/probes/report"
)

// hostBadge is what follows a host's name on a simulated fleet: " SIM",
// styled unless plain (a line drawn in one style of its own, which a
// styled badge would cut short); "" for real hosts.
func hostBadge(st Styles, simulated, plain bool) string {
	switch {
	case !simulated:
		return ""
	case plain:
		return " SIM"
	}
	return " " + st.Badge.Render("SIM")
}

// snapshotFlags are what a probe snapshot shows worth a look, one short
// phrase each: NVLinks down (a pair of GPUs that lack links the others
// have and reach each other over PCIe instead, as the topology runbook
// judges it), each GPU's findings, and the Xids.
func snapshotFlags(s *report.Snapshot) []string {
	var out []string
	out = append(out, nvlinksDown(s)...)
	for _, g := range s.GPUs {
		for _, f := range g.Findings {
			out = append(out, fmt.Sprintf("GPU%d: %s", g.Index, f))
		}
	}
	for _, x := range s.XIDs {
		where := x.PCIBusID
		if x.GPU != nil {
			where = fmt.Sprintf("GPU%d", *x.GPU)
		}
		out = append(out, fmt.Sprintf("Xid %d on %s", x.Code, where))
	}
	return out
}

// nvlinksDown names the GPU pairs whose NVLink is down: in a mesh where
// the GPUs have NVLink peers, the pairs between GPUs with fewer peers than
// the most any GPU has, which are not NVLinked.
func nvlinksDown(s *report.Snapshot) []string {
	peers := map[int]int{}
	maxPeers := 0
	for _, l := range s.Topology {
		if strings.HasPrefix(l.Level, "NV") {
			peers[l.A]++
			peers[l.B]++
			maxPeers = max(maxPeers, peers[l.A], peers[l.B])
		}
	}
	if maxPeers == 0 {
		return nil // no NVLink at all: nothing is down
	}
	var out []string
	for _, l := range s.Topology {
		if !strings.HasPrefix(l.Level, "NV") && peers[l.A] < maxPeers && peers[l.B] < maxPeers {
			out = append(out, fmt.Sprintf("NVLink GPU%d–GPU%d down (%s)", min(l.A, l.B), max(l.A, l.B), l.Level))
		}
	}
	return out
}
