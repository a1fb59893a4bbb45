package orchestrator

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	sshconfig "github.com/kevinburke/ssh_config"

	"github.com/gpulab/gpulab/internal/fileio"
	"github.com/gpulab/gpulab/inventory"
)

// Target is one host resolved into everything needed to reach it.
type Target struct {
	Name     string // the inventory or command-line name
	HostName string // what is dialled
	Port     int
	User     string
	// IdentityFiles are offered after ssh-agent's keys. Explicit says they
	// were named by the user (a missing one is an error) rather than
	// OpenSSH's defaults (missing ones are skipped).
	IdentityFiles []string
	Explicit      bool
	// IdentitiesOnly offers only the identity files' keys (from the agent
	// when it holds them), not every key the agent has.
	IdentitiesOnly bool
	KnownHosts     []string
	// HostKeyAlias is the name looked up in known_hosts instead of the
	// host:port dialled.
	HostKeyAlias string
	Jump         []Target // ProxyJump hops, first dialled first
	// ProxyCommand is run to reach the host; its stdin and stdout carry the
	// connection. Tokens (%h %p %r %n %%) are expanded when it runs.
	ProxyCommand string
	// IdentityAgent is ssh_config's: "" or "SSH_AUTH_SOCK" for the agent in
	// $SSH_AUTH_SOCK, "none" for no agent, else the agent's socket.
	IdentityAgent string

	ConnectTimeout      time.Duration
	CommandTimeout      time.Duration
	InactivityTimeout   time.Duration
	ServerAliveInterval time.Duration
	ServerAliveCountMax int

	// Sources says where each setting came from, by field name:
	// "inventory.toml:12:1", "~/.ssh/config:4", "built-in default", "flag".
	Sources map[string]string

	// Unresolved, when set, says why this selected host could not be
	// resolved (Resolver.Targets): it is never dialled, and the engine
	// gives it an Error result with this reason, in its place.
	Unresolved string

	// Kube, when set, is a Kubernetes node reached through the API server
	// (KubeTransport.Target), not over SSH.
	Kube *KubeNode `json:",omitempty"`
}

// HostPort is the address dialled.
func (t Target) HostPort() string {
	if t.Unresolved != "" {
		return ""
	}
	if t.Kube != nil {
		return "node/" + t.Name
	}
	return joinHostPort(t.HostName, t.Port)
}

func joinHostPort(h string, p int) string {
	if strings.Contains(h, ":") {
		return "[" + h + "]:" + strconv.Itoa(p)
	}
	return h + ":" + strconv.Itoa(p)
}

// Overrides are command-line settings; they win over everything else.
type Overrides struct {
	User              string
	Port              int
	IdentityFile      string
	KnownHosts        string
	ConnectTimeout    time.Duration
	CommandTimeout    time.Duration
	InactivityTimeout time.Duration
}

// SourceFlag is Target.Sources' word for a setting the command line gave,
// SourceDefault for one gpulab or OpenSSH sets when nothing else does.
const (
	SourceFlag    = "flag"
	SourceDefault = "built-in default"
)

// Resolver turns inventory hosts into Targets. Precedence, highest first:
// command-line overrides, the inventory host, the inventory defaults,
// ~/.ssh/config (or the file given like ssh -F), OpenSSH's defaults.
type Resolver struct {
	Inventory *inventory.Inventory
	Overrides Overrides
	// Home and LocalUser expand "~", %d and %u.
	Home, LocalUser string

	sshConfig     *sshconfig.Config
	sshConfigPath string
	blocks        hostIndex
}

// NewResolver reads the ssh_config file at path ("" for the inventory's
// ssh_config or ~/.ssh/config); a missing file is fine unless it was named.
func NewResolver(inv *inventory.Inventory, sshConfigPath string, o Overrides, home, localUser string) (*Resolver, error) {
	// An unset or relative HOME would have ~/.ssh read from the working
	// directory (a cloned repository's .ssh/config): the passwd entry's,
	// as OpenSSH, or nothing.
	if !filepath.IsAbs(home) {
		u, err := user.Current()
		if err != nil || !filepath.IsAbs(u.HomeDir) {
			return nil, fmt.Errorf("HOME is %q and the user's home directory is unknown: gpulab will not look for ~/.ssh relative to the working directory; set HOME", home)
		}
		home = u.HomeDir
	}
	r := &Resolver{Inventory: inv, Overrides: o, Home: home, LocalUser: localUser}
	defaultPath := filepath.Join(home, ".ssh", "config")
	explicit := sshConfigPath != ""
	if sshConfigPath == "" && inv.Defaults.SSHConfig != "" {
		// Naming OpenSSH's own default keeps it optional, as it is for ssh.
		sshConfigPath = inv.Defaults.SSHConfig
		explicit = r.expandTilde(sshConfigPath) != defaultPath
	}
	if sshConfigPath == "" {
		sshConfigPath = defaultPath
	}
	sshConfigPath = r.expandTilde(sshConfigPath)
	data, err := fileio.ReadTrusted(sshConfigPath, fileio.MaxConfig)
	switch {
	case err == nil:
		if err := r.vetSSHConfig(sshConfigPath, data, 0); err != nil {
			return nil, err
		}
		cfg, err := sshconfig.DecodeBytes(data)
		if err != nil {
			return nil, fmt.Errorf("ssh_config %s: %w", sshConfigPath, err)
		}
		r.sshConfig, r.sshConfigPath, r.blocks = cfg, sshConfigPath, indexHosts(cfg.Hosts)
	case errors.Is(err, fs.ErrNotExist) && !explicit:
	default:
		return nil, fmt.Errorf("ssh_config: %w", err)
	}
	return r, nil
}

// includeHomes are the home directories a relative Include may be read
// under: gpulab's (HOME) and the ssh_config library's (the passwd
// entry's), when they differ; each is checked.
func (r *Resolver) includeHomes() []string {
	homes := []string{r.Home}
	if u, err := user.Current(); err == nil && u.HomeDir != "" && u.HomeDir != r.Home {
		homes = append(homes, u.HomeDir)
	}
	return homes
}

// globDir is the directory of a glob pattern's first component with a
// wildcard ("" when the pattern has none): where a match could appear.
func globDir(pattern string) string {
	i := strings.IndexAny(pattern, "*?[")
	if i < 0 {
		return ""
	}
	return filepath.Dir(pattern[:i] + "x")
}

// vetSSHConfig refuses what gpulab cannot read as OpenSSH does, before
// the ssh_config library reads it: Match blocks (the library treats
// "Match host" as "Host", which would silently take another route, and
// cannot evaluate the other criteria), and Include files that are not
// regular files or are too large (the library reads them whole, as they
// are). Included files are checked the same way, 5 deep at most.
func (r *Resolver) vetSSHConfig(file string, data []byte, depth int) error {
	if depth > 5 {
		return fmt.Errorf("ssh_config %s: Include nests more than 5 deep", file)
	}
	for n, line := range strings.Split(string(data), "\n") {
		fields := strings.FieldsFunc(line, func(c rune) bool { return c == ' ' || c == '\t' || c == '=' })
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		switch strings.ToLower(fields[0]) {
		case "match":
			return fmt.Errorf("%s:%d: Match blocks are not supported: gpulab cannot evaluate them as OpenSSH does, and will not take another route than ssh would; use Host blocks, the inventory, or -F with a file without Match", file, n+1)
		case "include":
			// The ssh_config library opens Include files itself, reading
			// the line its own way (the value ends at # or CR, splits on
			// spaces): only a line both read alike is taken, so that the
			// files checked here are the files it reads.
			if strings.ContainsAny(line, "#\r\t\"=") || strings.Contains(strings.TrimSpace(line), "  ") {
				return fmt.Errorf("%s:%d: an Include line with a comment, a CR (Windows line ends), a tab, quotes, '=' or two spaces is refused: gpulab checks the files an Include reads, and could read this one otherwise than ssh; write Include PATH [PATH...], one space apart", file, n+1)
			}
			for _, pattern := range fields[1:] {
				var ps []string
				for _, home := range r.includeHomes() {
					p := pattern
					switch {
					case filepath.IsAbs(p):
					case strings.HasPrefix(p, "~/"):
						p = filepath.Join(home, p[2:])
					default:
						p = filepath.Join(home, ".ssh", p)
					}
					if !slices.Contains(ps, p) {
						ps = append(ps, p)
					}
				}
				var matches []string
				for _, p := range ps {
					// The library globs again when it reads: a directory
					// another user can write could gain a file meanwhile.
					// So may a missing file appear (refused where another
					// user could create it).
					check := func() error { return fileio.CheckTrusted(p) }
					if d := globDir(p); d != "" {
						check = func() error { return fileio.CheckTrustedDir(d) }
					}
					if err := check(); err != nil && !errors.Is(err, fs.ErrNotExist) {
						return fmt.Errorf("%s:%d: Include %s: %w", file, n+1, pattern, err)
					}
					m, err := filepath.Glob(p)
					if err != nil {
						return fmt.Errorf("%s:%d: Include %s: %w", file, n+1, pattern, err)
					}
					matches = append(matches, m...)
				}
				for _, m := range matches {
					inc, err := fileio.ReadTrusted(m, fileio.MaxConfig)
					if err != nil {
						return fmt.Errorf("%s:%d: Include %s: %w", file, n+1, pattern, err)
					}
					if err := r.vetSSHConfig(m, inc, depth+1); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func (r *Resolver) expandTilde(p string) string {
	if p == "~" {
		return r.Home
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return filepath.Join(r.Home, rest)
	}
	return p
}

// sshGet returns an ssh_config value for alias and where it is.
func (r *Resolver) sshGet(alias, key string) (string, string) {
	for _, h := range r.blocks.matching(alias) {
		for _, n := range h.Nodes {
			switch t := n.(type) {
			case *sshconfig.KV:
				if strings.EqualFold(t.Key, key) {
					return t.Value, fmt.Sprintf("%s:%d", r.sshConfigPath, t.Pos().Line)
				}
			case *sshconfig.Include:
				if v := t.Get(alias, key); v != "" {
					return v, fmt.Sprintf("%s (Include)", r.sshConfigPath)
				}
			}
		}
	}
	return "", ""
}

// sshGetAll returns every ssh_config value for alias (IdentityFile) and
// where the first is.
func (r *Resolver) sshGetAll(alias, key string) ([]string, string) {
	var all []string
	for _, h := range r.blocks.matching(alias) {
		for _, n := range h.Nodes {
			switch t := n.(type) {
			case *sshconfig.KV:
				if strings.EqualFold(t.Key, key) {
					all = append(all, t.Value)
				}
			case *sshconfig.Include:
				v, _ := t.GetAll(alias, key)
				all = append(all, v...)
			}
		}
	}
	_, src := r.sshGet(alias, key)
	return all, src
}

// hostIndex finds the ssh_config Host blocks that match an alias without
// matching every block: a block whose patterns (but negated ones) are
// all literal can match only the names it lists, so it is indexed under
// them; the others (a wildcard, as Host *) are matched each time.
// Resolving N hosts through B blocks costs O(N + B), not N×B.
type hostIndex struct {
	hosts   []*sshconfig.Host
	literal map[string][]int // a name: the blocks listing it, in order
	wild    []int            // blocks with a wildcard pattern, in order

	mu   *sync.Mutex // a host's lookups ask for its blocks a dozen times
	seen map[string][]*sshconfig.Host
}

func indexHosts(hosts []*sshconfig.Host) hostIndex {
	x := hostIndex{hosts: hosts, literal: map[string][]int{}, mu: &sync.Mutex{}, seen: map[string][]*sshconfig.Host{}}
	for i, h := range hosts {
		var names []string
		wild := false
		for _, p := range h.Patterns {
			ps := p.String()
			switch {
			case strings.HasPrefix(ps, "!"): // excludes: Matches weighs it
			case strings.ContainsAny(ps, "*?"):
				wild = true
			default:
				names = append(names, ps)
			}
		}
		switch {
		case wild:
			x.wild = append(x.wild, i)
		default: // a block of only negated patterns matches nothing
			for _, n := range names {
				if l := x.literal[n]; len(l) == 0 || l[len(l)-1] != i {
					x.literal[n] = append(l, i)
				}
			}
		}
	}
	return x
}

// matching returns the blocks that match alias, in the file's order.
func (x hostIndex) matching(alias string) []*sshconfig.Host {
	if x.mu == nil { // no ssh_config
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if out, ok := x.seen[alias]; ok {
		return out
	}
	lit, wild := x.literal[alias], x.wild
	out := []*sshconfig.Host{}
	for len(lit) > 0 || len(wild) > 0 {
		var i int
		if len(wild) == 0 || (len(lit) > 0 && lit[0] < wild[0]) {
			i, lit = lit[0], lit[1:]
		} else {
			i, wild = wild[0], wild[1:]
		}
		if h := x.hosts[i]; h.Matches(alias) {
			out = append(out, h)
		}
	}
	x.seen[alias] = out
	return out
}

// Resolve resolves an inventory (or ad-hoc) host.
func (r *Resolver) Resolve(h inventory.Host) (Target, error) {
	return r.resolve(h, 0)
}

// ResolveName resolves a name: the inventory's host when it has one, else
// an ad-hoc host resolved through ssh_config.
func (r *Resolver) ResolveName(name string) (Target, error) {
	if h, ok := r.Inventory.Host(name); ok {
		return r.Resolve(h)
	}
	return r.Resolve(inventory.Host{Name: name, Address: name, Adhoc: true})
}

func (r *Resolver) resolve(h inventory.Host, depth int) (Target, error) {
	if depth > 8 {
		return Target{}, fmt.Errorf("host %s: jump hosts nest more than 8 deep (a ProxyJump loop?)", h.Name)
	}
	x := &resolving{r: r, h: h, depth: depth, t: &Target{Name: h.Name, Sources: map[string]string{}},
		invSrc: cmp.Or(h.Source, "command line"), defSrc: r.Inventory.File + " [defaults]"}
	for _, part := range []func() error{x.address, x.identities, x.knownHosts, x.timeouts, x.jumps} {
		if err := part(); err != nil {
			return Target{}, err
		}
	}
	return *x.t, nil
}

// resolving is one host's resolution under way: each setting is taken
// from the first level that gives it (flag, inventory host, inventory
// defaults, ssh_config, default), and where it came from is kept in
// Target.Sources.
type resolving struct {
	r              *Resolver
	h              inventory.Host
	depth          int
	t              *Target
	invSrc, defSrc string
}

// pick is the first candidate with a value, its source noted for field.
func (x *resolving) pick(field string, cands ...sourced) string {
	for _, c := range cands {
		if c.v != "" {
			x.t.Sources[field] = c.src
			return c.v
		}
	}
	return ""
}

// sshV is ssh_config's value of key for the host, with where it is set.
func (x *resolving) sshV(key string) sourced {
	v, src := x.r.sshGet(x.h.Name, key)
	return sourced{v, src}
}

// address is HostName, Port and User, checked as OpenSSH checks them.
func (x *resolving) address() error {
	t, h, d, o := x.t, x.h, x.r.Inventory.Defaults, x.r.Overrides
	addr := ""
	if h.Address != "" && h.Address != h.Name {
		addr = h.Address
	}
	invSrc, defSrc := x.invSrc, x.defSrc
	t.HostName = x.pick("HostName", sourced{addr, invSrc}, x.sshV("HostName"), sourced{h.Name, "name"})
	t.HostName = x.r.expandTokens(t.HostName, h.Name, "")

	portS := x.pick("Port", sourced{itoaNZ(o.Port), SourceFlag}, sourced{itoaNZ(h.Port), invSrc}, sourced{itoaNZ(d.Port), defSrc}, x.sshV("Port"), sourced{"22", SourceDefault})
	port, err := strconv.Atoi(portS)
	if err != nil || port < 1 || port > 65535 {
		return fmt.Errorf("host %s: port %q from %s is not a port number", h.Name, portS, t.Sources["Port"])
	}
	t.Port = port
	t.User = x.pick("User", sourced{o.User, SourceFlag}, sourced{h.User, invSrc}, sourced{d.User, defSrc}, x.sshV("User"), sourced{x.r.LocalUser, "local user"})
	if bad := badChars(t.HostName, hostNameRune); bad != "" || strings.HasPrefix(t.HostName, "-") {
		return fmt.Errorf("host %s: HostName %q (from %s) holds characters a host name cannot (%s): OpenSSH refuses it too", h.Name, t.HostName, t.Sources["HostName"], cmp.Or(bad, "a leading '-'"))
	}
	if bad := badChars(t.User, userRune); bad != "" || strings.HasPrefix(t.User, "-") {
		return fmt.Errorf("host %s: User %q (from %s) holds characters a user name cannot (%s): OpenSSH refuses it too", h.Name, t.User, t.Sources["User"], cmp.Or(bad, "a leading '-'"))
	}
	return nil
}

// identities is the identity files (the first level that names any) and
// IdentitiesOnly, HostKeyAlias.
func (x *resolving) identities() error {
	t, h, d, o := x.t, x.h, x.r.Inventory.Defaults, x.r.Overrides
	invSrc, defSrc := x.invSrc, x.defSrc
	switch {
	case o.IdentityFile != "":
		t.IdentityFiles, t.Sources["IdentityFile"] = []string{o.IdentityFile}, SourceFlag
	case h.IdentityFile != "":
		t.IdentityFiles, t.Sources["IdentityFile"] = []string{h.IdentityFile}, invSrc
	case d.IdentityFile != "":
		t.IdentityFiles, t.Sources["IdentityFile"] = []string{d.IdentityFile}, defSrc
	default:
		if files, src := x.r.sshGetAll(h.Name, "IdentityFile"); len(files) > 0 {
			t.IdentityFiles, t.Sources["IdentityFile"] = files, src
		}
	}
	t.Explicit = len(t.IdentityFiles) > 0
	if !t.Explicit {
		t.IdentityFiles = []string{"~/.ssh/id_ed25519", "~/.ssh/id_ecdsa", "~/.ssh/id_rsa"}
		t.Sources["IdentityFile"] = SourceDefault
	}
	for i, f := range t.IdentityFiles {
		t.IdentityFiles[i] = x.r.expandTokens(f, h.Name, t.User)
	}

	if v, src := x.r.sshGet(h.Name, "IdentitiesOnly"); v != "" {
		switch strings.ToLower(v) {
		case "yes", "true":
			t.IdentitiesOnly, t.Sources["IdentitiesOnly"] = true, src
		case "no", "false":
			t.Sources["IdentitiesOnly"] = src
		default:
			return fmt.Errorf("host %s: IdentitiesOnly %q (from %s): want yes or no", h.Name, v, src)
		}
	}
	if v, src := x.r.sshGet(h.Name, "HostKeyAlias"); v != "" {
		t.HostKeyAlias, t.Sources["HostKeyAlias"] = v, src
	}
	return nil
}

// knownHosts is the user's known_hosts files, then the global ones, and
// the agent to ask for keys.
func (x *resolving) knownHosts() error {
	t, h, d, o := x.t, x.h, x.r.Inventory.Defaults, x.r.Overrides
	defSrc := x.defSrc
	kh := x.pick("KnownHosts", sourced{o.KnownHosts, SourceFlag}, sourced{d.KnownHosts, defSrc}, x.sshV("UserKnownHostsFile"), sourced{"~/.ssh/known_hosts", SourceDefault})
	for _, f := range strings.Fields(kh) {
		t.KnownHosts = append(t.KnownHosts, x.r.expandTokens(f, h.Name, t.User))
	}
	// The global known_hosts files are read too, after the user's (which
	// take new keys), as OpenSSH reads them.
	gkh := x.pick("GlobalKnownHosts", x.sshV("GlobalKnownHostsFile"), sourced{"/etc/ssh/ssh_known_hosts /etc/ssh/ssh_known_hosts2", SourceDefault})
	for _, f := range strings.Fields(gkh) {
		if !strings.EqualFold(f, "none") {
			t.KnownHosts = append(t.KnownHosts, x.r.expandTokens(f, h.Name, t.User))
		}
	}
	if v, src := x.r.sshGet(h.Name, "IdentityAgent"); v != "" {
		t.IdentityAgent, t.Sources["IdentityAgent"] = v, src
		if v != "none" && v != "SSH_AUTH_SOCK" {
			t.IdentityAgent = x.r.expandTokens(strings.Trim(v, `"`), h.Name, t.User)
		}
	}
	return nil
}

// timeouts is the connect, command and inactivity timeouts, and the
// keepalive.
func (x *resolving) timeouts() error {
	t, h, d, o := x.t, x.h, x.r.Inventory.Defaults, x.r.Overrides
	defSrc := x.defSrc
	durations := []struct {
		field    string
		dst      *time.Duration
		flag     time.Duration
		inv      inventory.Duration
		key      string // the [defaults] key
		sshKey   string
		fallback time.Duration
	}{
		{"ConnectTimeout", &t.ConnectTimeout, o.ConnectTimeout, d.ConnectTimeout, "connect_timeout", "ConnectTimeout", inventory.DefaultConnectTimeout},
		{"CommandTimeout", &t.CommandTimeout, o.CommandTimeout, d.CommandTimeout, "command_timeout", "", inventory.DefaultCommandTimeout},
		{"InactivityTimeout", &t.InactivityTimeout, o.InactivityTimeout, d.InactivityTimeout, "inactivity_timeout", "", inventory.DefaultInactivityTimeout},
	}
	for _, du := range durations {
		switch {
		case du.flag > 0:
			*du.dst, t.Sources[du.field] = du.flag, SourceFlag
		case x.r.Inventory.File != "" && du.inv.Duration > 0 && !d.Builtin(du.key):
			*du.dst, t.Sources[du.field] = du.inv.Duration, defSrc
		default:
			*du.dst, t.Sources[du.field] = du.fallback, SourceDefault
			if du.sshKey != "" {
				if v, src := x.r.sshGet(h.Name, du.sshKey); v != "" {
					secs, err := strconv.Atoi(v)
					if err != nil || secs <= 0 || time.Duration(secs)*time.Second > inventory.MaxConnectTimeout {
						// ssh -G refuses such a file too; a silent 10s
						// would be a limit nobody set.
						return fmt.Errorf("host %s: %s %q (from %s): want a whole number of seconds, 1 to %d", h.Name, du.sshKey, v, src, int(inventory.MaxConnectTimeout/time.Second))
					}
					*du.dst, t.Sources[du.field] = time.Duration(secs)*time.Second, src
				}
			}
		}
	}
	t.ServerAliveInterval, t.ServerAliveCountMax = 15*time.Second, 3
	t.Sources["ServerAliveInterval"] = SourceDefault
	if v, src := x.r.sshGet(h.Name, "ServerAliveInterval"); v != "" {
		secs, err := strconv.Atoi(v)
		switch {
		case err != nil || secs < 0:
			return fmt.Errorf("host %s: ServerAliveInterval %q (from %s): want a whole number of seconds (0 turns keepalives off in OpenSSH; gpulab keeps its 15s)", h.Name, v, src)
		case secs > 0:
			t.ServerAliveInterval, t.Sources["ServerAliveInterval"] = time.Duration(secs)*time.Second, src
		}
	}
	if v, src := x.r.sshGet(h.Name, "ServerAliveCountMax"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return fmt.Errorf("host %s: ServerAliveCountMax %q (from %s): want a whole number, 1 or more", h.Name, v, src)
		}
		t.ServerAliveCountMax = n
	}
	return nil
}

// jumps is ProxyJump (each hop resolved in turn) or ProxyCommand.
func (x *resolving) jumps() error {
	t, h, d := x.t, x.h, x.r.Inventory.Defaults
	invSrc, defSrc, depth := x.invSrc, x.defSrc, x.depth
	defJump := sourced{d.Jump, defSrc}
	if depth > 0 {
		defJump = sourced{} // a hop does not inherit the fleet's default jump (it is, most often, that jump)
	}
	jump := x.pick("ProxyJump", sourced{h.Jump, invSrc}, defJump, x.sshV("ProxyJump"))
	if err := x.r.proxyCommand(t, h, jump); err != nil {
		return err
	}
	if jump != "" && !strings.EqualFold(jump, "none") {
		hops, err := x.r.resolveJump(jump, depth)
		if err != nil {
			return fmt.Errorf("host %s: ProxyJump %q (from %s): %w", h.Name, jump, t.Sources["ProxyJump"], err)
		}
		t.Jump = hops
	}
	return nil
}

// proxyCommand reads ssh_config's ProxyCommand. The inventory's jump wins
// over it (the inventory ranks above ssh_config); when ssh_config names both
// ProxyJump and ProxyCommand for the host, OpenSSH takes whichever comes
// first, and gpulab refuses to guess rather than take another route.
func (r *Resolver) proxyCommand(t *Target, h inventory.Host, jump string) error {
	pc, src := r.sshGet(h.Name, "ProxyCommand")
	if pc == "" || strings.EqualFold(pc, "none") {
		return nil
	}
	if jump != "" && !strings.EqualFold(jump, "none") {
		if _, sshSrc := r.sshGet(h.Name, "ProxyJump"); sshSrc != "" && sshSrc == t.Sources["ProxyJump"] {
			return fmt.Errorf("host %s: ssh_config sets both ProxyJump (%s) and ProxyCommand (%s): set one of them to none for this host", h.Name, sshSrc, src)
		}
		return nil // the inventory's jump ranks above ssh_config
	}
	if bad := badChars(h.Name, hostNameRune); bad != "" {
		return fmt.Errorf("host %s: its name holds characters (%s) that ProxyCommand's %%n would hand to a shell: refused", h.Name, bad)
	}
	if v, fdSrc := r.sshGet(h.Name, "ProxyUseFdpass"); strings.EqualFold(v, "yes") {
		return fmt.Errorf("host %s: ProxyUseFdpass yes (from %s) is not supported: gpulab speaks SSH over the ProxyCommand's stdin and stdout", h.Name, fdSrc)
	}
	t.ProxyCommand, t.Sources["ProxyCommand"] = pc, src
	return nil
}

type sourced struct{ v, src string }

func hostNameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-:%[]", r)
}

func userRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-@+", r)
}

// badChars lists, quoted, the characters of s that ok refuses.
func badChars(s string, ok func(rune) bool) string {
	var bad []string
	for _, r := range s {
		if !ok(r) && !slices.Contains(bad, strconv.QuoteRune(r)) {
			bad = append(bad, strconv.QuoteRune(r))
		}
	}
	return strings.Join(bad, ", ")
}

func itoaNZ(i int) string {
	if i == 0 {
		return ""
	}
	return strconv.Itoa(i)
}

// resolveJump resolves a ProxyJump chain: [user@]host[:port],... Each hop
// may be an inventory host or an ssh_config alias.
func (r *Resolver) resolveJump(spec string, depth int) ([]Target, error) {
	var hops []Target
	for _, hop := range strings.Split(spec, ",") {
		hop = strings.TrimSpace(hop)
		user := ""
		if at := strings.LastIndex(hop, "@"); at >= 0 { // the last @, as OpenSSH splits
			user, hop = hop[:at], hop[at+1:]
		}
		port := 0
		if h, p, ok := strings.Cut(hop, ":"); ok && !strings.Contains(p, ":") {
			n, err := strconv.Atoi(p)
			if err != nil {
				return nil, fmt.Errorf("hop %q: bad port", hop)
			}
			hop, port = h, n
		}
		var host inventory.Host
		if ih, ok := r.Inventory.Host(hop); ok {
			host = ih
		} else {
			host = inventory.Host{Name: hop, Address: hop, Adhoc: true}
		}
		// A hop's own ProxyJump is followed, as ssh does (it reaches the
		// hop the way ssh HOP would): its chain comes first.
		t, err := r.resolve(host, depth+1)
		if err != nil {
			return nil, err
		}
		if user != "" {
			t.User = user
		}
		if port != 0 {
			t.Port = port
		}
		hops = append(hops, t.Jump...)
		t.Jump = nil
		hops = append(hops, t)
	}
	return hops, nil
}

// expandTokens expands ~ and the ssh_config tokens %h, %d, %u, %r, %%.
func (r *Resolver) expandTokens(s, host, remoteUser string) string {
	s = r.expandTilde(s)
	if !strings.Contains(s, "%") {
		return s
	}
	rep := strings.NewReplacer("%%", "%", "%h", host, "%d", r.Home, "%u", r.LocalUser, "%r", remoteUser)
	return rep.Replace(s)
}
