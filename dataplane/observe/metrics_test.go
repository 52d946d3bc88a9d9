package observe

import (
	"context"
	"errors"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/tunnelgate/tunnelgate/dataplane/cfaccess"
)

// fakeSource is a Source with fixed answers.
type fakeSource struct {
	counters Counters
	version  string
	rules    []*RuleStats
	clusters []Cluster
	streams  []StreamRoute
}

func (f *fakeSource) Counters() *Counters  { return &f.counters }
func (f *fakeSource) Inflight() int64      { return 3 }
func (f *fakeSource) BufferedBytes() int64 { return 8192 }
func (f *fakeSource) ConfigVersion() (string, bool) {
	return f.version, f.version != ""
}
func (f *fakeSource) Rules() []*RuleStats { return append([]*RuleStats(nil), f.rules...) }
func (f *fakeSource) Clusters() []Cluster { return append([]Cluster(nil), f.clusters...) }
func (f *fakeSource) StreamRoutes() []StreamRoute {
	return append([]StreamRoute(nil), f.streams...)
}

// scrape serves one /metrics request and returns each sample line's value
// by series, and the whole text.
func scrape(t *testing.T, src Source, opts MetricsOptions) (map[string]string, string) {
	t.Helper()
	h, err := NewMetricsHandler(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	series := map[string]string{}
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if i := strings.LastIndexByte(line, ' '); i > 0 && !strings.HasPrefix(line, "#") {
			series[line[:i]] = line[i+1:]
		}
	}
	return series, rec.Body.String()
}

// Each family reads its Source at scrape time, under the names, labels
// and types docs/metrics.md catalogues. A rule or cluster that has seen no
// request has no series yet.
func TestMetricsHandler(t *testing.T) {
	rule := &RuleStats{Route: "default/shop", Rule: "main"}
	for range 4 {
		rule.Respond(200, 2*time.Millisecond)
	}
	up := &UpstreamStats{}
	up.Result(503, false)
	up.Result(0, true)
	src := &fakeSource{
		version:  "v1",
		rules:    []*RuleStats{rule, {Route: "default/idle", Rule: "main"}},
		clusters: []Cluster{{Name: "b", Endpoints: 2, Inflight: 1, IdleConns: 3, OpenConns: 5, Upstream: up}, {Name: "a", Upstream: &UpstreamStats{}}},
	}
	c := &src.counters
	for n, v := range map[*atomic.Int64]int64{
		&c.Requests: 9, &c.NoRoute: 1, &c.ClientBadBodies: 2, &c.ClientGone: 6, &c.ClientUploadLimited: 7, &c.ClientBadPaths: 8,
		&c.MirrorsDropped: 5, &c.ConfigRejected: 1, &c.Access[cfaccess.ReasonNone]: 7, &c.Access[cfaccess.ReasonExpired]: 2,
	} {
		n.Store(v)
	}
	c.Status(404)
	series, text := scrape(t, src, MetricsOptions{})
	for k, want := range map[string]string{
		"tunnelgate_requests_total":                                                                      "9",
		`tunnelgate_responses_total{class="4xx"}`:                                                        "1",
		"tunnelgate_no_route_total":                                                                      "1",
		`tunnelgate_client_errors_total{reason="bad_body"}`:                                              "2",
		`tunnelgate_client_errors_total{reason="client_gone"}`:                                           "6",
		`tunnelgate_client_errors_total{reason="upload_share"}`:                                          "7",
		`tunnelgate_client_errors_total{reason="bad_path"}`:                                              "8",
		`tunnelgate_mirrors_total{result="dropped"}`:                                                     "5",
		`tunnelgate_config_loads_total{result="rejected"}`:                                               "1",
		`tunnelgate_cloudflare_access_requests_total{result="allowed"}`:                                  "7",
		`tunnelgate_cloudflare_access_requests_total{result="expired"}`:                                  "2",
		"tunnelgate_inflight_requests":                                                                   "3",
		"tunnelgate_body_buffers_bytes":                                                                  "8192",
		`tunnelgate_config_info{version="v1"}`:                                                           "1",
		"tunnelgate_ready":                                                                               "1",
		`tunnelgate_cluster_endpoints{cluster="b"}`:                                                      "2",
		`tunnelgate_cluster_inflight_requests{cluster="b"}`:                                              "1",
		`tunnelgate_access_log_lines_total{result="dropped"}`:                                            "0",
		`tunnelgate_trace_spans_total{result="exported"}`:                                                "0",
		`tunnelgate_route_requests_total{class="2xx",route="default/shop",rule="main"}`:                  "4",
		`tunnelgate_route_request_duration_seconds_bucket{route="default/shop",rule="main",le="0.0025"}`: "4",
		`tunnelgate_upstream_requests_total{cluster="b",result="5xx"}`:                                   "1",
		`tunnelgate_upstream_requests_total{cluster="b",result="timeout"}`:                               "1",
		`tunnelgate_upstream_connections{cluster="b",state="idle"}`:                                      "3",
		`tunnelgate_upstream_connections{cluster="b",state="active"}`:                                    "2",
	} {
		if got, ok := series[k]; !ok || got != want {
			t.Errorf("%s = %q (present %v), want %s", k, got, ok, want)
		}
	}
	for k := range series {
		if strings.Contains(k, `cluster="a"`) && strings.HasPrefix(k, "tunnelgate_upstream_") || strings.Contains(k, `route="default/idle"`) {
			t.Errorf("an idle rule or cluster has series: %s", k)
		}
	}
	for _, line := range []string{
		"# HELP tunnelgate_requests_total Requests received.",
		"# TYPE tunnelgate_cluster_inflight_requests gauge",
		"# TYPE tunnelgate_route_request_duration_seconds histogram",
		"# TYPE tunnelgate_upstream_connections gauge",
		// The standard runtime and process families (procmetrics).
		"# TYPE go_goroutines gauge",
		"# TYPE go_gc_duration_seconds summary",
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("scrape lacks %q", line)
		}
	}
	if runtime.GOOS == "linux" && !strings.Contains(text, "# TYPE process_resident_memory_bytes gauge\n") {
		t.Error("scrape lacks process_resident_memory_bytes")
	}
	for _, unwanted := range []string{"target_info", "otel_scope_"} {
		if strings.Contains(text, unwanted) {
			t.Errorf("scrape contains %q", unwanted)
		}
	}

	// Before a config: not ready, no version.
	series, _ = scrape(t, &fakeSource{}, MetricsOptions{})
	if series["tunnelgate_ready"] != "0" {
		t.Errorf("tunnelgate_ready %q before a config, want 0", series["tunnelgate_ready"])
	}
	for k := range series {
		if strings.HasPrefix(k, "tunnelgate_config_info") {
			t.Errorf("%s before a config", k)
		}
	}
}

// Register adds instruments to the same endpoint; its error fails the
// handler.
func TestMetricsRegister(t *testing.T) {
	series, _ := scrape(t, &fakeSource{}, MetricsOptions{Register: func(m metric.Meter) error {
		_, err := m.Int64ObservableGauge("tunnelgate.extra", metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(42)
			return nil
		}))
		return err
	}})
	if series["tunnelgate_extra"] != "42" {
		t.Errorf("tunnelgate_extra %q, want 42", series["tunnelgate_extra"])
	}
	boom := errors.New("boom")
	if _, err := NewMetricsHandler(&fakeSource{}, MetricsOptions{Register: func(metric.Meter) error { return boom }}); !errors.Is(err, boom) {
		t.Errorf("NewMetricsHandler: %v, want %v", err, boom)
	}
}
