package parse

import (
	"fmt"
	"regexp"
	"strings"
)

func init() {
	register(Kind{Name: "lspci-tv", Command: "lspci -tv", Parse: func(s string) (any, error) { return ParseLspciTree(s) },
		Fixtures: []string{"lspci-tv"}})
	register(Kind{Name: "ibv-devinfo", Command: "ibv_devinfo", Parse: func(s string) (any, error) { return ParseIbvDevinfo(s) },
		Fixtures: []string{"ibv_devinfo"}})
}

// PCITree is `lspci -tv` rebuilt with full addresses: which bridges each
// device sits under, so that GPUs and NICs behind the same switch show up.
type PCITree struct {
	Devices []PCIDevice `json:"devices"`
	// Near pairs each GPU with the NICs that share its closest bridge below
	// the root port (the ones NCCL would pick first).
	Near []PCINear `json:"near"`
}

// PCIDevice is one function on the tree.
type PCIDevice struct {
	Address     string   `json:"address"` // 0000:41:00.0
	Description string   `json:"description,omitempty"`
	Bridges     []string `json:"bridges"` // from the root port down to the parent
	Kind        string   `json:"kind,omitempty"`
}

// PCINear is a GPU and the NICs under its nearest shared bridge.
type PCINear struct {
	GPU    string   `json:"gpu"`
	NICs   []string `json:"nics"`
	Bridge string   `json:"bridge"` // the shared bridge, or "" when they meet only at the host
}

var (
	pciDomain = regexp.MustCompile(`^\[([0-9a-fA-F]{4}):([0-9a-fA-F]{2})\]`)
	pciNode   = regexp.MustCompile(`^([0-9a-fA-F]{2})\.([0-7])`)
	pciRange  = regexp.MustCompile(`^-\[([0-9a-fA-F]{2})(?:-[0-9a-fA-F]{2})?\]`)
)

type busRef struct {
	domain, bus string
	bridges     []string
}

// ParseLspciTree reads the tree line by line, tracking which bus each
// branch column (the '+' or '\' of the drawing) stands for.
func ParseLspciTree(text string) (*PCITree, error) {
	t := &PCITree{Devices: []PCIDevice{}, Near: []PCINear{}}
	var problems errs
	branch := map[int]busRef{} // column of a '+' or '\' -> the bus its children are on
	for i, l := range lines(text) {
		if strings.TrimSpace(l) == "" {
			continue
		}
		cur := busRef{}
		have := false
		p := 0
		for p < len(l) {
			rest := l[p:]
			switch {
			case strings.HasPrefix(rest, "+-") || strings.HasPrefix(rest, `\-`):
				if b, ok := branch[p]; ok {
					cur, have = b, true
				}
				p += 2
			case pciDomain.MatchString(rest):
				m := pciDomain.FindStringSubmatch(rest)
				cur, have = busRef{domain: strings.ToLower(m[1]), bus: strings.ToLower(m[2])}, true
				p += len(m[0])
				// "]-+-": the '+' is where this root's children branch.
				if strings.HasPrefix(l[p:], "-+-") {
					branch[p+1] = cur
					p += 3
				}
			case pciNode.MatchString(rest) && (p == 0 || strings.ContainsRune("-+\\", rune(l[p-1]))):
				m := pciNode.FindStringSubmatch(rest)
				if !have {
					problems.add(i+1, "device %s at column %d has no parent branch (truncated tree?)", m[0], p+1)
					p += len(m[0])
					continue
				}
				addr := fmt.Sprintf("%s:%s:%s.%s", cur.domain, cur.bus, strings.ToLower(m[1]), m[2])
				p += len(m[0])
				if r := pciRange.FindStringSubmatch(l[p:]); r != nil {
					// A bridge: what follows is on its secondary bus.
					p += len(r[0])
					t.Devices = append(t.Devices, PCIDevice{Address: addr, Bridges: append([]string{}, cur.bridges...), Kind: "bridge"})
					next := busRef{domain: cur.domain, bus: strings.ToLower(r[1]), bridges: append(append([]string{}, cur.bridges...), addr)}
					if k := strings.Index(l[p:], "+-"); k >= 0 && strings.Trim(l[p:p+k], "-") == "" {
						branch[p+k] = next
					}
					cur = next
					continue
				}
				desc := strings.TrimSpace(rest[len(m[0]):])
				d := PCIDevice{Address: addr, Description: desc, Bridges: append([]string{}, cur.bridges...), Kind: pciKind(desc)}
				t.Devices = append(t.Devices, d)
				p = len(l)
			default:
				p++
			}
		}
	}
	t.Near = nearNICs(t.Devices)
	if len(t.Devices) == 0 {
		problems.add(0, "no device found: not lspci -tv output")
	}
	return t, problems.err()
}

func pciKind(desc string) string {
	d := strings.ToLower(desc)
	switch {
	case strings.Contains(d, "nvidia") && !strings.Contains(d, "audio") && !strings.Contains(d, "usb") && !strings.Contains(d, "bridge"):
		return "gpu"
	case strings.Contains(d, "mellanox") || strings.Contains(d, "connectx") || strings.Contains(d, "ethernet") || strings.Contains(d, "infiniband") || strings.Contains(d, "network"):
		return "nic"
	case strings.Contains(d, "nvme") || strings.Contains(d, "sata") || strings.Contains(d, "raid"):
		return "storage"
	}
	return ""
}

// nearNICs finds, for each GPU, the NICs sharing the deepest bridge
// (excluding the root port level, which every device on a socket shares).
func nearNICs(devs []PCIDevice) []PCINear {
	var out []PCINear
	for _, g := range devs {
		if g.Kind != "gpu" || !strings.HasSuffix(g.Address, ".0") {
			continue
		}
		best, depth := []string{}, 0
		bridge := ""
		for _, n := range devs {
			if n.Kind != "nic" || !strings.HasSuffix(n.Address, ".0") {
				continue
			}
			c := common(g.Bridges, n.Bridges)
			if c < 2 { // only the root port or nothing in common
				continue
			}
			switch {
			case c > depth:
				best, depth, bridge = []string{n.Address}, c, g.Bridges[c-1]
			case c == depth:
				best = append(best, n.Address)
			}
		}
		out = append(out, PCINear{GPU: g.Address, NICs: best, Bridge: bridge})
	}
	return out
}

func common(a, b []string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// HCA is an RDMA device from ibv_devinfo.
type HCA struct {
	Name      string    `json:"hca_id"`
	Transport string    `json:"transport,omitempty"`
	Firmware  string    `json:"fw_ver,omitempty"`
	NodeGUID  string    `json:"node_guid,omitempty"`
	Ports     []HCAPort `json:"ports"`
}

// HCAPort is one port of an HCA.
type HCAPort struct {
	Port      int    `json:"port"`
	State     string `json:"state"` // PORT_ACTIVE, PORT_DOWN, ...
	LinkLayer string `json:"link_layer,omitempty"`
	ActiveMTU string `json:"active_mtu,omitempty"`
	LID       string `json:"port_lid,omitempty"`
	Active    bool   `json:"active"`
}

var ibvKV = regexp.MustCompile(`^\s*([a-z_]+):\s*(.*?)\s*$`)

// ParseIbvDevinfo reads ibv_devinfo (and ibv_devinfo -v, whose extra keys
// are ignored).
func ParseIbvDevinfo(text string) ([]HCA, error) {
	out := []HCA{}
	var problems errs
	var h *HCA
	var port *HCAPort
	for i, l := range lines(text) {
		if strings.TrimSpace(l) == "" {
			continue
		}
		m := ibvKV.FindStringSubmatch(l)
		if m == nil {
			continue // -v adds free-form lines
		}
		k, v := m[1], m[2]
		stripCode := func(s string) string { // "PORT_DOWN (1)" -> "PORT_DOWN"
			if i := strings.Index(s, " ("); i > 0 {
				return s[:i]
			}
			return s
		}
		switch k {
		case "hca_id":
			out = append(out, HCA{Name: v, Ports: []HCAPort{}})
			h, port = &out[len(out)-1], nil
			continue
		}
		if h == nil {
			problems.add(i+1, "key %q before any hca_id", k)
			continue
		}
		switch k {
		case "transport":
			h.Transport = stripCode(v)
		case "fw_ver":
			h.Firmware = v
		case "node_guid":
			h.NodeGUID = v
		case "port":
			var n int
			fmt.Sscan(v, &n)
			h.Ports = append(h.Ports, HCAPort{Port: n})
			port = &h.Ports[len(h.Ports)-1]
		case "state":
			if port != nil {
				port.State = stripCode(v)
				port.Active = port.State == "PORT_ACTIVE"
			}
		case "link_layer":
			if port != nil {
				port.LinkLayer = v
			}
		case "active_mtu":
			if port != nil {
				port.ActiveMTU = stripCode(v)
			}
		case "port_lid":
			if port != nil {
				port.LID = v
			}
		}
	}
	if len(out) == 0 && len(problems) == 0 {
		problems.add(0, "no hca_id: not ibv_devinfo output")
	}
	return out, problems.err()
}
