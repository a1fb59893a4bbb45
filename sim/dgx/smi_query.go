package dgx

import (
	"fmt"
	"strings"

	"github.com/gpulab/gpulab/sim/spec"
)

// smiQuery is nvidia-smi -q: the recorded -q of an 8x A100-SXM4-40GB on
// driver 535.129.03 (recorded/nvidia-smi-q/...), GPU by GPU, with what a
// simulated host must say differently:
//
//   - the timestamp (the host's clock);
//
//   - the PCI bus ids (the recording's board is not a DGX: its GPUs sit at
//     2F, 35, ...; a DGX A100's at 07, 0F, ...) in the GPU line, Bus,
//     Bus Id and Board ID;
//
//   - Persistence Mode Enabled (DGX OS runs nvidia-persistenced; the
//     recording's host did not);
//
//   - the faults: MIG mode and devices, ECC counters, remapped rows.
//
//   - the serials and UUIDs, the machine's own (spec.Serial, spec.UUID).
//
// Everything else is the recording's. With
// -d, each GPU block keeps only the sections named (querySections).
func (h *Host) smiQuery(gpus []int, keep map[string]bool) string {
	header, blocks := queryBlocks()
	var b strings.Builder
	b.WriteString(strings.Replace(header, "Thu Jan  4 14:41:13 2024", h.now().Format("Mon Jan _2 15:04:05 2006"), 1))
	for _, i := range gpus {
		block := h.queryBlock(i, blocks[i])
		if keep != nil {
			block = filterSections(block, keep)
		}
		b.WriteString(block)
	}
	return b.String()
}

// querySections are the -q sections each -d TYPE shows.
var querySections = map[string][]string{
	"MEMORY":          {"FB Memory Usage", "BAR1 Memory Usage", "Conf Compute Protected Memory Usage"},
	"UTILIZATION":     {"Utilization", "Encoder Stats", "FBC Stats"},
	"ECC":             {"ECC Mode", "ECC Errors"},
	"TEMPERATURE":     {"Temperature"},
	"POWER":           {"GPU Power Readings", "Module Power Readings"},
	"CLOCK":           {"Clocks", "Applications Clocks", "Default Applications Clocks", "Deferred Clocks", "Max Clocks", "Max Customer Boost Clocks", "Clock Policy"},
	"COMPUTE":         {"Compute Mode"},
	"PIDS":            {"Processes"},
	"PERFORMANCE":     {"Performance State", "Clocks Event Reasons"},
	"PAGE_RETIREMENT": {"Retired Pages", "Remapped Rows"},
	"ROW_REMAPPER":    {"Remapped Rows"},
	"VOLTAGE":         {"Voltage"},
	"RESET_STATUS":    {"GPU Reset Status"},
	"ACCOUNTING":      {"Accounting Mode", "Accounting Mode Buffer Size"},
}

// displayFilter reads -d TYPE[,TYPE]: the top-level sections to keep;
// nil without -d, ok false for a type nvidia-smi would refuse.
func displayFilter(a flags) (keep map[string]bool, ok bool) {
	v, given := a.value("-d", "--display")
	if !given {
		return nil, true
	}
	keep = map[string]bool{}
	for _, d := range strings.Split(v, ",") {
		secs, known := querySections[strings.ToUpper(strings.TrimSpace(d))]
		if !known {
			return nil, false
		}
		for _, s := range secs {
			keep[s] = true
		}
	}
	return keep, true
}

// filterSections keeps a GPU block's "GPU ..." line, the top-level
// entries named in keep with what is indented under them, and the blank
// line that ends the block.
func filterSections(block string, keep map[string]bool) string {
	var out []string
	in := false
	for _, l := range strings.Split(block, "\n") {
		switch {
		case l == "" || strings.HasPrefix(l, "GPU "):
			out, in = append(out, l), false
		case strings.HasPrefix(l, "    ") && !strings.HasPrefix(l, "        "):
			key, _, _ := strings.Cut(strings.TrimSpace(l), " : ")
			in = keep[strings.TrimSpace(key)]
			if in {
				out = append(out, l)
			}
		case in:
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// queryBlock rewrites one recorded GPU block for GPU i.
func (h *Host) queryBlock(i int, block string) string {
	// The recording's serial and UUID are this machine's own.
	block = strings.ReplaceAll(strings.ReplaceAll(block, spec.UUIDs[i], h.uuid(i)), spec.Serials[i], h.serial(i))
	set := h.queryValues(i)
	var out []string
	var stack []string
	lines := strings.Split(block, "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "GPU ") {
			out = append(out, "GPU "+spec.BusID(i))
			continue
		}
		t := strings.TrimSpace(l)
		level := (len(l) - len(strings.TrimLeft(l, " "))) / 4
		if t == "" || level < 1 {
			out = append(out, l)
			continue
		}
		if len(stack) > level-1 {
			stack = stack[:level-1]
		}
		key, _, isKV := strings.Cut(t, " : ")
		key = strings.TrimSpace(key)
		path := strings.Join(append(append([]string{}, stack...), key), "/")
		if !isKV && !strings.HasSuffix(t, ":") {
			stack = append(stack, t)
		}
		if v, ok := set[path]; ok && isKV {
			l = l[:strings.Index(l, " : ")+3] + v
		}
		out = append(out, l)
		if path == "MIG Mode/Pending" {
			out = append(out, h.migDevicesQuery(i)...)
		}
	}
	return strings.Join(out, "\n")
}

// queryValues are the fields of GPU i's -q block the host sets, by path.
func (h *Host) queryValues(i int) map[string]string {
	bus := spec.BusIDs[i]
	e := h.Faults.ECCFor(i)
	corr, unc, pending := h.Faults.RemappedRows(i)
	v := map[string]string{
		"Persistence Mode":                                     "Enabled",
		"Board ID":                                             fmt.Sprintf("%#x", bus<<8),
		"PCI/Bus":                                              fmt.Sprintf("0x%02X", bus),
		"PCI/Bus Id":                                           spec.BusID(i),
		"ECC Errors/Volatile/DRAM Correctable":                 fmt.Sprint(e.VolatileCorrected),
		"ECC Errors/Volatile/DRAM Uncorrectable":               fmt.Sprint(e.VolatileUncorrected),
		"ECC Errors/Aggregate/DRAM Correctable":                fmt.Sprint(e.AggregateCorrected),
		"ECC Errors/Aggregate/DRAM Uncorrectable":              fmt.Sprint(e.AggregateUncorrected),
		"Remapped Rows/Correctable Error":                      fmt.Sprint(corr),
		"Remapped Rows/Uncorrectable Error":                    fmt.Sprint(unc),
		"Remapped Rows/Pending":                                yesNo(pending),
		"MIG Mode/Current":                                     enabled(h.Faults.MIGOn(i)),
		"MIG Mode/Pending":                                     enabled(h.Faults.MIGOn(i)),
		"FB Memory Usage/Used":                                 fmt.Sprintf("%d MiB", h.memoryUsed(i)),
		"FB Memory Usage/Free":                                 fmt.Sprintf("%d MiB", h.Faults.MemoryFreeMiB(i)),
		"Remapped Rows/Bank Remap Availability Histogram/Max":  "640 bank(s)",
		"Remapped Rows/Bank Remap Availability Histogram/High": "0 bank(s)",
	}
	h.stateValues(i, v)
	if pending {
		// A remapped row takes a bank from Max to High, as in
		// testdata/fixtures/nvidia-smi-q/a100-sxm4-80gb-drv510-ecc-remap-excerpt.txt.
		v["Remapped Rows/Bank Remap Availability Histogram/Max"] = "639 bank(s)"
		v["Remapped Rows/Bank Remap Availability Histogram/High"] = "1 bank(s)"
	}
	return v
}

// stateValues sets the fields of GPU i's -q block that the state knobs
// change: PCIe generation and replays, clock-event reasons, temperature,
// power limit, reset status and VBIOS (the fields the probe reads from
// NVML, in nvidia-smi's words).
func (h *Host) stateValues(i int, v map[string]string) {
	f := h.Faults
	gen := fmt.Sprint(f.LinkGen(i))
	v["PCI/GPU Link Info/PCIe Generation/Current"] = gen
	v["PCI/GPU Link Info/PCIe Generation/Device Current"] = gen
	v["PCI/Replays Since Reset"] = fmt.Sprint(f.PCIeReplays[i])
	v["VBIOS Version"] = f.VBIOSOf()
	active := map[string]string{}
	for _, r := range f.Throttle[i] {
		active[r] = "Active"
	}
	for key, reason := range map[string]string{"SW Power Cap": "sw_power_cap", "HW Slowdown": "hw_slowdown",
		"HW Thermal Slowdown": "hw_thermal_slowdown", "HW Power Brake Slowdown": "hw_power_brake_slowdown",
		"SW Thermal Slowdown": "sw_thermal_slowdown"} {
		if a, ok := active[reason]; ok {
			v["Clocks Event Reasons/"+key] = a
		}
	}
	if f.UtilizationOf(i) > 0 {
		v["Clocks Event Reasons/Idle"] = "Not Active"
	}
	v["Temperature/GPU Current Temp"] = fmt.Sprintf("%d C", f.Temperature(i))
	limit := fmt.Sprintf("%d.00 W", f.PowerLimit(i))
	v["GPU Power Readings/Current Power Limit"] = limit
	v["GPU Power Readings/Requested Power Limit"] = limit
	if st := f.FabricState(i); st != "" {
		v["Fabric/State"], v["Fabric/Status"] = fabricWords[st][0], fabricWords[st][1]
	}
	switch f.RecoveryAction[i] {
	case "gpu_reset":
		v["GPU Reset Status/Reset Required"] = "Yes"
	case "drain_and_reset":
		v["GPU Reset Status/Reset Required"] = "Yes"
		v["GPU Reset Status/Drain and Reset Recommended"] = "Yes"
	}
}

// fabricWords are the Fabric section's State and Status for a fabric
// state, as nvidia-smi -q prints them.
var fabricWords = map[string][2]string{
	"completed": {"Completed", "Success"}, "not_started": {"Not Started", "N/A"},
	"in_progress": {"In Progress", "N/A"}, "failed": {"Completed", "Unknown Error"},
}

func yesNo(b bool) string {
	if b {
		return "Yes"
	}
	return "No"
}

// qline is a -q line: the key padded so that the colon sits at column 43.
func qline(indent int, key, value string) string {
	return fmt.Sprintf("%-42s: %s", strings.Repeat("    ", indent)+key, value)
}

// migDevicesQuery is the MIG Devices section of GPU i's -q block: the
// fields and order of the recorded -q -x's <mig_devices>
// (testdata/fixtures/nvidia-smi-q-x/a100-sxm4-40gb-mig-enabled-drv510.xml.txt),
// in -q's text form. Nil when MIG is off.
func (h *Host) migDevicesQuery(i int) []string {
	gis := h.Faults.Instances(i)
	if gis == nil {
		return nil
	}
	out := []string{"    MIG Devices"}
	for _, g := range gis {
		p, used := g.Profile, migUsedMiB(g.Profile)
		out = append(out, "        MIG Device",
			qline(3, "Index", fmt.Sprint(g.Device)),
			qline(3, "GPU Instance ID", fmt.Sprint(g.ID)),
			qline(3, "Compute Instance ID", "0"),
			"            Device Attributes",
			"                Shared",
			qline(5, "Multiprocessor count", fmt.Sprint(p.SMs)),
			qline(5, "Copy Engine count", fmt.Sprint(p.CE)),
			qline(5, "Encoder count", fmt.Sprint(p.ENC)),
			qline(5, "Decoder count", fmt.Sprint(p.DEC)),
			qline(5, "OFA count", fmt.Sprint(p.OFA)),
			qline(5, "JPG count", fmt.Sprint(p.JPEG)),
			"            ECC Errors",
			"                Volatile",
			qline(5, "SRAM Uncorrectable", "0"),
			"            FB Memory Usage",
			qline(4, "Total", fmt.Sprintf("%d MiB", p.MemoryMiB)),
			qline(4, "Reserved", "0 MiB"),
			qline(4, "Used", fmt.Sprintf("%d MiB", used)),
			qline(4, "Free", fmt.Sprintf("%d MiB", p.MemoryMiB-used-1)),
			"            BAR1 Memory Usage",
			qline(4, "Total", fmt.Sprintf("%d MiB", migBAR1MiB(p))),
			qline(4, "Used", "0 MiB"),
			qline(4, "Free", fmt.Sprintf("%d MiB", migBAR1MiB(p))))
	}
	return out
}
