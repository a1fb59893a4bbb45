package report

import (
	"fmt"
	"sort"
	"strings"
)

// Hardware sums a host up in one line, so that identical hosts fold
// together: "8× NVIDIA A100-SXM4-80GB, NV12 full mesh, driver 550.54.15".
func Hardware(s *Snapshot) string {
	if s == nil {
		return ""
	}
	if !s.NVML.Available {
		return "no NVML: " + s.NVML.Error
	}
	names := map[string]int{}
	var order []string
	for _, g := range s.GPUs {
		if names[g.Name] == 0 {
			order = append(order, g.Name)
		}
		names[g.Name]++
	}
	var parts []string
	for _, n := range order {
		parts = append(parts, fmt.Sprintf("%d× %s", names[n], n))
	}
	if len(parts) == 0 {
		parts = append(parts, "0 GPUs")
	}
	levels := map[string]int{}
	for _, l := range s.Topology {
		levels[l.Level]++
	}
	if n := len(s.GPUs); n > 1 && len(levels) == 1 && len(s.Topology) == n*(n-1)/2 {
		for lvl := range levels {
			if strings.HasPrefix(lvl, "NV") {
				parts = append(parts, lvl+" full mesh")
			} else {
				parts = append(parts, "all pairs "+lvl)
			}
		}
	} else if len(levels) > 0 {
		var ls []string
		for lvl, c := range levels {
			ls = append(ls, fmt.Sprintf("%s×%d", lvl, c))
		}
		sort.Strings(ls)
		parts = append(parts, "links "+strings.Join(ls, " "))
	}
	parts = append(parts, "driver "+s.DriverVersion)
	if s.Simulated {
		parts = append(parts, "SIMULATED")
	}
	return strings.Join(parts, ", ")
}

// Flags are what a snapshot shows worth a look, one short phrase each:
// NVLinks down (NVLinksDown), each GPU's findings (uncorrected ECC errors,
// row remaps pending or failed, a downtrained PCIe link) and the Xids. A
// host with none is healthy as far as the probe can tell. The workbench's
// Fleet tab flags a host's row with the same phrases.
func Flags(s *Snapshot) []string {
	if s == nil {
		return nil
	}
	out := NVLinksDown(s)
	if s.NVML.Available && len(s.GPUs) == 0 {
		// The driver answers and counts no device: on a GPU node every
		// GPU is gone (off the bus, or never enumerated).
		out = append(out, "NVML answers but sees no GPU (nvidia-smi -L; the kernel log for Xid 79 or a GPU that fell off the bus)")
	}
	for _, g := range s.GPUs {
		for _, f := range g.Findings {
			out = append(out, fmt.Sprintf("GPU%d: %s", g.Index, f))
		}
	}
	for _, x := range s.XIDs {
		if x.Code == 63 && remapRead(s, x) {
			continue // the row remap it announces is its GPU's row-remap finding, or none
		}
		where := x.PCIBusID
		if x.GPU != nil {
			where = fmt.Sprintf("GPU%d", *x.GPU)
		}
		out = append(out, fmt.Sprintf("Xid %d on %s", x.Code, where))
	}
	if e := KmsgUnread(s); e != nil && e.Code != "SIMULATED" {
		// Asked for the kernel's Xid history (--kmsg) and not given it:
		// "no Xid" would be a reading nobody made.
		out = append(out, fmt.Sprintf("Xid history not read (/dev/kmsg: %s: %s)", e.Code, e.Message))
	}
	return out
}

// KmsgUnread is the error that kept the probe from reading the kernel's
// Xid history (--kmsg), nil when it read it or was not asked to.
func KmsgUnread(s *Snapshot) *FieldError {
	for i, e := range s.Errors {
		if e.Field == "xids.kmsg" {
			return &s.Errors[i]
		}
	}
	return nil
}

// NVLinksDown names the GPU pairs whose NVLink is down: in a mesh where
// the GPUs have NVLink peers, the pairs between GPUs with fewer peers than
// the most any GPU has, which are not NVLinked (as the topology runbook
// judges it).
func NVLinksDown(s *Snapshot) []string {
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

// remapRead reports whether the snapshot read the row-remap state of the
// GPU an Xid names (by index, or by its bus id).
func remapRead(s *Snapshot, x XIDEvent) bool {
	for _, g := range s.GPUs {
		if x.GPU != nil && g.Index == *x.GPU || x.GPU == nil && SamePCI(g.PCIBusID, x.PCIBusID) {
			return g.RemappedRows != nil
		}
	}
	return false
}

// SamePCI compares NVML's "00000000:3B:00.0" with the kernel's "0000:3b:00".
func SamePCI(nvmlID, kmsgID string) bool {
	norm := func(s string) string {
		s = strings.ToLower(s)
		s = strings.TrimSuffix(s, ".0")
		parts := strings.Split(s, ":")
		if len(parts) == 3 {
			parts[0] = strings.TrimLeft(parts[0], "0")
		}
		return strings.Join(parts, ":")
	}
	return nvmlID != "" && norm(nvmlID) == norm(kmsgID)
}
