package labs

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gpulab/gpulab/internal/fileio"
	"github.com/gpulab/gpulab/internal/redirect"
	"github.com/gpulab/gpulab/internal/text"
	"github.com/gpulab/gpulab/internal/visible"
)

// PromResult is a PromQL answer as lab expressions read it (`out`):
// series with their labels and either one value (instant query) or the
// values over the range (range query), times in Unix seconds.
type PromResult struct {
	ResultType string       `json:"result_type"`
	Series     []PromSeries `json:"series"`
}

// PromSeries is one series of a PromQL answer.
type PromSeries struct {
	Metric map[string]string `json:"metric"`
	Value  *float64          `json:"value,omitempty"`
	Values []float64         `json:"values,omitempty"`
	Times  []float64         `json:"times,omitempty"`
}

// maxPromAnswer is the most of an answer gpulab reads: 11,000 points of a
// few hundred series, with room.
const maxPromAnswer = 16 << 20

// queryPrometheus runs query against the Prometheus HTTP API at base: an
// instant query at now, or, when rng > 0, a range query over [now-rng,
// now] every res. evidence is what was read from the answer (the parsed
// result as JSON), never the raw body: a record is meant to be shared,
// and an answer can hold anything. A redirect to another host is refused.
func queryPrometheus(ctx context.Context, base, query string, rng, res time.Duration, now time.Time) (*PromResult, string, error) {
	out, err := askPrometheus(ctx, base, query, rng, res, now)
	if err != nil {
		return nil, "", err
	}
	ev, err := json.Marshal(out)
	if err != nil {
		return nil, "", err
	}
	return out, string(ev), nil
}

func askPrometheus(ctx context.Context, base, query string, rng, res time.Duration, now time.Time) (*PromResult, error) {
	req, err := promRequest(ctx, base, query, rng, res, now)
	if err != nil {
		return nil, err
	}
	client := &http.Client{Timeout: 30 * time.Second, CheckRedirect: redirect.SameHost("prometheus", "gpulab follows no redirect away from the Prometheus it was given")}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := fileio.ReadAll(resp.Body, maxPromAnswer)
	if err != nil {
		return nil, fmt.Errorf("prometheus answer: %w", err)
	}
	var ans struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
		Data      struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		return nil, fmt.Errorf("HTTP %d, not a Prometheus API answer (%s, %d bytes; not kept)", resp.StatusCode, visible.String(text.Cut(resp.Header.Get("Content-Type"), 80)), len(body))
	}
	if ans.Status != "success" {
		return nil, fmt.Errorf("prometheus: %s: %s", visible.String(text.Cut(ans.ErrorType, 80)), visible.String(text.Cut(ans.Error, 500)))
	}
	return promResult(ans.Data.ResultType, ans.Data.Result)
}

// promRequest is the HTTP API request for query: instant at now, or over
// [now-rng, now] every res (rng/60, at least a second, when res is 0).
func promRequest(ctx context.Context, base, query string, rng, res time.Duration, now time.Time) (*http.Request, error) {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("prometheus URL %q: want http://host:port", base)
	}
	v := url.Values{"query": {query}}
	if rng > 0 {
		if res <= 0 {
			res = max(rng/60, time.Second)
		}
		u.Path += "/api/v1/query_range"
		v.Set("start", strconv.FormatFloat(float64(now.Add(-rng).UnixMilli())/1000, 'f', 3, 64))
		v.Set("end", strconv.FormatFloat(float64(now.UnixMilli())/1000, 'f', 3, 64))
		v.Set("step", strconv.FormatFloat(res.Seconds(), 'f', -1, 64))
	} else {
		u.Path += "/api/v1/query"
		v.Set("time", strconv.FormatFloat(float64(now.UnixMilli())/1000, 'f', 3, 64))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(v.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req, nil
}

// promResult reads an answer's data.result of the given resultType.
func promResult(resultType string, result json.RawMessage) (*PromResult, error) {
	out := &PromResult{ResultType: resultType, Series: []PromSeries{}}
	switch resultType {
	case "vector", "matrix":
		var series []struct {
			Metric map[string]string `json:"metric"`
			Value  []any             `json:"value"`
			Values [][]any           `json:"values"`
		}
		if err := json.Unmarshal(result, &series); err != nil {
			return nil, err
		}
		for _, s := range series {
			ps := PromSeries{Metric: s.Metric}
			if s.Value != nil {
				_, f, err := promSample(s.Value)
				if err != nil {
					return nil, err
				}
				ps.Value = &f
			}
			for _, p := range s.Values {
				t, f, err := promSample(p)
				if err != nil {
					return nil, err
				}
				ps.Times, ps.Values = append(ps.Times, t), append(ps.Values, f)
			}
			out.Series = append(out.Series, ps)
		}
	case "scalar":
		var p []any
		if err := json.Unmarshal(result, &p); err != nil {
			return nil, err
		}
		_, f, err := promSample(p)
		if err != nil {
			return nil, err
		}
		out.Series = append(out.Series, PromSeries{Metric: map[string]string{}, Value: &f})
	default:
		return nil, fmt.Errorf("prometheus answered a %q, which labs do not read", resultType)
	}
	return out, nil
}

// promSample reads [unix_time, "value"].
func promSample(p []any) (float64, float64, error) {
	if len(p) != 2 {
		return 0, 0, fmt.Errorf("a sample of %d fields", len(p))
	}
	t, _ := p[0].(float64)
	s, _ := p[1].(string)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("sample value %q: %v", s, err)
	}
	return t, f, nil
}
