package parse

import (
	"cmp"
	"regexp"
	"strconv"
	"strings"

	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/probes/report"
)

func init() {
	register(Kind{Name: "dmesg-xid", Command: "dmesg -T (or journalctl -k, talosctl dmesg, a syslog file)", Parse: func(s string) (any, error) { return ParseDmesgXid(s) },
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
	// Lines counts the kernel log lines read (each with a log prefix, or
	// an NVRM line without one); First and Last are the first and last
	// timestamps seen, as printed: what "no Xid" was read over.
	Lines int    `json:"lines"`
	First string `json:"first,omitempty"`
	Last  string `json:"last,omitempty"`
	// Host are the host's own faults the log states: OOM kills, hung
	// tasks, EDAC memory errors, machine checks (hostlog.go).
	Host []HostEvent `json:"host"`

	hung, hungLine int // the open hung task (its index in Host, 1-based) and its line
}

// XIDLine is one Xid (GPU) or SXid (NVSwitch) line.
type XIDLine struct {
	Time string `json:"time,omitempty"` // as printed
	// KernelTime is the dmesg timestamp (seconds since boot) a syslog
	// line carries after its own, as printed.
	KernelTime string `json:"kernel_time,omitempty"`
	XID        int    `json:"xid"`
	SXid       bool   `json:"sxid,omitempty"` // NVSwitch error
	PCI        string `json:"pci"`
	PID        *int   `json:"pid"`
	Process    string `json:"process,omitempty"`
	Message    string `json:"message"`
	Line       int    `json:"line"`
	// Detail holds the lines an NVSwitch prints after an SXid's first
	// ("Severity 0 Engine instance 42 ...", "Data {...}"): the same event.
	Detail []string `json:"detail,omitempty"`
	report.XIDInfo
}

var (
	// Prefixes of the log formats seen, each capturing the timestamp.
	// Order matters: a syslog or journal prefix ends in "kernel: ", the
	// bare ISO one would take its timestamp and leave "host kernel: ".
	logPrefixes = []*regexp.Regexp{
		regexp.MustCompile(`^\S+: kern:\s+\w+: \[([^\]]+)\]: `), // talosctl dmesg
		regexp.MustCompile(`^kern\s*:\s*\w+\s*: \[([^\]]+)\] `), // dmesg --decode, -x -T
		regexp.MustCompile(`^kern\s*:\s*\w+\s*: (\S+) `),        // dmesg --decode --time-format iso
		regexp.MustCompile(`^\[\s*(\d+\.\d+)\] \S+ kernel: `),   // journalctl -o short-monotonic
		regexp.MustCompile(`^(\d+\.\d+) \S+ kernel: `),          // journalctl -o short-unix
		regexp.MustCompile(`^<\d+>\[\s*([^\]]+)\] `),            // dmesg -r (raw: the level first)
		regexp.MustCompile(`^<\d+>()`),                          // dmesg -r without timestamps
		regexp.MustCompile(`^\[\s*([^\]]+)\] `),                 // dmesg, dmesg -T, dmesg --ctime
		// syslog files and journalctl (short, short-precise), the month
		// as the locale writes it: "Dec  2", "Okt 06", "6月 28".
		regexp.MustCompile(`^(\S+\s+\d+ \d\d:\d\d:\d\d(?:\.\d+)?) \S+ kernel: `),
		// rsyslog's RFC 3339 default, journalctl -o short-iso(-precise).
		regexp.MustCompile(`^(\d{4}-\d\d-\d\dT[\d:.,]+(?:[+-]\d\d:?\d\d|Z)?) \S+ kernel: `),
		regexp.MustCompile(`^()kernel: `),                                       // journalctl -k, prefix trimmed
		regexp.MustCompile(`^(\d{4}-\d\d-\d\dT[\d:.,]+(?:[+-]\d\d:?\d\d|Z)?) `), // ISO timestamp only
	}
	// kernelTS is the dmesg timestamp that older kernels and rsyslog
	// configurations keep after a syslog prefix ("kernel: [240314.528856]").
	kernelTS = regexp.MustCompile(`^\[\s*(\d+\.\d+)\] ?`)
	// xidRE is an Xid or SXid line: "(PCI:0000:3b:00)" on current
	// drivers, "(0000:3b:00)" on old ones, with what follows the address
	// inside the parentheses ("GPU-I:01") kept out of PCI.
	xidRE = regexp.MustCompile(`^(?:NVRM: |nvidia-nvswitch\d*: )(S?Xid) \((?:PCI:)?([0-9a-fA-F]+:[0-9a-fA-F:.]+)(?:\s[^)]*)?\): (\d+)(?:,\s*(.*))?$`)
	// xidStart is any line that says it is an Xid: one xidRE does not
	// read is a parse problem, never "no Xid".
	xidStart   = regexp.MustCompile(`^(?:NVRM: |nvidia-nvswitch\d*: )S?Xid\b`)
	pidRE      = regexp.MustCompile(`^pid=('?<?\w+>?'?),\s*`)
	nameRE     = regexp.MustCompile(`^name=([^,]*),\s*`)
	gpuAtRE    = regexp.MustCompile(`NVRM: GPU at PCI:([0-9a-fA-F:.]+): (GPU-[0-9a-fA-F-]+)`)
	offBusRE   = regexp.MustCompile(`NVRM: (?:The NVIDIA )?GPU (?:at PCI:)?([0-9a-fA-F]+:[0-9a-fA-F]+:[0-9a-fA-F]+(?:\.\d)?)`)
	offBusText = "fallen off the bus"
)

// ParseDmesgXid reads Xid and SXid lines from a kernel log in any of the
// prefix styles seen (dmesg, -T, --ctime, ISO, journalctl, syslog with or
// without the dmesg timestamp after "kernel:", RFC 3339 syslog, talosctl,
// none), with multi-line messages joined.
func ParseDmesgXid(text string) (*KernelLog, error) {
	k := &KernelLog{XIDs: []XIDLine{}, GPUs: map[string]string{}, FallenOffBus: []string{}, Host: []HostEvent{}}
	var problems errs
	// One message at a time: its first line, then its continuation lines
	// in a builder (a message may run to megabytes: joining each line with
	// += would copy it once per line). Lines are read in place, never
	// split into a slice, and a message is read as soon as the next one
	// starts: a big log costs no memory beyond what it reports.
	var (
		cur     struct{ time, ktime, text string }
		curLine int // 0: no message yet
		more    strings.Builder
	)
	flush := func() {
		if curLine == 0 {
			return
		}
		t := cur.text
		if more.Len() > 0 {
			t += more.String()
			more.Reset()
		}
		k.readMessage(strings.TrimSpace(t), cur.time, cur.ktime, curLine, &problems)
	}
	for i, l := range eachLine(text) {
		if strings.TrimSpace(l) == "" {
			continue
		}
		ts, kts, rest, ok := stripPrefix(l)
		if ok {
			k.Lines++
			if ts != "" {
				k.First, k.Last = cmp.Or(k.First, ts), ts
			}
		}
		if !ok && curLine > 0 && (strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t")) {
			// A continuation line of the previous message.
			more.WriteByte(' ')
			more.WriteString(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "NVRM:")))
			continue
		}
		flush()
		cur.time, cur.ktime, cur.text, curLine = ts, kts, rest, i+1
	}
	flush()
	if k.Lines == 0 {
		// An empty log (cleared with dmesg -C, or a command that printed
		// nothing) or text that is not a kernel log: "no Xid" read from
		// it would be no evidence at all.
		what := "empty input"
		if strings.TrimSpace(text) != "" {
			what = "no line with a kernel log prefix or an NVRM message"
		}
		problems.add(0, "%s: not a kernel log (want dmesg, journalctl -k or syslog output)", what)
	}
	return k, problems.err()
}

// readMessage records what one kernel message (its continuation lines
// joined) says: a GPU's UUID, an Xid, a GPU fallen off the bus.
func (k *KernelLog) readMessage(t, ts, kts string, line int, problems *errs) {
	k.readHostMessage(t, ts, line)
	if g := gpuAtRE.FindStringSubmatch(t); g != nil {
		k.GPUs[g[1]] = g[2]
		return
	}
	if x := xidRE.FindStringSubmatch(t); x != nil {
		code, err := strconv.Atoi(x[3])
		if err != nil {
			problems.add(line, "Xid code %q is not a number", x[3])
			return
		}
		e := XIDLine{Time: ts, KernelTime: kts, XID: code, SXid: x[1] == "SXid", PCI: x[2], Line: line}
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
		if e.SXid && report.SXidDetail(e.Message) && k.addSXidDetail(e) {
			return
		}
		if e.SXid {
			e.XIDInfo = report.DecodeSXID(code, e.Message)
		} else {
			e.XIDInfo = report.DecodeXIDMessage(code, e.Message)
		}
		k.XIDs = append(k.XIDs, e)
		if code == 79 && !e.SXid {
			k.addOffBus(e.PCI)
		}
		return
	}
	if xidStart.MatchString(t) || strings.Contains(t, "NVRM: Xid") || strings.Contains(t, "SXid (") {
		// Anywhere in a line: a prefix gpulab does not know would
		// otherwise hide an Xid, and "no Xid" would be read from it.
		problems.add(line, "an Xid line not understood (cut, or a format gpulab does not know): %q", text.Cut(t, 200))
		return
	}
	if strings.Contains(t, offBusText) {
		if o := offBusRE.FindStringSubmatch(t); o != nil {
			k.addOffBus(o[1])
		}
	}
}

// addSXidDetail adds a detail line to the latest SXid of the same
// NVSwitch and code; false if there is none (the line then stands alone).
func (k *KernelLog) addSXidDetail(e XIDLine) bool {
	for i := len(k.XIDs) - 1; i >= 0; i-- {
		if x := &k.XIDs[i]; x.SXid && x.XID == e.XID && strings.EqualFold(x.PCI, e.PCI) {
			if len(x.Detail) < maxSXidDetail {
				x.Detail = append(x.Detail, e.Message)
			}
			return true
		}
	}
	return false
}

// maxSXidDetail bounds the detail lines kept per SXid: a switch that
// repeats its Data lines for hours costs no memory beyond these.
const maxSXidDetail = 8

func (k *KernelLog) addOffBus(pci string) {
	pci = strings.TrimSuffix(strings.ToLower(pci), ".0")
	for _, p := range k.FallenOffBus {
		if p == pci {
			return
		}
	}
	k.FallenOffBus = append(k.FallenOffBus, pci)
}

// stripPrefix splits a log line into its timestamp, the dmesg timestamp
// a syslog line may carry as well, and the kernel's message.
func stripPrefix(l string) (ts, kts, rest string, ok bool) {
	for _, re := range logPrefixes {
		if m := re.FindStringSubmatch(l); m != nil {
			rest = l[len(m[0]):]
			if k := kernelTS.FindStringSubmatch(rest); k != nil && !strings.HasPrefix(m[0], "[") {
				kts, rest = k[1], rest[len(k[0]):]
			}
			return strings.TrimSpace(m[1]), kts, rest, true
		}
	}
	t := strings.TrimSpace(l)
	if strings.HasPrefix(t, "NVRM:") || strings.HasPrefix(t, "nvidia-nvswitch") {
		return "", "", t, !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "\t")
	}
	return "", "", l, false
}
