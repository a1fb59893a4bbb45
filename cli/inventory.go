package cli

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/internal/visible"
	"github.com/gpulab/gpulab/inventory"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/render"
)

func newInventoryCmd(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "inventory",
		Short: "Validate the inventory and list hosts by node set, group or label",
		Long: `The inventory (inventory.toml) names the hosts gpulab reaches over SSH, their
groups and labels, and the Kubernetes contexts it reads. The repository's
inventory.toml documents every option.

Host expressions use ClusterShell's node-set syntax: gpu[001-128],
gpu[01-04,07], @group, @label=value, * for all, and the operators ","
(union), "!" (minus), "&" (both), "^" (one but not both).`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newInventoryCheckCmd(o), newInventoryListCmd(o), newInventoryShowCmd(o))
	return cmd
}

func newInventoryCheckCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "check [FILE]",
		Short: "Validate an inventory file",
		Long: `Validate an inventory: syntax, unknown keys, node sets, duplicate hosts, groups
and their references, kube contexts. Every problem names file:line:column.
Exit 0 when valid; 2 when not (a configuration error, as for every command
that reads an invalid inventory), when there is no file to check, or when
it is over gpulab's limits (larger than 8 MiB, or nested more than 64
levels).`,
		Example: `  gpulab inventory check inventory.toml
  gpulab inventory check            # $GPULAB_INVENTORY or ~/.config/gpulab/inventory.toml
  gpulab inventory check broken.toml --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return (&inventoryCheckOptions{options: o}).Run(cmd.OutOrStdout(), args)
		},
	}
}

// inventoryCheckOptions are gpulab inventory check's (it has no flags of
// its own); Run checks the file args name, or the inventory gpulab finds.
type inventoryCheckOptions struct{ *options }

// Run checks the inventory and reports it (reportCheck: text or --json).
func (c *inventoryCheckOptions) Run(w io.Writer, args []string) error {
	path := c.inventory
	if len(args) == 1 {
		path = args[0]
	}
	if path == "" {
		p, err := inventory.Locate(c.getenv)
		if err != nil {
			return reportCheck(w, c.json, "inventory", configErr(err), nil)
		}
		path = p
	}
	inv, err := inventory.Load(path)
	if err != nil && !isPlaced(err) {
		return reportCheck(w, c.json, path, configErr(err), nil) // unreadable: nothing was checked
	}
	if err == nil {
		// What loading for real would also meet: the ssh_config the
		// inventory names, and each host resolved through it.
		err = c.resolveAll(inv)
	}
	return reportCheck(w, c.json, path, err, func() string {
		return fmt.Sprintf("%s: ok (%s, %s, %s)", path, text.Plural(len(inv.Hosts), "host", "hosts"), text.Plural(len(inv.Groups), "group", "groups"), text.Plural(len(inv.Kube), "kube context", "kube contexts"))
	})
}

// inventoryListOptions are gpulab inventory list's flags.
type inventoryListOptions struct {
	*options
	expr string
	fold bool
	// given: -H was on the command line (an empty selection is then a
	// usage error, as exec and probe say it).
	given bool
}

func newInventoryListCmd(o *options) *cobra.Command {
	lo := &inventoryListOptions{options: o}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the hosts a host expression selects",
		Long: `List the hosts a host expression selects, with their address, port, user,
jump host, groups and labels as the inventory sets them (unset values fall
back to ~/.ssh/config, then OpenSSH's defaults, when gpulab connects). Names
that are not in the inventory are listed as ad-hoc hosts.`,
		Example: `  gpulab inventory list                       # every host
  gpulab inventory list -H 'gpu[001-004]'
  gpulab inventory list -H '@a100!@mig=enabled'
  gpulab inventory list -H '@rack=r12' --fold    # one node set, e.g. gpu[001-008]
  gpulab inventory list -H '@lab' --json | jq -r '.hosts[].address'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lo.given = cmd.Flags().Changed("hosts")
			return lo.Run(cmd.OutOrStdout())
		},
	}
	list.Flags().StringVarP(&lo.expr, "hosts", "H", "*", "host `EXPR`ession: node set, @group, @label=value, operators , ! & ^")
	list.Flags().BoolVar(&lo.fold, "fold", false, "print the selection folded into one node set")
	return list
}

// Run lists the hosts -H selects in the inventory.
func (lo *inventoryListOptions) Run(w io.Writer) error {
	inv, err := lo.loadInventory(true)
	if err != nil {
		return err
	}
	hosts, err := inv.Select(lo.expr)
	if err != nil {
		return usageErr("%v", err)
	}
	if len(hosts) == 0 && lo.given {
		return usageErr("-H %q selects no host", lo.expr)
	}
	return printHosts(w, lo.expr, hosts, lo.fold, lo.json)
}

// inventoryShowOptions are gpulab inventory show's flags.
type inventoryShowOptions struct {
	*options
	ssh sshFlags
}

func newInventoryShowCmd(o *options) *cobra.Command {
	so := &inventoryShowOptions{options: o}
	show := &cobra.Command{
		Use:   "show HOST",
		Short: "Print how gpulab will reach a host, and where each setting came from",
		Long: `Resolve one host the way gpulab exec does: command-line flags first, then the
inventory host, the inventory defaults, ~/.ssh/config (or -F FILE), and
OpenSSH's defaults. Each setting is printed with its source (file:line).`,
		Example: `  gpulab inventory show gpu001 --inventory inventory.toml
  gpulab inventory show bastion-lab -F ~/.ssh/lab_config --json`,
		Args: exactArgs(1, "one host name"),
		RunE: func(cmd *cobra.Command, args []string) error { return so.Run(cmd.OutOrStdout(), args[0]) },
	}
	so.ssh.register(show)
	_ = show.Flags().MarkHidden("hosts")
	return show
}

// Run resolves host as exec would and prints each setting with its source.
func (so *inventoryShowOptions) Run(w io.Writer, host string) error {
	so.ssh.hosts = host
	r, err := so.newRunner(&so.ssh)
	if err != nil {
		return err
	}
	if len(r.Targets) != 1 {
		return usageErr("%q names %d hosts; show takes one", host, len(r.Targets))
	}
	if t := r.Targets[0]; !t.Reachable() {
		return configErr(fmt.Errorf("%s", t.Unresolved))
	}
	return printTarget(w, r.Targets[0], so.json)
}

// resolveAll resolves every host of inv as a run would (ssh_config,
// ProxyJump, ProxyCommand), and returns every problem met.
func (o *options) resolveAll(inv *inventory.Inventory) error {
	res, err := orchestrator.NewResolver(inv, "", orchestrator.Overrides{}, o.getenv("HOME"), o.getenv("USER"))
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range inv.Hosts {
		if _, err := res.Resolve(h); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", h.Source, err))
		}
	}
	return errors.Join(errs...)
}

type targetJSON struct {
	Name          string   `json:"name"`
	HostName      string   `json:"hostname"`
	Port          int      `json:"port"`
	User          string   `json:"user"`
	IdentityFiles []string `json:"identity_files"`
	// IdentitiesOnly offers only the identity files' keys.
	IdentitiesOnly bool              `json:"identities_only"`
	KnownHosts     []string          `json:"known_hosts"`
	HostKeyAlias   string            `json:"host_key_alias,omitempty"`
	ProxyJump      []string          `json:"proxy_jump,omitempty"`
	ProxyCommand   string            `json:"proxy_command,omitempty"`
	Timeouts       map[string]string `json:"timeouts"`
	Sources        map[string]string `json:"sources"`
}

func printTarget(w io.Writer, t orchestrator.Target, asJSON bool) error {
	var jumps []string
	for _, j := range t.Jump {
		jumps = append(jumps, fmt.Sprintf("%s@%s", j.User, j.HostPort()))
	}
	tj := targetJSON{Name: t.Name, HostName: t.HostName, Port: t.Port, User: t.User, IdentityFiles: t.IdentityFiles,
		IdentitiesOnly: t.IdentitiesOnly, KnownHosts: t.KnownHosts, HostKeyAlias: t.HostKeyAlias, ProxyJump: jumps, ProxyCommand: t.ProxyCommand, Sources: t.Sources, Timeouts: map[string]string{
			"connect": t.ConnectTimeout.String(), "command": t.CommandTimeout.String(), "inactivity": t.InactivityTimeout.String(),
			"server_alive_interval": t.ServerAliveInterval.String()}}
	if asJSON {
		return writeJSON(w, tj)
	}
	tb := render.NewTable("SETTING", "VALUE", "FROM")
	row := func(k, v, src string) {
		tb.Add(k, visible.String(v), visible.String(dash(t.Sources[src])))
	}
	row("HostName", t.HostName, "HostName")
	row("Port", strconv.Itoa(t.Port), "Port")
	row("User", t.User, "User")
	row("IdentityFile", strings.Join(t.IdentityFiles, " "), "IdentityFile")
	row("IdentitiesOnly", map[bool]string{true: "yes", false: "no"}[t.IdentitiesOnly], "IdentitiesOnly")
	row("KnownHosts", strings.Join(t.KnownHosts, " "), "KnownHosts")
	row("HostKeyAlias", dash(t.HostKeyAlias), "HostKeyAlias")
	row("ProxyJump", dash(strings.Join(jumps, ",")), "ProxyJump")
	row("ProxyCommand", dash(t.ProxyCommand), "ProxyCommand")
	row("ConnectTimeout", t.ConnectTimeout.String(), "ConnectTimeout")
	row("CommandTimeout", t.CommandTimeout.String(), "CommandTimeout")
	row("InactivityTimeout", t.InactivityTimeout.String(), "InactivityTimeout")
	row("ServerAliveInterval", t.ServerAliveInterval.String(), "ServerAliveInterval")
	return tb.WriteText(w)
}

// isPlaced reports whether err holds problems at places in a file (a check
// result) rather than a failure to read it.
func isPlaced(err error) bool {
	for _, p := range problems(err) {
		if p.File == "" {
			return false
		}
	}
	return true
}

func printHosts(w io.Writer, expr string, hosts []inventory.Host, fold, asJSON bool) error {
	folded := inventory.FoldNames(inventory.Names(hosts))
	if asJSON {
		return writeJSON(w, struct {
			Expression string           `json:"expression"`
			NodeSet    string           `json:"nodeset"`
			Count      int              `json:"count"`
			Hosts      []inventory.Host `json:"hosts"`
		}{expr, folded, len(hosts), append([]inventory.Host{}, hosts...)})
	}
	if fold {
		_, err := fmt.Fprintln(w, folded)
		return err
	}
	t := render.NewTable("NAME", "ADDRESS", "PORT", "USER", "JUMP", "GROUPS", "LABELS")
	for _, h := range hosts {
		port := "-"
		if h.Port != 0 {
			port = strconv.Itoa(h.Port)
		}
		name := h.Name
		if h.Adhoc {
			name += " (ad-hoc)"
		}
		t.Add(name, visible.String(h.Address), port, visible.String(dash(h.User)), visible.String(dash(h.Jump)),
			dash(strings.Join(h.Groups, ",")), dash(labels(h.Labels)))
	}
	if err := t.WriteText(w); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%s: %s\n", text.Plural(len(hosts), "host", "hosts"), folded)
	return err
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func labels(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ",")
}
