// Package inventory is the model of the hosts gpulab reaches: defaults for
// SSH, hosts with labels and jump hosts, groups, and Kubernetes contexts, as
// read from an inventory.toml file. Host lists use ClusterShell's node-set
// syntax (gpu[001-128], @group, exclusion with "!") plus label selectors.
//
// The package only describes hosts; it does not connect to them and does not
// read ~/.ssh/config. Zero values mean "not set here", so that the
// orchestrator can fall back to ssh_config and then to OpenSSH's defaults.
package inventory

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Built-in defaults for the settings that are gpulab's own (not OpenSSH's).
const (
	DefaultConnectTimeout    = 10 * time.Second
	DefaultCommandTimeout    = 10 * time.Minute
	DefaultInactivityTimeout = 2 * time.Minute
	DefaultConcurrency       = 64
)

// Ranges of the settings, so that a slip cannot make every connection time
// out at once, or a hung command wait for years.
const (
	// MinTimeout is the shortest timeout of any kind.
	MinTimeout        = time.Second
	MaxConnectTimeout = 5 * time.Minute
	// MaxCommandTimeout bounds command_timeout and inactivity_timeout.
	MaxCommandTimeout = 24 * time.Hour
	// MaxConcurrency bounds how many hosts are worked on at once: each is
	// an SSH connection, and jump hosts refuse many more (MaxStartups).
	MaxConcurrency = 4096
	// MaxHosts bounds the hosts of an inventory, all [[host]] entries
	// together, and the hosts one host expression may name, so that a
	// line such as name = "n[0000000-9999999]" is an error instead of
	// gigabytes and minutes. Sizes are computed before anything is
	// expanded. At this bound an inventory loads in a fraction of a second.
	MaxHosts = 1 << 16
)

// Inventory is a loaded, validated inventory. The zero value is not useful;
// use Load, Parse or Empty.
type Inventory struct {
	// File is the path the inventory was read from; empty for Empty().
	File string
	// Simulated is set by `gpulab sim serve` in the inventory it writes: the
	// hosts are simulated (sim/), and everything made on them says so.
	Simulated bool `json:"simulated,omitempty"`
	Defaults  Defaults
	// Hosts are the hosts in file order, node sets expanded.
	Hosts []Host
	// Groups maps a group name to its member host names, in inventory order.
	Groups map[string][]string
	Kube   []KubeContext
	// Slurm is the Slurm cluster the hosts are nodes of; nil when none.
	Slurm *Slurm `json:"slurm,omitempty"`

	byName map[string]int
	// byLabel indexes the hosts by label key, then value, so that a label
	// selector costs the hosts it names, not a pass over the inventory.
	byLabel map[string]map[string][]int
}

// Defaults apply to every host that does not set its own value.
type Defaults struct {
	User              string   `toml:"user" json:"user,omitempty"`
	Port              int      `toml:"port" json:"port,omitempty"`
	IdentityFile      string   `toml:"identity_file" json:"identity_file,omitempty"`
	KnownHosts        string   `toml:"known_hosts" json:"known_hosts,omitempty"`
	SSHConfig         string   `toml:"ssh_config" json:"ssh_config,omitempty"`
	Jump              string   `toml:"jump" json:"jump,omitempty"`
	ConnectTimeout    Duration `toml:"connect_timeout" json:"connect_timeout"`
	CommandTimeout    Duration `toml:"command_timeout" json:"command_timeout"`
	InactivityTimeout Duration `toml:"inactivity_timeout" json:"inactivity_timeout"`
	Concurrency       int      `toml:"concurrency" json:"concurrency"`
	// builtin names the keys applyBuiltins filled in (see Builtin).
	builtin map[string]bool
}

// Host is one SSH host. Empty strings and zero ports mean the inventory does
// not set them (Defaults, then ssh_config, then OpenSSH's defaults apply).
type Host struct {
	Name         string            `json:"name"`
	Address      string            `json:"address"`
	Port         int               `json:"port,omitempty"`
	User         string            `json:"user,omitempty"`
	IdentityFile string            `json:"identity_file,omitempty"`
	Jump         string            `json:"jump,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	Groups       []string          `json:"groups,omitempty"`
	// Expect is what the host has, as the inventory says: the probe's
	// count and rate checks judge against it.
	Expect Expect `json:"expect,omitzero"`
	// Adhoc is set for a host named in a host expression but absent from
	// the inventory; it carries the defaults only.
	Adhoc bool `json:"adhoc,omitempty"`
	// Source is where the host was defined ("inventory.toml:12:1").
	Source string `json:"source,omitempty"`
}

// Expect is what a host should have (expect = { gpus = 8, ib_ports = 8,
// ib_rate_gbps = 200 }); 0 is "not said".
type Expect struct {
	GPUs       int `toml:"gpus" json:"gpus,omitempty"`
	IBPorts    int `toml:"ib_ports" json:"ib_ports,omitempty"`
	IBRateGbps int `toml:"ib_rate_gbps" json:"ib_rate_gbps,omitempty"`
}

// KubeContext names a Kubernetes cluster that gpulab reads, as kubectl
// would: a kubeconfig file and a context in it.
type KubeContext struct {
	Name       string `toml:"name" json:"name"`
	Kubeconfig string `toml:"kubeconfig" json:"kubeconfig,omitempty"`
	Context    string `toml:"context" json:"context,omitempty"`
	Namespace  string `toml:"namespace" json:"namespace,omitempty"`
	// Nodes is a host expression naming the inventory hosts that are this
	// cluster's nodes.
	Nodes     string   `toml:"nodes" json:"nodes,omitempty"`
	NodeNames []string `toml:"-" json:"node_names,omitempty"`
	// state is the controller's word on the nodes (SetState).
	state []SlurmNode
}

// Slurm is a Slurm cluster, as gpulab reaches it: the host its scontrol
// runs on (a login node, reached over SSH as any host), and which hosts
// are its nodes.
type Slurm struct {
	// Login is the host gpulab runs scontrol on: an inventory host or a
	// name ssh_config resolves.
	Login string `toml:"login" json:"login"`
	// Nodes is a host expression naming the inventory hosts that are the
	// cluster's nodes ("": every host).
	Nodes     string   `toml:"nodes" json:"nodes,omitempty"`
	NodeNames []string `toml:"-" json:"node_names,omitempty"`
	// state is the controller's word on the nodes (SetState).
	state []SlurmNode
}

// SlurmNode is a Slurm node as a host expression selects it
// (@slurm:partition=gpu): what the controller says of it now.
type SlurmNode struct {
	Name       string
	Partitions []string
	// States are its base state and flags, upper case: IDLE, DRAIN.
	States   []string
	Features []string
}

// SetState gives the cluster's nodes as the controller says them now,
// for @slurm: host expressions (gpulab reads them with scontrol on the
// login host, where an expression asks for them).
func (s *Slurm) SetState(nodes []SlurmNode) { s.state = nodes }

// UsesSlurm says whether a host expression selects by the Slurm
// cluster's state (@slurm:...).
func UsesSlurm(expr string) bool { return strings.Contains(expr, "@slurm:") }

// term resolves @slurm:KEY=VALUE (partition, state, feature; the value
// matched without regard to case) or @slurm:all.
func (s *Slurm) term(sel string) ([]string, error) {
	if s == nil {
		return nil, fmt.Errorf("@slurm:%s: the inventory has no [slurm] table (login = the host scontrol runs on)", sel)
	}
	if s.state == nil {
		return nil, fmt.Errorf("@slurm:%s: the Slurm cluster's state was not read", sel)
	}
	key, value, ok := strings.Cut(sel, "=")
	if sel != "all" && sel != "*" && (!ok || value == "") {
		return nil, fmt.Errorf("@slurm:%s: want @slurm:partition=NAME, @slurm:state=STATE, @slurm:feature=NAME or @slurm:all", sel)
	}
	var names []string
	for _, n := range s.state {
		var have []string
		switch key {
		case "all", "*":
		case "partition":
			have = n.Partitions
		case "state":
			have = n.States
		case "feature":
			have = n.Features
		default:
			return nil, fmt.Errorf("@slurm:%s: no key %q (partition, state, feature)", sel, key)
		}
		if !ok || slices.ContainsFunc(have, func(h string) bool {
			return strings.EqualFold(h, value) || key == "state" && strings.EqualFold(value, "alloc") && h == "ALLOCATED"
		}) {
			names = append(names, n.Name)
		}
	}
	return names, nil
}

// IsNode says whether host is a node of the Slurm cluster.
func (s *Slurm) IsNode(host string) bool {
	return s != nil && (s.Nodes == "" || slices.Contains(s.NodeNames, host))
}

// Empty returns the built-in default inventory: no hosts, gpulab's defaults.
func Empty() *Inventory {
	inv := &Inventory{Groups: map[string][]string{}, byName: map[string]int{}}
	inv.Defaults.applyBuiltins()
	return inv
}

func (d *Defaults) applyBuiltins() {
	d.builtin = map[string]bool{}
	for _, f := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{{"connect_timeout", &d.ConnectTimeout.Duration, DefaultConnectTimeout}, {"command_timeout", &d.CommandTimeout.Duration, DefaultCommandTimeout}, {"inactivity_timeout", &d.InactivityTimeout.Duration, DefaultInactivityTimeout}} {
		if *f.v == 0 {
			*f.v, d.builtin[f.name] = f.def, true
		}
	}
	if d.Concurrency == 0 {
		d.Concurrency = DefaultConcurrency
	}
}

// Builtin says whether the [defaults] key (connect_timeout,
// command_timeout, inactivity_timeout) holds gpulab's built-in value
// because the inventory did not set it.
func (d Defaults) Builtin(key string) bool { return d.builtin[key] }

// Only returns a copy of inv whose hosts are hosts (as Select returns
// them: inventory hosts and ad-hoc ones, which become hosts of the copy),
// its groups cut down to them. File, Defaults and Kube are inv's. The
// workbench opened with -H works on such a copy.
func (inv *Inventory) Only(hosts []Host) *Inventory {
	out := &Inventory{File: inv.File, Simulated: inv.Simulated, Defaults: inv.Defaults, Kube: inv.Kube,
		Groups: map[string][]string{}, byName: map[string]int{}}
	for _, h := range hosts {
		if _, dup := out.byName[h.Name]; dup {
			continue
		}
		out.byName[h.Name] = len(out.Hosts)
		out.Hosts = append(out.Hosts, h)
	}
	for g, members := range inv.Groups {
		var keep []string
		for _, m := range members {
			if _, ok := out.byName[m]; ok {
				keep = append(keep, m)
			}
		}
		if len(keep) > 0 {
			out.Groups[g] = keep
		}
	}
	out.indexLabels()
	return out
}

// Host returns the host called name, if the inventory has it.
func (inv *Inventory) Host(name string) (Host, bool) {
	i, ok := inv.byName[name]
	if !ok {
		return Host{}, false
	}
	return inv.Hosts[i], true
}

// adhoc is the host gpulab uses for a name the inventory does not have.
func (inv *Inventory) adhoc(name string) Host {
	return Host{Name: name, Address: name, Adhoc: true}
}

// GroupNames returns the group names in sorted order.
func (inv *Inventory) GroupNames() []string {
	names := make([]string, 0, len(inv.Groups))
	for g := range inv.Groups {
		names = append(names, g)
	}
	sortStrings(names)
	return names
}

// Duration is a TOML duration written as a string ("30s", "5m"). Bare
// numbers are refused: BurntSushi/toml would read them as nanoseconds.
type Duration struct {
	time.Duration
}

// UnmarshalTOML implements toml.Unmarshaler.
func (d *Duration) UnmarshalTOML(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("want a duration in quotes such as \"30s\" or \"5m\", found %v", v)
	}
	dur, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%q is not a duration (use units: \"500ms\", \"30s\", \"5m\", \"1h\")", s)
	}
	if dur <= 0 {
		return fmt.Errorf("duration %q must be positive", s)
	}
	d.Duration = dur
	return nil
}

// Within returns an error, naming d and the range, when d is set (not
// zero) and outside lo..hi: "1ms: want 1s to 24h".
func (d Duration) Within(lo, hi time.Duration) error {
	if d.Duration == 0 {
		return nil
	}
	return InRange(d.Duration, lo, hi)
}

// InRange returns an error, naming d and the range, when d (zero
// included) is outside lo..hi: "0s: want 1s to 24h". Command-line flags
// are checked with it against the limits the inventory's keys have.
func InRange(d, lo, hi time.Duration) error {
	if d >= lo && d <= hi {
		return nil
	}
	return fmt.Errorf("%s: want %s to %s", short(d), short(lo), short(hi))
}

// String prints the duration without zero minutes or seconds: "24h",
// "1h30m", "100ms".
func (d Duration) String() string { return short(d.Duration) }

func short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// MarshalText prints the duration as Go does ("10s").
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.Duration.String()), nil }
