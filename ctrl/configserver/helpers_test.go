package configserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/tunnelgate/tunnelgate/dataplane/configwatch"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

const testToken = "s3cret-token"

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// scaleConfig is a config of the shape translate produces for the
// benchmark cluster in ctrl/translate/bench_test.go: routes HTTPRoutes
// over 50 wildcard listeners, two rules each (a path-and-header match
// and a default), one three-endpoint cluster per route.
func scaleConfig(routes int) *proxycfg.Config {
	cfg := &proxycfg.Config{Schema: proxycfg.SchemaVersion, SessionKeys: [][]byte{[]byte("0123456789abcdef0123456789abcdef")}}
	const gateways = 50
	for g := range gateways {
		cfg.Listeners = append(cfg.Listeners, proxycfg.Listener{
			Name: fmt.Sprintf("infra/gw-%d/http", g), Hostname: fmt.Sprintf("*.g%d.example.com", g), Port: 80, Protocol: proxycfg.ListenerHTTP,
		})
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for r := range routes {
		ns, name := fmt.Sprintf("team-%d", r%100), fmt.Sprintf("app-%d", r)
		cl := fmt.Sprintf("%s/%s:80", ns, name)
		backends := []proxycfg.BackendRef{{Cluster: cl, Weight: 1}}
		cfg.Routes = append(cfg.Routes, proxycfg.Route{
			Kind: proxycfg.KindHTTP, Namespace: ns, Name: name, Created: base.Add(time.Duration(r) * time.Second),
			Listeners: []string{cfg.Listeners[r%gateways].Name},
			Hostnames: []string{fmt.Sprintf("app-%d.g%d.example.com", r, r%gateways)},
			Rules: []proxycfg.Rule{
				{Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/api"},
					Headers: []proxycfg.ValueMatch{{Type: proxycfg.MatchExact, Name: "x-canary", Value: "1"}}}}, Backends: backends},
				{Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/"}}}, Backends: backends},
			},
		})
		c := proxycfg.Cluster{Name: cl, Protocol: proxycfg.ProtoHTTP1}
		for e := range 3 {
			c.Endpoints = append(c.Endpoints, proxycfg.Endpoint{Address: fmt.Sprintf("10.%d.%d.%d:8080", 1+r/65000, (r/250)%256, 1+e+(r%250))})
		}
		cfg.Clusters = append(cfg.Clusters, c)
	}
	return cfg
}

// withEndpoint returns cfg with cluster i's endpoints replaced, the way
// translate's patch does it: a new Clusters slice, everything else
// (Listeners, Routes) shared.
func withEndpoint(cfg *proxycfg.Config, i int, addr string) *proxycfg.Config {
	next := *cfg
	next.Clusters = append([]proxycfg.Cluster(nil), cfg.Clusters...)
	next.Clusters[i].Endpoints = []proxycfg.Endpoint{{Address: addr}}
	return &next
}

// testServer is a Server on a loopback socket.
type testServer struct {
	*Server
	url    string // base URL, without Path
	reader *sdkmetric.ManualReader
	// stop ends Serve and returns its error; the test's cleanup calls it
	// when the test did not.
	stop func() error
}

func startServer(t *testing.T, opts Options) *testServer {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	opts.Meter = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test")
	if opts.Log == nil {
		opts.Log = quietLog()
	}
	s := New(opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln, nil) }()
	stop := sync.OnceValue(func() error {
		cancel()
		return <-done
	})
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &testServer{Server: s, url: "http://" + ln.Addr().String(), reader: reader, stop: stop}
}

// get asks for the config as a proxy would, without gzip.
func (ts *testServer) get(t *testing.T, query string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", ts.url+configwatch.Path+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Accept-Encoding", "identity")
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, body
}

// metric returns the value of an int64 sum (counter or up-down counter)
// with the given attributes, or -1 when there is none.
func (ts *testServer) metric(t *testing.T, name string, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := ts.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	want := attribute.NewSet(attrs...)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, dp := range sum.DataPoints {
					if dp.Attributes.Equals(&want) {
						return dp.Value
					}
				}
			}
		}
	}
	return -1
}

// waitFor polls cond until it holds, failing the test after 10 s: a bound
// on behaviour, never a measure of speed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// smallConfig is a config with one route to one cluster at addr.
func smallConfig(addr string) *proxycfg.Config {
	return &proxycfg.Config{
		Schema:    proxycfg.SchemaVersion,
		Listeners: []proxycfg.Listener{{Protocol: proxycfg.ListenerHTTP, Name: "l"}},
		Routes: []proxycfg.Route{{Kind: proxycfg.KindHTTP, Namespace: "n", Name: "r", Created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
			Listeners: []string{"l"}, Rules: []proxycfg.Rule{{Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/"}}}, Backends: []proxycfg.BackendRef{{Cluster: "c", Weight: 1}}}}}},
		Clusters: []proxycfg.Cluster{{Protocol: proxycfg.ProtoHTTP1, Name: "c", Endpoints: []proxycfg.Endpoint{{Address: addr}}}},
	}
}
