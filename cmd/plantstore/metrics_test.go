package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testmode"
)

// traffic sends one of each kind of answer the metrics label: created,
// conflict, bad request, unauthorized for each reason, unknown path and
// method not allowed, the creates inside the caller's trace tc.
func traffic(t *testing.T, s *testServer, tc traceContext, id int) {
	t.Helper()
	body := func(name string) []byte { return []byte(`{"id":` + strconv.Itoa(id) + `,"name":"` + name + `"}`) }
	for _, req := range []*http.Request{
		tracedCreate(t, s.API, tc, string(body("fern"))),
		tracedCreate(t, s.API, tc, string(body("moss"))),
		s.request(t, http.MethodPost, "/plants", testToken, "application/json", []byte(`[]`)),
		s.request(t, http.MethodPost, "/plants", "", "application/json", body("fern")),
		s.request(t, http.MethodPost, "/plants", "not-a-token", "application/json", body("fern")),
		s.request(t, http.MethodGet, "/no/such/path", testToken, "", nil),
		s.request(t, http.MethodPatch, "/plants", testToken, "", nil),
	} {
		s.do(t, req)
	}
}

// scrape reads the admin /metrics, in the Prometheus text format or, with
// openMetrics, in OpenMetrics (which carries exemplars).
func scrape(t *testing.T, s *testServer, openMetrics bool) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.Admin+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if openMetrics {
		req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics = %d, %v", resp.StatusCode, err)
	}
	return string(b)
}

func TestMetricsScrapePassesPromtool(t *testing.T) {
	promtool := requireProgram(t, "promtool", "apt-get install prometheus")
	rcv := startOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	s := startServer(t, testConfig(t))
	tc := newTraceContext(t)
	traffic(t, s, tc, 1)

	text := scrape(t, s, false)
	checkMetrics(t, promtool, text)
	for _, series := range []string{
		`http_server_request_duration_seconds_bucket{code="200",method="POST",route="/plants",le="0.0005"}`,
		`http_server_request_duration_seconds_count{code="409",method="POST",route="/plants"} 1`,
		`http_server_request_duration_seconds_count{code="404",method="GET",route="unmatched"} 1`,
		`http_server_request_duration_seconds_count{code="405",method="PATCH",route="/plants"} 1`,
		`http_server_active_requests 0`,
		`plantstore_plants_created_total 1`,
		`plantstore_auth_failures_total{reason="missing"} 1`,
		`plantstore_auth_failures_total{reason="invalid"} 1`,
		`plantstore_auth_failures_total{reason="scheme"} 0`,
		`plantstore_store_operation_duration_seconds_count{operation="create",result="ok",store="memory"} 1`,
		`plantstore_store_operation_duration_seconds_count{operation="create",result="conflict",store="memory"} 1`,
		`plantstore_build_info{goversion=`,
		`go_goroutines `,
		`process_cpu_seconds_total `,
	} {
		if !strings.Contains(text, "\n"+series) {
			t.Errorf("the scrape lacks %s", series)
		}
	}
	if om := scrape(t, s, true); !strings.Contains(om, `# {trace_id="`+tc.traceID+`"}`) {
		t.Errorf("the OpenMetrics scrape has no exemplar with the trace id %s", tc.traceID)
	}
}

// TestPrometheusScrapesTheService runs a real Prometheus server against the
// admin listener and asks it what an operator's dashboards and alerts ask.
func TestPrometheusScrapesTheService(t *testing.T) {
	testmode.SkipIfShort(t, "starts a Prometheus server and waits for its scrapes")
	promBin := requireProgram(t, "prometheus", "apt-get install prometheus")
	rcv := startOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	s := startServer(t, testConfig(t))
	prom := startPrometheus(t, promBin, strings.TrimPrefix(s.Admin, "http://"))

	eventually(t, 60*time.Second, `up{job="plantstore"} == 1`, func() bool {
		return len(prom.query(t, `up{job="plantstore"} == 1`)) == 1
	})
	// A rate needs the counter to grow between two scrapes: keep traffic
	// going until Prometheus sees it.
	tc := newTraceContext(t)
	id := 0
	eventually(t, 60*time.Second, "a positive request rate for /plants", func() bool {
		id++
		traffic(t, s, tc, id)
		v, ok := prom.scalar(t, `sum(rate(http_server_request_duration_seconds_count{job="plantstore",route="/plants"}[1m]))`)
		return ok && v > 0
	})
	eventually(t, 30*time.Second, "a number from histogram_quantile", func() bool {
		v, ok := prom.scalar(t, `histogram_quantile(0.99, sum by (le) (rate(http_server_request_duration_seconds_bucket[1m])))`)
		return ok && !math.IsNaN(v) && !math.IsInf(v, 0)
	})
	eventually(t, 30*time.Second, "an exemplar with a trace id we sent", func() bool {
		return prom.hasExemplar(t, "http_server_request_duration_seconds_bucket", tc.traceID)
	})

	// Clients choose paths; the series count must not follow them. The
	// traffic above already answered an unknown path, so its series exist.
	series := prom.seriesAfterNextScrape(t)
	const flood = 1000
	for i := range flood {
		path := fmt.Sprintf("/%x/%d/%x", rand.Uint64(), i, rand.Uint32())
		r := s.do(t, s.request(t, http.MethodGet, path, testToken, "", nil))
		if r.Status != http.StatusNotFound {
			t.Fatalf("GET %s = %d, want 404", path, r.Status)
		}
	}
	grown := prom.seriesAfterNextScrape(t)
	t.Logf("series of job plantstore: %v before %d requests to random paths, %v after", series, flood, grown)
	if grown-series > 5 {
		t.Errorf("%d requests to random paths grew the series from %v to %v; want at most a handful more", flood, series, grown)
	}
	if v, _ := prom.scalar(t, `sum(http_server_request_duration_seconds_count{job="plantstore",route="unmatched"})`); v < flood {
		t.Errorf("Prometheus counted %v requests to unknown paths, want at least %d", v, flood)
	}
}

// seriesAfterNextScrape waits for a scrape that starts after now and
// returns the number of series the job has then.
func (p *prometheus) seriesAfterNextScrape(t *testing.T) float64 {
	t.Helper()
	now := float64(time.Now().UnixMilli()) / 1000
	eventually(t, 30*time.Second, "the next scrape", func() bool {
		last, ok := p.scalar(t, `timestamp(up{job="plantstore"})`)
		return ok && last > now
	})
	n, ok := p.scalar(t, `count({job="plantstore"})`)
	if !ok {
		t.Fatal("no series for job plantstore")
	}
	return n
}

// prometheus is a Prometheus server started by a test.
type prometheus struct {
	url    string
	client *http.Client
}

// startPrometheus runs Prometheus with a generated configuration that
// scrapes target every second, its storage in a temporary directory, on a
// free loopback port, and stops it when the test ends.
func startPrometheus(t *testing.T, bin, target string) *prometheus {
	t.Helper()
	dir := t.TempDir()
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: plantstore
    static_configs:
      - targets: [%q]
`, target)
	configPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackAddr(t)
	var out syncBuffer
	cmd := exec.Command(bin,
		"--config.file="+configPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--enable-feature=exemplar-storage",
	)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("prometheus output:\n%s", out.String())
		}
	})
	p := &prometheus{url: "http://" + addr, client: &http.Client{Timeout: 5 * time.Second}}
	eventually(t, 60*time.Second, "prometheus to be ready", func() bool {
		select {
		case <-exited:
			t.Fatalf("prometheus exited:\n%s", out.String())
		default:
		}
		resp, err := p.client.Get(p.url + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return p
}

// freeLoopbackAddr returns a loopback address with a port free right now.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// api calls a Prometheus HTTP API endpoint and decodes its data into v.
func (p *prometheus) api(t *testing.T, path string, params url.Values, v any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+path+"?"+params.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		t.Fatalf("prometheus %s: %v", path, err)
	}
	defer resp.Body.Close()
	var envelope struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&envelope); err != nil {
		t.Fatalf("prometheus %s: %v", path, err)
	}
	if envelope.Status != "success" {
		t.Fatalf("prometheus %s %v: %s", path, params, envelope.Error)
	}
	if err := json.Unmarshal(envelope.Data, v); err != nil {
		t.Fatalf("prometheus %s: %v", path, err)
	}
}

type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// query runs an instant query and returns its vector.
func (p *prometheus) query(t *testing.T, q string) []sample {
	t.Helper()
	var data struct {
		ResultType string   `json:"resultType"`
		Result     []sample `json:"result"`
	}
	p.api(t, "/api/v1/query", url.Values{"query": {q}}, &data)
	if data.ResultType != "vector" {
		t.Fatalf("query %s: result type %s, want vector", q, data.ResultType)
	}
	return data.Result
}

// scalar runs a query that answers one sample and returns its value; ok is
// false when the vector is empty.
func (p *prometheus) scalar(t *testing.T, q string) (float64, bool) {
	t.Helper()
	result := p.query(t, q)
	if len(result) == 0 {
		return 0, false
	}
	if len(result) > 1 {
		t.Fatalf("query %s: %d samples, want one", q, len(result))
	}
	s, _ := result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("query %s: value %q: %v", q, s, err)
	}
	return v, true
}

// hasExemplar reports whether Prometheus stored an exemplar of metric in
// the last minutes carrying traceID.
func (p *prometheus) hasExemplar(t *testing.T, metric, traceID string) bool {
	t.Helper()
	now := time.Now()
	var data []struct {
		Exemplars []struct {
			Labels map[string]string `json:"labels"`
		} `json:"exemplars"`
	}
	p.api(t, "/api/v1/query_exemplars", url.Values{
		"query": {metric},
		"start": {strconv.FormatInt(now.Add(-5*time.Minute).Unix(), 10)},
		"end":   {strconv.FormatInt(now.Add(time.Minute).Unix(), 10)},
	}, &data)
	for _, series := range data {
		for _, e := range series.Exemplars {
			if e.Labels["trace_id"] == traceID {
				return true
			}
		}
	}
	return false
}

// checkMetrics fails the test unless promtool check metrics accepts text, a
// scrape, without a word: no error and no lint finding.
func checkMetrics(t *testing.T, promtool, text string) {
	t.Helper()
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}
