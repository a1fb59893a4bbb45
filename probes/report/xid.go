package report

import (
	_ "embed"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// XIDEvent is one Xid error reported by the NVIDIA driver.
type XIDEvent struct {
	Code     int       `json:"code"`
	GPU      *int      `json:"gpu,omitempty"`
	PCIBusID string    `json:"pci_bus_id,omitempty"`
	Time     time.Time `json:"time,omitempty"`
	Source   string    `json:"source"` // "nvml-event" or "kmsg"
	// SXid: an NVSwitch's SXid (PCIBusID is the switch's), not a GPU's Xid.
	SXid    bool   `json:"sxid,omitempty"`
	Message string `json:"message,omitempty"`
	XIDInfo
}

// XIDInfo is what a code means and what to do about it. Known is false
// for codes NVIDIA's catalog does not hold: they are reported, never
// guessed.
type XIDInfo struct {
	Known   bool   `json:"known"`
	Meaning string `json:"meaning,omitempty"`
	Action  string `json:"action,omitempty"`
	// Hardware is true when the code points at the GPU or its link rather
	// than at the application.
	Hardware bool `json:"hardware,omitempty"`
	// Mnemonic, Immediate and Investigatory are NVIDIA's catalog's: the
	// driver's name for the code, and its resolution buckets (RESTART_APP,
	// RESET_GPU, RESTART_BM, CONTACT_SUPPORT, ...) for now and for after.
	Mnemonic      string `json:"mnemonic,omitempty"`
	Immediate     string `json:"immediate_action,omitempty"`
	Investigatory string `json:"investigatory_action,omitempty"`
	// NVLink is an NVLink5 Xid (144-150) decoded from its message; its
	// decode-table row, when there is one, gave Immediate, Investigatory
	// and Hardware.
	NVLink *NVLinkError `json:"nvlink,omitempty"`
}

// xidWords are gpulab's own words for a code: what it means, what to do,
// and whether it points at the hardware.
type xidWords struct {
	meaning, action string
	hardware        bool
}

// xidTable holds the codes operators meet most on data-centre GPUs, in
// gpulab's words, after NVIDIA's Xid documentation.
var xidTable = map[int]xidWords{
	13:  {"Graphics engine exception: usually the application (illegal instruction or address, out-of-range access)", "Check the application (compute-sanitizer); if several unrelated jobs hit it on this GPU, run diagnostics (dcgmi diag -r 2)", false},
	31:  {"GPU memory page fault: the application touched memory it does not own (MMU fault)", "Debug the application; a driver or hardware cause is rare unless it repeats across jobs", false},
	32:  {"Invalid or corrupted push buffer stream: commands reached the GPU damaged, often over PCIe", "Check the PCIe link (downtraining, AER errors in dmesg), risers and system memory; run diagnostics", true},
	43:  {"GPU stopped processing: a channel was reset after an application fault; the GPU itself is fine", "Look at the application that was running; no action on the GPU", false},
	45:  {"Preemptive cleanup after earlier errors: a process was torn down (killed, or by a preceding Xid)", "Find the Xid that came before it; alone it needs no action", false},
	48:  {"Double-bit ECC error: an uncorrectable memory error", "Drain the node; reset the GPU (on A100 and newer the row is remapped at reset); replace the GPU if it recurs", true},
	61:  {"Internal micro-controller breakpoint or warning (PMU firmware)", "Reset the GPU; collect nvidia-bug-report.sh and contact the vendor if it recurs", true},
	62:  {"Internal micro-controller halt (PMU firmware stopped)", "Drain and reset the GPU or reboot; replace the GPU if it recurs", true},
	63:  {"ECC page retirement or row remapping recorded", "No immediate action: schedule a GPU reset to apply the remap; watch remapped-row counts", true},
	64:  {"ECC page retirement or row remapping could not be recorded", "Drain and reset the GPU; replace it if the failure repeats", true},
	68:  {"Video decoder (NVDEC) exception", "Check the application using the decoder; update the driver if it repeats across applications", false},
	69:  {"Graphics engine class error", "Check the application; update the driver if it repeats across applications", false},
	74:  {"NVLink error: a link or NVSwitch reported a fault", "Check nvidia-smi nvlink -e and the fabric manager; reset the GPUs on the link; reseat or replace hardware if it recurs", true},
	79:  {"GPU has fallen off the bus: it stopped answering on PCIe", "Drain the node and reboot; check PCIe slot, power and cooling; likely hardware if it recurs", true},
	92:  {"High single-bit ECC error rate", "Watch the corrected-error counters; reset the GPU; replace it if the rate stays high", true},
	94:  {"Contained ECC error: an uncorrectable error was contained to the processes using that memory", "Restart the affected applications; reset the GPU when convenient to remap the row", true},
	95:  {"Uncontained ECC error: every application on the GPU is affected", "Drain the node and reset the GPU now; replace it if it recurs", true},
	119: {"GSP RPC timeout: the GPU System Processor firmware stopped answering", "Reset the GPU or reboot; update the driver; collect nvidia-bug-report.sh if it recurs", true},
	120: {"GSP error: the GPU System Processor firmware reported an error", "Reset the GPU or reboot; collect nvidia-bug-report.sh", true},
	154: {"GPU recovery action changed: the driver says what recovery the GPU now needs", "Read the recovery action in the message (none, GPU reset, node reboot, drain and reset) and do it", true},
}

// DecodeXID returns what gpulab knows of code: its words for the codes in
// xidTable, NVIDIA's catalog's description and resolution for every code
// the catalog lists, both for the codes in both. A code in neither comes
// back with Known false and no meaning.
func DecodeXID(code int) XIDInfo {
	c, inCatalog := xidCatalog()[code]
	w, curated := xidTable[code]
	var info XIDInfo
	switch {
	case curated:
		info = XIDInfo{Known: true, Meaning: w.meaning, Action: w.action, Hardware: w.hardware,
			Mnemonic: c.mnemonic, Immediate: c.immediate, Investigatory: c.investigatory}
	case inCatalog:
		info = XIDInfo{Known: true, Meaning: c.description, Action: resolutionText(c.immediate, c.investigatory),
			Hardware: nodeAction(c.immediate), Mnemonic: c.mnemonic, Immediate: c.immediate, Investigatory: c.investigatory}
	}
	return info
}

// KnownXIDs lists the codes gpulab knows, ascending: NVIDIA's catalog's
// and its own table's.
func KnownXIDs() []int {
	var codes []int
	for c := range xidCatalog() {
		codes = append(codes, c)
	}
	for c := range xidTable {
		if _, ok := xidCatalog()[c]; !ok {
			codes = append(codes, c)
		}
	}
	slices.Sort(codes)
	return codes
}

//go:embed xid_catalog.tsv
var xidCatalogTSV string

// catalogEntry is one row of NVIDIA's Xid catalog.
type catalogEntry struct {
	mnemonic, description, immediate, investigatory string
}

// lazy holds a table parsed on its first use (get). It is a zero value
// until then, never a package variable set at init: a binary that
// decodes nothing (the probe) links neither the table nor its parser.
// (sync.OnceValue, called at init, would keep both.)
type lazy[T any] struct {
	once sync.Once
	v    T
}

func (l *lazy[T]) get(parse func() T) T {
	l.once.Do(func() { l.v = parse() })
	return l.v
}

var xidCatalogOnce lazy[map[int]catalogEntry]

// xidCatalog is NVIDIA's Xid catalog by code, read once from
// xid_catalog.tsv (its source is in the file).
func xidCatalog() map[int]catalogEntry {
	return xidCatalogOnce.get(parseXidCatalog)
}

func parseXidCatalog() map[int]catalogEntry {
	out := map[int]catalogEntry{}
	for _, line := range strings.Split(xidCatalogTSV, "\n") {
		f := strings.Split(line, "\t")
		if strings.HasPrefix(line, "#") || len(f) != 5 {
			continue
		}
		code, err := strconv.Atoi(f[0])
		if err != nil {
			panic("xid_catalog.tsv: " + line) // embedded data, checked by the tests
		}
		out[code] = catalogEntry{f[1], f[2], f[3], f[4]}
	}
	return out
}

// bucketWords are NVIDIA's resolution buckets in gpulab's words.
var bucketWords = map[string]string{
	"RESTART_APP":       "restart the application",
	"RESET_GPU":         "drain the GPU and reset it",
	"RESTART_VM":        "restart the VM",
	"RESTART_BM":        "drain the node and reboot it",
	"CONTACT_SUPPORT":   "collect nvidia-bug-report.sh and contact NVIDIA support",
	"IGNORE":            "no action",
	"CHECK_MECHANICALS": "check the board's power cables and seating",
	"CHECK_UVM":         "check the application's unified memory use",
	"UPDATE_SWFW":       "update the driver and the GPU's firmware",
	"XID_154":           "do the recovery action the Xid 154 beside it names",
	"CHECK_APP/CUDA":    "check the application and its CUDA code",
	"INVESTIGATE_SW":    "look into the driver and software stack",
	// The NVLink5 decode table's.
	"XID_154_EVAL":                   "read the recovery action the driver sets (Xid 154, the recovery-action check)",
	"CHECK_NVLINK_FAILURE_FLOW":      "follow NVIDIA's NVLink failure flow",
	"INVESTIGATE_PEER_DEVICE":        "look at the GPU or NVSwitch at the link's other end",
	"INVESTIGATE_LINK_SI":            "check the link's signal integrity (field diagnostics)",
	"INVESTIGATE_LINK_SI_AND_CABLES": "check the link's signal integrity and its cables and cartridges",
	"INVESTIGATE_HOST":               "look into the host (power, firmware, kernel)",
	"INVESTIGATE_SW_USER":            "look into the software stack and the application",
	"INVESTIGATE_SW_USER_LINK_SI":    "look into the software, the application and the link's signal integrity",
	"SYMPATHETIC_REPORT_SOLO":        "follow the other Xid beside it; report it to NVIDIA if it came alone",
}

// resolutionText says NVIDIA's resolution for a code in words, its
// buckets after: "Now: restart the application. Then: collect ... (NVIDIA:
// RESTART_APP, CONTACT_SUPPORT)".
func resolutionText(immediate, investigatory string) string {
	words := func(b string) string {
		if w, ok := bucketWords[b]; ok {
			return w
		}
		if strings.HasPrefix(b, "WORKFLOW_") {
			return "follow NVIDIA's " + b + " workflow"
		}
		return b
	}
	var parts, buckets []string
	if immediate != "" {
		parts, buckets = append(parts, "Now: "+words(immediate)), append(buckets, immediate)
	}
	if investigatory != "" && investigatory != immediate && !strings.HasPrefix(investigatory, "N/A") {
		parts, buckets = append(parts, "Then: "+words(investigatory)), append(buckets, investigatory)
	}
	if len(parts) == 0 {
		return "NVIDIA's catalog gives no resolution"
	}
	return strings.Join(parts, ". ") + " (NVIDIA: " + strings.Join(buckets, ", ") + ")"
}

// nodeAction reports whether an immediate bucket asks for more than the
// application's restart: the GPU, the node or the vendor is involved.
func nodeAction(immediate string) bool {
	switch immediate {
	case "", "RESTART_APP", "IGNORE", "CHECK_UVM":
		return false
	}
	return true
}

// DecodeXIDs fills each of s's Xid and SXid events with what its code
// (and message) means and what to do: gpulab does it as it reads a
// snapshot (remote.Decode), with its own catalogs, so that the pushed
// probe carries none of them (they are its size) and an older probe's
// events read with the newer catalog.
func DecodeXIDs(s *Snapshot) {
	for i := range s.XIDs {
		s.XIDs[i].XIDInfo = DecodeEvent(s.XIDs[i])
	}
}

// DecodeEvent is what one event means: an SXid by NVIDIA's tables for
// the NVSwitch, an Xid by its code and, for the NVLink5 Xids, its
// message.
func DecodeEvent(x XIDEvent) XIDInfo {
	if x.SXid {
		return DecodeSXID(x.Code, x.Message)
	}
	return DecodeXIDMessage(x.Code, x.Message)
}

// ParseKmsgXIDs finds the GPUs' and NVSwitches' error lines in kernel log
// text (dmesg, /dev/kmsg), wherever they are in the line: the driver's
// "NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has fallen off the bus.",
// an NVSwitch's "nvidia-nvswitch2: SXid (PCI:0000:c6:00.0): 24007, Fatal,
// ..." (its "Severity" and "Data" detail lines are part of the one before,
// not events), and "NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus."
// with no Xid 79 line of its GPU (read as one). The events are not
// decoded (DecodeXIDs). unread are the lines that
// say they are an Xid or SXid and could not be read: "no Xid" is not a
// reading of them.
func ParseKmsgXIDs(text string) (events []XIDEvent, unread []string) {
	offBus := map[string]bool{}
	var pending []string
	sxids := map[string]bool{} // the bus and code of each SXid read
	for _, line := range kmsgMessages(text) {
		if x, ok := kmsgXid(line, "NVRM: Xid ("); ok {
			events = append(events, x)
			if x.Code == 79 {
				offBus[busKey(x.PCIBusID)] = true
			}
			continue
		}
		if x, ok := kmsgXid(line, "SXid ("); ok {
			key := busKey(x.PCIBusID) + "/" + strconv.Itoa(x.Code)
			if SXidDetail(x.Message) && sxids[key] {
				continue // the detail of that switch's SXid (other switches' lines may come between)
			}
			// A detail line whose SXid line is gone (the log began after
			// it) still says the switch raised it.
			sxids[key] = true
			x.SXid = true
			events = append(events, x)
			continue
		}
		if bus, ok := offBusLine(line); ok {
			pending = append(pending, bus)
			continue
		}
		if strings.Contains(line, "NVRM: Xid") || strings.Contains(line, "SXid (") || strings.Contains(line, "NVRM") && strings.Contains(line, "fallen off the bus") {
			unread = append(unread, line)
		}
	}
	for _, bus := range pending {
		if !offBus[busKey(bus)] {
			offBus[busKey(bus)] = true
			events = append(events, XIDEvent{Code: 79, PCIBusID: bus, Source: "kmsg", Message: "GPU has fallen off the bus (no Xid line)"})
		}
	}
	return events, unread
}

// kmsgMessages are text's messages, one a line: a line that starts with
// blanks continues the message before it (dmesg prints a message's
// further lines so), and is joined to it.
func kmsgMessages(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		if len(out) > 0 && (strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")) && strings.TrimSpace(line) != "" {
			out[len(out)-1] += " " + strings.TrimSpace(line)
			continue
		}
		out = append(out, line)
	}
	return out
}

// offBusLine reads "NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus."
// (and "NVRM: The NVIDIA GPU 0000:3b:00.0 ... has fallen off the bus"):
// the GPU's PCI address.
func offBusLine(line string) (string, bool) {
	if !strings.Contains(line, "fallen off the bus") {
		return "", false
	}
	k := strings.Index(line, "NVRM: ")
	if k < 0 {
		return "", false
	}
	rest := strings.TrimPrefix(strings.TrimPrefix(line[k+len("NVRM: "):], "The NVIDIA "), "GPU ")
	rest = strings.TrimPrefix(strings.TrimPrefix(rest, "at "), "PCI:")
	n := strings.IndexFunc(rest, func(r rune) bool { return !isHex(r) && r != ':' && r != '.' })
	if n < 0 {
		n = len(rest)
	}
	bus := strings.TrimRight(rest[:n], ":.")
	if strings.Count(bus, ":") < 2 {
		return "", false
	}
	return bus, true
}

// busKey is a PCI address without its function and case: an Xid line's
// "0000:3b:00" and the off-the-bus line's "0000:3b:00.0" are one GPU.
func busKey(bus string) string {
	bus = strings.ToLower(bus)
	if i := strings.LastIndex(bus, "."); i > 0 {
		bus = bus[:i]
	}
	return bus
}

// kmsgXid reads the Xid of one kernel log line after mark ("NVRM: Xid
// (" or "SXid ("): the PCI address ("PCI:0000:3b:00" on current
// drivers, "0000:3b:00" on old ones; what follows it inside the
// parentheses, a MIG instance's "GPU-I:05 GPU-CI:01", kept out of it),
// the code, then a comma and the message, or nothing.
func kmsgXid(line, mark string) (XIDEvent, bool) {
	for at := 0; ; {
		k := strings.Index(line[at:], mark)
		if k < 0 {
			return XIDEvent{}, false
		}
		rest := strings.TrimPrefix(line[at+k+len(mark):], "PCI:")
		at += k + len(mark)
		bus := strings.IndexFunc(rest, func(r rune) bool { return !isHex(r) && r != ':' && r != '.' })
		if bus <= 0 || strings.Count(rest[:bus], ":") < 1 {
			continue
		}
		end := strings.IndexByte(rest[bus:], ')')
		if end < 0 || rest[bus] != ')' && rest[bus] != ' ' || !strings.HasPrefix(rest[bus+end:], "): ") {
			continue
		}
		digits := rest[bus+end+3:]
		n := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' })
		if n < 0 {
			n = len(digits)
		}
		if n == 0 || n < len(digits) && digits[n] != ',' {
			continue
		}
		code, err := strconv.Atoi(digits[:n])
		if err != nil {
			continue
		}
		msg := ""
		if n < len(digits) {
			msg = strings.TrimSpace(digits[n+1:])
		}
		return XIDEvent{Code: code, PCIBusID: rest[:bus], Source: "kmsg", Message: msg}, true
	}
}

func isHex(r rune) bool { return '0' <= r && r <= '9' || 'a' <= r && r <= 'f' || 'A' <= r && r <= 'F' }
