package parse

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
)

func init() {
	register(Kind{Name: "nccl-debug", Command: "NCCL_DEBUG=INFO logs (NCCL_DEBUG_SUBSYS=INIT,GRAPH,NET)", Parse: func(s string) (any, error) { return ParseNCCL(s) },
		Fixtures: []string{"nccl-debug-info"}})
}

// NCCL is what an NCCL_DEBUG=INFO log says about how ranks talk.
type NCCL struct {
	Version string `json:"version,omitempty"`
	// Transport is the network NCCL chose: "NET/IB", "NET/Socket", or ""
	// when the log does not say.
	Transport string `json:"transport,omitempty"`
	// HCAs are the InfiniBand/RoCE devices it found or used.
	HCAs []NCCLHCA `json:"hcas"`
	// SocketInterfaces are the interfaces NET/Socket or bootstrap used.
	SocketInterfaces []string `json:"socket_interfaces"`
	GDRDMA           bool     `json:"gdrdma"`
	// Channels counts connections by how they go: "P2P/IPC", "NET/IB/0/GDRDMA", "SHM", ...
	Channels map[string]int `json:"channels"`
	// Env lists NCCL_* settings the log reports as set by environment.
	Env      map[string]string `json:"env"`
	Warnings []NCCLWarning     `json:"warnings"`
	Ranks    *int              `json:"nranks"`
	Nodes    *int              `json:"nnodes"`
}

// NCCLHCA is one network device.
type NCCLHCA struct {
	Name     string `json:"name"`
	Port     *int   `json:"port,omitempty"`
	LinkType string `json:"link_type,omitempty"` // "IB" or "RoCE"
	SpeedMb  *int   `json:"speed_mbps,omitempty"`
}

// NCCLWarning is a WARN line, with its continuation when the poster's
// terminal wrapped it.
type NCCLWarning struct {
	Source  string `json:"source,omitempty"` // file:line
	Message string `json:"message"`
	Line    int    `json:"line"`
}

var (
	ncclPrefix   = regexp.MustCompile(`^(?:\[[^\]]*\] )?(\S+?):(\d+):(\d+) \[(\d+)\] (?:(\S+:\d+) )?NCCL (INFO|WARN) (.*)$`)
	ncclVersion  = regexp.MustCompile(`NCCL version (\S+)`)
	ncclUsingIB  = regexp.MustCompile(`^NET/IB ?: Using (.*)$`)
	ncclIBDev    = regexp.MustCompile(`\[\d+\](\w+):(\d+)/(IB|RoCE)`)
	ncclIBDisc   = regexp.MustCompile(`^NET/IB ?: \[\d+\] (\w+):\S*?:(\d+)/(IB|RoCE).*?speed=(\d+)`)
	ncclVirt     = regexp.MustCompile(`^NET/IB ?: Made virtual device \[\d+\] name=(\w+) speed=(\d+)`)
	ncclSocket   = regexp.MustCompile(`^NET/Socket ?: Using (.*)$`)
	ncclBoot     = regexp.MustCompile(`^Bootstrap ?: Using (\S+?):`)
	ncclIface    = regexp.MustCompile(`\[\d+\]([\w.-]+):`)
	ncclChannel  = regexp.MustCompile(`^Channel \d+/\d+ : .* via (\S+)`)
	ncclEnv      = regexp.MustCompile(`^(NCCL_\w+) set by environment to (.*)$`)
	ncclComm     = regexp.MustCompile(`nRanks (\d+) nNodes (\d+)`)
	ncclPXNSuffx = regexp.MustCompile(`\(\d+\)`)
)

// ParseNCCL reads an NCCL INFO log from any number of ranks and hosts.
func ParseNCCL(text string) (*NCCL, error) {
	r := &ncclReader{n: &NCCL{HCAs: []NCCLHCA{}, SocketInterfaces: []string{}, Channels: map[string]int{}, Env: map[string]string{}, Warnings: []NCCLWarning{}},
		hcas: map[string]int{}, ifaces: map[string]bool{}}
	n := r.n
	seen := 0
	for i, l := range lines(text) {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		m := ncclPrefix.FindStringSubmatch(t)
		if m == nil {
			r.unprefixed(i, t)
			continue
		}
		seen++
		level, msg := m[6], m[7]
		if level == "WARN" {
			n.Warnings = append(n.Warnings, NCCLWarning{Source: m[5], Message: msg, Line: i + 1})
			if strings.Contains(msg, "libibverbs") && n.Transport == "" {
				n.Transport = "NET/Socket" // provisional: confirmed by a NET/Socket line
			}
			continue
		}
		r.info(msg)
	}
	sort.SliceStable(n.HCAs, func(a, b int) bool { return n.HCAs[a].Name < n.HCAs[b].Name })
	if seen == 0 {
		r.problems.add(0, "no NCCL INFO or WARN line: not an NCCL_DEBUG=INFO log")
	}
	return n, r.problems.err()
}

// ncclReader reads an NCCL_DEBUG=INFO log a line at a time; hcas and
// ifaces index what n already lists.
type ncclReader struct {
	n        *NCCL
	problems errs
	hcas     map[string]int
	ifaces   map[string]bool
}

// addHCA lists an HCA once, what a later line adds to it merged in.
func (r *ncclReader) addHCA(h NCCLHCA) {
	if i, ok := r.hcas[h.Name]; ok {
		if h.SpeedMb != nil {
			r.n.HCAs[i].SpeedMb = h.SpeedMb
		}
		if h.LinkType != "" {
			r.n.HCAs[i].LinkType = h.LinkType
		}
		return
	}
	r.hcas[h.Name] = len(r.n.HCAs)
	r.n.HCAs = append(r.n.HCAs, h)
}

func (r *ncclReader) addIface(s string) {
	if !r.ifaces[s] {
		r.ifaces[s] = true
		r.n.SocketInterfaces = append(r.n.SocketInterfaces, s)
	}
}

// unprefixed is a line without NCCL's host:pid:tid prefix: a WARN
// wrapped by the poster's terminal, the version banner, or not NCCL's.
func (r *ncclReader) unprefixed(i int, t string) {
	n := r.n
	if len(n.Warnings) > 0 && n.Warnings[len(n.Warnings)-1].Line == i {
		n.Warnings[len(n.Warnings)-1].Message += " " + t
		return
	}
	if v := ncclVersion.FindStringSubmatch(t); v != nil {
		n.Version = v[1]
		return
	}
	r.problems.add(i+1, "not an NCCL log line: %q", t)
}

// info reads one INFO message: the version, the IB devices and socket
// interfaces NCCL chose, each channel's transport, the NCCL_* settings it
// took, the communicator's size.
func (r *ncclReader) info(msg string) {
	n := r.n
	switch {
	case ncclVersion.MatchString(msg):
		n.Version = ncclVersion.FindStringSubmatch(msg)[1]
	case ncclUsingIB.MatchString(msg):
		n.Transport = "NET/IB"
		for _, d := range ncclIBDev.FindAllStringSubmatch(msg, -1) {
			port, _ := strconv.Atoi(d[2])
			r.addHCA(NCCLHCA{Name: d[1], Port: &port, LinkType: d[3]})
		}
	case ncclIBDisc.MatchString(msg):
		d := ncclIBDisc.FindStringSubmatch(msg)
		port, _ := strconv.Atoi(d[2])
		speed, _ := strconv.Atoi(d[4])
		r.addHCA(NCCLHCA{Name: d[1], Port: &port, LinkType: d[3], SpeedMb: &speed})
		if n.Transport == "" {
			n.Transport = "NET/IB"
		}
	case ncclVirt.MatchString(msg):
		d := ncclVirt.FindStringSubmatch(msg)
		speed, _ := strconv.Atoi(d[2])
		r.addHCA(NCCLHCA{Name: d[1], SpeedMb: &speed})
	case ncclSocket.MatchString(msg):
		n.Transport = "NET/Socket"
		for _, d := range ncclIface.FindAllStringSubmatch(ncclSocket.FindStringSubmatch(msg)[1], -1) {
			r.addIface(d[1])
		}
	case ncclBoot.MatchString(msg):
		r.addIface(ncclBoot.FindStringSubmatch(msg)[1])
	case ncclChannel.MatchString(msg):
		via := ncclPXNSuffx.ReplaceAllString(ncclChannel.FindStringSubmatch(msg)[1], "")
		n.Channels[via]++
		if strings.Contains(via, "GDRDMA") {
			n.GDRDMA = true
		}
		if strings.HasPrefix(via, "NET/IB") {
			n.Transport = "NET/IB"
		} else if strings.HasPrefix(via, "NET/Socket") && n.Transport == "" {
			n.Transport = "NET/Socket"
		}
	case ncclEnv.MatchString(msg):
		e := ncclEnv.FindStringSubmatch(msg)
		n.Env[e[1]] = strings.TrimSuffix(strings.TrimSpace(e[2]), ".") // NCCL ends the sentence
	case ncclComm.MatchString(msg):
		c := ncclComm.FindStringSubmatch(msg)
		n.Ranks, n.Nodes = intNA(c[1]), intNA(c[2])
	}
}
