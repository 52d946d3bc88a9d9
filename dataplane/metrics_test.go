package dataplane

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tunnelgate/tunnelgate/dataplane/observe"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/testmetrics"
)

// scrape is one /metrics answer: the text, and each sample's value by
// series ("name{labels}", labels sorted; testmetrics.Series).
type scrape struct {
	body   string
	series map[string]string
}

func parseScrape(t testing.TB, body string) scrape {
	return scrape{body: body, series: testmetrics.Series(t, body)}
}

// want fails unless series has value.
func (s scrape) want(t *testing.T, series, value string) {
	t.Helper()
	got, ok := s.series[series]
	if !ok {
		t.Errorf("no series %s in scrape:\n%s", series, s.body)
		return
	}
	if got != value {
		t.Errorf("%s = %s, want %s", series, got, value)
	}
}

// absent fails if any series line starts with prefix.
func (s scrape) absent(t *testing.T, prefix string) {
	t.Helper()
	for k := range s.series {
		if strings.HasPrefix(k, prefix) {
			t.Errorf("unexpected series %s in scrape:\n%s", k, s.body)
		}
	}
}

// adminGet GETs path on the admin listener and returns the status and body.
func (e *testEnv) adminGet(path string) (*http.Response, string) {
	e.t.Helper()
	req, _ := http.NewRequest("GET", "http://"+e.bound.Admin+path, nil)
	return e.do(e.client, req)
}

// scrapeMetrics GETs /metrics on the admin listener.
func (e *testEnv) scrapeMetrics() scrape {
	e.t.Helper()
	res, body := e.adminGet("/metrics")
	if res.StatusCode != http.StatusOK {
		e.t.Fatalf("/metrics: status %d: %s", res.StatusCode, body)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		e.t.Errorf("/metrics Content-Type %q, want text/plain", ct)
	}
	return parseScrape(e.t, body)
}

// waitMetric scrapes until series has value, failing after a few seconds.
func (e *testEnv) waitMetric(series, value string) scrape {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := e.scrapeMetrics()
		if s.series[series] == value || time.Now().After(deadline) {
			s.want(e.t, series, value)
			return s
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// With -metrics-detail=route, every family is served; the per-cluster
// gauges from the cluster's first request.
func TestAdminAndMetrics(t *testing.T) {
	e := newTestEnv(t, nil, func(o *Options) { o.MetricsDetail = observe.DetailRoute })

	// Before any config: alive, not ready, metrics say so.
	if res, body := e.adminGet("/healthz"); res.StatusCode != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", res.StatusCode, body)
	}
	if res, body := e.adminGet("/readyz"); res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/readyz before Load: %d %q, want 503", res.StatusCode, body)
	}
	if res, body := e.adminGet("/config"); res.StatusCode != 200 || body != "version: \n" {
		t.Errorf("/config before Load: %d %q", res.StatusCode, body)
	}
	s := e.scrapeMetrics()
	s.want(t, "tunnelgate_ready", "0")
	s.want(t, "tunnelgate_requests_total", "0")
	s.want(t, `tunnelgate_config_loads_total{result="ok"}`, "0")
	s.absent(t, "tunnelgate_config_info")
	s.absent(t, "tunnelgate_cluster_endpoints")
	s.absent(t, "tunnelgate_cluster_inflight_requests")

	fast := startBackend(t, echo("a"))
	entered, release := make(chan struct{}), make(chan struct{})
	slow := startBackend(t, func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		io.WriteString(w, "slow")
	})
	cfg := config([]proxycfg.Route{
		{Kind: proxycfg.KindHTTP, Name: "fast", Hostnames: []string{"app.example"}, Rules: []proxycfg.Rule{to("a")}},
		{Kind: proxycfg.KindHTTP, Name: "slow", Hostnames: []string{"slow.example"}, Rules: []proxycfg.Rule{to("b")}},
	}, cluster("a", fast), cluster("b", slow))
	cfg.Version = "v1"
	if err := e.p.Load(cfg); err != nil {
		t.Fatal(err)
	}
	if err := e.p.Load(&proxycfg.Config{Schema: "nonsense"}); err == nil {
		t.Fatal("a config with the wrong schema was accepted")
	}

	if res, body := e.adminGet("/readyz"); res.StatusCode != 200 || body != "ok\n" {
		t.Errorf("/readyz after Load: %d %q", res.StatusCode, body)
	}
	if res, body := e.adminGet("/config"); res.StatusCode != 200 ||
		!strings.HasPrefix(body, "version: v1\n") || !strings.Contains(body, "last rejected config: ") {
		t.Errorf("/config after a load and a rejection: %d %q", res.StatusCode, body)
	}

	if res, body := e.get("app.example", "/"); res.StatusCode != 200 {
		t.Fatalf("app.example: %d %s", res.StatusCode, body)
	}
	if res, body := e.get("nowhere.example", "/"); res.StatusCode != 404 {
		t.Fatalf("nowhere.example: %d %s, want 404", res.StatusCode, body)
	}

	// One request held by the slow backend shows as in flight on b.
	done := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("GET", e.url("/"), nil)
		req.Host = "slow.example"
		res, err := e.client.Do(req)
		if err != nil {
			done <- 0
			return
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		done <- res.StatusCode
	}()
	select {
	case <-entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the slow backend never got the request")
	}
	s = e.scrapeMetrics()
	s.want(t, `tunnelgate_cluster_inflight_requests{cluster="b"}`, "1")
	s.want(t, `tunnelgate_cluster_inflight_requests{cluster="a"}`, "0")
	close(release)
	if code := <-done; code != 200 {
		t.Fatalf("slow.example: status %d", code)
	}

	s = e.waitMetric(`tunnelgate_cluster_inflight_requests{cluster="b"}`, "0")
	for series, value := range map[string]string{
		"tunnelgate_requests_total":                         "3",
		`tunnelgate_responses_total{class="2xx"}`:           "2",
		`tunnelgate_responses_total{class="4xx"}`:           "1",
		`tunnelgate_responses_total{class="5xx"}`:           "0",
		`tunnelgate_responses_total{class="other"}`:         "0",
		"tunnelgate_no_route_total":                         "1",
		"tunnelgate_upstream_errors_total":                  "0",
		"tunnelgate_upstream_timeouts_total":                "0",
		"tunnelgate_retries_total":                          "0",
		`tunnelgate_mirrors_total{result="sent"}`:           "0",
		`tunnelgate_mirrors_total{result="dropped"}`:        "0",
		"tunnelgate_websockets_total":                       "0",
		`tunnelgate_config_loads_total{result="ok"}`:        "1",
		`tunnelgate_config_loads_total{result="rejected"}`:  "1",
		"tunnelgate_cluster_updates_total":                  "0",
		`tunnelgate_config_info{version="v1"}`:              "1",
		"tunnelgate_ready":                                  "1",
		`tunnelgate_cluster_endpoints{cluster="a"}`:         "1",
		`tunnelgate_cluster_endpoints{cluster="b"}`:         "1",
		`tunnelgate_cluster_inflight_requests{cluster="a"}`: "0",
		`tunnelgate_cluster_inflight_requests{cluster="b"}`: "0",
	} {
		s.want(t, series, value)
	}
	for _, line := range []string{
		"# TYPE tunnelgate_requests_total counter",
		"# TYPE tunnelgate_responses_total counter",
		"# TYPE tunnelgate_config_info gauge",
		"# TYPE tunnelgate_ready gauge",
		"# TYPE tunnelgate_cluster_endpoints gauge",
		"# TYPE tunnelgate_cluster_inflight_requests gauge",
	} {
		if !strings.Contains(s.body, line+"\n") {
			t.Errorf("scrape lacks %q", line)
		}
	}
	// No resource or scope decoration.
	for _, unwanted := range []string{"target_info", "otel_scope_"} {
		if strings.Contains(s.body, unwanted) {
			t.Errorf("scrape contains %q:\n%s", unwanted, s.body)
		}
	}

	// An endpoint update changes the count without a new config.
	if err := churn(e.p, cluster("a", fast, closedAddr(t))); err != nil {
		t.Fatal(err)
	}
	s = e.scrapeMetrics()
	s.want(t, `tunnelgate_cluster_endpoints{cluster="a"}`, "2")
	s.want(t, "tunnelgate_cluster_updates_total", "1")

	// A new config replaces the version and drops the removed cluster.
	cfg = config([]proxycfg.Route{{Kind: proxycfg.KindHTTP, Name: "fast", Hostnames: []string{"app.example"}, Rules: []proxycfg.Rule{to("a")}}}, cluster("a", fast))
	cfg.Version = "v2"
	if err := e.p.Load(cfg); err != nil {
		t.Fatal(err)
	}
	s = e.scrapeMetrics()
	s.want(t, `tunnelgate_config_info{version="v2"}`, "1")
	s.absent(t, `tunnelgate_config_info{version="v1"}`)
	s.want(t, `tunnelgate_cluster_endpoints{cluster="a"}`, "1")
	s.absent(t, `tunnelgate_cluster_endpoints{cluster="b"}`)
	s.absent(t, `tunnelgate_cluster_inflight_requests{cluster="b"}`)
	s.want(t, `tunnelgate_config_loads_total{result="ok"}`, "2")
}

// Each proxy's metrics are its own, and nothing lands in the global
// Prometheus registry.
func TestMetricsArePerProxy(t *testing.T) {
	quiet := Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	p1, p2 := New(quiet), New(quiet)
	p1.stats.Requests.Add(5)
	p2.stats.Requests.Add(7)
	for _, tc := range []struct {
		p    *Proxy
		want string
	}{{p1, "5"}, {p2, "7"}} {
		h := tc.p.AdminHandler()
		for range 2 { // the second scrape uses the already built registry
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			if rec.Code != 200 {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			parseScrape(t, rec.Body.String()).want(t, "tunnelgate_requests_total", tc.want)
		}
	}
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), "tunnelgate_") {
			t.Errorf("%s registered globally", mf.GetName())
		}
	}
}

// BenchmarkMetricsScrape serves the admin listener's /metrics of a proxy
// that has counted: the counters read through metricSource, and every
// family built into text.
func BenchmarkMetricsScrape(b *testing.B) {
	p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	p.Stats().Requests.Add(3)
	h := p.metricsEndpoint()
	req := httptest.NewRequest("GET", "/metrics", nil)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d", rec.Code)
		}
	}
}
