package report

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// XIDEvent is one Xid error reported by the NVIDIA driver.
type XIDEvent struct {
	Code     int       `json:"code"`
	GPU      *int      `json:"gpu,omitempty"`
	PCIBusID string    `json:"pci_bus_id,omitempty"`
	Time     time.Time `json:"time,omitempty"`
	Source   string    `json:"source"` // "nvml-event" or "kmsg"
	Message  string    `json:"message,omitempty"`
	XIDInfo
}

// XIDInfo is what a code means and what to do about it. Known is false
// for codes the table does not hold: they are reported, never guessed.
type XIDInfo struct {
	Known   bool   `json:"known"`
	Meaning string `json:"meaning,omitempty"`
	Action  string `json:"action,omitempty"`
	// Hardware is true when the code points at the GPU or its link rather
	// than at the application.
	Hardware bool `json:"hardware,omitempty"`
}

// xidTable holds the codes operators meet most on data-centre GPUs, in
// gpulab's words, after NVIDIA's Xid documentation.
var xidTable = map[int]XIDInfo{
	13:  {true, "Graphics engine exception: usually the application (illegal instruction or address, out-of-range access)", "Check the application (compute-sanitizer); if several unrelated jobs hit it on this GPU, run diagnostics (dcgmi diag -r 2)", false},
	31:  {true, "GPU memory page fault: the application touched memory it does not own (MMU fault)", "Debug the application; a driver or hardware cause is rare unless it repeats across jobs", false},
	32:  {true, "Invalid or corrupted push buffer stream: commands reached the GPU damaged, often over PCIe", "Check the PCIe link (downtraining, AER errors in dmesg), risers and system memory; run diagnostics", true},
	43:  {true, "GPU stopped processing: a channel was reset after an application fault; the GPU itself is fine", "Look at the application that was running; no action on the GPU", false},
	45:  {true, "Preemptive cleanup after earlier errors: a process was torn down (killed, or by a preceding Xid)", "Find the Xid that came before it; alone it needs no action", false},
	48:  {true, "Double-bit ECC error: an uncorrectable memory error", "Drain the node; reset the GPU (on A100 and newer the row is remapped at reset); replace the GPU if it recurs", true},
	61:  {true, "Internal micro-controller breakpoint or warning (PMU firmware)", "Reset the GPU; collect nvidia-bug-report.sh and contact the vendor if it recurs", true},
	62:  {true, "Internal micro-controller halt (PMU firmware stopped)", "Drain and reset the GPU or reboot; replace the GPU if it recurs", true},
	63:  {true, "ECC page retirement or row remapping recorded", "No immediate action: schedule a GPU reset to apply the remap; watch remapped-row counts", true},
	64:  {true, "ECC page retirement or row remapping could not be recorded", "Drain and reset the GPU; replace it if the failure repeats", true},
	68:  {true, "Video decoder (NVDEC) exception", "Check the application using the decoder; update the driver if it repeats across applications", false},
	69:  {true, "Graphics engine class error", "Check the application; update the driver if it repeats across applications", false},
	74:  {true, "NVLink error: a link or NVSwitch reported a fault", "Check nvidia-smi nvlink -e and the fabric manager; reset the GPUs on the link; reseat or replace hardware if it recurs", true},
	79:  {true, "GPU has fallen off the bus: it stopped answering on PCIe", "Drain the node and reboot; check PCIe slot, power and cooling; likely hardware if it recurs", true},
	92:  {true, "High single-bit ECC error rate", "Watch the corrected-error counters; reset the GPU; replace it if the rate stays high", true},
	94:  {true, "Contained ECC error: an uncorrectable error was contained to the processes using that memory", "Restart the affected applications; reset the GPU when convenient to remap the row", true},
	95:  {true, "Uncontained ECC error: every application on the GPU is affected", "Drain the node and reset the GPU now; replace it if it recurs", true},
	119: {true, "GSP RPC timeout: the GPU System Processor firmware stopped answering", "Reset the GPU or reboot; update the driver; collect nvidia-bug-report.sh if it recurs", true},
	120: {true, "GSP error: the GPU System Processor firmware reported an error", "Reset the GPU or reboot; collect nvidia-bug-report.sh", true},
	154: {true, "GPU recovery action changed: the driver says what recovery the GPU now needs", "Read the recovery action in the message (none, GPU reset, node reboot, drain and reset) and do it", true},
}

// DecodeXID returns what the table knows of code; unknown codes come back
// with Known false and no meaning.
func DecodeXID(code int) XIDInfo {
	return xidTable[code]
}

// KnownXIDs lists the codes the table holds, ascending.
func KnownXIDs() []int {
	var codes []int
	for c := range xidTable {
		codes = append(codes, c)
	}
	for i := 1; i < len(codes); i++ {
		for j := i; j > 0 && codes[j] < codes[j-1]; j-- {
			codes[j], codes[j-1] = codes[j-1], codes[j]
		}
	}
	return codes
}

// kmsgXid matches the driver's line: "NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has fallen off the bus."
var kmsgXid = regexp.MustCompile(`NVRM: Xid \(PCI:([0-9a-fA-F:.]+)\): (\d+),\s*(.*)$`)

// ParseKmsgXIDs finds Xid lines in kernel log text (dmesg, /dev/kmsg).
func ParseKmsgXIDs(text string) []XIDEvent {
	var out []XIDEvent
	for _, line := range strings.Split(text, "\n") {
		m := kmsgXid.FindStringSubmatch(strings.TrimRight(line, "\r"))
		if m == nil {
			continue
		}
		code, err := strconv.Atoi(m[2])
		if err != nil {
			continue
		}
		out = append(out, XIDEvent{Code: code, PCIBusID: m[1], Source: "kmsg", Message: strings.TrimSpace(m[3]), XIDInfo: DecodeXID(code)})
	}
	return out
}
