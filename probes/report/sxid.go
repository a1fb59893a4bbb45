package report

import (
	_ "embed"
	"slices"
	"strconv"
	"strings"
)

// SXid classes, after NVIDIA's Fabric Manager guide.
const (
	SXidNonFatal    = "non-fatal"    // the fabric keeps working
	SXidFatal       = "fatal"        // fatal to the partitions using the port
	SXidAlwaysFatal = "always-fatal" // fatal to the whole fabric
	SXidNotable     = "notable"      // not fatal; may precede fatal events
)

// DecodeSXID is what an NVSwitch SXid means and what to do, from the
// Fabric Manager guide's tables; msg is the line's text after the code
// ("Non-fatal, Link 36 ingress invalid ACL (First)"). A code the tables do
// not hold is reported with Known false, and the line's own "Fatal" or
// "Non-fatal" decides whether it points at the hardware.
func DecodeSXID(code int, msg string) XIDInfo {
	lineFatal := strings.HasPrefix(msg, "Fatal")
	e, ok := sxidCatalog()[code]
	if !ok {
		return XIDInfo{Hardware: lineFatal}
	}
	info := XIDInfo{Known: true, Mnemonic: e.name}
	switch e.class {
	case SXidAlwaysFatal:
		info.Meaning = "NVSwitch " + e.name + ": always fatal to the whole NVLink fabric"
		info.Action = "Drain the node and restart the host to reset the fabric (every GPU and NVSwitch); collect nvidia-bug-report.sh and contact support if it recurs"
		info.Immediate, info.Investigatory = "RESTART_BM", "CONTACT_SUPPORT"
	case SXidFatal:
		info.Meaning = "NVSwitch " + e.name + ": fatal to the partitions using this port (a trunk port: every partition crossing it)"
		info.Action = "Drain the node and restart it (a VM partition: restart the guest VM) to reset the port; inspect the NVSwitch and its links if the same SXid returns"
		info.Immediate, info.Investigatory = "RESTART_BM", "CONTACT_SUPPORT"
	case SXidNotable:
		info.Meaning = "NVSwitch " + e.name + ": not fatal, but may precede fatal events"
		info.Action = "Watch for fatal SXids and Xid 74 that follow"
		if strings.Contains(e.name, "thermal") {
			info.Meaning = "NVSwitch " + e.name + ": the NVSwitch's links may drop to single-lane mode; cooling may be short"
			info.Action = "Check the system's cooling (fans, inlet temperature, airflow)"
		}
	default:
		info.Meaning = "NVSwitch " + e.name + ": not fatal, the fabric keeps working"
		info.Action = "No action now; watch its rate"
		if e.repair != "" {
			info.Action = "No action now; restart the node to reset the NVSwitch if it repeats"
		}
		info.Immediate = "IGNORE"
	}
	if lineFatal && (e.class == SXidNonFatal || e.class == SXidNotable) {
		// The switch's own word is worse than the guide's table: the
		// worse one stands, and the words say both.
		info.Meaning = "NVSwitch " + e.name + ": the switch reports it Fatal (the Fabric Manager guide lists it " + e.class + ")"
		info.Action = "Drain the node and restart it to reset the NVSwitch; inspect the switch and its links if it recurs"
		info.Immediate, info.Investigatory = "RESTART_BM", "CONTACT_SUPPORT"
	}
	info.Hardware = e.class == SXidFatal || e.class == SXidAlwaysFatal || lineFatal
	return info
}

// SXidDetail reports whether an SXid line's text is the detail the
// driver prints after an SXid's first line ("Severity 0 Engine instance
// 42 ...", "Data {0x...}"): the same event, never a new one.
func SXidDetail(msg string) bool {
	return strings.HasPrefix(msg, "Severity ") || strings.HasPrefix(msg, "Data {")
}

// KnownSXIDs lists the SXid codes the tables hold, ascending.
func KnownSXIDs() []int {
	var codes []int
	for c := range sxidCatalog() {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	return codes
}

//go:embed sxid_catalog.tsv
var sxidTSV string

type sxidEntry struct{ name, class, repair string }

var sxidCatalogOnce lazy[map[int]sxidEntry]

// sxidCatalog is the SXid table by code, read once from sxid_catalog.tsv.
func sxidCatalog() map[int]sxidEntry {
	return sxidCatalogOnce.get(parseSxidCatalog)
}

func parseSxidCatalog() map[int]sxidEntry {
	out := map[int]sxidEntry{}
	for _, line := range strings.Split(sxidTSV, "\n") {
		f := strings.Split(line, "\t")
		if strings.HasPrefix(line, "#") || len(f) != 4 {
			continue
		}
		code, err := strconv.Atoi(f[0])
		if err != nil {
			panic("sxid_catalog.tsv: " + line) // embedded data, checked by the tests
		}
		out[code] = sxidEntry{f[1], f[2], f[3]}
	}
	return out
}
