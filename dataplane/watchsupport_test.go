package dataplane

import (
	"context"
	"io"
	"log/slog"
	"reflect"
	"testing"

	"go.opentelemetry.io/otel/metric"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// What the config watch client (dataplane/configwatch) needs from a Proxy
// beyond Load and UpdateCluster: the served cluster definitions, a new
// version name after a clusters-only change, and its own metrics on the
// admin listener.

func TestClustersReportsServedDefinitions(t *testing.T) {
	p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if got := p.Clusters(); len(got) != 0 {
		t.Fatalf("Clusters before Load = %v", got)
	}
	cfg := config([]proxycfg.Route{route("r", to("a"))}, cluster("a", "127.0.0.1:1"), cluster("b", "127.0.0.1:2"))
	mustLoad(t, p, cfg)
	got := p.Clusters()
	if len(got) != 2 || !reflect.DeepEqual(got["a"], cfg.Clusters[0]) || !reflect.DeepEqual(got["b"], cfg.Clusters[1]) {
		t.Fatalf("Clusters after Load = %+v", got)
	}
	// The map is the caller's: changing it changes nothing served.
	delete(got, "a")
	if _, ok := p.Clusters()["a"]; !ok {
		t.Fatal("deleting from the returned map removed a served cluster")
	}

	if err := p.UpdateCluster(cluster("a", "127.0.0.1:3", "127.0.0.1:4")); err != nil {
		t.Fatal(err)
	}
	if eps := p.Clusters()["a"].Endpoints; len(eps) != 2 || eps[0].Address != "127.0.0.1:3" {
		t.Fatalf("Clusters after UpdateCluster: a has %+v", eps)
	}
	// A rejected config changes nothing.
	if err := p.Load(config([]proxycfg.Route{route("r", to("missing"))})); err == nil {
		t.Fatal("bad config accepted")
	}
	if got := p.Clusters(); len(got) != 2 {
		t.Fatalf("Clusters after a rejected Load = %+v", got)
	}
}

func TestSetVersionRenamesWithoutRecompiling(t *testing.T) {
	p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	p.SetVersion("early")
	if p.Ready() || p.Version() != "" {
		t.Fatalf("SetVersion before Load: ready %v, version %q", p.Ready(), p.Version())
	}
	cfg := config([]proxycfg.Route{route("r", to("a"))}, cluster("a", "127.0.0.1:1"))
	cfg.Version = "v1"
	mustLoad(t, p, cfg)
	before := p.current.Load()
	p.SetVersion("v2")
	after := p.current.Load()
	if p.Version() != "v2" {
		t.Fatalf("Version = %q, want v2", p.Version())
	}
	if after.origin != before.origin || after.session != before.session || p.Stats().ConfigLoaded.Load() != 1 {
		t.Fatal("SetVersion recompiled the config")
	}
	if before.version != "v1" {
		t.Fatal("SetVersion changed a snapshot in place")
	}
}

func TestMetricsOptionAddsInstruments(t *testing.T) {
	e := newTestEnv(t, nil, func(o *Options) {
		o.Metrics = func(m metric.Meter) error {
			_, err := m.Int64ObservableGauge("tunnelgate.extra", metric.WithInt64Callback(
				func(_ context.Context, o metric.Int64Observer) error { o.Observe(42); return nil }))
			return err
		}
	})
	s := e.scrapeMetrics()
	s.want(t, "tunnelgate_extra", "42")
	s.want(t, "tunnelgate_ready", "0") // the proxy's own are still there
}
