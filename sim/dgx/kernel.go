package dgx

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpulab/gpulab/sim/spec"
)

func init() {
	tools["dmesg"] = dmesg
	tools["journalctl"] = journalctl
}

// kmsg is one kernel log message.
type kmsg struct {
	at    float64 // seconds after boot
	level string  // as dmesg --decode names it: info, warn, err
	text  string
}

// kernelLog is what the host's kernel said about its GPUs since boot: the
// driver's banner, then for each Xid in time order the lines the driver
// prints. Before a GPU's first Xid it names the GPU ("GPU at PCI:...:
// UUID", "GPU Board Serial Number"), as recorded in
// testdata/fixtures/dmesg-xid/rtx5090-xid79-fallen-off-bus-gsp-rc-no-timestamps.txt
// and talos-8x-a100-sxid24007-xid62-xid45.txt; an Xid 79 is followed by
// "GPU ...: GPU has fallen off the bus." as in
// syslog-zh-locale-month-xid79-then-dmesg-rtx4090.txt.
func (h *Host) kernelLog() []kmsg {
	log := []kmsg{{at: 4.718932, level: "info",
		text: "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  " + spec.Driver + "  Thu Oct 19 18:56:32 UTC 2023"}}
	named := map[int]bool{}
	for _, x := range h.Faults.XIDs {
		if !named[x.GPU] {
			named[x.GPU] = true
			log = append(log,
				kmsg{x.SecondsAfterBoot, "warn", fmt.Sprintf("NVRM: GPU at PCI:%s: %s", spec.KernelBusID(x.GPU), h.uuid(x.GPU))},
				kmsg{x.SecondsAfterBoot, "warn", "NVRM: GPU Board Serial Number: " + h.serial(x.GPU)})
		}
		log = append(log, kmsg{x.SecondsAfterBoot, "warn", fmt.Sprintf("NVRM: Xid (PCI:%s): %d, %s", spec.KernelBusID(x.GPU), x.Code, x.Message)})
		if x.Code == 79 {
			log = append(log, kmsg{x.SecondsAfterBoot + 0.000006, "err",
				fmt.Sprintf("NVRM: GPU %s.0: GPU has fallen off the bus.", spec.KernelBusID(x.GPU))})
		}
	}
	for _, x := range h.Faults.SXids {
		log = append(log, sxidLines(x)...)
	}
	for _, l := range h.Faults.KernelLog {
		log = append(log, kmsg{l.SecondsAfterBoot, cmp.Or(l.Level, "info"), l.Text})
	}
	sort.SliceStable(log, func(i, j int) bool { return log[i].at < log[j].at })
	return log
}

// sxidLines are an SXid as an NVSwitch prints it: its line, then its
// severity and data lines under the same code, as recorded in
// testdata/fixtures/dmesg-xid/service-vm-4x-nvswitch-sxid11004-severity-data-lines.txt.
func sxidLines(x spec.SXID) []kmsg {
	head := fmt.Sprintf("nvidia-nvswitch%d: SXid (PCI:0000:%02x:00.0): %d, ", x.Switch, spec.SwitchBus[x.Switch], x.Code)
	link, severity := 0, 0
	if f := strings.Fields(x.Message); len(f) > 2 && f[1] == "Link" {
		link, _ = strconv.Atoi(f[2])
	}
	if strings.HasPrefix(x.Message, "Fatal") {
		severity = 1
	}
	return []kmsg{
		{x.SecondsAfterBoot, "err", head + x.Message},
		{x.SecondsAfterBoot + 0.000255, "err", fmt.Sprintf("%sSeverity %d Engine instance %02d Sub-engine instance 00", head, severity, link)},
		{x.SecondsAfterBoot + 0.002242, "err", head + "Data {0x00000008, 0xff9fc39c, 0x00000008, 0xff9fc39c, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000}"},
	}
}

func (h *Host) at(m kmsg) time.Time {
	return h.boot().Add(time.Duration(m.at * float64(time.Second)))
}

// dmesg prints the kernel log: "[ seconds.micros] " by default, the wall
// clock with -T or --ctime ("[Thu Jan  4 10:46:12 2024] ", as in
// testdata/fixtures/dmesg-xid/dmesg-T-8x-a100-xid119-gsp-timeout-banners.txt),
// with --decode (-x) the facility and level first, with --time-format iso
// the ISO stamp (dmesg-xid/gpud-xid13-sm-exceptions-then-xid43-iso-decode.txt).
func dmesg(_ context.Context, h *Host, t *term, args []string) int {
	format, decode := "raw", false
	for k := 1; k < len(args); k++ {
		switch a := args[k]; {
		case a == "-T" || a == "--ctime":
			format = "ctime"
		case a == "-x" || a == "--decode":
			decode = true
		case a == "--time-format" && k+1 < len(args) || strings.HasPrefix(a, "--time-format="):
			v, ok := strings.CutPrefix(a, "--time-format=")
			if !ok {
				k++
				v = args[k]
			}
			if v != "ctime" && v != "iso" && v != "raw" {
				return t.fail(1, fmt.Sprintf("dmesg: unknown time format: %s\n", v))
			}
			format = v
		case a == "-k" || a == "--kernel" || a == "-L" || a == "--color=never":
		default:
			return t.fail(1, fmt.Sprintf("dmesg: unrecognized option '%s'\nTry 'dmesg --help' for more information.\n", a))
		}
	}
	var b strings.Builder
	for _, m := range h.kernelLog() {
		if decode {
			fmt.Fprintf(&b, "kern  :%-6s: ", m.level)
		}
		switch format {
		case "ctime":
			fmt.Fprintf(&b, "[%s] ", h.at(m).Format("Mon Jan _2 15:04:05 2006"))
		case "iso":
			b.WriteString(h.at(m).Format("2006-01-02T15:04:05,000000-07:00") + " ")
		default:
			sec := int64(m.at)
			fmt.Fprintf(&b, "[%5d.%06d] ", sec, int64((m.at-float64(sec))*1e6+0.5))
		}
		b.WriteString(m.text + "\n")
	}
	t.print(b.String())
	return 0
}

// journalctlFormats are the -o forms answered, by the timestamp each
// prefixes ("Jan 04 10:46:12 HOST kernel: ..."): the syslog-style and ISO
// prefixes gpulab's parser reads (testdata/fixtures/dmesg-xid/
// rsyslog-rfc3339-xid79-xid154-rtx4080.txt for the ISO form).
var journalctlFormats = map[string]string{
	"short":             "Jan 02 15:04:05",
	"short-precise":     "Jan 02 15:04:05.000000",
	"short-iso":         "2006-01-02T15:04:05-0700",
	"short-iso-precise": "2006-01-02T15:04:05.000000-07:00",
	"short-full":        "Mon 2006-01-02 15:04:05 MST",
	"cat":               "",
}

// journalctl answers journalctl -k (the kernel's messages) with the flags
// the runbooks use: --no-pager, -q, -n N, -b, -o FORMAT (short,
// short-precise, short-iso, short-iso-precise, short-full, cat). Without
// -q it first prints systemd 249's (Ubuntu 22.04, DGX OS 6) range line.
func journalctl(_ context.Context, h *Host, t *term, args []string) int {
	kernel, quiet, format, lines := false, false, "short", -1
	for k := 1; k < len(args); k++ {
		a := args[k]
		val := func() (string, bool) {
			if v, ok := strings.CutPrefix(a, "--output="); ok {
				return v, true
			}
			if v, ok := strings.CutPrefix(a, "--lines="); ok {
				return v, true
			}
			if k+1 < len(args) {
				k++
				return args[k], true
			}
			return "", false
		}
		switch {
		case a == "-k" || a == "--dmesg":
			kernel = true
		case a == "-q" || a == "--quiet":
			quiet = true
		case a == "--no-pager" || a == "-b" || a == "--boot":
		case a == "-o" || a == "--output" || strings.HasPrefix(a, "--output="):
			v, ok := val()
			if _, known := journalctlFormats[v]; !ok || !known {
				return t.fail(1, fmt.Sprintf("Unknown output format '%s'.\n", v))
			}
			format = v
		case a == "-n" || a == "--lines" || strings.HasPrefix(a, "--lines="):
			v, _ := val()
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return t.fail(1, fmt.Sprintf("Failed to parse lines '%s'\n", v))
			}
			lines = n
		default:
			return t.fail(1, fmt.Sprintf("journalctl: unrecognized option '%s'\n", a))
		}
	}
	if !kernel {
		return t.fail(1, "journalctl: only the kernel's messages (-k) are simulated\n")
	}
	log := h.kernelLog()
	if lines >= 0 && lines < len(log) {
		log = log[len(log)-lines:]
	}
	var b strings.Builder
	if !quiet && format != "cat" {
		fmt.Fprintf(&b, "-- Journal begins at %s, ends at %s. --\n",
			h.boot().Format("Mon 2006-01-02 15:04:05 MST"), h.now().Format("Mon 2006-01-02 15:04:05 MST"))
	}
	for _, m := range log {
		if layout := journalctlFormats[format]; layout != "" {
			fmt.Fprintf(&b, "%s %s kernel: %s\n", h.at(m).Format(layout), h.Name, m.text)
		} else {
			b.WriteString(m.text + "\n")
		}
	}
	t.print(b.String())
	return 0
}
