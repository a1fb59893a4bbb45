package charts

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

// Bad input is an error naming the chart or the series, never a picture
// that lies.
func TestChartErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		draw func() ([]byte, error)
		want string
	}{
		{"no series", Lines{Title: "empty"}.SVG, `"empty" has no series`},
		{"x and y", Lines{Series: []Series{{Name: "s", X: []float64{1, 2}, Y: []float64{1}}}}.SVG, `series "s" has 2 x and 1 y values`},
		{"log of zero", Lines{LogX: true, Series: []Series{{Name: "z", X: []float64{0}, Y: []float64{1}}}}.SVG, `series "z": x 0 on a log scale`},
		{"no bars", Bars{Title: "b"}.SVG, `"b" has no bars`},
		{"bars per group", Bars{Groups: []string{"a", "b"}, Series: []Series{{Name: "P50", Y: []float64{1}}}}.SVG, `series "P50" has 1 values for 2 groups`},
	} {
		if _, err := c.draw(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func TestSizeLabel(t *testing.T) {
	for v, want := range map[float64]string{8: "8", 1024: "1K", 3 << 20: "3M", 8 << 30: "8G", 512: "512"} {
		if got := SizeLabel(v); got != want {
			t.Errorf("SizeLabel(%v) = %q, want %q", v, got, want)
		}
	}
}

// Labels come from records: one with ESC or U+202E still makes a
// well-formed SVG (XML allows no ESC at all), drawn escaped.
func TestChartLabelsWithControlCharacters(t *testing.T) {
	const hostile = "gpu01\x1b[31m\u202e10upg <&>"
	for name, draw := range map[string]func() ([]byte, error){
		"bars":  Bars{Title: "t" + hostile, YLabel: hostile, Groups: []string{hostile}, Series: []Series{{Name: hostile, Y: []float64{3}}}, Notes: []string{hostile}}.SVG,
		"lines": Lines{Title: hostile, XLabel: hostile, YLabel: hostile, Series: []Series{{Name: hostile, X: []float64{1, 2}, Y: []float64{1, 2}}}}.SVG,
	} {
		svg, err := draw()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		d := xml.NewDecoder(bytes.NewReader(svg))
		for {
			_, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: the SVG is not well-formed XML: %v", name, err)
			}
		}
		if bytes.ContainsRune(svg, 0x1b) || bytes.ContainsRune(svg, 0x202e) {
			t.Errorf("%s: the SVG holds ESC or U+202E raw", name)
		}
		if !bytes.Contains(svg, []byte(`gpu01\x1b[31m\u202e10upg`)) {
			t.Errorf("%s: the label is not drawn escaped", name)
		}
	}
}
