package inventory

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gpulab/gpulab/internal/tomlpos"
)

// EnvInventory names the environment variable that points at an inventory.
const EnvInventory = "GPULAB_INVENTORY"

// fileSchema is inventory.toml as written.
type fileSchema struct {
	Simulated bool                          `toml:"simulated"`
	Defaults  Defaults                      `toml:"defaults"`
	Host      []hostEntry                   `toml:"host"`
	Groups    map[string]tomlpos.StringList `toml:"groups"`
	Kube      []KubeContext                 `toml:"kube"`
	Slurm     *Slurm                        `toml:"slurm"`
}

type hostEntry struct {
	Name         string            `toml:"name"`
	Address      string            `toml:"address"`
	Port         int               `toml:"port"`
	User         string            `toml:"user"`
	IdentityFile string            `toml:"identity_file"`
	Jump         string            `toml:"jump"`
	Labels       map[string]string `toml:"labels"`
	Groups       []string          `toml:"groups"`
	Expect       Expect            `toml:"expect"`
}

// ErrNotFound is returned by Locate when no inventory file exists.
var ErrNotFound = errors.New("no inventory file")

// Candidates returns, in order, the places an inventory is looked for when
// no path is given: $GPULAB_INVENTORY, then
// $XDG_CONFIG_HOME/gpulab/inventory.toml (~/.config/gpulab/inventory.toml).
// Locate takes $GPULAB_INVENTORY, when set, as the only one.
func Candidates(getenv func(string) string) []string {
	var c []string
	if p := getenv(EnvInventory); p != "" {
		c = append(c, p)
	}
	cfg := getenv("XDG_CONFIG_HOME")
	if cfg == "" {
		if home := getenv("HOME"); home != "" {
			cfg = filepath.Join(home, ".config")
		}
	}
	if cfg != "" {
		c = append(c, filepath.Join(cfg, "gpulab", "inventory.toml"))
	}
	return c
}

// Locate returns the first existing candidate. When none exists the error
// wraps ErrNotFound and lists every place it looked.
//
// $GPULAB_INVENTORY, when set, is the inventory, as --inventory FILE is: a
// file it names that does not exist is an error naming the variable and
// the path (not ErrNotFound), never passed over for the next candidate. A
// path it names that cannot be looked at for another reason (a directory
// gpulab may not search) is returned, for Load to say why.
func Locate(getenv func(string) string) (string, error) {
	if p := getenv(EnvInventory); p != "" {
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("$%s: inventory %q does not exist (fix or unset %s, or pass --inventory FILE)", EnvInventory, p, EnvInventory)
		}
		return p, nil
	}
	cands := Candidates(getenv)
	for _, p := range cands {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: looked in %s (set %s or pass --inventory FILE)", ErrNotFound, strings.Join(quoteAll(cands), ", "), EnvInventory)
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}

// Load reads and validates the inventory at path. A file larger than
// tomlpos.MaxFileSize is refused unread, with an error that wraps
// tomlpos.ErrLimit.
func Load(path string) (*Inventory, error) {
	data, err := tomlpos.ReadFile(path)
	if errors.Is(err, tomlpos.ErrLimit) {
		return nil, err
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("inventory %q does not exist", path)
		}
		return nil, fmt.Errorf("read inventory: %w", err)
	}
	return Parse(path, data)
}

var (
	nameRE  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	labelRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._/-]*[A-Za-z0-9])?$`)
)

// Parse validates an inventory held in memory; file names it in errors.
// Every problem is reported, each as a *tomlpos.Error naming file:line:col.
func Parse(file string, data []byte) (*Inventory, error) {
	var raw fileSchema
	ix, err := tomlpos.Decode(file, data, &raw)
	if ix == nil {
		return nil, err
	}
	errs := []error{err}
	inv := &Inventory{File: file, Simulated: raw.Simulated, Defaults: raw.Defaults, Groups: map[string][]string{}, byName: map[string]int{}}
	inv.Defaults.applyBuiltins()
	errs = append(errs, checkDefaults(ix, raw.Defaults)...)
	names, hostErrs := inv.addHosts(ix, raw.Host)
	errs = append(errs, hostErrs...)
	inv.indexLabels()
	budget := MaxGroupNames
	errs = append(errs, inv.addGroups(ix, raw.Groups, raw.Host, names, &budget)...)
	errs = append(errs, inv.addKube(ix, raw.Kube, &budget)...)
	errs = append(errs, inv.addSlurm(ix, raw.Slurm, &budget)...)
	if err := tomlpos.Join(errs...); err != nil {
		return nil, err
	}
	return inv, nil
}

func checkDefaults(ix *tomlpos.Index, d Defaults) []error {
	var errs []error
	if err := checkPort(ix, d.Port, "defaults", "port"); err != nil {
		errs = append(errs, err)
	}
	if _, set := ix.Lookup("defaults", "concurrency"); set && (d.Concurrency < 1 || d.Concurrency > MaxConcurrency) {
		errs = append(errs, ix.Errorf([]any{"defaults", "concurrency"}, "concurrency %d: want 1 to %d hosts at once", d.Concurrency, MaxConcurrency))
	}
	for _, t := range []struct {
		key string
		d   Duration
		max time.Duration
	}{
		{"connect_timeout", d.ConnectTimeout, MaxConnectTimeout},
		{"command_timeout", d.CommandTimeout, MaxCommandTimeout},
		{"inactivity_timeout", d.InactivityTimeout, MaxCommandTimeout},
	} {
		if err := t.d.Within(MinTimeout, t.max); err != nil {
			errs = append(errs, ix.Errorf([]any{"defaults", t.key}, "%s %v", t.key, err))
		}
	}
	if d.Jump != "" {
		if err := checkJump(d.Jump); err != nil {
			errs = append(errs, ix.Errorf([]any{"defaults", "jump"}, "%v", err))
		}
	}
	if d.User != "" {
		if err := checkUserName("user", d.User); err != nil {
			errs = append(errs, ix.Errorf([]any{"defaults", "user"}, "[defaults] %v", err))
		}
	}
	return errs
}

// addHosts adds the hosts of entries, and returns the names each entry
// expands to (nil for an entry that has a problem with its name or comes
// after the entry that brings the hosts over MaxHosts). Each entry's size is
// computed before it is expanded, so that the entry that crosses MaxHosts is
// refused, and those after it are checked but not expanded.
func (inv *Inventory) addHosts(ix *tomlpos.Index, entries []hostEntry) ([][]string, []error) {
	var errs []error
	expanded := make([][]string, len(entries))
	total, over := uint64(0), false
	for i, e := range entries {
		at := func(k string) []any { return []any{"host", i, k} }
		if e.Name == "" {
			errs = append(errs, ix.Errorf([]any{"host", i}, "host has no name (want name = \"gpu01\" or a node set such as \"gpu[01-08]\")"))
			continue
		}
		var names []string
		size, err := NodeSetSize(e.Name)
		switch {
		case strings.HasPrefix(e.Name, "-"):
			errs = append(errs, ix.Errorf(at("name"), "host %q: %v", e.Name, checkHostName("name", e.Name)))
		case err != nil:
			errs = append(errs, ix.Errorf(at("name"), "%v", err))
		case over:
		case size > MaxHosts-total:
			over = true
			if total == 0 {
				errs = append(errs, ix.Errorf(at("name"), "node set %q names %s hosts, more than the %d an inventory may hold", e.Name, sizeText(size), MaxHosts))
				break
			}
			sum, carry := bits.Add64(total, size, 0)
			if carry != 0 {
				sum = math.MaxUint64
			}
			errs = append(errs, ix.Errorf(at("name"), "node set %q names %s hosts, which brings the inventory to %s, more than the %d hosts an inventory may hold", e.Name, sizeText(size), sizeText(sum), MaxHosts))
		default:
			total += size
			if names, err = ExpandPattern(e.Name); err != nil {
				errs = append(errs, ix.Errorf(at("name"), "%v", err)) // not reached: the size is checked
			}
		}
		expanded[i] = names
		errs = append(errs, checkHostEntry(ix, i, e, len(names))...)
		errs = append(errs, inv.addNames(ix, i, e, names)...)
	}
	return expanded, errs
}

// checkHostEntry checks the fields of the i-th [[host]] other than its
// name, which names n hosts.
func checkHostEntry(ix *tomlpos.Index, i int, e hostEntry, n int) []error {
	var errs []error
	at := func(k string) []any { return []any{"host", i, k} }
	if n > 1 && e.Address != "" && !strings.Contains(e.Address, "{name}") {
		errs = append(errs, ix.Errorf(at("address"), "address %q is shared by %d hosts; use {name} in it (for example \"{name}.cluster.local\")", e.Address, n))
	}
	if e.Address != "" {
		if err := checkAddress(e.Address); err != nil {
			errs = append(errs, ix.Errorf(at("address"), "host %q: %v", e.Name, err))
		}
	}
	if e.User != "" {
		if err := checkUserName("user", e.User); err != nil {
			errs = append(errs, ix.Errorf(at("user"), "host %q: %v", e.Name, err))
		}
	}
	if err := checkPort(ix, e.Port, at("port")...); err != nil {
		errs = append(errs, err)
	}
	if e.Jump != "" {
		if err := checkJump(e.Jump); err != nil {
			errs = append(errs, ix.Errorf(at("jump"), "%v", err))
		}
	}
	for k, v := range e.Labels {
		if !labelRE.MatchString(k) {
			errs = append(errs, ix.Errorf([]any{"host", i, "labels", k}, "label key %q: use letters, digits, '.', '_', '-' and '/'", k))
		}
		if !labelRE.MatchString(v) {
			errs = append(errs, ix.Errorf([]any{"host", i, "labels", k}, "label %s=%q: values use letters, digits, '.', '_', '-' and '/'", k, v))
		}
	}
	for _, kv := range []struct {
		key    string
		v, max int
	}{{"gpus", e.Expect.GPUs, 1024}, {"ib_ports", e.Expect.IBPorts, 64}, {"ib_rate_gbps", e.Expect.IBRateGbps, 3200}} {
		if kv.v < 0 || kv.v > kv.max {
			errs = append(errs, ix.Errorf([]any{"host", i, "expect", kv.key}, "expect.%s = %d: want 1 to %d (or leave it out)", kv.key, kv.v, kv.max))
		}
	}
	for gi, g := range e.Groups {
		if !nameRE.MatchString(g) {
			errs = append(errs, ix.Errorf([]any{"host", i, "groups", gi}, "group name %q: use letters, digits, '.', '_' and '-'", g))
		}
	}
	return errs
}

// addNames adds the hosts the i-th [[host]] expands to (none when its
// name has a problem), refusing a name already defined.
func (inv *Inventory) addNames(ix *tomlpos.Index, i int, e hostEntry, names []string) []error {
	var errs []error
	pos, _ := ix.Lookup("host", i)
	src := fmt.Sprintf("%s:%d:%d", ix.File, pos.Line, pos.Col)
	for _, n := range names {
		if j, dup := inv.byName[n]; dup {
			errs = append(errs, ix.Errorf([]any{"host", i, "name"}, "host %q is already defined at %s", n, inv.Hosts[j].Source))
			continue
		}
		addr := e.Address
		if addr == "" {
			addr = n
		}
		h := Host{
			Name: n, Address: strings.ReplaceAll(addr, "{name}", n), Port: e.Port, User: e.User,
			IdentityFile: e.IdentityFile, Jump: e.Jump, Labels: e.Labels, Expect: e.Expect, Source: src,
		}
		inv.byName[n] = len(inv.Hosts)
		inv.Hosts = append(inv.Hosts, h)
	}
	return errs
}

// indexLabels fills byLabel from the hosts' labels.
func (inv *Inventory) indexLabels() {
	inv.byLabel = map[string]map[string][]int{}
	for i, h := range inv.Hosts {
		for k, v := range h.Labels {
			if inv.byLabel[k] == nil {
				inv.byLabel[k] = map[string][]int{}
			}
			inv.byLabel[k][v] = append(inv.byLabel[k][v], i)
		}
	}
}

// checkPort checks the port at path: 1-65535 when written (0 means unset).
func checkPort(ix *tomlpos.Index, port int, path ...any) error {
	if _, set := ix.Lookup(path...); set && (port < 1 || port > 65535) {
		return ix.Errorf(path, "port %d is out of range (want 1-65535)", port)
	}
	return nil
}

// Limits on groups, so that a small inventory cannot cost minutes: a
// chain of 4,000 groups, or fifty groups of a million hosts, is an error.
const (
	// MaxGroupDepth is how deeply groups may name groups: @a names @b,
	// which names @c, is 3 deep.
	MaxGroupDepth = 32
	// MaxGroupNames bounds the work of resolving groups and kube node
	// lists: the host names that their expressions and host.groups yield,
	// all together, a host counting each time it is named. It is 64 groups
	// of MaxHosts (65,536) hosts.
	MaxGroupNames = 64 * MaxHosts
)

// errReported stands for a problem reported at the group where it is, and
// makes the groups that name that group fail without a report of their own.
var errReported = errors.New("a group it names has a problem")

// groupResolver resolves each group once, in time linear in the groups'
// expressions and the names they yield, bounded by MaxGroupNames.
type groupResolver struct {
	inv      *Inventory
	ix       *tomlpos.Index
	groups   map[string]tomlpos.StringList
	declared map[string][]string // membership declared on hosts (host.groups = [...])
	failed   map[string]bool
	stack    []string // the groups being resolved, outermost first
	budget   *int     // names left of MaxGroupNames
	errs     []error
}

// addGroups resolves the groups; expanded holds the names of each host
// entry, as addHosts returns them; budget is what is left of MaxGroupNames.
func (inv *Inventory) addGroups(ix *tomlpos.Index, groups map[string]tomlpos.StringList, entries []hostEntry, expanded [][]string, budget *int) []error {
	r := &groupResolver{inv: inv, ix: ix, groups: groups, declared: map[string][]string{}, failed: map[string]bool{}, budget: budget}
	for i, e := range entries {
		names := expanded[i]
		if names == nil {
			continue // reported by addHosts
		}
		if *budget -= len(names) * len(e.Groups); *budget < 0 {
			r.errs = append(r.errs, ix.Errorf([]any{"host", i, "groups"}, "%v", errTooManyNames))
			return r.errs
		}
		for _, g := range e.Groups {
			r.declared[g] = append(r.declared[g], names...)
		}
	}
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
		if !nameRE.MatchString(g) {
			r.errs = append(r.errs, ix.Errorf([]any{"groups", g}, "group name %q: use letters, digits, '.', '_' and '-'", g))
		}
	}
	sort.Strings(names)
	for _, g := range names {
		if _, err := r.resolve(g); err != nil && *budget < 0 {
			return r.errs // reported once; the groups left would fail alike
		}
	}
	for g, members := range r.declared {
		if _, ok := inv.Groups[g]; !ok {
			inv.Groups[g] = inv.ordered(members)
		}
	}
	for g, members := range inv.Groups {
		for _, m := range members {
			if i, ok := inv.byName[m]; ok {
				inv.Hosts[i].Groups = append(inv.Hosts[i].Groups, g)
			}
		}
	}
	for i := range inv.Hosts {
		sort.Strings(inv.Hosts[i].Groups)
	}
	return r.errs
}

// resolve returns the members of group g, resolving it first if need be.
// A problem is reported at the group whose own expression has it, once;
// the groups that name that group return errReported.
func (r *groupResolver) resolve(g string) ([]string, error) {
	if m, ok := r.inv.Groups[g]; ok {
		return m, nil
	}
	if r.failed[g] {
		return nil, errReported
	}
	if i := slices.Index(r.stack, g); i >= 0 {
		cycle := append(slices.Clone(r.stack[i:]), g)
		r.report(r.stack[len(r.stack)-1], fmt.Errorf("groups refer to each other in a cycle: @%s", strings.Join(cycle, " -> @")))
		return nil, errReported
	}
	if len(r.stack) == MaxGroupDepth {
		chain := append(slices.Clone(r.stack), g)
		r.report(r.stack[0], fmt.Errorf("groups name groups more than %d deep: @%s", MaxGroupDepth, strings.Join(chain, " -> @")))
		return nil, errReported
	}
	r.stack = append(r.stack, g)
	defer func() { r.stack = r.stack[:len(r.stack)-1] }()
	members := r.declared[g]
	for _, expr := range r.groups[g] {
		set, err := r.inv.evaluate(expr, r.ref, true, r.budget)
		if errors.Is(err, errReported) {
			r.failed[g] = true
			return nil, err
		}
		if errors.Is(err, errNamesBudget) {
			err = errTooManyNames
		}
		if err != nil {
			r.report(g, err)
			return nil, errReported
		}
		for n := range set {
			members = append(members, n)
		}
	}
	r.inv.Groups[g] = r.inv.ordered(members)
	return r.inv.Groups[g], nil
}

// ref resolves @name in a group's expression.
func (r *groupResolver) ref(name string) ([]string, error) {
	if _, ok := r.groups[name]; !ok && r.declared[name] == nil {
		return nil, fmt.Errorf("unknown group @%s", name)
	}
	return r.resolve(name)
}

// report records err at group g and marks it failed.
func (r *groupResolver) report(g string, err error) {
	r.failed[g] = true
	r.errs = append(r.errs, r.ix.Errorf([]any{"groups", g}, "group %q: %v", g, err))
}

var errTooManyNames = fmt.Errorf("groups and kube contexts name more than %d hosts in all (a host counts each time it is named)", MaxGroupNames)

// addKube adds the kube contexts; budget is what is left of MaxGroupNames.
func (inv *Inventory) addKube(ix *tomlpos.Index, kube []KubeContext, budget *int) []error {
	var errs []error
	seen := map[string]bool{}
	for i, k := range kube {
		if k.Name == "" {
			errs = append(errs, ix.Errorf([]any{"kube", i}, "kube context has no name (want name = \"prod\")"))
			continue
		}
		if seen[k.Name] {
			errs = append(errs, ix.Errorf([]any{"kube", i, "name"}, "kube context %q is defined twice", k.Name))
		}
		seen[k.Name] = true
		if k.Nodes != "" && *budget >= 0 {
			set, err := inv.evaluate(k.Nodes, inv.groupRef, true, budget)
			if errors.Is(err, errNamesBudget) {
				err = errTooManyNames
			}
			if err != nil {
				errs = append(errs, ix.Errorf([]any{"kube", i, "nodes"}, "%v", err))
			}
			for n := range set {
				k.NodeNames = append(k.NodeNames, n)
			}
			k.NodeNames = inv.ordered(k.NodeNames)
		}
		inv.Kube = append(inv.Kube, k)
	}
	return errs
}

// addSlurm adds the Slurm cluster; budget is what is left of
// MaxGroupNames.
func (inv *Inventory) addSlurm(ix *tomlpos.Index, s *Slurm, budget *int) []error {
	if s == nil {
		return nil
	}
	var errs []error
	if s.Login == "" {
		errs = append(errs, ix.Errorf([]any{"slurm"}, "slurm has no login (want login = \"login01\": the host scontrol runs on)"))
	}
	if s.Nodes != "" && *budget >= 0 {
		set, err := inv.evaluate(s.Nodes, inv.groupRef, true, budget)
		if errors.Is(err, errNamesBudget) {
			err = errTooManyNames
		}
		if err != nil {
			errs = append(errs, ix.Errorf([]any{"slurm", "nodes"}, "%v", err))
		}
		for n := range set {
			s.NodeNames = append(s.NodeNames, n)
		}
		s.NodeNames = inv.ordered(s.NodeNames)
	}
	inv.Slurm = s
	return errs
}

// ordered returns the distinct names in inventory order, names the
// inventory does not have last, in natural order.
func (inv *Inventory) ordered(names []string) []string {
	var known []int
	var other []string
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		if i, ok := inv.byName[n]; ok {
			known = append(known, i)
		} else {
			other = append(other, n)
		}
	}
	slices.Sort(known)
	slices.SortFunc(other, CompareNames)
	out := make([]string, 0, len(known)+len(other))
	for _, i := range known {
		out = append(out, inv.Hosts[i].Name)
	}
	return append(out, other...)
}

func sortStrings(s []string) { sort.Strings(s) }
