package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// printList is what a list command prints: the items as --json, else a
// table, header first, a row of cells per item.
func printList[T any](w io.Writer, asJSON bool, items []T, header []string, row func(T) []string) error {
	if asJSON {
		return writeJSON(w, items)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, it := range items {
		fmt.Fprintln(tw, strings.Join(row(it), "\t"))
	}
	return tw.Flush()
}

// printShown is what a show command prints: the item found as --json,
// else as text.
func printShown[T any](w io.Writer, asJSON bool, find func() (T, error), text func(io.Writer, T) error) error {
	it, err := find()
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(w, it)
	}
	return text(w, it)
}
