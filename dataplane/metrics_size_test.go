// This file implements the test of what one scrape weighs per route.

package dataplane

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/dataplane/observe"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/testmetrics"
)

// scrapeBytesPerRoute is what one scrape may weigh per route at the
// default detail, once every route has had a request: about 2 MB at
// 5,000 routes, the go_*, process_* and proxy-wide families included.
const scrapeBytesPerRoute = 400

// manyRoutes is a config of routes HTTPRoutes shaped as bench/memory's
// Cluster translates (its names included): routes over routes/10
// hostnames on one listener, each one rule with two matches (a path with
// a header, the same path alone), a request header filter, and two
// backends weighted 90/10, each a cluster of two endpoints, here addrs.
// hostPath is the Host and path a request to route r is sent with.
func manyRoutes(routes int, addrs [2]string) (cfg *proxycfg.Config, hostPath func(r int) (string, string)) {
	hosts := max(routes/10, 1)
	cfg = &proxycfg.Config{Schema: proxycfg.SchemaVersion, Version: "many",
		Listeners: []proxycfg.Listener{{Name: "infra/gw/http", Port: 80, Protocol: proxycfg.ListenerHTTP}}}
	for r := range routes {
		ns, name := fmt.Sprintf("team-%d", r%50), fmt.Sprintf("app-%d", r)
		path := fmt.Sprintf("/svc-%d", r/hosts)
		var backends []proxycfg.BackendRef
		for i, svc := range []string{name + "-stable", name + "-canary"} {
			cl := fmt.Sprintf("%s/%s:80", ns, svc)
			backends = append(backends, proxycfg.BackendRef{Cluster: cl, Weight: [2]int{90, 10}[i]})
			cfg.Clusters = append(cfg.Clusters, proxycfg.Cluster{Name: cl, Protocol: proxycfg.ProtoHTTP1,
				Endpoints: []proxycfg.Endpoint{{Address: addrs[0]}, {Address: addrs[1]}}})
		}
		prefix := &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: path}
		cfg.Routes = append(cfg.Routes, proxycfg.Route{Kind: proxycfg.KindHTTP, Namespace: ns, Name: name,
			Listeners: []string{"infra/gw/http"}, Hostnames: []string{fmt.Sprintf("host-%d.example.com", r%hosts)},
			Rules: []proxycfg.Rule{{
				Matches: []proxycfg.Match{
					{Path: prefix, Headers: []proxycfg.ValueMatch{{Type: proxycfg.MatchExact, Name: "x-canary", Value: "1"}}},
					{Path: prefix},
				},
				Filters: []proxycfg.Filter{{Type: proxycfg.FilterRequestHeaderModifier,
					RequestHeaderModifier: &proxycfg.HeaderModifier{Set: []proxycfg.Header{{Name: "X-Team", Value: ns}}}}},
				Backends: backends,
			}}})
	}
	return cfg, func(r int) (string, string) {
		return fmt.Sprintf("host-%d.example.com", r%hosts), fmt.Sprintf("/svc-%d", r/hosts)
	}
}

// One scrape of a proxy whose every route has had a request weighs at
// most scrapeBytesPerRoute per route by default, and serves each route's
// requests and each cluster's attempts: the size grows with the routes,
// not with the series every route could have.
func TestScrapeBytesPerRoute(t *testing.T) {
	const routes = 500
	addrs := [2]string{startBackend(t, echo("a")), startBackend(t, echo("b"))}
	cfg, hostPath := manyRoutes(routes, addrs)
	for _, detail := range []observe.Detail{observe.DetailListener, observe.DetailRoute} {
		t.Run(detail.String(), func(t *testing.T) {
			e := newTestEnv(t, cfg, func(o *Options) { o.MetricsDetail = detail })
			for r := range routes {
				host, path := hostPath(r)
				if res, body := e.get(host, path); res.StatusCode != http.StatusOK {
					t.Fatalf("route %d (%s%s): %d %s", r, host, path, res.StatusCode, body)
				}
			}
			res, body := e.adminGet("/metrics")
			if res.StatusCode != http.StatusOK {
				t.Fatalf("/metrics: %d", res.StatusCode)
			}
			series := testmetrics.Series(t, body)
			var routeSeries, clusterAttempts int
			for k, v := range series {
				switch {
				case strings.HasPrefix(k, "tunnelgate_route_requests_total{"):
					routeSeries++
					if v != "1" {
						t.Errorf("%s = %s, want 1", k, v)
					}
				case strings.HasPrefix(k, "tunnelgate_upstream_requests_total{"):
					clusterAttempts++
				}
			}
			if routeSeries != routes || clusterAttempts < routes || clusterAttempts > 2*routes {
				t.Errorf("%d route series and %d cluster series for %d routes, each with a request", routeSeries, clusterAttempts, routes)
			}
			perRoute := len(body) / routes
			t.Logf("%s: %d bytes, %d per route, %d series", detail, len(body), perRoute, len(series))
			if detail == observe.DetailListener && perRoute > scrapeBytesPerRoute {
				t.Errorf("a scrape weighs %d bytes for %d routes, %d per route; at most %d by default", len(body), routes, perRoute, scrapeBytesPerRoute)
			}
		})
	}
}

// BenchmarkScrapeManyRoutes serves /metrics of a proxy of 5,000 routes
// shaped as manyRoutes, every route with a request: what one scrape
// costs the proxy in time and in garbage, at each detail.
func BenchmarkScrapeManyRoutes(b *testing.B) {
	const routes = 5000
	addrs := [2]string{startBackendB(b), startBackendB(b)}
	cfg, hostPath := manyRoutes(routes, addrs)
	for _, detail := range []observe.Detail{observe.DetailListener, observe.DetailRoute} {
		b.Run(detail.String(), func(b *testing.B) {
			p := New(Options{Log: slog.New(slog.DiscardHandler), MetricsDetail: detail})
			if err := p.Load(cfg); err != nil {
				b.Fatal(err)
			}
			h := p.Handler(0, false)
			for r := range routes {
				host, path := hostPath(r)
				req := httptest.NewRequest("GET", path, nil)
				req.Host = host
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("route %d: %d", r, rec.Code)
				}
			}
			m := p.metricsEndpoint()
			req := httptest.NewRequest("GET", "/metrics", nil)
			b.ReportAllocs()
			w := &countingWriter{header: http.Header{}}
			for b.Loop() {
				w.n = 0
				m.ServeHTTP(w, req)
			}
			b.ReportMetric(float64(w.n), "scrape-bytes")
			// The size per route, which BENCHMARKS.md gates (as
			// TestScrapeBytesPerRoute does at fewer routes).
			b.ReportMetric(float64(w.n)/routes, "bytes/route")
		})
	}
}

// startBackendB serves echo on loopback until b ends.
func startBackendB(b *testing.B) string {
	srv := httptest.NewServer(echo("ok"))
	b.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// countingWriter is a ResponseWriter that counts the bytes of the body
// and keeps none.
type countingWriter struct {
	header http.Header
	n      int
}

func (w *countingWriter) Header() http.Header { return w.header }
func (w *countingWriter) WriteHeader(int)     {}
func (w *countingWriter) Write(b []byte) (int, error) {
	w.n += len(b)
	return len(b), nil
}
