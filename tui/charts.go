package tui

import (
	"fmt"
	"math"
	"strings"

	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/labs"
)

// sparkTicks are a sparkline's eight heights, lowest first.
var sparkTicks = []rune("▁▂▃▄▅▆▇█")

// sparkline draws values (0 to 100, oldest first) as one character each,
// the last width of them.
func sparkline(values []float64, width int) string {
	if len(values) > width {
		values = values[len(values)-width:]
	}
	var b strings.Builder
	for _, x := range values {
		i := int(math.Round(x / 100 * float64(len(sparkTicks)-1)))
		b.WriteRune(sparkTicks[max(0, min(len(sparkTicks)-1, i))])
	}
	return b.String()
}

// barEighths are a bar's partial last cell, an eighth at a time.
var barEighths = []rune(" ▏▎▍▌▋▊▉")

// hbar draws x against top as a bar of at most width cells, to an eighth
// of a cell.
func hbar(x, top float64, width int) string {
	if top <= 0 || x <= 0 || width <= 0 {
		return ""
	}
	eighths := int(math.Round(min(x/top, 1) * float64(width*8)))
	s := strings.Repeat("█", eighths/8)
	if r := eighths % 8; r > 0 {
		s += string(barEighths[r])
	}
	return s
}

// maxOf is the largest of the figures given (0 when none is).
func maxOf(xs ...*float64) float64 {
	top := 0.0
	for _, x := range xs {
		if x != nil {
			top = max(top, *x)
		}
	}
	return top
}

// compareBars draws a comparison's figures as bars: throughput per run
// (with its ratio to the baseline), then P50/P95/P99 per run on one scale,
// the P99 interference coefficient marked where it is above 1.
func compareBars(rows []labs.CompareRow, width int) []string {
	label := func(r labs.CompareRow) string { return text.Cut(r.Lab+" "+r.Host, 26) }
	barW := max(8, min(50, width-26-32)) // room for the figure and the interference mark
	var tputs, lats []*float64
	for _, r := range rows {
		tputs = append(tputs, r.Throughput)
		lats = append(lats, r.P50, r.P95, r.P99)
	}
	var out []string
	if top := maxOf(tputs...); top > 0 {
		out = append(out, "Throughput"+unitOf(rows))
		for _, r := range rows {
			if r.Throughput == nil {
				continue
			}
			ratio := ""
			if r.ThroughputRatio != nil && !r.Baseline {
				ratio = "  × " + labs.FormatValue(*r.ThroughputRatio)
			}
			out = append(out, fmt.Sprintf("  %s %-*s %s%s", cell(label(r), 26), barW, hbar(*r.Throughput, top, barW), labs.FormatValue(*r.Throughput), ratio))
		}
		out = append(out, "")
	}
	if top := maxOf(lats...); top > 0 {
		out = append(out, "Latency P50 / P95 / P99 (one scale)")
		for _, r := range rows {
			head := label(r) // on the run's first bar only
			for i, p := range []*float64{r.P50, r.P95, r.P99} {
				if p == nil {
					continue
				}
				name, mark := []string{"P50", "P95", "P99"}[i], ""
				if i == 2 && r.P99Coefficient != nil && !r.Baseline {
					mark = "  interference " + labs.FormatValue(*r.P99Coefficient)
					if *r.P99Coefficient > 1 {
						mark += " ▲"
					}
				}
				out = append(out, fmt.Sprintf("  %s %s %-*s %s%s", cell(head, 26), name, barW-4, hbar(*p, top, barW-4), labs.FormatValue(*p), mark))
				head = ""
			}
		}
		out = append(out, "")
	}
	return out
}

// unitOf is " (unit)" of the first row that names one.
func unitOf(rows []labs.CompareRow) string {
	for _, r := range rows {
		if r.Unit != "" {
			return " (" + r.Unit + ")"
		}
	}
	return ""
}
