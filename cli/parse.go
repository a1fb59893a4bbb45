package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gpulab/gpulab/internal/fileio"
	"github.com/gpulab/gpulab/step/parse"
)

func newParseCmd(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "parse KIND [FILE|-]",
		Short: "Turn one command's output into structured JSON",
		Long: `Parse what a GPU-node command printed (a file, or standard input) and print
the facts as JSON. The input is a regular file or a pipe of at most 64 MiB
(one command's output). Damaged or truncated input still prints what could be
read, with the problems (and their line numbers) on standard error and exit
status 1. Run 'gpulab parse list' to see every KIND and the command it reads.`,
		Example: `  nvidia-smi topo -m | gpulab parse nvidia-smi-topo
  gpulab parse nvidia-smi-topo topo.txt | jq '.links.GPU0'
  gpulab parse list`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			w := cmd.OutOrStdout()
			if args[0] == "list" {
				return listKinds(w, o.json)
			}
			k, ok := parse.Lookup(args[0])
			if !ok {
				var names []string
				for _, k := range parse.Kinds() {
					names = append(names, k.Name)
				}
				return usageErr("no parser %q%s (kinds: %s)", args[0], parse.Hint(args[0]), strings.Join(names, ", "))
			}
			name := "standard input"
			var data []byte
			var err error
			if len(args) == 2 && args[1] != "-" {
				name = args[1]
				if data, err = fileio.ReadRegular(name, fileio.MaxParseInput); err != nil {
					return usageErr("parse: %v", err)
				}
			} else if data, err = fileio.ReadAll(cmd.InOrStdin(), fileio.MaxParseInput); err != nil {
				var tl *fileio.TooLargeError
				if errors.As(err, &tl) {
					return usageErr("parse: standard input is %v", err)
				}
				return fmt.Errorf("parse: read standard input: %w", err)
			}
			v, perr := k.Parse(string(data))
			if err := writeJSON(w, v); err != nil {
				return err
			}
			if perr != nil {
				return &exitError{code: ExitFailed, err: fmt.Errorf("%s (%s): %w", name, k.Name, perr)}
			}
			return nil
		},
	}
	return cmd
}

func listKinds(w io.Writer, asJSON bool) error {
	type row struct {
		Kind    string `json:"kind"`
		Command string `json:"command"`
	}
	var rows []row
	for _, k := range parse.Kinds() {
		rows = append(rows, row{k.Name, k.Command})
	}
	if asJSON {
		return writeJSON(w, rows)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tREADS")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", r.Kind, r.Command)
	}
	return tw.Flush()
}
