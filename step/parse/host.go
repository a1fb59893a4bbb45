package parse

import (
	"regexp"
	"strconv"
	"strings"
)

func init() {
	register(Kind{Name: "numactl-hardware", Command: "numactl --hardware", Parse: func(s string) (any, error) { return ParseNumactl(s) },
		Fixtures: []string{"numactl-hardware"}})
	register(Kind{Name: "lscpu-e", Command: "lscpu -e=CPU,NODE,SOCKET,CORE (any columns)", Parse: func(s string) (any, error) { return ParseLscpu(s) },
		Fixtures: []string{"lscpu-e"}})
	register(Kind{Name: "ip-br-link", Command: "ip -br link", Parse: func(s string) (any, error) { return ParseIPBrLink(s) },
		Fixtures: []string{"ip-br-link"}})
	register(Kind{Name: "rdma-link", Command: "rdma link", Parse: func(s string) (any, error) { return ParseRdmaLink(s) },
		Fixtures: []string{"rdma-link"}})
}

// NUMA is `numactl --hardware`.
type NUMA struct {
	Nodes     []NUMANode `json:"nodes"`
	Distances [][]int    `json:"distances"`
}

// NUMANode is one node.
type NUMANode struct {
	Node   int   `json:"node"`
	CPUs   []int `json:"cpus"`
	SizeMB *int  `json:"size_mb"`
	FreeMB *int  `json:"free_mb"`
}

var numaLine = regexp.MustCompile(`^node (\d+) (cpus|size|free):\s*(.*)$`)

// ParseNumactl reads nodes, their CPUs and memory, and the distance matrix.
func ParseNumactl(text string) (*NUMA, error) {
	n := &NUMA{Nodes: []NUMANode{}, Distances: [][]int{}}
	var problems errs
	byID := map[int]int{}
	node := func(id int) *NUMANode {
		if i, ok := byID[id]; ok {
			return &n.Nodes[i]
		}
		byID[id] = len(n.Nodes)
		n.Nodes = append(n.Nodes, NUMANode{Node: id, CPUs: []int{}})
		return &n.Nodes[len(n.Nodes)-1]
	}
	inDist, sawDist := false, false
	announced, announcedAt := -1, 0 // "available: 8 nodes (0-7)"
	for i, l := range lines(text) {
		t := strings.TrimSpace(l)
		switch {
		case t == "":
		case strings.HasPrefix(t, "available:"):
			if f := strings.Fields(strings.TrimPrefix(t, "available:")); len(f) > 0 {
				if v, err := strconv.Atoi(f[0]); err == nil {
					announced, announcedAt = v, i+1
				}
			}
		case t == "node distances:":
			inDist, sawDist = true, true
		case inDist && strings.HasPrefix(t, "node"):
		case inDist:
			n.distanceRow(i+1, t, &problems)
		default:
			m := numaLine.FindStringSubmatch(t)
			if m == nil {
				problems.add(i+1, "line not understood: %q", t)
				continue
			}
			id, _ := strconv.Atoi(m[1])
			node(id).set(i+1, m[2], m[3], &problems)
		}
	}
	if len(n.Nodes) == 0 && len(problems) == 0 {
		problems.add(0, "no node lines: not numactl --hardware output")
	}
	// numactl announces its nodes first and ends with their distances: a
	// listing short of either was cut (head, a lost connection).
	if announced >= 0 && announced != len(n.Nodes) {
		problems.add(announcedAt, "%d nodes announced, %d listed: the output was cut", announced, len(n.Nodes))
	}
	if len(n.Nodes) > 0 && !sawDist {
		problems.add(0, "no node distances table after the nodes: the output was cut")
	}
	return n, problems.err()
}

// distanceRow reads a row of the node distances table ("0:  10  21").
func (n *NUMA) distanceRow(line int, t string, problems *errs) {
	head, rest, ok := strings.Cut(t, ":")
	if _, err := strconv.Atoi(head); !ok || err != nil {
		problems.add(line, "distance row not understood: %q", t)
		return
	}
	var row []int
	for _, f := range strings.Fields(rest) {
		d, err := strconv.Atoi(f)
		if err != nil {
			problems.add(line, "distance %q is not a number", f)
			break
		}
		row = append(row, d)
	}
	n.Distances = append(n.Distances, row)
}

// set reads a node's "cpus", "size" or "free" line.
func (nd *NUMANode) set(line int, key, value string, problems *errs) {
	switch key {
	case "cpus":
		for _, f := range strings.Fields(value) {
			c, err := strconv.Atoi(f)
			if err != nil {
				problems.add(line, "cpu %q is not a number", f)
				break
			}
			nd.CPUs = append(nd.CPUs, c)
		}
	case "size":
		nd.SizeMB = intNA(strings.TrimSuffix(value, " MB"))
	case "free":
		nd.FreeMB = intNA(strings.TrimSuffix(value, " MB"))
	}
}

// CPUTable is `lscpu -e`: one row per CPU, columns as printed.
type CPUTable struct {
	Columns []string            `json:"columns"`
	CPUs    []map[string]string `json:"cpus"`
	// Sockets maps a socket to its NUMA nodes, when both columns exist.
	Sockets map[string][]string `json:"sockets,omitempty"`
}

// ParseLscpu reads `lscpu -e` with whatever columns were asked for.
func ParseLscpu(text string) (*CPUTable, error) {
	t := &CPUTable{Columns: []string{}, CPUs: []map[string]string{}}
	var problems errs
	for i, l := range lines(text) {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if len(t.Columns) == 0 {
			if f[0] != "CPU" {
				return t, errorf(i+1, "first line is not an lscpu -e header (want CPU ...): %q", strings.TrimSpace(l))
			}
			t.Columns = f
			continue
		}
		if len(f) != len(t.Columns) {
			problems.add(i+1, "%d values for %d columns", len(f), len(t.Columns))
			continue
		}
		row := map[string]string{}
		for k, c := range t.Columns {
			row[c] = f[k]
		}
		t.CPUs = append(t.CPUs, row)
	}
	if len(t.Columns) == 0 {
		problems.add(0, "empty input: not lscpu -e output")
	}
	seen := map[string]map[string]bool{}
	for _, r := range t.CPUs {
		s, okS := r["SOCKET"]
		nd, okN := r["NODE"]
		if !okS || !okN {
			break
		}
		if t.Sockets == nil {
			t.Sockets = map[string][]string{}
		}
		if seen[s] == nil {
			seen[s] = map[string]bool{}
		}
		if !seen[s][nd] {
			seen[s][nd] = true
			t.Sockets[s] = append(t.Sockets[s], nd)
		}
	}
	return t, problems.err()
}

// Link is a network interface from `ip -br link`.
type Link struct {
	Name    string   `json:"name"`
	State   string   `json:"state"`
	Address string   `json:"address,omitempty"`
	Flags   []string `json:"flags"`
	Master  bool     `json:"master,omitempty"` // a bond
	Slave   bool     `json:"slave,omitempty"`
	// InfiniBand is true for IPoIB interfaces (20-byte hardware address).
	InfiniBand bool `json:"infiniband,omitempty"`
}

// ParseIPBrLink reads `ip -br link`.
func ParseIPBrLink(text string) ([]Link, error) {
	out := []Link{}
	var problems errs
	for i, l := range lines(text) {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if len(f) < 3 || !operStates[f[1]] {
			problems.add(i+1, "line not understood (want NAME STATE [ADDRESS] <FLAGS>): %q", strings.TrimSpace(l))
			continue
		}
		lk := Link{Name: f[0], State: f[1], Flags: []string{}}
		flags := false
		for _, x := range f[2:] {
			if strings.HasPrefix(x, "<") && strings.HasSuffix(x, ">") {
				lk.Flags, flags = strings.Split(strings.Trim(x, "<>"), ","), true
			} else if lk.Address == "" {
				lk.Address = x
			}
		}
		if !flags {
			problems.add(i+1, "line not understood (no <FLAGS>): %q", strings.TrimSpace(l))
			continue
		}
		for _, fl := range lk.Flags {
			lk.Master = lk.Master || fl == "MASTER"
			lk.Slave = lk.Slave || fl == "SLAVE"
		}
		lk.InfiniBand = strings.Count(lk.Address, ":") == 19
		out = append(out, lk)
	}
	if len(out) == 0 && len(problems) == 0 {
		// Every host has lo: an empty answer is not ip's.
		problems.add(0, "no link line: not ip -br link output")
	}
	return out, problems.err()
}

// operStates are the operational states ip prints (RFC 2863, as the
// kernel's IF_OPER_* names them).
var operStates = map[string]bool{"UNKNOWN": true, "NOTPRESENT": true, "DOWN": true, "LOWERLAYERDOWN": true, "TESTING": true, "DORMANT": true, "UP": true}

// RdmaLink is a port from `rdma link`.
type RdmaLink struct {
	Device        string `json:"device"`
	Port          int    `json:"port"`
	State         string `json:"state"`
	PhysicalState string `json:"physical_state"`
	Netdev        string `json:"netdev,omitempty"`
	Active        bool   `json:"active"`
	// InfiniBand ports report a LID; RoCE ports a netdev.
	LID *int `json:"lid"`
}

// ParseRdmaLink reads `rdma link` in its RoCE (netdev) and InfiniBand
// (subnet_prefix, lid) forms.
func ParseRdmaLink(text string) ([]RdmaLink, error) {
	out := []RdmaLink{}
	var problems errs
	for i, l := range lines(text) {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if f[0] != "link" || len(f) < 2 {
			problems.add(i+1, "line not understood: %q", strings.TrimSpace(l))
			continue
		}
		dev, port, _ := strings.Cut(f[1], "/")
		r := RdmaLink{Device: dev}
		r.Port, _ = strconv.Atoi(port)
		for k := 2; k+1 < len(f); k += 2 {
			switch f[k] {
			case "state":
				r.State = f[k+1]
			case "physical_state":
				r.PhysicalState = f[k+1]
			case "netdev":
				r.Netdev = f[k+1]
			case "lid":
				r.LID = intNA(f[k+1])
			}
		}
		r.Active = r.State == "ACTIVE" && r.PhysicalState == "LINK_UP"
		out = append(out, r)
	}
	return out, problems.err()
}
