// Package charts draws the pictures that lab records and comparisons carry
// beside their tables, as SVG, with gonum.org/v1/plot: lines (NCCL bus
// bandwidth against message size, probe samples over time) and grouped
// bars (latency percentiles per run, the interference coefficient marked).
// It knows nothing of labs: it takes numbers and names.
package charts

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/gpulab/gpulab/internal/visible"
)

// Size is every chart's size.
var (
	Width  = 16 * vg.Centimeter
	Height = 9 * vg.Centimeter
)

// Series is one line: a name and its points (X and Y of equal length).
type Series struct {
	Name string
	X, Y []float64
}

// Lines is a line chart.
type Lines struct {
	Title, XLabel, YLabel string
	// LogX draws X on a base-2 log scale (message sizes), with ticks at
	// powers of two labelled in bytes (1K, 1M, 1G).
	LogX   bool
	Series []Series
	// YMax, when set, fixes the Y axis' top (100 for percentages).
	YMax float64
}

// palette is a colour-blind-safe set (Okabe and Ito), repeated with dashes
// past its length.
var palette = []color.RGBA{
	{0, 114, 178, 255}, {230, 159, 0, 255}, {0, 158, 115, 255}, {204, 121, 167, 255},
	{86, 180, 233, 255}, {213, 94, 0, 255}, {240, 228, 66, 255}, {0, 0, 0, 255},
}

// SVG draws the chart.
func (l Lines) SVG() ([]byte, error) {
	if len(l.Series) == 0 {
		return nil, fmt.Errorf("charts: %q has no series", l.Title)
	}
	p := newPlot(l.Title, l.XLabel, l.YLabel)
	if l.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = bytesTicks{}
	}
	if l.YMax > 0 {
		p.Y.Min, p.Y.Max = 0, l.YMax
	}
	for i, s := range l.Series {
		if len(s.X) != len(s.Y) || len(s.X) == 0 {
			return nil, fmt.Errorf("charts: series %q has %d x and %d y values", s.Name, len(s.X), len(s.Y))
		}
		xys := make(plotter.XYs, len(s.X))
		for j := range s.X {
			xys[j].X, xys[j].Y = s.X[j], s.Y[j]
			if l.LogX && s.X[j] <= 0 {
				return nil, fmt.Errorf("charts: series %q: x %v on a log scale", s.Name, s.X[j])
			}
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, err
		}
		c := palette[i%len(palette)]
		line.Color, points.Color = c, c
		line.Width = vg.Points(1.5)
		if i >= len(palette) {
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		points.Shape = draw.CircleGlyph{}
		points.Radius = vg.Points(1.5)
		p.Add(line, points)
		p.Legend.Add(visible.String(s.Name), line, points)
	}
	return render(p)
}

// Bars is a grouped bar chart: one group per label, one bar per series
// in each group.
type Bars struct {
	Title, YLabel string
	Groups        []string // one label per group (a run, a mode)
	Series        []Series // Y holds one value per group; X is unused
	// Notes are written above each group ("×1.8 p99"), "" for none.
	Notes []string
}

// SVG draws the chart.
func (b Bars) SVG() ([]byte, error) {
	if len(b.Series) == 0 || len(b.Groups) == 0 {
		return nil, fmt.Errorf("charts: %q has no bars", b.Title)
	}
	p := newPlot(b.Title, "", b.YLabel)
	w := vg.Points(min(40, 240/float64(len(b.Groups)*len(b.Series))))
	top := 0.0
	for i, s := range b.Series {
		if len(s.Y) != len(b.Groups) {
			return nil, fmt.Errorf("charts: series %q has %d values for %d groups", s.Name, len(s.Y), len(b.Groups))
		}
		bc, err := plotter.NewBarChart(plotter.Values(s.Y), w)
		if err != nil {
			return nil, err
		}
		bc.Color = palette[i%len(palette)]
		bc.LineStyle.Width = 0
		bc.Offset = w * vg.Length(float64(i)-float64(len(b.Series)-1)/2)
		p.Add(bc)
		p.Legend.Add(visible.String(s.Name), bc)
		top = max(top, slices.Max(s.Y))
	}
	groups := make([]string, len(b.Groups))
	for i, g := range b.Groups {
		groups[i] = visible.String(g)
	}
	p.NominalX(groups...)
	p.Y.Min = 0
	p.Y.Max = top * 1.2
	if err := addNotes(p, b.Notes, top*1.08); err != nil {
		return nil, err
	}
	p.Legend.Top = true
	return render(p)
}

// addNotes writes a note above each group.
func addNotes(p *plot.Plot, notes []string, y float64) error {
	var xys plotter.XYLabels
	for i, n := range notes {
		if n == "" {
			continue
		}
		xys.XYs = append(xys.XYs, plotter.XY{X: float64(i), Y: y})
		xys.Labels = append(xys.Labels, visible.String(n))
	}
	if len(xys.Labels) == 0 {
		return nil
	}
	labels, err := plotter.NewLabels(xys)
	if err != nil {
		return err
	}
	for i := range labels.TextStyle {
		labels.TextStyle[i].XAlign = -0.5 // centred on the group
	}
	p.Add(labels)
	return nil
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	// Names come from records (hosts, runs, modes): a control character
	// is not even allowed in XML, and a bidi override would reorder what
	// the chart shows; each is drawn escaped, as gpulab prints them.
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = visible.String(title), visible.String(x), visible.String(y)
	p.Add(plotter.NewGrid())
	return p
}

func render(p *plot.Plot) ([]byte, error) {
	wt, err := p.WriterTo(Width, Height, "svg")
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// bytesTicks marks powers of two on a log axis, labelled in bytes, at most
// about a dozen labels.
type bytesTicks struct{}

func (bytesTicks) Ticks(lo, hi float64) []plot.Tick {
	a, b := math.Floor(math.Log2(max(lo, 1))), math.Ceil(math.Log2(max(hi, 1)))
	step := max(1, math.Ceil((b-a)/12))
	var ts []plot.Tick
	for e := a; e <= b; e++ {
		v := math.Exp2(e)
		label := ""
		if math.Mod(e-a, step) == 0 {
			label = SizeLabel(v)
		}
		ts = append(ts, plot.Tick{Value: v, Label: label})
	}
	return ts
}

// SizeLabel writes a byte count as nccl-tests' readers say it: 8, 1K,
// 128M, 8G.
func SizeLabel(v float64) string {
	for _, u := range []struct {
		n float64
		s string
	}{{1 << 30, "G"}, {1 << 20, "M"}, {1 << 10, "K"}} {
		if v >= u.n {
			return fmt.Sprintf("%g%s", v/u.n, u.s)
		}
	}
	return fmt.Sprintf("%g", v)
}
