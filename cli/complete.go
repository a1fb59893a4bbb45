package cli

import (
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpulab/gpulab/labs"
	"github.com/gpulab/gpulab/landscape"
	"github.com/gpulab/gpulab/runbooks"
	"github.com/gpulab/gpulab/step/parse"
)

// Shell completion (gpulab completion bash|zsh|fish): what a command's
// argument or -H can be, read from the same places the command reads
// (--labs, --runbooks, --catalog, --inventory on the line so far, else
// their defaults). A source that cannot be read completes nothing, and
// says nothing: a completion never prints an error into a prompt.

// completeWith completes a command's first argument with the names ids
// gives; the arguments after it are files when thenFiles (parse KIND
// FILE), else nothing.
func completeWith(ids func() []string, thenFiles bool) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(_ *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			if thenFiles {
				return nil, cobra.ShellCompDirectiveDefault
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return withPrefix(ids(), prefix), cobra.ShellCompDirectiveNoFileComp
	}
}

// withPrefix keeps the names that start with what was typed.
func withPrefix(names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

// idsOf is each item's id, or none when they could not be loaded.
func idsOf[T any](items []T, err error, id func(T) string) []string {
	if err != nil {
		return nil
	}
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = id(it)
	}
	return ids
}

func (o *options) labIDs() []string {
	ls, err := o.loadLabs()
	return idsOf(ls, err, func(l *labs.Lab) string { return l.ID })
}

func (o *options) runbookIDs() []string {
	rbs, err := o.loadRunbooks()
	return idsOf(rbs, err, func(rb runbooks.Runbook) string { return rb.ID })
}

func (o *options) projectIDs() []string {
	c, err := o.loadCatalog()
	if err != nil {
		return nil
	}
	return idsOf(c.Projects, nil, func(p landscape.Project) string { return p.ID })
}

func parseKinds() []string {
	ids := []string{"list"}
	for _, k := range parse.Kinds() {
		ids = append(ids, k.Name)
	}
	return ids
}

// hostNames are what -H can name from the inventory: its hosts, then its
// groups as @group.
func (o *options) hostNames() []string {
	inv, err := o.loadInventory(false)
	if err != nil || inv == nil {
		return nil
	}
	var out []string
	for _, h := range inv.Hosts {
		out = append(out, h.Name)
	}
	for _, g := range slices.Sorted(maps.Keys(inv.Groups)) {
		out = append(out, "@"+g)
	}
	return out
}

// completeHosts gives -H, wherever a command takes it, the inventory's
// hosts and groups.
func (o *options) completeHosts(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("hosts") != nil {
			_ = c.RegisterFlagCompletionFunc("hosts", func(_ *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
				return withPrefix(o.hostNames(), prefix), cobra.ShellCompDirectiveNoFileComp
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
