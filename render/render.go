// Package render lays out, once, the lines gpulab writes about results:
// a folded exec group's head, a runbook verdict, a lab score, a host
// count. Each is a Line of spans that says what each part is; the text
// output prints it plain (Line.String) and the workbench styles each part
// by its Kind (tui's drawLine), so that the command line and the screen
// never word the same result two ways.
//
// render sits between the domain packages (orchestrator, runbooks, labs)
// and the two front ends (cli, tui); it draws nothing itself and reads no
// files.
package render

import (
	"fmt"
	"strings"

	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/labs"
	"github.com/gpulab/gpulab/orchestrator"
	"github.com/gpulab/gpulab/runbooks"
	"github.com/gpulab/gpulab/step"
)

// Kind is what a span of a line is, for the workbench to style it; the
// text output ignores it.
type Kind uint8

const (
	Plain  Kind = iota // words
	Status             // a verdict's or score's status; Span.Status names it
	Hosts              // a node set (the workbench adds its SIM badge after it)
	Muted              // what follows a result: its summary, its count
	Label              // what names the words after it ("next: ")
)

// Span is one part of a Line.
type Span struct {
	Kind   Kind
	Text   string
	Status step.Status // for a Status span
}

// Line is one result's line, in parts.
type Line []Span

// String is the line as the text output prints it.
func (l Line) String() string {
	var b strings.Builder
	for _, s := range l {
		b.WriteString(s.Text)
	}
	return b.String()
}

// StatusWidth is the width a status is padded to, so that the words
// after it line up: "UNKNOWN" is the longest.
const StatusWidth = 7

func status(s step.Status) Span {
	return Span{Kind: Status, Text: fmt.Sprintf("%-*s", StatusWidth, s), Status: s}
}

// HostCount is "gpu[01-04] (4 hosts)": a node set and how many hosts it
// holds, as every group head writes it.
func HostCount(nodeset string, n int) Line {
	return Line{{Kind: Hosts, Text: nodeset}, {Kind: Plain, Text: " (" + text.Plural(n, "host", "hosts") + ")"}}
}

// GroupClass is how a folded exec group ended: its class, and the exit
// status or signal when the command failed ("exit (status 4)").
func GroupClass(g orchestrator.Group) string {
	switch {
	case g.Signal != "":
		return g.Class.String() + " (SIG" + g.Signal + ")"
	case g.Class == orchestrator.Exit:
		return fmt.Sprintf("%s (status %d)", g.Class, g.ExitCode)
	}
	return g.Class.String()
}

// GroupHead is a folded exec group's head, "gpu[01-04] (4 hosts): ok";
// class is GroupClass(g), or that with what a front end adds (the
// workbench's "2 flagged").
func GroupHead(g orchestrator.Group, class string) Line {
	return append(HostCount(g.NodeSet, len(g.Hosts)), Span{Kind: Plain, Text: ": " + class})
}

// Verdict is a runbook check's verdict group, "PASS    gpu[01-04]: 8
// GPUs, NV12 full mesh".
func Verdict(g runbooks.FoldedGroup) Line {
	return Line{status(g.Status), {Kind: Plain, Text: " "}, {Kind: Hosts, Text: g.Hosts}, {Kind: Muted, Text: ": " + g.Summary}}
}

// Next is the line under a verdict that says what to do about it.
func Next(hint string) Line { return Line{{Kind: Label, Text: "next: "}, {Kind: Plain, Text: hint}} }

// Score is a lab criterion's score group, "PASS    mesh (critical)
// gpu[01-04]: NV12 on every pair".
func Score(g labs.ScoreGroup) Line {
	id := g.ID
	if kind := g.Kind(); kind != "" {
		id += " (" + kind + ")"
	}
	return Line{status(g.Status), {Kind: Plain, Text: " " + id + " "}, {Kind: Hosts, Text: g.Hosts}, {Kind: Muted, Text: ": " + g.Summary}}
}
