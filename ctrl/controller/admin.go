// This file implements the admin listener's handler: health, metrics,
// pprof.

package controller

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/tunnelgate/tunnelgate/internal/pprofgate"
	"github.com/tunnelgate/tunnelgate/internal/procmetrics"
)

// AdminOptions configure the admin listener's handler.
type AdminOptions struct {
	// Metrics serves /metrics (the handler from MetricsEndpoint); nil
	// serves no metrics.
	Metrics http.Handler
	// Pprof says who may read /debug/pprof/; the zero value serves
	// loopback peers only (kubectl port-forward).
	Pprof pprofgate.Mode
}

// AdminHandler serves the controller's admin listener: /healthz (the
// process is up), /readyz (caches synced and a config published),
// /metrics and /debug/pprof/, as o says.
func (c *Controller) AdminHandler(o AdminOptions) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if !c.Ready() {
			http.Error(w, "caches not synced or no config published yet", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	if o.Metrics != nil {
		mux.Handle("GET /metrics", o.Metrics)
	}
	mux.Handle("/debug/pprof/", pprofgate.Handler(o.Pprof))
	return mux
}

// MetricsEndpoint returns a meter and the Prometheus text handler that
// serves its instruments, with a registry and provider of their own
// (nothing global) that also serve the standard go_* and process_*
// families (procmetrics). The controller and the config server beside it
// register on the same meter.
func MetricsEndpoint() (metric.Meter, http.Handler, error) {
	reg := prometheus.NewRegistry()
	if err := procmetrics.Register(reg); err != nil {
		return nil, nil, err
	}
	exp, err := otelprom.New(otelprom.WithRegisterer(reg),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
		otelprom.WithoutTargetInfo(), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	m := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp)).Meter("github.com/tunnelgate/tunnelgate/ctrl/controller")
	return m, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), nil
}

// syncBuckets suit a sync: a millisecond for a small cluster with
// nothing to write, seconds for a large one writing many statuses.
var syncBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// RegisterMetrics adds the controller's instruments to m; call it before
// Run. All but the sync duration histogram are asynchronous: they read
// Stats at scrape time, and the worker only bumps atomics. The histogram
// takes one value per sync.
func (c *Controller) RegisterMetrics(m metric.Meter) error {
	var errs []error
	h, err := m.Float64Histogram("tunnelgate.controller.sync.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of syncs (translation, publication and, when leading, finalizer writes; statuses are written after, apart)."),
		metric.WithExplicitBucketBoundaries(syncBuckets...))
	if err == nil {
		c.syncDuration = h
	}
	errs = append(errs, err)
	counter := func(name, unit, desc string, read func() int64) {
		_, err := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc),
			metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error { o.Observe(read()); return nil }))
		errs = append(errs, err)
	}
	gauge := func(name, unit, desc string, read func() int64) {
		_, err := m.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc),
			metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error { o.Observe(read()); return nil }))
		errs = append(errs, err)
	}
	fgauge := func(name, unit, desc string, read func() float64) {
		_, err := m.Float64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc),
			metric.WithFloat64Callback(func(_ context.Context, o metric.Float64Observer) error { o.Observe(read()); return nil }))
		errs = append(errs, err)
	}
	s := &c.Stats
	counter("tunnelgate.controller.syncs", "{sync}", "Translations run (changes, paced by -sync-interval).", s.Syncs.Load)
	counter("tunnelgate.controller.sync.errors", "{sync}", "Syncs whose finalizer writes failed (retried with backoff).", s.SyncErrors.Load)
	counter("tunnelgate.controller.status.errors", "{pass}", "Status write passes in which a write failed (retried with backoff).", s.StatusErrors.Load)
	fgauge("tunnelgate.controller.sync.last.duration", "s", "Duration of the last sync.",
		func() float64 { return float64(s.LastSyncNanos.Load()) / 1e9 })
	counter("tunnelgate.controller.status.writes", "{write}", "Status and finalizer writes made (only changed statuses are written).", s.StatusWrites.Load)
	counter("tunnelgate.controller.events", "{event}", "Kubernetes events recorded.", s.EventsRecorded.Load)
	gauge("tunnelgate.controller.queue.depth", "{sync}", "Syncs waiting in the queue.", func() int64 { return int64(c.queue.Len()) })
	counter("tunnelgate.controller.leader.gained", "{transition}", "Times this replica became the leader.", s.LeaderGained.Load)
	gauge("tunnelgate.controller.leader", "", "1 when this replica leads (writes statuses), else 0.", func() int64 {
		if c.Leader() {
			return 1
		}
		return 0
	})
	return errors.Join(errs...)
}
