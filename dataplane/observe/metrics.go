// This file implements the /metrics handler.

package observe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/tunnelgate/tunnelgate/internal/procmetrics"
)

// A scrape is written in two parts, one after the other:
//
//  1. the registry's families, small and of a fixed number: the go_* and
//     process_* ones (procmetrics) and the proxy-wide counters and
//     gauges, OpenTelemetry asynchronous instruments read at scrape time
//     from a Source (one callback loads every counter of counterFamilies,
//     counters.go, and the gauges). They are gathered and encoded by the
//     Prometheus libraries;
//  2. the per-listener, per-rule, per-cluster and stream families, whose
//     number grows with the config, streamed from the atomics the
//     request path bumps straight to the response (collector.go,
//     streamcollector.go, in the text format of exposition.go), so that a
//     scrape of thousands of routes holds no more than a sorted slice of
//     them in memory.
//
// The request path only bumps the proxy's atomics; it makes no
// OpenTelemetry call and builds no attributes, so metrics cost nothing per
// request.
//
// Names are chosen for the exporter's default Prometheus translation
// (underscore escaping with suffixes): dots become underscores, counters
// gain "_total", and units are written as OTel annotations ("{request}"),
// which add no suffix. target_info and the otel_scope_* labels are turned
// off: the proxy has one instrumentation scope and its resource says
// nothing a scraper does not already know, so they would only add a
// series and three labels to every line.

// Source is what the metrics read at scrape time; the proxy implements
// it. Every method may be called at any time, from the scrape's
// goroutine.
type Source interface {
	// Counters are the proxy-wide counters, read where they are at
	// every scrape: the handler asks once, when it is built.
	Counters() *Counters
	// Inflight is the number of requests being served.
	Inflight() int64
	// BufferedBytes is the memory held by request and response bodies
	// read whole, which the proxy's -buffer-memory bounds.
	BufferedBytes() int64
	// ConfigVersion is the version of the config being served; ok is
	// false before the first one.
	ConfigVersion() (version string, ok bool)
	// Rules appends the stats of the current config's route rules to
	// into (empty, and reused from scrape to scrape), in any order; a rule
	// left out leaves the scrape.
	Rules(into []*RuleStats) []*RuleStats
	// Clusters appends the current config's clusters to into (empty, and
	// reused from scrape to scrape), in any order; a cluster left out
	// leaves the scrape.
	Clusters(into []Cluster) []Cluster
	// StreamRoutes are the current config's stream routes, in a new
	// slice, in any order; a route left out leaves the scrape.
	StreamRoutes() []StreamRoute
	// PoolConnections count the HTTP/1.1 connections of every endpoint's
	// pool, each endpoint once however many clusters list it: idle, and
	// open in all (idle, busy or dialling).
	PoolConnections() (idle, open int)
	// Listeners are the stats of the current config's HTTP and HTTPS
	// listeners and of the requests no listener took, in a new slice, in
	// any order.
	Listeners() []*ListenerStats
}

// Cluster is one cluster of the current config at scrape time.
type Cluster struct {
	Name      string
	Endpoints int
	// Inflight counts the requests in flight to its endpoints (an
	// endpoint shared by clusters counts in each).
	Inflight int64
	// IdleConns and OpenConns count its endpoints' pooled HTTP/1.1
	// connections: idle, and open in all (idle, busy or dialling).
	IdleConns, OpenConns int
	// Upstream are the cluster's attempts, kept across config loads.
	Upstream *UpstreamStats
	// Stream are the connections stream routes relayed to it, kept
	// across config loads; nil for none.
	Stream *StreamStats
}

// MetricsOptions are what a metrics handler serves beside its Source.
type MetricsOptions struct {
	// AccessLog and Tracer, when set, have their lines and spans
	// counted; when nil the counts are served at zero.
	AccessLog *AccessLog
	Tracer    *Tracer
	// Register, when set, registers more instruments on the handler's
	// meter, to be scraped at the same address; an error fails
	// NewMetricsHandler.
	Register func(metric.Meter) error
	// Log receives the handler's errors (failed gathers, failed
	// writes); default slog.Default().
	Log *slog.Logger
	// Detail is how much is served of each rule and cluster.
	Detail Detail
}

// proxyMetrics holds the instruments of one metrics endpoint and the
// attribute options they are observed with, built once.
type proxyMetrics struct {
	src  Source
	opts MetricsOptions

	// counters are the series of counterFamilies, each with its
	// family's instrument and its attribute.
	counters []observedCounter

	accessLogLines metric.Int64ObservableCounter
	spans          metric.Int64ObservableCounter

	inflight   metric.Int64ObservableGauge
	buffered   metric.Int64ObservableGauge
	configInfo metric.Int64ObservableGauge
	ready      metric.Int64ObservableGauge

	linesWritten metric.ObserveOption
	linesDropped metric.ObserveOption
	spanResults  [3]metric.ObserveOption // exported, dropped, failed
}

// observedCounter is one series of counterFamilies as a scrape reports it.
type observedCounter struct {
	inst metric.Int64ObservableCounter
	n    *atomic.Int64
	opts []metric.ObserveOption // its attribute, or none
}

// NewMetricsHandler builds a Prometheus text endpoint reading src at
// each scrape, backed by an OpenTelemetry meter provider private to this
// call: its own registry, its own provider, nothing global, plus the
// standard go_* and process_* families (procmetrics). Building it
// costs a registry and every instrument, so a caller that may never be
// scraped builds it on the first scrape.
func NewMetricsHandler(src Source, opts MetricsOptions) (http.Handler, error) {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	reg := prometheus.NewRegistry()
	if err := procmetrics.Register(reg); err != nil {
		return nil, err
	}
	exp, err := otelprom.New(
		otelprom.WithRegisterer(reg),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
		otelprom.WithoutTargetInfo(),
		otelprom.WithoutScopeInfo(),
	)
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(
		sdkmetric.WithReader(exp),
		// Per-cluster series are bounded by the config, not by traffic;
		// the SDK's default limit (2000 per instrument) would fold large
		// configs into an overflow series.
		sdkmetric.WithCardinalityLimit(0),
	)
	m := mp.Meter(scopeName)

	var errs []error
	counter := func(name, unit, desc string) metric.Int64ObservableCounter {
		c, err := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	gauge := func(name, unit, desc string) metric.Int64ObservableGauge {
		g, err := m.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return g
	}
	pm := &proxyMetrics{src: src, opts: opts}
	series, err := counterTable(counterFamilies, src.Counters())
	if err != nil {
		return nil, err
	}
	families := make([]metric.Int64ObservableCounter, len(counterFamilies))
	for i := range counterFamilies {
		f := &counterFamilies[i]
		families[i] = counter(f.name, f.unit, f.description())
	}
	for _, c := range series {
		oc := observedCounter{inst: families[c.family], n: c.n}
		if c.label != "" {
			oc.opts = []metric.ObserveOption{metric.WithAttributeSet(attribute.NewSet(attribute.String(c.label, c.value)))}
		}
		pm.counters = append(pm.counters, oc)
	}
	pm.accessLogLines = counter("tunnelgate.access_log_lines", "{line}", "Access log lines written, or dropped because the writer fell behind.")
	pm.spans = counter("tunnelgate.trace_spans", "{span}", "Spans exported, dropped because the export queue was full, or failed to export.")
	pm.inflight = gauge("tunnelgate.inflight_requests", "{request}", "Requests being served.")
	pm.buffered = gauge("tunnelgate.body_buffers", "By", "Memory held by request and response bodies read whole before they are passed on (bounded by -buffer-memory).")
	pm.configInfo = gauge("tunnelgate.config_info", "", "Always 1, labelled with the version of the config being served.")
	pm.ready = gauge("tunnelgate.ready", "", "1 once a config is loaded, else 0.")
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("metric instruments: %w", err)
	}

	pm.linesWritten = metric.WithAttributeSet(attribute.NewSet(attribute.String("result", "written")))
	pm.linesDropped = metric.WithAttributeSet(attribute.NewSet(attribute.String("result", "dropped")))
	for i, r := range []string{"exported", "dropped", "failed"} {
		pm.spanResults[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("result", r)))
	}

	if opts.Register != nil {
		if err := opts.Register(m); err != nil {
			return nil, fmt.Errorf("metric instruments: %w", err)
		}
	}

	instruments := []metric.Observable{pm.configInfo, pm.ready, pm.accessLogLines, pm.spans, pm.inflight, pm.buffered}
	for _, f := range families {
		instruments = append(instruments, f)
	}
	if _, err := m.RegisterCallback(pm.observe, instruments...); err != nil {
		return nil, fmt.Errorf("metric callback: %w", err)
	}

	return &metricsHandler{gather: reg, src: src, detail: opts.Detail, log: opts.Log}, nil
}

// observe reports every instrument; the SDK calls it once per scrape.
func (pm *proxyMetrics) observe(_ context.Context, o metric.Observer) error {
	for _, c := range pm.counters {
		o.ObserveInt64(c.inst, c.n.Load(), c.opts...)
	}
	o.ObserveInt64(pm.inflight, pm.src.Inflight())
	o.ObserveInt64(pm.buffered, pm.src.BufferedBytes())
	// Served at zero when the access log is off, so alerts on drops need
	// no special case.
	var written, dropped int64
	if l := pm.opts.AccessLog; l != nil {
		written, dropped = l.Written(), l.Dropped()
	}
	o.ObserveInt64(pm.accessLogLines, written, pm.linesWritten)
	o.ObserveInt64(pm.accessLogLines, dropped, pm.linesDropped)
	var spans [3]int64
	if t := pm.opts.Tracer; t != nil {
		spans[0], spans[1], spans[2] = t.Counts()
	}
	for i, n := range spans {
		o.ObserveInt64(pm.spans, n, pm.spanResults[i])
	}

	// Version and readiness come from one call so they agree.
	if version, ok := pm.src.ConfigVersion(); ok {
		o.ObserveInt64(pm.configInfo, 1, metric.WithAttributes(attribute.String("version", version)))
		o.ObserveInt64(pm.ready, 1)
	} else {
		o.ObserveInt64(pm.ready, 0)
	}
	return nil
}
