package labs

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/gpulab/gpulab/internal/fileio"
	"github.com/gpulab/gpulab/labs/charts"
	"github.com/gpulab/gpulab/step/parse"
)

// Chart is a picture of a record, written beside it as File (SVG) and
// linked from record.md.
type Chart struct {
	File  string
	Title string
	draw  func() ([]byte, error)
}

// maxSampleCharts bounds the sample charts of one record: utilisation and
// memory per host and step, for the first hosts only.
const maxSampleCharts = 16

// Charts are the record's pictures: NCCL bus bandwidth against message
// size (one line per host and step that ran nccl-tests), and the probe's
// samples over time (utilisation and memory per GPU, per host and step).
func (r *Record) Charts() []Chart {
	var out []Chart
	if nccl := r.ncclSeries(); len(nccl) > 0 {
		l := charts.Lines{Title: "NCCL bus bandwidth (out of place)", XLabel: "message size (bytes)", YLabel: "bus bandwidth (GB/s)", LogX: true, Series: nccl}
		out = append(out, Chart{File: "nccl-busbw.svg", Title: l.Title, draw: l.SVG})
	}
	for _, h := range r.Hosts {
		for _, s := range h.Steps {
			if len(s.Samples) == 0 || len(out) >= maxSampleCharts {
				continue
			}
			util, mem := sampleSeries(s.Samples)
			base := "samples-" + fileSafe(s.ID) + "-" + fileSafe(h.Host)
			if len(util) > 0 {
				l := charts.Lines{Title: fmt.Sprintf("%s, step %s: GPU utilisation", h.Host, s.ID), XLabel: "seconds", YLabel: "utilisation (%)", YMax: 100, Series: util}
				out = append(out, Chart{File: base + "-util.svg", Title: l.Title, draw: l.SVG})
			}
			if len(mem) > 0 {
				l := charts.Lines{Title: fmt.Sprintf("%s, step %s: GPU memory used", h.Host, s.ID), XLabel: "seconds", YLabel: "memory used (GiB)", Series: mem}
				out = append(out, Chart{File: base + "-memory.svg", Title: l.Title, draw: l.SVG})
			}
		}
	}
	return out
}

// ncclSeries reads every step output that nccl-tests printed.
func (r *Record) ncclSeries() []charts.Series {
	kind, ok := parse.Lookup("nccl-tests")
	if !ok {
		return nil
	}
	var out []charts.Series
	for _, h := range r.Hosts {
		for _, s := range h.Steps {
			if !strings.Contains(s.Stdout, "Avg bus bandwidth") && !strings.Contains(s.Stdout, "nccl-tests version") {
				continue
			}
			v, err := kind.Parse(s.Stdout)
			nt, ok := v.(*parse.NCCLTests)
			if err != nil || !ok || len(nt.Rows) == 0 {
				continue
			}
			sr := charts.Series{Name: h.Host + " " + s.ID}
			for _, row := range nt.Rows {
				if row.SizeBytes > 0 {
					sr.X = append(sr.X, float64(row.SizeBytes))
					sr.Y = append(sr.Y, row.OutOfPlace.BusBW)
				}
			}
			if len(sr.X) > 0 {
				out = append(out, sr)
			}
		}
	}
	return out
}

// sampleSeries are one line per GPU: utilisation (%) and memory used (GiB)
// against seconds since the step started.
func sampleSeries(samples []Sample) (util, mem []charts.Series) {
	u, m := map[int]*charts.Series{}, map[int]*charts.Series{}
	var order []int
	for _, s := range samples {
		for _, g := range s.GPUs {
			if _, seen := u[g.Index]; !seen {
				name := fmt.Sprintf("GPU %d", g.Index)
				u[g.Index], m[g.Index] = &charts.Series{Name: name}, &charts.Series{Name: name}
				order = append(order, g.Index)
			}
			if g.UtilPct != nil {
				u[g.Index].X, u[g.Index].Y = append(u[g.Index].X, s.T), append(u[g.Index].Y, float64(*g.UtilPct))
			}
			if g.MemUsedMiB != nil {
				m[g.Index].X, m[g.Index].Y = append(m[g.Index].X, s.T), append(m[g.Index].Y, float64(*g.MemUsedMiB)/1024)
			}
		}
	}
	for _, i := range order {
		if len(u[i].X) > 0 {
			util = append(util, *u[i])
		}
		if len(m[i].X) > 0 {
			mem = append(mem, *m[i])
		}
	}
	return util, mem
}

var unsafeFile = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// fileSafe makes a host name or step id a file name's part.
func fileSafe(s string) string {
	s = unsafeFile.ReplaceAllString(s, "_")
	if len(s) > 40 {
		s = s[:40]
	}
	return strings.Trim(s, ".")
}

// writeCharts draws the record's charts into dir; one that cannot be
// drawn is left out of the record's links, and named in the error.
func (r *Record) writeCharts(dir string) ([]Chart, error) {
	cs := r.Charts()
	paths, err := WriteCharts(dir, cs)
	var written []Chart
	for _, c := range cs {
		if slices.Contains(paths, filepath.Join(dir, c.File)) {
			written = append(written, c)
		}
	}
	return written, err
}

// chartsMarkdown links the charts written beside record.md.
func chartsMarkdown(dir string, cs []Chart) string {
	var b strings.Builder
	for _, c := range cs {
		if _, err := os.Stat(filepath.Join(dir, c.File)); err != nil {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\n## Charts\n\n")
		}
		fmt.Fprintf(&b, "![%s](%s)\n\n", mdCell(c.Title), c.File)
	}
	return b.String()
}

// CompareCharts are a comparison's pictures: the latency percentiles of
// each row (P50, P95, P99 of the result table) with its P99 interference
// coefficient against the baseline written above it, and the NCCL bus
// bandwidth of every run that ran nccl-tests, one line per run and host.
func CompareCharts(refs []RecordRef, rows []CompareRow) []Chart {
	var out []Chart
	if b, ok := latencyBars(rows); ok {
		out = append(out, Chart{File: "compare-latency.svg", Title: b.Title, draw: b.SVG})
	}
	var nccl []charts.Series
	for _, ref := range refs {
		for _, s := range ref.Record.ncclSeries() {
			s.Name = filepath.Base(ref.Dir) + " " + s.Name
			nccl = append(nccl, s)
		}
	}
	if len(nccl) > 0 {
		l := charts.Lines{Title: "NCCL bus bandwidth (out of place), by run", XLabel: "message size (bytes)", YLabel: "bus bandwidth (GB/s)", LogX: true, Series: nccl}
		out = append(out, Chart{File: "compare-nccl-busbw.svg", Title: l.Title, draw: l.SVG})
	}
	return out
}

// latencyBars draws the rows that have latency figures.
func latencyBars(rows []CompareRow) (charts.Bars, bool) {
	b := charts.Bars{Series: []charts.Series{{Name: "P50"}, {Name: "P95"}, {Name: "P99"}}}
	for _, r := range rows {
		if r.P50 == nil && r.P95 == nil && r.P99 == nil {
			continue
		}
		label := cmp.Or(r.Mode, r.Lab) + " " + r.Host
		note := ""
		switch {
		case r.Baseline:
			note = "baseline"
		case r.P99Coefficient != nil:
			note = fmt.Sprintf("×%.2f P99", *r.P99Coefficient)
		}
		b.Groups, b.Notes = append(b.Groups, label), append(b.Notes, note)
		for i, v := range []*float64{r.P50, r.P95, r.P99} {
			y := 0.0
			if v != nil {
				y = *v
			}
			b.Series[i].Y = append(b.Series[i].Y, y)
		}
	}
	b.Title = "Latency percentiles by run (P99 interference coefficient against the baseline above each)"
	b.YLabel = "latency (ms)"
	return b, len(b.Groups) > 0
}

// WriteCharts draws charts into dir (made if needed) and returns the paths
// written; a chart that cannot be drawn is named in the error, the others
// are written all the same.
func WriteCharts(dir string, cs []Chart) ([]string, error) {
	if err := fileio.MkdirTrusted(dir, 0o755); err != nil {
		return nil, err
	}
	var paths, errs []string
	for _, c := range cs {
		svg, err := c.draw()
		if err == nil {
			err = fileio.WriteAtomic(filepath.Join(dir, c.File), svg)
		}
		if err != nil {
			errs = append(errs, c.File+": "+err.Error())
			continue
		}
		paths = append(paths, filepath.Join(dir, c.File))
	}
	if len(errs) > 0 {
		return paths, fmt.Errorf("charts: %s", strings.Join(errs, "; "))
	}
	return paths, nil
}
