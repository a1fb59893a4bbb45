// Package parse turns what GPU-node commands print into typed facts. Each
// parser is a pure function from text to a value. Real outputs vary by
// driver and by how they were copied (tabs or spaces, SOC or SYS, optional
// columns); a parser reads every variant it knows and, on damaged or
// truncated input, returns what it could read together with an error that
// names the line. It never panics.
package parse

import (
	"fmt"
	"iter"
	"sort"
	"strings"

	"github.com/gpulab/gpulab/internal/problem"
	"github.com/gpulab/gpulab/internal/suggest"

	"github.com/gpulab/gpulab/internal/clip"
)

// Error is a problem at a line of the input (1-based; 0 for the whole
// input): problem.Error, placed by its Line alone ("line 4: ...").
// Parsers return it alongside the partial result.
type Error = problem.Error

// MaxQuoted is how many bytes of a string from the input an error quotes:
// a line of damaged input may be megabytes long, and the error names its
// line anyway.
const MaxQuoted = clip.Quoted

// MaxProblems is how many problems a parser reports one by one; the rest
// are counted.
const MaxProblems = 20

// errorf builds an *Error. Strings and errors among args longer than
// MaxQuoted are cut there, with an ellipsis and their length: parsers
// quote the input's lines and fields.
func errorf(line int, format string, args ...any) *Error {
	return &Error{Place: problem.Place{Line: line}, Msg: fmt.Sprintf(format, clip.Args(args, MaxQuoted)...)}
}

// errs collects problems while a parser goes on reading: the first
// MaxProblems, then a count of the others (problem.Join).
type errs []error

func (e *errs) add(line int, format string, args ...any) {
	if len(*e) < MaxProblems {
		*e = append(*e, errorf(line, format, args...))
		return
	}
	if len(*e) == MaxProblems { // the rest are counted, not kept: the input may be huge
		*e = append(*e, &problem.Error{})
	}
	more := (*e)[MaxProblems].(*problem.Error)
	more.More++
	more.Msg = fmt.Sprintf("and %d more problems", more.More)
}

func (e errs) err() error { return problem.Join(MaxProblems, e...) }

// Func parses one command's output.
type Func func(text string) (any, error)

// Kind describes a parser.
type Kind struct {
	Name    string // as gpulab parse takes it: "nvidia-smi-topo"
	Command string // what produces the input
	Parse   Func
	// Fixtures names the testdata/fixtures directories this kind reads.
	Fixtures []string
}

var kinds = map[string]Kind{}

func register(k Kind) { kinds[k.Name] = k }

// Lookup returns the parser kind called name.
func Lookup(name string) (Kind, bool) {
	k, ok := kinds[name]
	return k, ok
}

// Hint is what an unknown kind name was probably meant to be, as a
// message's tail (`: did you mean "nvidia-smi-topo"?`), or "".
func Hint(name string) string {
	names := make([]string, 0, len(kinds))
	for _, k := range Kinds() {
		names = append(names, k.Name)
	}
	return suggest.Hint(name, names)
}

// Kinds lists every parser, by name.
func Kinds() []Kind {
	out := make([]Kind, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// lines splits text into lines without their line endings.
func lines(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	return strings.Split(text, "\n")
}

// eachLine yields the lines of text as lines does, with their 0-based
// index, without splitting text into a slice: a parser that reads a line
// at a time costs no memory per line.
func eachLine(text string) iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		for i := 0; ; i++ {
			l, rest, more := strings.Cut(text, "\n")
			if more {
				l = strings.TrimSuffix(l, "\r")
			}
			if !yield(i, l) || !more {
				return
			}
			text = rest
		}
	}
}

// na turns "N/A" (and empty) into nil.
func na(s string) *string {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "N/A") {
		return nil
	}
	return &s
}
