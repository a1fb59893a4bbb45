package tui

import (
	"strings"
	"testing"

	"github.com/gpulab/gpulab/app"
	"github.com/gpulab/gpulab/labs"
)

func TestSparkline(t *testing.T) {
	for _, tc := range []struct {
		values []float64
		width  int
		want   string
	}{
		{[]float64{0, 50, 100}, 10, "▁▅█"},
		{[]float64{0, 14, 29, 43, 57, 71, 86, 100}, 8, "▁▂▃▄▅▆▇█"},
		{[]float64{100, 0, 100}, 2, "▁█"}, // the latest width of them
		{[]float64{-5, 250}, 4, "▁█"},     // clamped
	} {
		if got := sparkline(tc.values, tc.width); got != tc.want {
			t.Errorf("sparkline(%v, %d) = %q, want %q", tc.values, tc.width, got, tc.want)
		}
	}
}

func TestHBar(t *testing.T) {
	for _, tc := range []struct {
		x, top float64
		width  int
		want   string
	}{
		{10, 10, 4, "████"},
		{5, 10, 4, "██"},
		{1, 10, 4, "▍"}, // 3.2 eighths of a cell
		{0, 10, 4, ""},
		{20, 10, 4, "████"}, // never past the width
		{1, 0, 4, ""},
	} {
		if got := hbar(tc.x, tc.top, tc.width); got != tc.want {
			t.Errorf("hbar(%v, %v, %d) = %q, want %q", tc.x, tc.top, tc.width, got, tc.want)
		}
	}
}

// The Labs tab draws each GPU's utilisation over the probe's samples: one
// host's GPU by GPU; several hosts a line each, hosts that read the same
// folded.
func TestLabsSparklines(t *testing.T) {
	v := newLabsView(scriptedLabs{n: 1}, nil, nil, DefaultStyles())
	v.SetSize(80, 24)
	v.samples = map[string]sampled{}
	for _, u := range [][2]uint32{{0, 10}, {50, 10}, {100, 10}} {
		smp := labs.Sample{GPUs: []labs.SampleGPU{{Index: 0, UtilPct: ptr(u[0])}, {Index: 1, UtilPct: ptr(u[1])}}}
		v.apply(app.LabUpdate{Event: &labs.Event{Kind: labs.Sampled, Host: "gpu001", Sample: &smp}})
	}
	got := strings.Join(v.sparkLines(), "\n")
	for _, want := range []string{"gpu001, latest samples", "GPU0  ▁▅█ 100%", "GPU1  ▂▂▂  10%"} {
		if !strings.Contains(got, want) {
			t.Errorf("sparklines lack %q:\n%s", want, got)
		}
	}
	for _, h := range []string{"gpu002", "gpu003"} {
		for _, u := range []uint32{0, 50, 100} {
			smp := labs.Sample{GPUs: []labs.SampleGPU{{Index: 0, UtilPct: ptr(u)}, {Index: 1, UtilPct: ptr(uint32(10))}}}
			v.apply(app.LabUpdate{Event: &labs.Event{Kind: labs.Sampled, Host: h, Sample: &smp}})
		}
	}
	got = strings.Join(v.sparkLines(), "\n")
	if !strings.Contains(got, "utilisation per GPU") || !strings.Contains(got, "gpu[001-003]") || strings.Count(got, "\n") != 1 {
		t.Errorf("three hosts that read the same are not one folded line:\n%s", got)
	}
}

// BenchmarkRenderRecord renders a lab record of 8 hosts, as
// enter on the Results tab does.
func BenchmarkRenderRecord(b *testing.B) {
	r := &labs.Record{Schema: labs.RecordSchema, Lab: "topology-sanity", Name: "Topology sanity", Complete: true}
	for i := range 8 {
		r.Hosts = append(r.Hosts, labs.HostRecord{Host: "gpu00" + string(rune('1'+i)), Scores: []labs.Score{{ID: "nvlink-mesh", Status: "PASS",
			Expr: `metrics.nvlink == "PASS"`, Summary: `metrics.nvlink = "PASS" against metrics.nvlink == "PASS"`}}})
	}
	md := r.Markdown()
	for b.Loop() {
		_ = renderMarkdown(md, 160)
	}
	b.ReportMetric(float64(len(md)), "md-bytes")
}
