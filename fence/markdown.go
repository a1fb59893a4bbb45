package fence

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/gpulab/gpulab/internal/visible"
	"github.com/gpulab/gpulab/step"
)

// Markdown is the record for a person: a colleague taking over, or a
// vendor's support ticket.
func (r *Record) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Fence %s: %s\n\n", r.ID, md(r.Reason))
	if r.Simulated {
		b.WriteString("**SIMULATED**: the hosts or the cluster were gpulab's simulation; nothing here is evidence about real hardware.\n\n")
	}
	fmt.Fprintf(&b, "| | |\n|---|---|\n| by | %s |\n| at | %s |\n| target | %s |\n| hosts | %s |\n| complete | %v |\n\n",
		md(r.By), r.At.UTC().Format(time.RFC3339), md(r.Target), md(strings.Join(r.Hosts, ", ")), r.Complete)
	b.WriteString("## Evidence\n\n")
	writeEvidence(&b, r.Evidence)
	b.WriteString("## Actions\n\n")
	writeResults(&b, r.Plan, r.Results)
	for _, d := range r.Drain {
		fmt.Fprintf(&b, "### Drain of %s\n\n", md(d.Node))
		if d.Error != "" {
			fmt.Fprintf(&b, "%s\n\n", md(d.Error))
		}
		b.WriteString("| pod | outcome | why |\n|---|---|---|\n")
		for _, p := range d.Pods {
			fmt.Fprintf(&b, "| %s/%s | %s | %s |\n", md(p.Namespace), md(p.Name), p.Outcome, md(p.Why))
		}
		b.WriteString("\n")
	}
	for i, rel := range r.Releases {
		fmt.Fprintf(&b, "## Release %d: by %s at %s", i+1, md(rel.By), rel.At.UTC().Format(time.RFC3339))
		if rel.Force {
			b.WriteString(" (--force: without the checks passing)")
		}
		b.WriteString("\n\n")
		if rel.Runbook != "" {
			fmt.Fprintf(&b, "Checked again with runbook %s.\n\n", md(rel.Runbook))
		}
		if rel.Note != "" {
			fmt.Fprintf(&b, "%s\n\n", md(rel.Note))
		}
		for node, why := range rel.Held {
			fmt.Fprintf(&b, "- %s held: %s\n", md(node), md(why))
		}
		if len(rel.Held) > 0 {
			b.WriteString("\n")
		}
		writeEvidence(&b, rel.Evidence)
		writeResults(&b, rel.Plan, rel.Results)
	}
	return b.String()
}

func writeEvidence(b *strings.Builder, ev []HostEvidence) {
	for _, h := range ev {
		fmt.Fprintf(b, "### %s (runbook %s", md(h.Host), md(h.Runbook))
		if h.Via != "" {
			fmt.Fprintf(b, ", via %s", md(h.Via))
		}
		b.WriteString(")\n\n")
		if h.Error != "" {
			fmt.Fprintf(b, "No evidence: %s\n\n", md(h.Error))
		}
		if len(h.Verdicts) > 0 {
			b.WriteString("| check | status | summary |\n|---|---|---|\n")
			for _, v := range h.Verdicts {
				fmt.Fprintf(b, "| %s | %s | %s |\n", md(v.Check), v.Status, md(v.Summary))
			}
			b.WriteString("\n")
		}
		for _, v := range h.Verdicts {
			if v.Status != step.Fail && v.Status != step.Warn {
				continue
			}
			for _, e := range v.Evidence {
				fmt.Fprintf(b, "- %s, step %s", md(v.Check), md(e.Step))
				if e.Line > 0 {
					fmt.Fprintf(b, " line %d", e.Line)
				}
				fmt.Fprintf(b, ": `%s`\n", strings.ReplaceAll(visible.String(e.Fact), "`", "'"))
			}
		}
		if r := h.BugReport; r != nil && r.File != "" {
			fmt.Fprintf(b, "- nvidia-bug-report.sh's log: [%s](%s), %d bytes\n", r.File, r.File, r.Bytes)
		} else if r != nil {
			fmt.Fprintf(b, "- no nvidia-bug-report.sh log: %s\n", md(r.Problem))
		}
		for _, s := range h.Steps {
			if s.File != "" {
				fmt.Fprintf(b, "- output of %s (`%s`): [%s](%s), %d bytes", md(s.ID), strings.ReplaceAll(visible.String(s.Command), "`", "'"), s.File, s.File, s.Bytes)
				if s.Cut {
					b.WriteString(", its middle cut")
				}
				b.WriteString("\n")
			}
		}
		b.WriteString("\n")
	}
}

func writeResults(b *strings.Builder, plan []Plan, results []Result) {
	rows := results
	if len(rows) == 0 { // planned, not (yet) applied
		for _, p := range plan {
			rows = append(rows, Result{Plan: p})
		}
	}
	b.WriteString("| node | in | changes | outcome | left as it is |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		var ch []string
		for _, c := range r.Changes {
			ch = append(ch, c.What)
		}
		outcome := string(r.Outcome)
		if outcome == "" {
			outcome = "planned"
		}
		if d := cmp.Or(r.Detail, r.Refused, r.Unchanged); d != "" {
			outcome += ": " + d
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", md(r.Node), md(r.In), md(strings.Join(ch, "; ")), md(outcome), md(strings.Join(r.Left, "; ")))
	}
	b.WriteString("\n")
}

// md is s for a Markdown table cell: visible, one line, pipes escaped.
func md(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(visible.String(s))
}
