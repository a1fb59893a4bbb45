package labs_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpulab/gpulab/internal/testreq"
	"github.com/gpulab/gpulab/labs"
)

// startPrometheus runs Debian's prometheus on loopback, scraping an
// exporter the test serves every second, and waits until the exporter's
// series are queryable.
func startPrometheus(t *testing.T) string {
	t.Helper()
	bin := testreq.Tool(t, "prometheus", "the Prometheus observation point is tested against the real server (apt-get install --no-install-recommends prometheus)")
	exporter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "# TYPE gpulab_test_gpu_util gauge\ngpulab_test_gpu_util{gpu=\"0\"} 87\ngpulab_test_gpu_util{gpu=\"1\"} 42\n")
	}))
	t.Cleanup(exporter.Close)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: exporter\n    static_configs:\n      - targets: ['%s']\n", strings.TrimPrefix(exporter.URL, "http://"))), 0o644)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	logf, _ := os.Create(filepath.Join(dir, "prometheus.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	base := "http://" + addr
	// Wait, polling, until the exporter has been scraped often enough for
	// the range query (at least four samples of gpu 0).
	query := url.QueryEscape(`count_over_time(gpulab_test_gpu_util{gpu="0"}[1m]) >= 4`)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/api/v1/query?query=" + query)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			if strings.Contains(string(body), `"result":[{`) {
				return base
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
	t.Fatalf("prometheus did not serve four samples of the exporter's series within 60s:\n%s", log)
	return ""
}

// A lab's Prometheus observation points against a real Prometheus: an
// instant query, a range query, and a broken query whose error reaches the
// record, with the criterion that needed it UNKNOWN.
func TestPrometheusObservationPoint(t *testing.T) {
	base := startPrometheus(t)
	l, err := labs.Parse("prom.toml", []byte(`id = "prom"
name = "Prometheus observation points"
goal = "metrics from PromQL"
plane = "workload"
maturity = "draft"
estimate_minutes = 1

[[param]]
name = "prom_url"
help = "Prometheus"

[[step]]
id = "util"
phase = "observe"
promql = "avg(gpulab_test_gpu_util)"
prometheus = "{{prom_url}}"
[step.metrics]
util_avg = "out.series[0].value"

[[step]]
id = "util-range"
phase = "observe"
promql = "gpulab_test_gpu_util{gpu=\"0\"}"
prometheus = "{{prom_url}}"
range = "5s"
resolution = "1s"
[step.metrics]
util_p99 = "percentile(out.series[0].values, 99.0)"
util_samples = "size(out.series[0].values)"

[[step]]
id = "broken"
phase = "observe"
promql = "sum(gpulab_test_gpu_util"
prometheus = "{{prom_url}}"
[step.metrics]
never = "out.series[0].value"

[[criterion]]
id = "busy"
description = "the GPUs were busy on average"
expr = "metrics.util_avg > 50.0 && metrics.util_p99 == 87.0 && metrics.util_samples >= 3"
impact = "critical"

[[criterion]]
id = "needs-broken"
description = "reads the broken query"
expr = "metrics.never > 0.0"
impact = "minor"
`))
	if err != nil {
		t.Fatal(err)
	}
	_, e, ts, _ := e2eFleet(t, []testHost{{topo: "nvidia-smi-topo-m/hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt"}, {topo: "nvidia-smi-topo-m/hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt"}})
	rec := labs.Run(context.Background(), e, ts, l, labs.RunOptions{Params: map[string]string{"prom_url": base}})
	for _, h := range rec.Hosts {
		busy := score(h, "busy")
		if busy.Status != "PASS" || busy.Values["util_avg"] != 64.5 {
			t.Errorf("%s busy: %+v (metrics %v, errors %v)", h.Host, busy, h.Metrics, h.MetricErrors)
		}
		if s := score(h, "needs-broken"); s.Status != "UNKNOWN" || !strings.Contains(s.Summary, "bad_data") {
			t.Errorf("%s broken query: %+v", h.Host, s)
		}
	}
	st := rec.Hosts[0].Steps
	if len(st) < 3 || !strings.HasPrefix(st[0].Command, "PromQL avg(gpulab_test_gpu_util) @ "+base) || !strings.Contains(st[0].Stdout, `"status":"success"`) {
		t.Errorf("the query and Prometheus's answer are the evidence: %+v", st)
	}
	// Without the URL the steps are skipped, saying how to give it.
	rec = labs.Run(context.Background(), e, ts[:1], l, labs.RunOptions{})
	if s := score(rec.Hosts[0], "busy"); s.Status != "UNKNOWN" || !strings.Contains(s.Summary, "--set") {
		t.Errorf("no prometheus URL: %+v", s)
	}
}
