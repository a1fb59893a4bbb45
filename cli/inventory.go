package cli

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gpulab/gpulab/inventory"
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
	cmd.AddCommand(&cobra.Command{
		Use:   "check [FILE]",
		Short: "Validate an inventory file",
		Long: `Validate an inventory: syntax, unknown keys, node sets, duplicate hosts, groups
and their references, kube contexts. Every problem names file:line:column.
Exit 0 when valid, 1 when not, 2 when there is no file to check.`,
		Example: `  gpulab inventory check inventory.toml
  gpulab inventory check            # $GPULAB_INVENTORY or ~/.config/gpulab/inventory.toml
  gpulab inventory check broken.toml --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := o.inventory
			if len(args) == 1 {
				path = args[0]
			}
			if path == "" {
				p, err := inventory.Locate(o.getenv)
				if err != nil {
					return configErr(err)
				}
				path = p
			}
			inv, err := inventory.Load(path)
			if err != nil && !isPlaced(err) {
				return configErr(err) // unreadable: nothing was checked
			}
			return reportCheck(cmd.OutOrStdout(), o.json, path, err, func() string {
				return fmt.Sprintf("%s: ok (%d hosts, %d groups, %d kube contexts)", path, len(inv.Hosts), len(inv.Groups), len(inv.Kube))
			})
		},
	})
	var (
		expr string
		fold bool
	)
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
			inv, err := o.loadInventory(true)
			if err != nil {
				return err
			}
			hosts, err := inv.Select(expr)
			if err != nil {
				return usageErr("%v", err)
			}
			return printHosts(cmd.OutOrStdout(), expr, hosts, fold, o.json)
		},
	}
	list.Flags().StringVarP(&expr, "hosts", "H", "*", "host `EXPR`ession: node set, @group, @label=value, operators , ! & ^")
	list.Flags().BoolVar(&fold, "fold", false, "print the selection folded into one node set")
	cmd.AddCommand(list)
	return cmd
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
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tADDRESS\tPORT\tUSER\tJUMP\tGROUPS\tLABELS")
	for _, h := range hosts {
		port := "-"
		if h.Port != 0 {
			port = strconv.Itoa(h.Port)
		}
		name := h.Name
		if h.Adhoc {
			name += " (ad-hoc)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, h.Address, port, dash(h.User), dash(h.Jump),
			dash(strings.Join(h.Groups, ",")), dash(labels(h.Labels)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d hosts: %s\n", len(hosts), folded)
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
