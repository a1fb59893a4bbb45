package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/gpulab/gpulab/internal/fileio"
)

// docsOptions are the hidden gpulab docs command's flags and argument:
// the command reference, written by spf13/cobra's doc package from the
// commands themselves, so that it cannot drift from --help.
type docsOptions struct {
	*options
	man bool
	dir string
}

func newDocsCmd(o *options) *cobra.Command {
	do := &docsOptions{options: o}
	cmd := &cobra.Command{
		Use:    "docs DIR [--man]",
		Short:  "Write the command reference (Markdown, or man pages with --man) into DIR",
		Hidden: true,
		Long: `Writes one page per command into DIR: Markdown (docs/reference/ in the
repository is this, and a test keeps it current: make docs), or man pages
in section 1 with --man (make man). Pages are written without following a
link, into a directory no other user can write.`,
		Example: "  gpulab docs docs/reference\n  gpulab docs --man build/man",
		Args:    exactArgs(1, "the directory to write into"),
		RunE: func(c *cobra.Command, args []string) error {
			do.dir = args[0]
			return do.Run(c.Root())
		},
	}
	cmd.Flags().BoolVar(&do.man, "man", false, "write man pages (section 1) instead of Markdown")
	return cmd
}

// Run writes the reference of root and every command below it.
func (do *docsOptions) Run(root *cobra.Command) error {
	if err := fileio.MkdirTrusted(do.dir, 0o755); err != nil {
		return configErr(err)
	}
	pages, err := ReferencePages(root, do.man)
	if err != nil {
		return err
	}
	for name, page := range pages {
		f, err := fileio.OpenOwned(filepath.Join(do.dir, name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return &exitError{code: ExitFailed, err: err}
		}
		_, err = f.Write(page)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return &exitError{code: ExitFailed, err: err}
		}
	}
	return nil
}

// ReferencePages renders the reference of root and every available
// command below it, by file name (gpulab_lab_run.md, gpulab-lab-run.1).
// The Markdown pages carry no date, so the same commands give the same
// bytes.
func ReferencePages(root *cobra.Command, man bool) (map[string][]byte, error) {
	root.DisableAutoGenTag = true
	root.InitDefaultCompletionCmd() // as Execute adds it
	pages := map[string][]byte{}
	var walk func(c *cobra.Command) error
	walk = func(c *cobra.Command) error {
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
				if err := walk(sub); err != nil {
					return err
				}
			}
		}
		var b bytes.Buffer
		if man {
			// Dated now, or $SOURCE_DATE_EPOCH for a reproducible build.
			hdr := &doc.GenManHeader{Title: strings.ToUpper(strings.ReplaceAll(c.CommandPath(), " ", "-")), Section: "1", Source: "gpulab " + Version, Manual: "gpulab manual"}
			if err := doc.GenMan(c, hdr, &b); err != nil {
				return fmt.Errorf("man page of %s: %w", c.CommandPath(), err)
			}
			pages[strings.ReplaceAll(c.CommandPath(), " ", "-")+".1"] = b.Bytes()
			return nil
		}
		if err := doc.GenMarkdownCustom(c, &b, func(name string) string { return name }); err != nil {
			return fmt.Errorf("reference of %s: %w", c.CommandPath(), err)
		}
		pages[strings.ReplaceAll(c.CommandPath(), " ", "_")+".md"] = b.Bytes()
		return nil
	}
	return pages, walk(root)
}
