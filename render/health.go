package render

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/internal/visible"
	"github.com/gpulab/gpulab/probes/report"
)

// The probe's health lines under its GPU table, worded once for
// `gpulab probe --no-fold` and the workbench's host view.

// XID is an Xid event with what it means and what to do: "Xid 79 on GPU3
// (00000000:4E:00.0): GPU has fallen off the bus. Action: ...", or the
// driver's own message for a code gpulab's table does not hold (never a
// guess).
func XID(x report.XIDEvent) string {
	where := visible.String(x.PCIBusID)
	if x.GPU != nil {
		where = fmt.Sprintf("GPU%d", *x.GPU)
		if x.PCIBusID != "" {
			where += " (" + visible.String(x.PCIBusID) + ")"
		}
	}
	if !x.Known {
		return fmt.Sprintf("Xid %d on %s: unknown Xid (not in gpulab's table): %s", x.Code, where, visible.String(x.Message))
	}
	return fmt.Sprintf("Xid %d on %s: %s. Action: %s", x.Code, where, x.Meaning, x.Action)
}

// XIDHistoryUnread is why the kernel's Xid history (/dev/kmsg) was not
// read, and what would read it; "" when it was.
func XIDHistoryUnread(s *report.Snapshot) string {
	e := report.KmsgUnread(s)
	switch {
	case e == nil:
		return ""
	case e.Code == "SIMULATED":
		return "Xid history (/dev/kmsg) not read: " + visible.String(e.Message)
	}
	return fmt.Sprintf("Xid history (/dev/kmsg) not read: %s: %s (a flag: the probe runs as a user who cannot read it; root or CAP_SYSLOG can)",
		visible.String(e.Code), visible.String(e.Message))
}

// FieldsNotGiven counts the fields NVML did not give, by why ("12 fields
// NVML did not give: 8 NOT_SUPPORTED, 4 NO_PERMISSION (gpulab probe
// --json lists them)"); the Xid history has its own line. "" when NVML
// gave every field.
func FieldsNotGiven(s *report.Snapshot) string {
	codes := map[string]int{}
	n := 0
	for _, e := range s.Errors {
		if e.Field == "xids.kmsg" {
			continue
		}
		codes[visible.String(e.Code)]++
		n++
	}
	if n == 0 {
		return ""
	}
	var parts []string
	for c, k := range codes {
		parts = append(parts, fmt.Sprintf("%d %s", k, c))
	}
	sort.Strings(parts)
	return fmt.Sprintf("%s NVML did not give: %s (gpulab probe --json lists them)", text.Plural(n, "field", "fields"), strings.Join(parts, ", "))
}
