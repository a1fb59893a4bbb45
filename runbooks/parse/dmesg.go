package parse

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/gpulab/gpulab/probes/report"
)

func init() {
	register(Kind{Name: "dmesg-xid", Command: "dmesg -T (or journalctl -k, talosctl dmesg)", Parse: func(s string) (any, error) { return ParseDmesgXid(s) },
		Fixtures: []string{"dmesg-xid"}})
}

// KernelLog is what a kernel log says about NVIDIA GPUs.
type KernelLog struct {
	XIDs []XIDLine `json:"xids"`
	// GPUs maps a PCI bus id to the GPU UUID the driver announced there.
	GPUs map[string]string `json:"gpus"`
	// FallenOffBus lists bus ids the driver said fell off the bus, with or
	// without an Xid 79 line (some drivers print only the message).
	FallenOffBus []string `json:"fallen_off_bus"`
}

// XIDLine is one Xid (GPU) or SXid (NVSwitch) line.
type XIDLine struct {
	Time    string `json:"time,omitempty"` // as printed
	XID     int    `json:"xid"`
	SXid    bool   `json:"sxid,omitempty"` // NVSwitch error
	PCI     string `json:"pci"`
	PID     *int   `json:"pid"`
	Process string `json:"process,omitempty"`
	Message string `json:"message"`
	Line    int    `json:"line"`
	report.XIDInfo
}

var (
	// Prefixes of the log formats seen, each capturing the timestamp.
	logPrefixes = []*regexp.Regexp{
		regexp.MustCompile(`^\S+: kern:\s+\w+: \[([^\]]+)\]: `),                 // talosctl dmesg
		regexp.MustCompile(`^kern\s*:\s*\w+\s*: (\S+) `),                        // dmesg --decode --time-format iso
		regexp.MustCompile(`^\[\s*([^\]]+)\] `),                                 // dmesg, dmesg -T, dmesg --ctime
		regexp.MustCompile(`^(\w{3}\s+\d+ \d\d:\d\d:\d\d) \S+ kernel: `),        // syslog
		regexp.MustCompile(`^()kernel: `),                                       // journalctl -k, prefix trimmed
		regexp.MustCompile(`^(\d{4}-\d\d-\d\dT[\d:.,]+(?:[+-]\d\d:?\d\d|Z)?) `), // ISO timestamp only
	}
	xidRE      = regexp.MustCompile(`^(?:NVRM: |nvidia-nvswitch\d*: )(S?Xid) \(PCI:([0-9a-fA-F:.]+)\): (\d+),\s*(.*)$`)
	pidRE      = regexp.MustCompile(`^pid=('?<?\w+>?'?),\s*`)
	nameRE     = regexp.MustCompile(`^name=([^,]*),\s*`)
	gpuAtRE    = regexp.MustCompile(`NVRM: GPU at PCI:([0-9a-fA-F:.]+): (GPU-[0-9a-fA-F-]+)`)
	offBusRE   = regexp.MustCompile(`NVRM: (?:The NVIDIA )?GPU (?:at PCI:)?([0-9a-fA-F]+:[0-9a-fA-F]+:[0-9a-fA-F]+(?:\.\d)?)`)
	offBusText = "fallen off the bus"
)

// ParseDmesgXid reads Xid and SXid lines from a kernel log in any of the
// prefix styles seen (dmesg, -T, --ctime, ISO, journalctl, syslog,
// talosctl, none), with multi-line messages joined.
func ParseDmesgXid(text string) (*KernelLog, error) {
	k := &KernelLog{XIDs: []XIDLine{}, GPUs: map[string]string{}, FallenOffBus: []string{}}
	var problems errs
	ls := lines(text)
	type msg struct {
		time, text string
		line       int
	}
	var msgs []msg
	for i, l := range ls {
		if strings.TrimSpace(l) == "" {
			continue
		}
		ts, rest, ok := stripPrefix(l)
		if !ok && len(msgs) > 0 && (strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t")) {
			// A continuation line of the previous message.
			msgs[len(msgs)-1].text += " " + strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "NVRM:"))
			continue
		}
		msgs = append(msgs, msg{ts, rest, i + 1})
	}
	for _, m := range msgs {
		t := strings.TrimSpace(m.text)
		if g := gpuAtRE.FindStringSubmatch(t); g != nil {
			k.GPUs[g[1]] = g[2]
			continue
		}
		if x := xidRE.FindStringSubmatch(t); x != nil {
			code, err := strconv.Atoi(x[3])
			if err != nil {
				problems.add(m.line, "Xid code %q is not a number", x[3])
				continue
			}
			e := XIDLine{Time: m.time, XID: code, SXid: x[1] == "SXid", PCI: x[2], Line: m.line}
			rest := x[4]
			if p := pidRE.FindStringSubmatch(rest); p != nil {
				if n, err := strconv.Atoi(strings.Trim(p[1], "'")); err == nil {
					e.PID = &n
				}
				rest = rest[len(p[0]):]
			}
			if p := nameRE.FindStringSubmatch(rest); p != nil {
				if p[1] != "<unknown>" {
					e.Process = p[1]
				}
				rest = rest[len(p[0]):]
			}
			e.Message = strings.TrimSpace(rest)
			if !e.SXid {
				e.XIDInfo = report.DecodeXID(code)
			}
			k.XIDs = append(k.XIDs, e)
			if code == 79 && !e.SXid {
				k.addOffBus(e.PCI)
			}
			continue
		}
		if strings.Contains(t, offBusText) {
			if o := offBusRE.FindStringSubmatch(t); o != nil {
				k.addOffBus(o[1])
			}
		}
	}
	return k, problems.err()
}

func (k *KernelLog) addOffBus(pci string) {
	pci = strings.TrimSuffix(strings.ToLower(pci), ".0")
	for _, p := range k.FallenOffBus {
		if p == pci {
			return
		}
	}
	k.FallenOffBus = append(k.FallenOffBus, pci)
}

func stripPrefix(l string) (ts, rest string, ok bool) {
	for _, re := range logPrefixes {
		if m := re.FindStringSubmatch(l); m != nil {
			return strings.TrimSpace(m[1]), l[len(m[0]):], true
		}
	}
	t := strings.TrimSpace(l)
	if strings.HasPrefix(t, "NVRM:") || strings.HasPrefix(t, "nvidia-nvswitch") {
		return "", t, !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "\t")
	}
	return "", l, false
}
