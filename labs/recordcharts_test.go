package labs

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpulab/gpulab/step/parse"
)

// svgShape is what a structural check reads of an SVG: its texts (title,
// axis labels, ticks, legend, notes) and the colours its lines and bars
// are drawn in.
type svgShape struct {
	texts  []string
	colors map[string]bool
}

func readSVG(t *testing.T, data []byte) svgShape {
	t.Helper()
	s := svgShape{colors: map[string]bool{}}
	d := xml.NewDecoder(strings.NewReader(string(data)))
	root := false
	for {
		tok, err := d.Token()
		if err != nil {
			break
		}
		el, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		root = root || el.Name.Local == "svg"
		for _, a := range el.Attr {
			if a.Name.Local != "style" {
				continue
			}
			for _, decl := range strings.Split(a.Value, ";") {
				k, v, _ := strings.Cut(decl, ":")
				if (k == "stroke" || k == "fill") && v != "#000000" && v != "#FFFFFF" && v != "#808080" && v != "none" {
					s.colors[v] = true
				}
			}
		}
		if el.Name.Local == "text" {
			var txt string
			if err := d.DecodeElement(&txt, &el); err == nil {
				s.texts = append(s.texts, strings.TrimSpace(txt))
			}
		}
	}
	if !root {
		t.Fatalf("not an SVG document:\n%.300s", data)
	}
	return s
}

func (s svgShape) has(t *testing.T, what string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(s.texts, w) {
			t.Errorf("%s: no text %q among %q", what, w, s.texts)
		}
	}
}

func fixture(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(fx + path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func u32(v uint32) *uint32 { return &v }
func u64(v uint64) *uint64 { return &v }

// A record of two hosts that ran real nccl-tests outputs and sampled two
// GPUs: Write draws the bus bandwidth (one line per host) and each host's
// samples (one line per GPU) beside record.md, which links them.
func TestRecordCharts(t *testing.T) {
	r := &Record{Lab: "nccl", Name: "NCCL"}
	samples := []Sample{
		{T: 0, GPUs: []SampleGPU{{Index: 0, UtilPct: u32(0), MemUsedMiB: u64(1024)}, {Index: 1, UtilPct: u32(5), MemUsedMiB: u64(1024)}}},
		{T: 2, GPUs: []SampleGPU{{Index: 0, UtilPct: u32(97), MemUsedMiB: u64(30000)}, {Index: 1, UtilPct: u32(95), MemUsedMiB: u64(31000)}}},
		{T: 4, GPUs: []SampleGPU{{Index: 0, UtilPct: u32(99), MemUsedMiB: u64(30500)}, {Index: 1, UtilPct: u32(98), MemUsedMiB: u64(31500)}}},
	}
	for _, h := range []struct{ name, file string }{
		{"gpu01", "workloads/nccl-tests/all_reduce_1node-8xA100-SXM4-80GB-nccltests2.19.4.txt"},
		{"gpu/02", "workloads/nccl-tests/all_reduce_2node-16xA100-40GB-8B-8G-volcano.txt"},
	} {
		r.Hosts = append(r.Hosts, HostRecord{Host: h.name, Steps: []StepRecord{{ID: "sweep", Stdout: fixture(t, h.file), Samples: samples}}})
	}
	dir := t.TempDir()
	if err := r.Write(dir, ""); err != nil {
		t.Fatal(err)
	}
	nccl, err := os.ReadFile(filepath.Join(dir, "nccl-busbw.svg"))
	if err != nil {
		t.Fatal(err)
	}
	s := readSVG(t, nccl)
	s.has(t, "nccl-busbw.svg", "NCCL bus bandwidth (out of place)", "message size (bytes)", "bus bandwidth (GB/s)", "gpu01 sweep", "gpu/02 sweep", "8", "4K", "2M", "1G", "8G")
	if len(s.colors) != 2 {
		t.Errorf("nccl-busbw.svg draws %d series colours (%v), want 2: one line per host", len(s.colors), s.colors)
	}
	util, err := os.ReadFile(filepath.Join(dir, "samples-sweep-gpu_02-util.svg")) // the host's slash made safe
	if err != nil {
		t.Fatal(err)
	}
	s = readSVG(t, util)
	s.has(t, "the utilisation chart", "gpu/02, step sweep: GPU utilisation", "seconds", "utilisation (%)", "GPU 0", "GPU 1", "100")
	md, _ := os.ReadFile(filepath.Join(dir, "record.md"))
	for _, want := range []string{"## Charts", "![NCCL bus bandwidth (out of place)](nccl-busbw.svg)",
		"(samples-sweep-gpu01-util.svg)", "(samples-sweep-gpu01-memory.svg)", "(samples-sweep-gpu_02-memory.svg)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("record.md lacks %q", want)
		}
	}
}

// The comparison's latency bars from real vLLM outputs: P50, P95 and P99 of
// each run, "baseline" above the first and the P99 interference
// coefficient above the others.
func TestCompareLatencyChart(t *testing.T) {
	kind, _ := parse.Lookup("vllm-bench-serve")
	var rows []CompareRow
	for i, f := range []string{"benchmark_serving-hermes3-llama3.1-8b-sharegpt-10prompts-vllm-readme.txt", "benchmark_serving-qwen2-7b-2xA100-40GB-random1024-10prompts.txt"} {
		v, err := kind.Parse(fixture(t, "workloads/vllm-bench-serve/"+f))
		if err != nil {
			t.Fatal(err)
		}
		ttft := v.(*parse.VLLMBench).TTFT
		p99 := ttft.Percentiles["p99"]
		rows = append(rows, CompareRow{Lab: "l", Host: "gpu07", Mode: []string{"exclusive", "mig"}[i], P50: ttft.Median, P99: &p99, Baseline: i == 0})
	}
	c := *rows[1].P99 / *rows[0].P99
	rows[1].P99Coefficient = &c
	cs := CompareCharts(nil, rows)
	if len(cs) != 1 || cs[0].File != "compare-latency.svg" {
		t.Fatalf("charts: %+v", cs)
	}
	svg, err := cs[0].draw()
	if err != nil {
		t.Fatal(err)
	}
	s := readSVG(t, svg)
	s.has(t, "compare-latency.svg", "exclusive gpu07", "mig gpu07", "baseline", "×42.10 P99", "P50", "P95", "P99", "latency (ms)")
	if len(s.colors) != 3 {
		t.Errorf("%d bar colours (%v), want 3: P50, P95, P99", len(s.colors), s.colors)
	}
}
