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
	"github.com/tunnelgate/tunnelgate/test/testmetrics"
)

// fakeSource is a Source with fixed answers.
type fakeSource struct {
	counters Counters
	version  string
	rules    []*RuleStats
	clusters []Cluster
	streams  []StreamRoute
	listens  []*ListenerStats
}

func (f *fakeSource) Counters() *Counters  { return &f.counters }
func (f *fakeSource) Inflight() int64      { return 3 }
func (f *fakeSource) BufferedBytes() int64 { return 8192 }
func (f *fakeSource) ConfigVersion() (string, bool) {
	return f.version, f.version != ""
}
func (f *fakeSource) Rules(into []*RuleStats) []*RuleStats { return append(into, f.rules...) }
func (f *fakeSource) Clusters(into []Cluster) []Cluster    { return append(into, f.clusters...) }
func (f *fakeSource) PoolConnections() (idle, open int) {
	for _, c := range f.clusters { // no endpoint shared here
		idle += c.IdleConns
		open += c.OpenConns
	}
	return idle, open
}
func (f *fakeSource) Listeners() []*ListenerStats {
	return append([]*ListenerStats(nil), f.listens...)
}
func (f *fakeSource) StreamRoutes() []StreamRoute {
	return append([]StreamRoute(nil), f.streams...)
}

// scrape serves one /metrics request and returns each sample's value by
// series, as testmetrics.Series reads them, and the whole text.
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
	if ct := rec.Header().Get("Content-Type"); ct != textContentType {
		t.Errorf("Content-Type %q, want %q", ct, textContentType)
	}
	return testmetrics.Series(t, rec.Body.String()), rec.Body.String()
}

// Each family reads its Source at scrape time, under the names, labels
// and types docs/metrics.md catalogues. A rule or cluster that has seen no
// request has no series yet, and of its counters only those not zero are
// served. The latency of each rule and cluster, and each cluster's
// in-flight requests and connections, are served with DetailRoute only.
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
		listens:  []*ListenerStats{{Listener: "gw/http"}, {Listener: "gw/idle"}, {}},
	}
	src.listens[0].Observe(2 * time.Millisecond)
	src.listens[0].Observe(time.Second)
	src.listens[2].Observe(time.Millisecond)
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
		"tunnelgate_requests_total":                                                           "9",
		`tunnelgate_responses_total{class="4xx"}`:                                             "1",
		"tunnelgate_no_route_total":                                                           "1",
		`tunnelgate_client_errors_total{reason="bad_body"}`:                                   "2",
		`tunnelgate_client_errors_total{reason="client_gone"}`:                                "6",
		`tunnelgate_client_errors_total{reason="upload_share"}`:                               "7",
		`tunnelgate_client_errors_total{reason="bad_path"}`:                                   "8",
		`tunnelgate_mirrors_total{result="dropped"}`:                                          "5",
		`tunnelgate_config_loads_total{result="rejected"}`:                                    "1",
		`tunnelgate_cloudflare_access_requests_total{result="allowed"}`:                       "7",
		`tunnelgate_cloudflare_access_requests_total{result="expired"}`:                       "2",
		"tunnelgate_inflight_requests":                                                        "3",
		"tunnelgate_body_buffers_bytes":                                                       "8192",
		`tunnelgate_config_info{version="v1"}`:                                                "1",
		"tunnelgate_ready":                                                                    "1",
		`tunnelgate_cluster_endpoints{cluster="a"}`:                                           "0",
		`tunnelgate_access_log_lines_total{result="dropped"}`:                                 "0",
		`tunnelgate_trace_spans_total{result="exported"}`:                                     "0",
		`tunnelgate_route_requests_total{class="2xx",route="default/shop",rule="main"}`:       "4",
		`tunnelgate_upstream_requests_total{cluster="b",result="5xx"}`:                        "1",
		`tunnelgate_upstream_requests_total{cluster="b",result="timeout"}`:                    "1",
		`tunnelgate_upstream_pool_connections{state="idle"}`:                                  "3",
		`tunnelgate_upstream_pool_connections{state="active"}`:                                "2",
		`tunnelgate_listener_request_duration_seconds_bucket{listener="gw/http",le="0.0025"}`: "1",
		`tunnelgate_listener_request_duration_seconds_bucket{listener="gw/http",le="1"}`:      "2",
		`tunnelgate_listener_request_duration_seconds_count{listener="gw/http"}`:              "2",
		`tunnelgate_listener_request_duration_seconds_sum{listener="gw/http"}`:                "1.002",
		`tunnelgate_listener_request_duration_seconds_count{listener=""}`:                     "1",
	} {
		if got, ok := series[k]; !ok || got != want {
			t.Errorf("%s = %q (present %v), want %s", k, got, ok, want)
		}
	}
	routeLevel := map[string]string{
		`tunnelgate_cluster_endpoints{cluster="b"}`:                                                      "2",
		`tunnelgate_cluster_inflight_requests{cluster="b"}`:                                              "1",
		`tunnelgate_route_request_duration_seconds_bucket{route="default/shop",rule="main",le="0.0025"}`: "4",
		`tunnelgate_route_request_duration_seconds_count{route="default/shop",rule="main"}`:              "4",
		`tunnelgate_upstream_response_seconds_count{cluster="b"}`:                                        "0",
		`tunnelgate_upstream_connections{cluster="b",state="idle"}`:                                      "3",
		`tunnelgate_upstream_connections{cluster="b",state="active"}`:                                    "2",
	}
	for k := range series {
		switch {
		case strings.Contains(k, `cluster="a"`) && strings.HasPrefix(k, "tunnelgate_upstream_") || strings.Contains(k, `route="default/idle"`) || strings.Contains(k, `listener="gw/idle"`):
			t.Errorf("an idle rule, cluster or listener has series: %s", k)
		case (strings.HasPrefix(k, "tunnelgate_route_requests_total") || strings.HasPrefix(k, "tunnelgate_upstream_requests_total")) && series[k] == "0":
			t.Errorf("a zero count of a rule or cluster is served: %s", k)
		}
		if _, ok := routeLevel[k]; ok {
			t.Errorf("%s is served by default", k)
		}
	}
	detailed, _ := scrape(t, src, MetricsOptions{Detail: DetailRoute})
	for k, want := range routeLevel {
		if got, ok := detailed[k]; !ok || got != want {
			t.Errorf("with DetailRoute, %s = %q (present %v), want %s", k, got, ok, want)
		}
	}
	for k := range detailed {
		if _, ok := series[k]; !ok && routeLevel[k] == "" && !strings.HasPrefix(k, "tunnelgate_route_request_duration_seconds") &&
			!strings.HasPrefix(k, "tunnelgate_upstream_response_seconds") && !strings.HasPrefix(k, "go_") && !strings.HasPrefix(k, "process_") {
			t.Errorf("with DetailRoute, %s is served, which neither the default nor the route families have", k)
		}
	}
	for _, line := range []string{
		"# HELP tunnelgate_requests_total Requests received.",
		"# TYPE tunnelgate_listener_request_duration_seconds histogram",
		"# TYPE tunnelgate_upstream_pool_connections gauge",
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
