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
	if len(st) < 3 || !strings.HasPrefix(st[0].Command, "PromQL avg(gpulab_test_gpu_util) @ "+base) || !strings.Contains(st[0].Stdout, `{"result_type":"vector","series":[{"metric":{},"value":64.5}]}`) {
		t.Errorf("the query and what was read from Prometheus's answer are the evidence: %+v", st)
	}
	// Without the URL the steps are skipped, saying how to give it.
	rec = labs.Run(context.Background(), e, ts[:1], l, labs.RunOptions{})
	if s := score(rec.Hosts[0], "busy"); s.Status != "UNKNOWN" || !strings.Contains(s.Summary, "--set") {
		t.Errorf("no prometheus URL: %+v", s)
	}
}

// A lab file cannot make the operator's machine fetch a URL of its
// choosing: a literal prometheus URL, or a parameter with a default, is
// refused by lab check; a Prometheus that redirects to another host is
// refused; and what a server answers is never stored raw (the record is
// meant to be shared).
func TestPrometheusStaysWhereTheOperatorSaid(t *testing.T) {
	const secret = "INTERNAL-SECRET-TOKEN=4f1d9a"
	lab := func(param, prometheus string) string {
		return `id = "prom"
name = "p"
goal = "p"
plane = "workload"
maturity = "draft"
estimate_minutes = 1

[[param]]
name = "prom_url"
type = "url"
` + param + `

[[step]]
id = "util"
phase = "observe"
promql = "up"
prometheus = "` + prometheus + `"
[step.metrics]
up = "out.series[0].value"

[[criterion]]
id = "up"
description = "up"
expr = "metrics.up == 1.0"
impact = "critical"
`
	}
	for _, c := range []struct{ param, prometheus, want string }{
		{"", "http://169.254.169.254/latest/meta-data", `prom.toml:17:1: step "util": prometheus = "http://169.254.169.254/latest/meta-data": a lab file does not choose where gpulab queries Prometheus`},
		{"", "{{prom_url}}/api", `a lab file does not choose where gpulab queries Prometheus`},
		{`default = "http://10.0.0.1:9090"`, "{{prom_url}}", `[[param]] prom_url has a default (http://10.0.0.1:9090): where gpulab queries Prometheus is the operator's choice (--set prom_url=URL)`},
	} {
		if _, err := labs.Parse("prom.toml", []byte(lab(c.param, c.prometheus))); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("prometheus = %q (%s): %v, want %q", c.prometheus, c.param, err, c.want)
		}
	}
	l, err := labs.Parse("prom.toml", []byte(lab("", "{{prom_url}}")))
	if err != nil {
		t.Fatal(err)
	}
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, secret)
	}))
	t.Cleanup(internal.Close)
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, internal.URL+"/metadata", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirecting.Close)
	_, e, ts, _ := e2eFleet(t, []testHost{{topo: "nvidia-smi-topo-m/hgx-a100-8gpu-nv12-mlx5_0-8numa-nps4.txt"}})
	for _, c := range []struct{ url, problem string }{
		{redirecting.URL, "redirected to " + internal.URL + ", another host: refused"},
		{internal.URL, "HTTP 200, not a Prometheus API answer (text/plain; charset=utf-8, 29 bytes; not kept)"},
	} {
		rec := labs.Run(context.Background(), e, ts, l, labs.RunOptions{Params: map[string]string{"prom_url": c.url}})
		if s := score(rec.Hosts[0], "up"); s.Status != "UNKNOWN" {
			t.Errorf("%s: the criterion is %s, want UNKNOWN", c.url, s.Status)
		}
		if st := rec.Hosts[0].Steps; len(st) == 0 || !strings.Contains(st[len(st)-1].Problem, c.problem) {
			t.Errorf("%s: the step's problem does not say %q: %+v", c.url, c.problem, st)
		}
		dir := t.TempDir()
		if err := rec.Write(dir, ""); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"record.json", "record.md", "junit.xml"} {
			if data, _ := os.ReadFile(filepath.Join(dir, f)); strings.Contains(string(data), secret) {
				t.Errorf("%s: %s holds what the server answered (%s)", c.url, f, secret)
			}
		}
	}
}
