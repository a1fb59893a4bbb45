package cli

import (
	"io"

	"github.com/gpulab/gpulab/render"
)

// printList is what a list command prints: the items as --json, else a
// table, header first, a row of cells per item.
func printList[T any](w io.Writer, asJSON bool, items []T, header []string, row func(T) []string) error {
	if asJSON {
		return writeJSON(w, items)
	}
	t := render.NewTable(header...)
	for _, it := range items {
		t.Add(row(it)...)
	}
	return t.WriteText(w)
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
