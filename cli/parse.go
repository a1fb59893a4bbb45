package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpulab/gpulab/internal/fileio"
	"github.com/gpulab/gpulab/step/parse"
)

// parseOptions is gpulab parse: a parser kind, and the file or standard
// input it reads, or with --shape what the kind's output looks like.
type parseOptions struct {
	*options
	shape bool

	kind  parse.Kind
	file  string // "" or "-": standard input
	list  bool
	stdin io.Reader
}

func newParseCmd(o *options) *cobra.Command {
	po := &parseOptions{options: o}
	cmd := &cobra.Command{
		Use:               "parse KIND [FILE|-]",
		ValidArgsFunction: completeWith(parseKinds, true),
		Short:             "Turn one command's output into structured JSON",
		Long: `Parse what a GPU-node command printed (a file, or standard input) and print
the facts as JSON. The input is a regular file or a pipe of at most 64 MiB
(one command's output). Damaged or truncated input still prints what could be
read, with the problems (and their line numbers) on standard error and exit
status 1. Run 'gpulab parse list' to see every KIND and the command it reads.

--shape prints what a lab's step with parser = "KIND" reads as out: every
key with its type (list, map, object, string, number, bool) and whether it
may be missing, then the kind's output for one real recorded output, with
where that output came from. gpulab lab check holds every out.KEY of a
lab's expressions to this shape.`,
		Example: `  nvidia-smi topo -m | gpulab parse nvidia-smi-topo
  gpulab parse nvidia-smi-topo topo.txt | jq '.links.GPU0'
  gpulab parse nvidia-smi-topo --shape
  gpulab parse list`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := po.Complete(cmd, args); err != nil {
				return err
			}
			return po.Run(cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&po.shape, "shape", false, "print the output's shape (its keys and types) and an example from a real output, instead of parsing")
	return cmd
}

// Complete finds the kind and the input.
func (po *parseOptions) Complete(cmd *cobra.Command, args []string) error {
	po.stdin = cmd.InOrStdin()
	if args[0] == "list" {
		po.list = true
		return nil
	}
	k, ok := parse.Lookup(args[0])
	if !ok {
		var names []string
		for _, k := range parse.Kinds() {
			names = append(names, k.Name)
		}
		return usageErr("no parser %q%s (kinds: %s)", args[0], parse.Hint(args[0]), strings.Join(names, ", "))
	}
	po.kind = k
	if len(args) == 2 {
		if po.shape {
			return usageErr("parse %s --shape reads no input: leave out %s", k.Name, args[1])
		}
		po.file = args[1]
	}
	return nil
}

// Run parses, or prints the list or the shape.
func (po *parseOptions) Run(w io.Writer) error {
	switch {
	case po.list:
		return printList(w, po.json, kindRows(), []string{"KIND", "READS"}, func(r kindRow) []string { return []string{r.Kind, r.Command} })
	case po.shape:
		return printShape(w, po.kind, po.json)
	}
	name := "standard input"
	var data []byte
	var err error
	if po.file != "" && po.file != "-" {
		name = po.file
		if data, err = fileio.ReadRegular(name, fileio.MaxParseInput); err != nil {
			return usageErr("parse: %v", err)
		}
	} else if data, err = fileio.ReadAll(po.stdin, fileio.MaxParseInput); err != nil {
		var tl *fileio.TooLargeError
		if errors.As(err, &tl) {
			return usageErr("parse: standard input is %v", err)
		}
		return fmt.Errorf("parse: read standard input: %w", err)
	}
	v, perr := po.kind.Parse(string(data))
	if err := writeJSON(w, v); err != nil {
		return err
	}
	if perr != nil {
		return &exitError{code: ExitFailed, err: fmt.Errorf("%s (%s): %w", name, po.kind.Name, perr)}
	}
	return nil
}

type kindRow struct {
	Kind    string `json:"kind"`
	Command string `json:"command"`
}

func kindRows() []kindRow {
	var rows []kindRow
	for _, k := range parse.Kinds() {
		rows = append(rows, kindRow{k.Name, k.Command})
	}
	return rows
}

// maxExampleLines is how much of the example --shape prints as text;
// --json gives all of it.
const maxExampleLines = 40

func printShape(w io.Writer, k parse.Kind, asJSON bool) error {
	shape := k.ShapeOf()
	ex, hasExample := k.Example()
	if asJSON {
		doc := struct {
			Kind    string         `json:"kind"`
			Command string         `json:"command"`
			Shape   *parse.Shape   `json:"shape"`
			Example *parse.Example `json:"example,omitempty"`
		}{Kind: k.Name, Command: k.Command, Shape: shape}
		if hasExample {
			doc.Example = &ex
		}
		return writeJSON(w, doc)
	}
	fmt.Fprintf(w, "%s reads `%s`. A lab step with parser = %q reads it as out:\n\n", k.Name, k.Command, k.Name)
	fmt.Fprintf(w, "out: %s\n", shape.Word())
	for _, line := range strings.SplitAfter(shape.Describe(), "\n") {
		if line != "" {
			fmt.Fprint(w, "  "+line)
		}
	}
	if hasExample {
		var b bytes.Buffer
		json.Indent(&b, ex.Value, "", "  ")
		lines := strings.Split(b.String(), "\n")
		fmt.Fprintf(w, "\nout for testdata/fixtures/%s\n(%s; from %s):\n\n", ex.Fixture, ex.Hardware, ex.Source)
		if len(lines) > maxExampleLines {
			rest := len(lines) - maxExampleLines
			lines = append(lines[:maxExampleLines], fmt.Sprintf("… %d more lines (--json has them all)", rest))
		}
		fmt.Fprintln(w, strings.Join(lines, "\n"))
	}
	return nil
}
