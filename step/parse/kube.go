package parse

import (
	"regexp"
	"strconv"
	"strings"
)

func init() {
	register(Kind{Name: "kubectl-describe-node", Command: "kubectl describe node NODE", Parse: func(s string) (any, error) { return ParseDescribeNode(s) },
		Fixtures: []string{"kubectl-describe-node"}})
	register(Kind{Name: "kubectl-describe-pod", Command: "kubectl describe pod POD", Parse: func(s string) (any, error) { return ParseDescribePod(s) },
		Fixtures: []string{"kubectl-describe-pod"}})
	register(Kind{Name: "kubectl-get-events", Command: "kubectl get events [-A] [--sort-by=.lastTimestamp]", Parse: func(s string) (any, error) { return ParseGetEvents(s) },
		Fixtures: []string{"kubectl-get-events"}})
}

// Node is `kubectl describe node`, with the GPU resources summed up.
type Node struct {
	Name        string               `json:"name,omitempty"`
	Labels      map[string]string    `json:"labels"`
	Taints      []string             `json:"taints"`
	Capacity    map[string]string    `json:"capacity"`
	Allocatable map[string]string    `json:"allocatable"`
	Allocated   map[string]Allocated `json:"allocated"`
	// GPU has, per extended resource (nvidia.com/gpu, nvidia.com/mig-*,
	// nvidia.com/gpu.shared, other vendors'), what the node offers and what
	// is requested on it.
	GPU map[string]GPUResource `json:"gpu_resources"`
	// SystemInfo is the node's System Info section: "Kubelet Version",
	// "Container Runtime Version", "Kernel Version", "OS Image", ...
	SystemInfo map[string]string `json:"system_info"`
	Events     []Event           `json:"events"`
}

// Allocated is a row of "Allocated resources".
type Allocated struct {
	Requests string `json:"requests"`
	Limits   string `json:"limits"`
}

// GPUResource is one extended resource on a node.
type GPUResource struct {
	Capacity    *int `json:"capacity"`
	Allocatable *int `json:"allocatable"`
	Requested   *int `json:"requested"`
}

// Event is an event row, from describe's Events table or get events.
type Event struct {
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Age     string `json:"age,omitempty"`
	From    string `json:"from,omitempty"`
	Object  string `json:"object,omitempty"`
	Message string `json:"message"`
	// Scheduling holds the parsed reasons of a FailedScheduling message.
	Scheduling *Scheduling `json:"scheduling,omitempty"`
}

// Scheduling is a FailedScheduling message: how many nodes, and why each
// group of them did not fit.
type Scheduling struct {
	Available  *int     `json:"available"`
	Total      *int     `json:"total"`
	Reasons    []Reason `json:"reasons"`
	Preemption string   `json:"preemption,omitempty"`
}

// Reason is "N <why>": "2 Insufficient nvidia.com/gpu".
type Reason struct {
	Nodes  int    `json:"nodes"`
	Reason string `json:"reason"`
	// Resource is set for Insufficient reasons.
	Resource string `json:"resource,omitempty"`
}

var (
	describeKey = regexp.MustCompile(`^([A-Z][A-Za-z ]*):\s*(.*)$`)
	resLine     = regexp.MustCompile(`^\s+(\S+):\s+(\S+)\s*$`)
	schedHead   = regexp.MustCompile(`^(\d+)/(\d+) nodes are available:\s*(.*)$`)
	reasonRE    = regexp.MustCompile(`^(\d+) (.+)$`)
)

// extended reports whether a resource is a device (not cpu, memory, ...).
func extended(r string) bool { return strings.Contains(r, "/") && !strings.HasPrefix(r, "hugepages") }

// ParseDescribeNode reads the sections that matter for GPUs. A grep of a
// describe (no section headers) still yields its resource lines, with an
// error saying the sections are missing.
func ParseDescribeNode(text string) (*Node, error) {
	n := &Node{Labels: map[string]string{}, Taints: []string{}, Capacity: map[string]string{}, Allocatable: map[string]string{},
		Allocated: map[string]Allocated{}, GPU: map[string]GPUResource{}, SystemInfo: map[string]string{}, Events: []Event{}}
	var problems errs
	section := ""
	loose := map[string]string{}
	ls := lines(text)
	for i := 0; i < len(ls); i++ {
		l := ls[i]
		if m := describeKey.FindStringSubmatch(l); m != nil {
			section = m[1]
			switch section {
			case "Name":
				n.Name = m[2]
			case "Labels":
				addLabel(n.Labels, m[2])
			case "Taints":
				if m[2] != "<none>" && m[2] != "" {
					n.Taints = append(n.Taints, m[2])
				}
			case "Events":
				evs, used := eventsTable(ls[i+1:])
				n.Events = append(n.Events, evs...)
				i += used
			}
			continue
		}
		if strings.TrimSpace(l) != "" {
			n.sectionLine(section, l, loose)
		}
	}
	if len(n.Capacity) == 0 && len(n.Allocatable) == 0 {
		if len(loose) > 0 {
			problems.add(0, "no Capacity or Allocatable section (grepped output?): %d resource lines kept as allocatable", len(loose))
			n.Allocatable = loose
		} else {
			problems.add(0, "no Capacity or Allocatable section: not kubectl describe node output")
		}
	}
	n.gpuResources()
	return n, problems.err()
}

// sectionLine reads a line inside a section of describe's output (after
// its "Key:" line); a resource line outside any section goes to loose
// (output grepped for the resources).
func (n *Node) sectionLine(section, l string, loose map[string]string) {
	t := strings.TrimSpace(l)
	switch section {
	case "Labels":
		if strings.HasPrefix(l, " ") {
			addLabel(n.Labels, t)
		}
	case "Taints":
		if strings.HasPrefix(l, " ") {
			n.Taints = append(n.Taints, t)
		}
	case "Capacity", "Allocatable":
		if m := resLine.FindStringSubmatch(l); m != nil {
			if section == "Capacity" {
				n.Capacity[m[1]] = m[2]
			} else {
				n.Allocatable[m[1]] = m[2]
			}
		}
	case "System Info":
		if k, v, ok := strings.Cut(t, ":"); ok && strings.HasPrefix(l, " ") {
			n.SystemInfo[k] = strings.TrimSpace(v)
		}
	case "Allocated resources":
		f := strings.Fields(t)
		if len(f) >= 2 && f[0] != "Resource" && !strings.HasPrefix(f[0], "-") && !strings.HasPrefix(t, "(") {
			a := Allocated{Requests: f[1]}
			rest := f[2:]
			if len(rest) > 0 && strings.HasPrefix(rest[0], "(") {
				rest = rest[1:]
			}
			if len(rest) > 0 {
				a.Limits = rest[0]
			}
			n.Allocated[f[0]] = a
		}
	case "":
		if m := resLine.FindStringSubmatch(l); m != nil {
			loose[m[1]] = m[2]
		}
	}
}

// gpuResources is GPU: each extended resource the node has, allocates or
// has allocated, with its capacity, allocatable and requested counts.
func (n *Node) gpuResources() {
	for _, m := range []map[string]string{n.Capacity, n.Allocatable} {
		for r := range m {
			if extended(r) {
				n.GPU[r] = GPUResource{}
			}
		}
	}
	for r := range n.Allocated {
		if extended(r) {
			n.GPU[r] = GPUResource{}
		}
	}
	for r := range n.GPU {
		g := GPUResource{Capacity: intNA(n.Capacity[r]), Allocatable: intNA(n.Allocatable[r])}
		if a, ok := n.Allocated[r]; ok {
			g.Requested = intNA(a.Requests)
		}
		n.GPU[r] = g
	}
}

func addLabel(m map[string]string, s string) {
	if k, v, ok := strings.Cut(strings.TrimSpace(s), "="); ok {
		m[k] = v
	}
}

// eventsTable reads describe's Events table (header, dashes, rows) from
// ls; it returns the events and how many lines it used.
func eventsTable(ls []string) ([]Event, int) {
	var out []Event
	var cols []int
	var names []string
	used := 0
	for k, l := range ls {
		t := strings.TrimSpace(l)
		if t == "" || !strings.HasPrefix(l, " ") {
			if t == "" && len(out) == 0 && cols == nil {
				used = k + 1
				continue
			}
			break
		}
		used = k + 1
		if cols == nil {
			cols, names = columnStarts(l)
			continue
		}
		if strings.HasPrefix(t, "----") {
			continue
		}
		row := sliceColumns(l, cols, names)
		e := Event{Type: row["Type"], Reason: row["Reason"], Age: row["Age"], From: row["From"], Message: row["Message"]}
		e.Scheduling = parseScheduling(e.Reason, e.Message)
		out = append(out, e)
	}
	return out, used
}

// columnStarts finds where each header word starts ("LAST SEEN" is one).
func columnStarts(header string) ([]int, []string) {
	var starts []int
	var names []string
	inWord := false
	for i := 0; i < len(header); i++ {
		c := header[i]
		if c != ' ' && !inWord {
			// A single space inside a header name ("LAST SEEN") does not
			// start a new column.
			if len(starts) > 0 && i >= 2 && header[i-1] == ' ' && header[i-2] != ' ' {
				inWord = true
				continue
			}
			starts = append(starts, i)
			inWord = true
		} else if c == ' ' {
			inWord = false
		}
	}
	for k, s := range starts {
		end := len(header)
		if k+1 < len(starts) {
			end = starts[k+1]
		}
		names = append(names, strings.TrimSpace(header[s:end]))
	}
	return starts, names
}

func sliceColumns(l string, starts []int, names []string) map[string]string {
	row := map[string]string{}
	for k, s := range starts {
		if s >= len(l) {
			break
		}
		end := len(l)
		if k+1 < len(starts) && starts[k+1] < len(l) {
			end = starts[k+1]
		}
		row[names[k]] = strings.TrimSpace(l[s:end])
	}
	return row
}

// parseScheduling reads "0/3 nodes are available: 1 node(s) had untolerated
// taint {...}, 2 Insufficient nvidia.com/gpu. preemption: ...".
func parseScheduling(reason, msg string) *Scheduling {
	if reason != "FailedScheduling" {
		return nil
	}
	m := schedHead.FindStringSubmatch(msg)
	if m == nil {
		return nil
	}
	s := &Scheduling{Available: intNA(m[1]), Total: intNA(m[2]), Reasons: []Reason{}}
	body := m[3]
	if i := strings.Index(body, " preemption: "); i >= 0 {
		s.Preemption = strings.TrimSpace(body[i+len(" preemption: "):])
		body = body[:i]
	}
	body = strings.TrimSuffix(strings.TrimSpace(body), ".")
	for _, part := range splitOutsideBraces(body) {
		part = strings.TrimSpace(part)
		r := reasonRE.FindStringSubmatch(part)
		if r == nil {
			continue
		}
		n, _ := strconv.Atoi(r[1])
		rs := Reason{Nodes: n, Reason: r[2]}
		if res, ok := strings.CutPrefix(r[2], "Insufficient "); ok {
			rs.Resource = res
		}
		s.Reasons = append(s.Reasons, rs)
	}
	return s
}

func splitOutsideBraces(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// Pod is `kubectl describe pod`: where it runs or why it does not.
type Pod struct {
	Name      string            `json:"name,omitempty"`
	Namespace string            `json:"namespace,omitempty"`
	Status    string            `json:"status,omitempty"`
	Node      string            `json:"node,omitempty"`
	Requests  map[string]string `json:"requests"`
	Limits    map[string]string `json:"limits"`
	Events    []Event           `json:"events"`
}

// ParseDescribePod reads a pod's status, resource requests and limits
// (summed over containers by name: the last container's value is kept per
// resource when several set it) and its events.
func ParseDescribePod(text string) (*Pod, error) {
	p := &Pod{Requests: map[string]string{}, Limits: map[string]string{}, Events: []Event{}}
	var problems errs
	ls := lines(text)
	block := ""
	for i := 0; i < len(ls); i++ {
		l := ls[i]
		t := strings.TrimSpace(l)
		if m := describeKey.FindStringSubmatch(l); m != nil {
			switch m[1] {
			case "Name":
				p.Name = m[2]
			case "Namespace":
				p.Namespace = m[2]
			case "Status":
				p.Status = m[2]
			case "Node":
				p.Node = m[2]
			case "Events":
				evs, used := eventsTable(ls[i+1:])
				p.Events = append(p.Events, evs...)
				i += used
			}
			block = ""
			continue
		}
		switch t {
		case "Requests:", "Limits:":
			block = strings.TrimSuffix(t, ":")
			continue
		}
		if block != "" {
			if m := resLine.FindStringSubmatch(l); m != nil {
				if block == "Requests" {
					p.Requests[m[1]] = m[2]
				} else {
					p.Limits[m[1]] = m[2]
				}
				continue
			}
			block = ""
		}
		if p.Name == "" && strings.HasPrefix(t, "Events:") {
			evs, used := eventsTable(ls[i+1:])
			p.Events = append(p.Events, evs...)
			i += used
		}
	}
	if p.Name == "" && len(p.Events) == 0 {
		problems.add(0, "no Name and no Events: not kubectl describe pod output")
	}
	return p, problems.err()
}

// ParseGetEvents reads `kubectl get events` (with or without NAMESPACE),
// columns found from the header, messages kept whole.
func ParseGetEvents(text string) ([]Event, error) {
	out := []Event{}
	var problems errs
	var cols []int
	var names []string
	for i, l := range lines(text) {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if cols == nil {
			if !strings.Contains(l, "REASON") || !strings.Contains(l, "MESSAGE") {
				return out, errorf(i+1, "no header with REASON and MESSAGE: not kubectl get events output")
			}
			cols, names = columnStarts(l)
			continue
		}
		row := sliceColumns(l, cols, names)
		e := Event{Type: row["TYPE"], Reason: row["REASON"], Age: row["LAST SEEN"], Object: row["OBJECT"], Message: row["MESSAGE"]}
		if e.Reason == "" {
			problems.add(i+1, "row has no REASON: %q", strings.TrimSpace(l))
		}
		e.Scheduling = parseScheduling(e.Reason, e.Message)
		out = append(out, e)
	}
	return out, problems.err()
}

// ParseScheduling reads a FailedScheduling message ("0/3 nodes are
// available: 1 node(s) had untolerated taint {...}, 2 Insufficient
// nvidia.com/gpu. preemption: ..."), or returns nil for another message.
func ParseScheduling(msg string) *Scheduling { return parseScheduling("FailedScheduling", msg) }
