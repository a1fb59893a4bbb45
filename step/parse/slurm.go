package parse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

func init() {
	register(Kind{Name: "slurm-nodes-json", Command: "scontrol show node --json, sinfo --json, or slurmrestd's /slurm/v0.0.4x/nodes",
		Parse: func(s string) (any, error) { return ParseSlurmNodesJSON(s) }, Fixtures: []string{"scontrol-show-node-json", "sinfo-json", "slurmrestd-nodes"}})
	register(Kind{Name: "scontrol-show-node", Command: "scontrol show node [NAME]",
		Parse: func(s string) (any, error) { return ParseScontrolShowNode(s) }, Fixtures: []string{"scontrol-show-node"}})
}

// SlurmNode is a Slurm node's state as scontrol, sinfo and slurmrestd
// say it, whatever their version.
type SlurmNode struct {
	Name string `json:"name"`
	// State is the base state, upper case: IDLE, MIXED, ALLOCATED, DOWN,
	// FUTURE, UNKNOWN...; Flags the rest: DRAIN, NOT_RESPONDING, MAINTENANCE...
	State string   `json:"state"`
	Flags []string `json:"flags,omitempty"`
	// Reason is why the node was drained or set down, as given; ReasonBy
	// and ReasonAt who set it and when (zero when not said).
	Reason     string    `json:"reason,omitempty"`
	ReasonBy   string    `json:"reason_set_by,omitempty"`
	ReasonAt   time.Time `json:"reason_at,omitzero"`
	Partitions []string  `json:"partitions,omitempty"`
	Features   []string  `json:"features,omitempty"`
	Gres       string    `json:"gres,omitempty"`
}

// Drained says whether the node is drained or draining (its DRAIN flag).
func (n SlurmNode) Drained() bool { return slices.Contains(n.Flags, "DRAIN") }

// StateString is the state as scontrol prints it: IDLE+DRAIN.
func (n SlurmNode) StateString() string {
	return strings.Join(append([]string{n.State}, n.Flags...), "+")
}

// slurmJSON is what the JSON outputs hold: nodes (scontrol, slurmrestd,
// sinfo before 23.02) or sinfo's groups (23.02 on).
type slurmJSON struct {
	Nodes  []map[string]json.RawMessage `json:"nodes"`
	Sinfo  []map[string]json.RawMessage `json:"sinfo"`
	Errors []struct {
		Error       string `json:"error"`
		Description string `json:"description"`
	} `json:"errors"`
}

// ParseSlurmNodesJSON reads scontrol show node --json, sinfo --json or
// slurmrestd's nodes: the node objects of data_parser v0.0.37 to v0.0.44
// (state a string with state_flags, or a list; times a number or
// {"set", "number"}; features a string or a list) and sinfo's groups.
func ParseSlurmNodesJSON(text string) ([]SlurmNode, error) {
	var in slurmJSON
	if err := json.Unmarshal([]byte(text), &in); err != nil {
		return nil, errorf(jsonLine(text, err), "not Slurm's JSON: %v", err)
	}
	if in.Nodes == nil && in.Sinfo == nil {
		return nil, errorf(0, "no \"nodes\" and no \"sinfo\" list: not the JSON of scontrol show node, sinfo or slurmrestd")
	}
	var out []SlurmNode
	var e errs
	for i, raw := range in.Nodes {
		n, err := slurmNode(raw)
		if err != nil {
			e.add(0, "node %d: %v", i+1, err)
			continue
		}
		out = append(out, n)
	}
	for i, raw := range in.Sinfo {
		ns, err := sinfoGroup(raw)
		if err != nil {
			e.add(0, "sinfo entry %d: %v", i+1, err)
			continue
		}
		out = mergeNodes(out, ns)
	}
	for _, x := range in.Errors {
		e.add(0, "Slurm said: %s", strings.TrimSpace(x.Error+" "+x.Description))
	}
	return out, e.err()
}

func jsonLine(text string, err error) int {
	if se, ok := err.(*json.SyntaxError); ok && se.Offset <= int64(len(text)) {
		return 1 + bytes.Count([]byte(text[:se.Offset]), []byte("\n"))
	}
	return 0
}

func slurmNode(raw map[string]json.RawMessage) (SlurmNode, error) {
	var n SlurmNode
	if err := json.Unmarshal(raw["name"], &n.Name); err != nil || n.Name == "" {
		return n, fmt.Errorf("no name")
	}
	states := strList(raw["state"])
	if len(states) == 1 && strings.Contains(states[0], "+") {
		states = strings.Split(states[0], "+")
	}
	states = append(states, strList(raw["state_flags"])...)
	setStates(&n, states)
	_ = json.Unmarshal(raw["reason"], &n.Reason)
	_ = json.Unmarshal(raw["reason_set_by_user"], &n.ReasonBy)
	n.ReasonAt = slurmTime(raw["reason_changed_at"])
	n.Partitions = strList(raw["partitions"])
	n.Features = strList(raw["active_features"])
	if len(n.Features) == 0 {
		n.Features = strList(raw["features"])
	}
	_ = json.Unmarshal(raw["gres"], &n.Gres)
	return n, nil
}

func setStates(n *SlurmNode, states []string) {
	for i, s := range states {
		s = strings.ToUpper(strings.TrimSpace(s))
		switch {
		case s == "":
		case i == 0:
			n.State = s
		case !slices.Contains(n.Flags, s):
			n.Flags = append(n.Flags, s)
		}
	}
}

// strList is a JSON string list, or a string of comma-separated words.
func strList(raw json.RawMessage) []string {
	var l []string
	if json.Unmarshal(raw, &l) == nil {
		return l
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return splitList(s)
	}
	return nil
}

// splitList is a comma-separated list; nil for "" and Slurm's "(null)".
func splitList(s string) []string {
	if s == "" || s == "(null)" {
		return nil
	}
	return strings.Split(s, ",")
}

// slurmTime is a time as Slurm's JSON writes it: seconds since the
// epoch, or {"set": true, "number": N} (v0.0.40 on); zero when unset.
func slurmTime(raw json.RawMessage) time.Time {
	var sec int64
	if json.Unmarshal(raw, &sec) != nil {
		var v struct {
			Set    bool  `json:"set"`
			Number int64 `json:"number"`
		}
		if json.Unmarshal(raw, &v) != nil || !v.Set {
			return time.Time{}
		}
		sec = v.Number
	}
	if sec <= 0 {
		return time.Time{}
	}
	return time.Unix(sec, 0).UTC()
}

// sinfoGroup is one of sinfo --json's entries (23.02 on): nodes of one
// partition sharing a state and a reason.
func sinfoGroup(raw map[string]json.RawMessage) ([]SlurmNode, error) {
	var g struct {
		Node struct {
			State json.RawMessage `json:"state"`
		} `json:"node"`
		Nodes struct {
			Nodes []string `json:"nodes"`
		} `json:"nodes"`
		Reason struct {
			Description string          `json:"description"`
			User        string          `json:"user"`
			Time        json.RawMessage `json:"time"`
		} `json:"reason"`
		Partition struct {
			Name string `json:"name"`
		} `json:"partition"`
		Features struct {
			Active string `json:"active"`
			Total  string `json:"total"`
		} `json:"features"`
		Gres struct {
			Total string `json:"total"`
		} `json:"gres"`
	}
	b, _ := json.Marshal(raw)
	if err := json.Unmarshal(b, &g); err != nil {
		return nil, err
	}
	if len(g.Nodes.Nodes) == 0 {
		return nil, fmt.Errorf("no nodes.nodes list")
	}
	var out []SlurmNode
	for _, name := range g.Nodes.Nodes {
		n := SlurmNode{Name: name, Reason: g.Reason.Description, ReasonBy: g.Reason.User, ReasonAt: slurmTime(g.Reason.Time), Gres: g.Gres.Total}
		setStates(&n, strList(g.Node.State))
		if g.Partition.Name != "" {
			n.Partitions = []string{g.Partition.Name}
		}
		n.Features = splitList(cmpStr(g.Features.Active, g.Features.Total))
		out = append(out, n)
	}
	return out, nil
}

func cmpStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// mergeNodes adds ns to out; a node sinfo lists under several partitions
// is one node with their partitions.
func mergeNodes(out, ns []SlurmNode) []SlurmNode {
	for _, n := range ns {
		i := slices.IndexFunc(out, func(o SlurmNode) bool { return o.Name == n.Name })
		if i < 0 {
			out = append(out, n)
			continue
		}
		for _, p := range n.Partitions {
			if !slices.Contains(out[i].Partitions, p) {
				out[i].Partitions = append(out[i].Partitions, p)
			}
		}
	}
	return out
}

// reasonSuffix is the "[user@2026-12-06T02:14:00]" scontrol puts after a
// reason.
var reasonSuffix = regexp.MustCompile(`^(.*?)\s*\[([^@\]]*)@(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\]\s*$`)

// ParseScontrolShowNode reads scontrol show node's text: one record per
// node, from NodeName= to the next, KEY=VALUE words (Reason= and OS=
// take the rest of their line). A reason's [user@time] suffix is read
// into ReasonBy and ReasonAt (the time in the controller's zone, taken
// as UTC: scontrol does not say its zone).
func ParseScontrolShowNode(text string) ([]SlurmNode, error) {
	var out []SlurmNode
	var e errs
	cur := -1
	for i, line := range lines(text) {
		t := strings.TrimSpace(line)
		if t == "" {
			continue
		}
		if strings.HasPrefix(t, "NodeName=") {
			out = append(out, SlurmNode{})
			cur = len(out) - 1
		} else if cur < 0 {
			e.add(i+1, "%q before the first NodeName=", t)
			continue
		}
		scontrolLine(&out[cur], t)
	}
	for i, n := range out {
		if n.Name == "" || n.State == "" {
			e.add(0, "node %d (%q): no NodeName or no State", i+1, n.Name)
		}
	}
	if len(out) == 0 && len(e) == 0 {
		e.add(0, "no node: not scontrol show node's output")
	}
	return out, e.err()
}

func scontrolLine(n *SlurmNode, t string) {
	for _, rest := range []string{"Reason=", "OS="} {
		if v, ok := strings.CutPrefix(t, rest); ok {
			if rest == "Reason=" {
				readReason(n, v)
			}
			return
		}
	}
	for _, w := range strings.Fields(t) {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			continue
		}
		switch k {
		case "NodeName":
			n.Name = v
		case "State":
			setStates(n, strings.Split(v, "+"))
		case "Partitions":
			n.Partitions = splitList(v)
		case "ActiveFeatures":
			n.Features = splitList(v)
		case "Gres":
			if v != "(null)" {
				n.Gres = v
			}
		}
	}
}

func readReason(n *SlurmNode, v string) {
	n.Reason = strings.TrimSpace(v)
	if m := reasonSuffix.FindStringSubmatch(v); m != nil {
		n.Reason, n.ReasonBy = m[1], m[2]
		n.ReasonAt, _ = time.Parse("2006-01-02T15:04:05", m[3])
	}
}
