package inventory

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/gpulab/gpulab/internal/tomlpos"
)

// EnvInventory names the environment variable that points at an inventory.
const EnvInventory = "GPULAB_INVENTORY"

// fileSchema is inventory.toml as written.
type fileSchema struct {
	Defaults Defaults                      `toml:"defaults"`
	Host     []hostEntry                   `toml:"host"`
	Groups   map[string]tomlpos.StringList `toml:"groups"`
	Kube     []KubeContext                 `toml:"kube"`
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
}

// ErrNotFound is returned by Locate when no inventory file exists.
var ErrNotFound = errors.New("no inventory file")

// Candidates returns, in order, the places Locate looks when no path is
// given: $GPULAB_INVENTORY, then $XDG_CONFIG_HOME/gpulab/inventory.toml
// (~/.config/gpulab/inventory.toml).
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
func Locate(getenv func(string) string) (string, error) {
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
	inv := &Inventory{File: file, Defaults: raw.Defaults, Groups: map[string][]string{}, byName: map[string]int{}}
	inv.Defaults.applyBuiltins()
	errs = append(errs, checkDefaults(ix, raw.Defaults)...)
	errs = append(errs, inv.addHosts(ix, raw.Host)...)
	errs = append(errs, inv.addGroups(ix, raw.Groups, raw.Host)...)
	errs = append(errs, inv.addKube(ix, raw.Kube)...)
	if err := tomlpos.Join(errs...); err != nil {
		return nil, err
	}
	return inv, nil
}

func checkDefaults(ix *tomlpos.Index, d Defaults) []error {
	var errs []error
	if d.Port < 0 || d.Port > 65535 {
		errs = append(errs, ix.Errorf([]any{"defaults", "port"}, "port %d is out of range (want 1-65535)", d.Port))
	}
	if d.Concurrency < 0 {
		errs = append(errs, ix.Errorf([]any{"defaults", "concurrency"}, "concurrency %d must be at least 1", d.Concurrency))
	}
	if d.Jump != "" {
		if err := checkJump(d.Jump); err != nil {
			errs = append(errs, ix.Errorf([]any{"defaults", "jump"}, "%v", err))
		}
	}
	return errs
}

func (inv *Inventory) addHosts(ix *tomlpos.Index, entries []hostEntry) []error {
	var errs []error
	for i, e := range entries {
		at := func(k string) []any { return []any{"host", i, k} }
		if e.Name == "" {
			errs = append(errs, ix.Errorf([]any{"host", i}, "host has no name (want name = \"gpu01\" or a node set such as \"gpu[01-08]\")"))
			continue
		}
		names, err := ExpandPattern(e.Name)
		if err != nil {
			errs = append(errs, ix.Errorf(at("name"), "%v", err))
			continue
		}
		if len(names) > 1 && e.Address != "" && !strings.Contains(e.Address, "{name}") {
			errs = append(errs, ix.Errorf(at("address"), "address %q is shared by %d hosts; use {name} in it (for example \"{name}.cluster.local\")", e.Address, len(names)))
		}
		if e.Port < 0 || e.Port > 65535 {
			errs = append(errs, ix.Errorf(at("port"), "port %d is out of range (want 1-65535)", e.Port))
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
		for gi, g := range e.Groups {
			if !nameRE.MatchString(g) {
				errs = append(errs, ix.Errorf([]any{"host", i, "groups", gi}, "group name %q: use letters, digits, '.', '_' and '-'", g))
			}
		}
		pos, _ := ix.Lookup("host", i)
		src := fmt.Sprintf("%s:%d:%d", ix.File, pos.Line, pos.Col)
		for _, n := range names {
			if j, dup := inv.byName[n]; dup {
				errs = append(errs, ix.Errorf(at("name"), "host %q is already defined at %s", n, inv.Hosts[j].Source))
				continue
			}
			addr := e.Address
			if addr == "" {
				addr = n
			}
			h := Host{
				Name: n, Address: strings.ReplaceAll(addr, "{name}", n), Port: e.Port, User: e.User,
				IdentityFile: e.IdentityFile, Jump: e.Jump, Labels: e.Labels, Source: src,
			}
			inv.byName[n] = len(inv.Hosts)
			inv.Hosts = append(inv.Hosts, h)
		}
	}
	return errs
}

// checkJump accepts ProxyJump syntax: [user@]host[:port], comma-separated.
func checkJump(j string) error {
	for _, hop := range strings.Split(j, ",") {
		hop = strings.TrimSpace(hop)
		hostPort := hop
		if _, after, ok := strings.Cut(hop, "@"); ok {
			hostPort = after
		}
		if hop == "" || hostPort == "" || strings.ContainsAny(hop, " \t'\"`$;|&") {
			return fmt.Errorf("jump %q: want [user@]host[:port], comma-separated for a chain", j)
		}
	}
	return nil
}

func (inv *Inventory) addGroups(ix *tomlpos.Index, groups map[string]tomlpos.StringList, entries []hostEntry) []error {
	var errs []error
	// Membership declared on hosts (host.groups = [...]).
	declared := map[string][]string{}
	for _, e := range entries {
		names, err := ExpandPattern(e.Name)
		if err != nil {
			continue // reported by addHosts
		}
		for _, g := range e.Groups {
			declared[g] = append(declared[g], names...)
		}
	}
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
		if !nameRE.MatchString(g) {
			errs = append(errs, ix.Errorf([]any{"groups", g}, "group name %q: use letters, digits, '.', '_' and '-'", g))
		}
	}
	sort.Strings(names)
	const resolving = "\x00"
	var resolve func(g string, chain []string) ([]string, error)
	resolve = func(g string, chain []string) ([]string, error) {
		if m, ok := inv.Groups[g]; ok {
			if len(m) == 1 && m[0] == resolving {
				return nil, fmt.Errorf("groups refer to each other in a cycle: @%s", strings.Join(append(chain, g), " -> @"))
			}
			return m, nil
		}
		inv.Groups[g] = []string{resolving}
		members := declared[g]
		for _, expr := range groups[g] {
			hosts, err := inv.selectWith(expr, func(ref string) ([]string, error) {
				if _, ok := groups[ref]; !ok && declared[ref] == nil {
					return nil, fmt.Errorf("unknown group @%s", ref)
				}
				return resolve(ref, append(chain, g))
			}, true)
			if err != nil {
				delete(inv.Groups, g)
				return nil, err
			}
			for _, h := range hosts {
				members = append(members, h.Name)
			}
		}
		inv.Groups[g] = inv.ordered(members)
		return inv.Groups[g], nil
	}
	for _, g := range names {
		if _, err := resolve(g, nil); err != nil {
			errs = append(errs, ix.Errorf([]any{"groups", g}, "group %q: %v", g, err))
		}
	}
	for g, members := range declared {
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
	return errs
}

func (inv *Inventory) addKube(ix *tomlpos.Index, kube []KubeContext) []error {
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
		if k.Nodes != "" {
			hosts, err := inv.selectWith(k.Nodes, inv.groupRef, true)
			if err != nil {
				errs = append(errs, ix.Errorf([]any{"kube", i, "nodes"}, "%v", err))
			}
			for _, h := range hosts {
				k.NodeNames = append(k.NodeNames, h.Name)
			}
		}
		inv.Kube = append(inv.Kube, k)
	}
	return errs
}

// ordered returns the distinct names in inventory order.
func (inv *Inventory) ordered(names []string) []string {
	seen := map[string]bool{}
	out := make([]string, 0, len(names))
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return inv.byName[out[a]] < inv.byName[out[b]] })
	return out
}

func sortStrings(s []string) { sort.Strings(s) }
