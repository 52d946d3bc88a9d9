package dataplane

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/metric"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// Apply tells a config whose routes the proxy already serves from one
// that needs compiling, so the config watch client (dataplane/configwatch)
// only fetches and hands over.

func TestApplyReplacesOnlyChangedClusters(t *testing.T) {
	p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	v1 := config([]proxycfg.Route{route("r", to("a"))}, cluster("a", "127.0.0.1:1"), cluster("b", "127.0.0.1:2"))
	v1.Version = "v1"
	if how, err := p.Apply(v1); err != nil || how != proxycfg.AppliedAll {
		t.Fatalf("first Apply: %v, %v; want proxycfg.AppliedAll", how, err)
	}
	before := p.current.Load()
	bState := p.slots["b"].state.Load()

	v2 := config([]proxycfg.Route{route("r", to("a"))}, cluster("a", "127.0.0.1:3", "127.0.0.1:4"), cluster("b", "127.0.0.1:2"))
	v2.Version = "v2"
	if how, err := p.Apply(v2); err != nil || how != proxycfg.AppliedClusters {
		t.Fatalf("endpoints only: %v, %v; want proxycfg.AppliedClusters", how, err)
	}
	after := p.current.Load()
	if p.Version() != "v2" || before.version != "v1" {
		t.Fatalf("version %q, the old config's %q: want v2, and v1 left as it was", p.Version(), before.version)
	}
	if after.origin != before.origin || p.Stats().ConfigLoaded.Load() != 1 {
		t.Fatal("an endpoints-only config was compiled")
	}
	if eps := p.slots["a"].state.Load().endpoints(); len(eps) != 2 || eps[0].addr != "127.0.0.1:3" {
		t.Fatalf("cluster a serves %d endpoints, want the two new ones", len(eps))
	}
	if p.slots["b"].state.Load() != bState || p.Stats().ClusterUpdates.Load() != 1 {
		t.Fatal("an unchanged cluster was replaced")
	}

	// A changed cluster that is invalid: the whole config is refused, and
	// nothing of it is served.
	bad := config([]proxycfg.Route{route("r", to("a"))}, cluster("a", "127.0.0.1:5"), cluster("b", "no-port"))
	bad.Version = "bad"
	if _, err := p.Apply(bad); err == nil || !strings.Contains(err.Error(), "no-port") {
		t.Fatalf("invalid cluster: %v, want the error naming it", err)
	}
	if p.Version() != "v2" || p.slots["a"].state.Load().endpoints()[0].addr != "127.0.0.1:3" {
		t.Fatal("a refused config changed what is served")
	}

	// A route edited: that route compiled (patch.go). The same clusters
	// in another order: matched by name, so a patch too, which compiles
	// nothing (no route changed) and keeps each cluster's ID.
	for _, step := range []struct {
		name string
		cfg  *proxycfg.Config
		want proxycfg.Applied
	}{
		{"routes", config([]proxycfg.Route{route("r", to("b"))}, cluster("a", "127.0.0.1:3", "127.0.0.1:4"), cluster("b", "127.0.0.1:2")), proxycfg.AppliedRoutes},
		{"reorder", config([]proxycfg.Route{route("r", to("b"))}, cluster("b", "127.0.0.1:2"), cluster("a", "127.0.0.1:3", "127.0.0.1:4")), proxycfg.AppliedRoutes},
	} {
		if how, err := p.Apply(step.cfg); err != nil || how != step.want {
			t.Fatalf("%s: %v, %v; want %v", step.name, how, err, step.want)
		}
	}
}

// A config applied again after an endpoint change puts its endpoints
// back without compiling: the proxy compares with what it serves, not
// with what it was first given.
func TestEarlierConfigAppliedAgainRestoresItsEndpoints(t *testing.T) {
	p := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	cfg := config([]proxycfg.Route{route("r", to("a"))}, cluster("a", "127.0.0.1:1"))
	mustLoad(t, p, cfg)
	if err := churn(p, cluster("a", "127.0.0.1:3")); err != nil {
		t.Fatal(err)
	}
	if p.slots["a"].state.Load().endpoints()[0].addr != "127.0.0.1:3" {
		t.Fatal("the changed endpoint is not served")
	}
	if how, err := p.Apply(cfg); err != nil || how != proxycfg.AppliedClusters {
		t.Fatalf("Apply of the first config again: %v, %v; want proxycfg.AppliedClusters", how, err)
	}
	if p.slots["a"].state.Load().endpoints()[0].addr != "127.0.0.1:1" {
		t.Fatal("the original endpoint is not served again")
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
