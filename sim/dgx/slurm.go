package dgx

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpulab/gpulab/inventory"
)

func init() {
	tools["scontrol"] = scontrol
	tools["sinfo"] = sinfo
}

// SlurmVersion is the simulated controller's Slurm release.
const SlurmVersion = "23.11.10"

// Slurm is the simulated fleet's Slurm controller: every host is a node
// of partition gpu (8 A100 GPUs each, as its hardware), and every host's
// scontrol and sinfo talk to it, so that a drain set from one host shows
// on all. It starts with every node IDLE: nobody has drained the sick
// host yet.
type Slurm struct {
	mu    sync.Mutex
	nodes []*snode
	// Now reads the controller's clock; nil means time.Now.
	Now func() time.Time
}

type snode struct {
	name   string
	state  string   // IDLE, MIXED, ALLOCATED, DOWN
	flags  []string // DRAIN
	reason string
	by     string
	at     time.Time
}

// NewSlurm is a controller whose nodes are names.
func NewSlurm(names []string) *Slurm {
	s := &Slurm{}
	for _, n := range names {
		s.nodes = append(s.nodes, &snode{name: n, state: "IDLE"})
	}
	return s
}

func (s *Slurm) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Slurm) node(name string) *snode {
	for _, n := range s.nodes {
		if n.name == name {
			return n
		}
	}
	return nil
}

// selected are the nodes a node list names (a node set: dgx[01-03]), or
// all of them for "".
func (s *Slurm) selected(list string) ([]*snode, error) {
	if list == "" {
		return s.nodes, nil
	}
	var names []string
	for _, pattern := range splitHostlist(list) {
		ns, err := inventory.ExpandPattern(pattern)
		if err != nil {
			return nil, err
		}
		names = append(names, ns...)
	}
	var out []*snode
	for _, name := range names {
		n := s.node(name)
		if n == nil {
			return nil, fmt.Errorf("node %s not found", name)
		}
		out = append(out, n)
	}
	return out, nil
}

// splitHostlist splits a Slurm host list at the commas outside brackets:
// "dgx[01-02,05],login1" is dgx[01-02,05] and login1.
func splitHostlist(list string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range list {
		switch {
		case c == '[':
			depth++
		case c == ']':
			depth--
		case c == ',' && depth == 0:
			out = append(out, list[start:i])
			start = i + 1
		}
	}
	return append(out, list[start:])
}

func (n *snode) drained() bool { return slices.Contains(n.flags, "DRAIN") }

func (n *snode) stateString() string { return strings.Join(append([]string{n.state}, n.flags...), "+") }

// scontrol answers as Slurm 23.11's scontrol: show node[s] [NAME] (text,
// or --json in data_parser v0.0.40's shape), and update NodeName=...
// State=DRAIN|DOWN Reason=... or State=RESUME|UNDRAIN. Anything else is
// refused as not simulated.
func scontrol(_ context.Context, h *Host, t *term, args []string) int {
	if h.Slurm == nil {
		return t.fail(1, "slurm_load_partitions: Unable to contact slurm controller (connect failure)\n")
	}
	var words []string
	asJSON := false
	for _, a := range args[1:] {
		switch {
		case a == "--json" || a == "--json=v0.0.40":
			asJSON = true
		case strings.HasPrefix(a, "-"):
			return t.fail(1, "scontrol: the SIMULATED scontrol does not take "+a+"\n")
		default:
			words = append(words, a)
		}
	}
	switch {
	case len(words) >= 2 && words[0] == "show" && (words[1] == "node" || words[1] == "nodes"):
		return h.Slurm.show(t, strings.Join(words[2:], ","), asJSON)
	case len(words) >= 1 && words[0] == "update":
		return h.Slurm.update(t, words[1:])
	}
	return t.fail(1, fmt.Sprintf("scontrol: the SIMULATED scontrol does not answer %q (show node, update NodeName=... State=...)\n", strings.Join(words, " ")))
}

func (s *Slurm) show(t *term, list string, asJSON bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	nodes, err := s.selected(list)
	if err != nil {
		if asJSON {
			return t.fail(1, fmt.Sprintf("{\n  \"nodes\": [],\n  \"errors\": [{\"description\": %q, \"error_number\": 2008, \"error\": \"Node name is invalid\", \"source\": \"slurm_load_node_single\"}],\n  \"warnings\": []\n}\n", err.Error()))
		}
		return t.fail(1, "Node "+list+" not found\n")
	}
	if asJSON {
		t.print(s.nodesJSON(nodes))
		return 0
	}
	for i, n := range nodes {
		if i > 0 {
			t.print("\n")
		}
		t.print(n.text(s.now()))
	}
	return 0
}

// text is scontrol show node's record of n, laid out as the recordings
// in testdata/fixtures/scontrol-show-node are: a 20.02 GPU node's lines
// (CapWatts, ExtSensors; the 3-space indent) with the lines 25.11.3 adds
// where it puts them (CPUEfctv, LastBusyTime, ResumeAfterTime).
func (n *snode) text(now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "NodeName=%s Arch=x86_64 CoresPerSocket=64 \n", n.name)
	b.WriteString("   CPUAlloc=0 CPUEfctv=256 CPUTot=256 CPULoad=0.32\n")
	b.WriteString("   AvailableFeatures=a100,dgx\n   ActiveFeatures=a100,dgx\n   Gres=gpu:a100:8(S:0-1)\n")
	fmt.Fprintf(&b, "   NodeAddr=%s NodeHostName=%s Version=%s\n", n.name, n.name, SlurmVersion)
	b.WriteString("   OS=Linux 5.15.0-1040-nvidia #40-Ubuntu SMP Thu Oct 26 11:52:03 UTC 2023 \n")
	b.WriteString("   RealMemory=2000000 AllocMem=0 FreeMem=1968204 Sockets=2 Boards=1\n")
	fmt.Fprintf(&b, "   State=%s ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A\n", n.stateString())
	b.WriteString("   Partitions=gpu \n")
	boot := now.Add(-DefaultUptime).Format("2006-01-02T15:04:05")
	fmt.Fprintf(&b, "   BootTime=%s SlurmdStartTime=%s\n", boot, boot)
	b.WriteString("   LastBusyTime=" + now.Add(-3*time.Hour).Format("2006-01-02T15:04:05") + " ResumeAfterTime=None\n")
	b.WriteString("   CfgTRES=cpu=256,mem=2000000M,billing=256,gres/gpu=8\n   AllocTRES=\n   CapWatts=n/a\n   CurrentWatts=0 AveWatts=0\n")
	b.WriteString("   ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s\n")
	if n.reason != "" {
		fmt.Fprintf(&b, "   Reason=%s [%s@%s]\n", n.reason, n.by, n.at.Format("2006-01-02T15:04:05"))
	}
	return b.String()
}

func slurmTime(t time.Time) map[string]any {
	if t.IsZero() {
		return map[string]any{"set": false, "infinite": false, "number": 0}
	}
	return map[string]any{"set": true, "infinite": false, "number": t.Unix()}
}

// nodesJSON is scontrol show node --json's answer (data_parser v0.0.40):
// the keys and value types of the v0.0.40 recording in
// testdata/fixtures/slurmrestd-nodes (the same node object), the meta of
// scontrol's own recording (scontrol-show-node-json: no plugin type,
// command ["show","node"]); the keys gpulab does not read are left out.
func (s *Slurm) nodesJSON(nodes []*snode) string {
	out := make([]map[string]any, len(nodes))
	now := s.now()
	for i, n := range nodes {
		out[i] = map[string]any{
			"architecture": "x86_64", "boards": 1, "boot_time": slurmTime(now.Add(-DefaultUptime).Truncate(time.Second)),
			"cluster_name": "dgx", "cores": 64, "sockets": 2, "threads": 2, "cpus": 256, "effective_cpus": 256,
			"features": []string{"a100", "dgx"}, "active_features": []string{"a100", "dgx"},
			"gres": "gpu:a100:8(S:0-1)", "gres_drained": "N/A", "gres_used": "gpu:a100:0(IDX:N/A)",
			"hostname": n.name, "address": n.name, "name": n.name, "operating_system": "Linux 5.15.0-1040-nvidia #40-Ubuntu SMP Thu Oct 26 11:52:03 UTC 2023",
			"partitions": []string{"gpu"}, "real_memory": 2000000, "free_mem": slurmTime(time.Time{}),
			"reason": n.reason, "reason_changed_at": slurmTime(n.at), "reason_set_by_user": n.by,
			"state": append([]string{n.state}, n.flags...), "tres": "cpu=256,mem=2000000M,billing=256,gres/gpu=8",
			"version": SlurmVersion, "weight": 1,
		}
	}
	doc := map[string]any{
		"nodes":       out,
		"last_update": slurmTime(now.Truncate(time.Second)),
		"meta": map[string]any{
			"plugin":  map[string]any{"type": "", "name": "", "data_parser": "data_parser/v0.0.40", "accounting_storage": ""},
			"command": []string{"show", "node"},
			"slurm":   map[string]any{"version": map[string]any{"major": "23", "micro": "10", "minor": "11"}, "release": SlurmVersion, "cluster": "dgx"},
		},
		"errors": []any{}, "warnings": []any{},
	}
	b, _ := json.MarshalIndent(doc, "", "  ")
	return string(b) + "\n"
}

// update carries out scontrol update NodeName=... State=... [Reason=...].
func (s *Slurm) update(t *term, words []string) int {
	kv := map[string]string{}
	for _, w := range words {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			return t.fail(1, "Invalid input: "+w+"\nRequest aborted\n")
		}
		kv[strings.ToLower(k)] = v
	}
	list, state := kv["nodename"], strings.ToUpper(kv["state"])
	if list == "" {
		return t.fail(1, "scontrol: the SIMULATED scontrol updates nodes only (NodeName=...)\n")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	nodes, err := s.selected(list)
	if err != nil {
		return t.fail(1, "slurm_update error: Invalid node name specified\n")
	}
	switch state {
	case "DRAIN", "DOWN":
		if kv["reason"] == "" {
			return t.fail(1, "You must specify a reason when DOWNING or DRAINING a node. Request denied\n")
		}
		for _, n := range nodes {
			if state == "DOWN" {
				n.state = "DOWN"
			}
			if !n.drained() && state == "DRAIN" {
				n.flags = append(n.flags, "DRAIN")
			}
			n.reason, n.by, n.at = kv["reason"], "root", s.now().Truncate(time.Second)
		}
	case "RESUME", "UNDRAIN":
		for _, n := range nodes {
			n.flags = slices.DeleteFunc(n.flags, func(f string) bool { return f == "DRAIN" })
			if state == "RESUME" && n.state == "DOWN" {
				n.state = "IDLE"
			}
			n.reason, n.by, n.at = "", "", time.Time{}
		}
	default:
		return t.fail(1, fmt.Sprintf("scontrol: the SIMULATED scontrol sets State=DRAIN, DOWN, RESUME or UNDRAIN, not %q\n", kv["state"]))
	}
	return 0
}

// sinfo answers as Slurm 23.11's sinfo: the default summary by
// partition and state, and -R (the reasons).
func sinfo(_ context.Context, h *Host, t *term, args []string) int {
	if h.Slurm == nil {
		return t.fail(1, "slurm_load_partitions: Unable to contact slurm controller (connect failure)\n")
	}
	s := h.Slurm
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case len(args) == 1:
		t.print(s.summary())
	case len(args) == 2 && (args[1] == "-R" || args[1] == "--list-reasons"):
		t.print(s.reasons())
	default:
		return t.fail(1, "sinfo: the SIMULATED sinfo answers sinfo and sinfo -R only\n")
	}
	return 0
}

// shortState is sinfo's %t of n.
func (n *snode) shortState() string {
	switch {
	case n.drained() && n.state == "IDLE":
		return "drain"
	case n.drained() && n.state == "DOWN":
		return "drain"
	case n.drained():
		return "drng"
	}
	return map[string]string{"IDLE": "idle", "MIXED": "mix", "ALLOCATED": "alloc", "DOWN": "down"}[n.state]
}

func (s *Slurm) summary() string {
	var b strings.Builder
	b.WriteString("PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n")
	var states []string
	by := map[string][]string{}
	for _, n := range s.nodes {
		st := n.shortState()
		if by[st] == nil {
			states = append(states, st)
		}
		by[st] = append(by[st], n.name)
	}
	for _, st := range states {
		fmt.Fprintf(&b, "%-9s %5s %10s %6d %6s %s\n", "gpu*", "up", "infinite", len(by[st]), st, inventory.FoldNames(by[st]))
	}
	return b.String()
}

func (s *Slurm) reasons() string {
	var b strings.Builder
	b.WriteString("REASON               USER      TIMESTAMP           NODELIST\n")
	for _, n := range s.nodes {
		if n.reason == "" {
			continue
		}
		r := n.reason
		if len(r) > 20 {
			r = r[:20]
		}
		fmt.Fprintf(&b, "%-20s %-9s %-19s %s\n", r, n.by, n.at.Format("2006-01-02T15:04:05"), n.name)
	}
	return b.String()
}
