package dataplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/tunnelgate/tunnelgate/dataplane/observe"
)

// Metrics are OpenTelemetry asynchronous instruments read at scrape time.
// The request path only bumps the atomics in Stats (and endpoint
// inflight counts); it makes no OpenTelemetry call and builds no
// attributes, so metrics cost nothing per request. A scrape runs one
// callback that loads every counter and walks the current clusters.
//
// Names are chosen for the exporter's default Prometheus translation
// (underscore escaping with suffixes): dots become underscores, counters
// gain "_total", and units are written as OTel annotations ("{request}"),
// which add no suffix. target_info and the otel_scope_* labels are turned
// off: the proxy has one instrumentation scope and its resource says
// nothing a scraper does not already know, so they would only add a
// series and three labels to every line.

// meterName is the instrumentation scope of the proxy's instruments.
const meterName = "github.com/tunnelgate/tunnelgate/dataplane"

// proxyMetrics holds the instruments of one metrics endpoint and the
// attribute options they are observed with, built once.
type proxyMetrics struct {
	p *Proxy

	requests       metric.Int64ObservableCounter
	responses      metric.Int64ObservableCounter
	noRoute        metric.Int64ObservableCounter
	upstreamErrors metric.Int64ObservableCounter
	clientErrors   metric.Int64ObservableCounter
	timeouts       metric.Int64ObservableCounter
	retries        metric.Int64ObservableCounter
	mirrors        metric.Int64ObservableCounter
	websockets     metric.Int64ObservableCounter
	configLoads    metric.Int64ObservableCounter
	clusterUpdates metric.Int64ObservableCounter

	accessLogLines metric.Int64ObservableCounter
	spans          metric.Int64ObservableCounter

	inflight         metric.Int64ObservableGauge
	configInfo       metric.Int64ObservableGauge
	ready            metric.Int64ObservableGauge
	clusterEndpoints metric.Int64ObservableGauge
	clusterInflight  metric.Int64ObservableUpDownCounter

	class          [len(observe.StatusClasses)]metric.ObserveOption
	mirrorSent     metric.ObserveOption
	mirrorDropped  metric.ObserveOption
	configOK       metric.ObserveOption
	configRejected metric.ObserveOption
	clientReasons  [3]metric.ObserveOption // body_timeout, bad_body, conn_share
	linesWritten   metric.ObserveOption
	linesDropped   metric.ObserveOption
	spanResults    [3]metric.ObserveOption // exported, dropped, failed
}

// metricsEndpoint serves /metrics, building the registry and meter
// provider on the first scrape so a proxy nobody scrapes pays nothing.
func (p *Proxy) metricsEndpoint() http.Handler {
	build := sync.OnceValues(p.metricsHandler)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, err := build()
		if err != nil {
			http.Error(w, "metrics unavailable: "+err.Error(), http.StatusInternalServerError)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// metricsHandler builds a Prometheus text endpoint backed by an
// OpenTelemetry meter provider private to this call: its own registry,
// its own provider, nothing global.
func (p *Proxy) metricsHandler() (http.Handler, error) {
	reg := prometheus.NewRegistry()
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
	m := mp.Meter(meterName)

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
	pm := &proxyMetrics{p: p}
	pm.requests = counter("tunnelgate.requests", "{request}", "Requests received.")
	pm.responses = counter("tunnelgate.responses", "{response}", "Responses sent, by status class.")
	pm.noRoute = counter("tunnelgate.no_route", "{request}", "Requests no route matched (answered 404).")
	pm.upstreamErrors = counter("tunnelgate.upstream_errors", "{error}", "Upstream dial failures, resets and malformed answers.")
	pm.clientErrors = counter("tunnelgate.client_errors", "{request}", "Requests refused for what their client did, by reason: body_timeout (408), bad_body (400), conn_share (503: the client held its share of an endpoint's connections).")
	pm.timeouts = counter("tunnelgate.upstream_timeouts", "{timeout}", "Upstream requests that timed out.")
	pm.retries = counter("tunnelgate.retries", "{retry}", "Upstream requests retried.")
	pm.mirrors = counter("tunnelgate.mirrors", "{request}", "Mirrored requests, sent or dropped.")
	pm.websockets = counter("tunnelgate.websockets", "{connection}", "WebSocket upgrades completed.")
	pm.configLoads = counter("tunnelgate.config_loads", "{config}", "Configs offered, by whether they were accepted.")
	pm.clusterUpdates = counter("tunnelgate.cluster_updates", "{update}", "Cluster endpoint updates applied.")
	pm.accessLogLines = counter("tunnelgate.access_log_lines", "{line}", "Access log lines written, or dropped because the writer fell behind.")
	pm.spans = counter("tunnelgate.trace_spans", "{span}", "Spans exported, dropped because the export queue was full, or failed to export.")
	pm.inflight = gauge("tunnelgate.inflight_requests", "{request}", "Requests being served.")
	pm.configInfo = gauge("tunnelgate.config_info", "", "Always 1, labelled with the version of the config being served.")
	pm.ready = gauge("tunnelgate.ready", "", "1 once a config is loaded, else 0.")
	pm.clusterEndpoints = gauge("tunnelgate.cluster_endpoints", "{endpoint}", "Endpoints of each cluster in the current config.")
	inflight, err := m.Int64ObservableUpDownCounter("tunnelgate.cluster_inflight_requests",
		metric.WithUnit("{request}"),
		metric.WithDescription("Requests in flight to each cluster's endpoints (an endpoint shared by clusters counts in each)."))
	pm.clusterInflight = inflight
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("metric instruments: %w", err)
	}

	for i, c := range observe.StatusClasses {
		pm.class[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("class", c)))
	}
	pm.mirrorSent = metric.WithAttributeSet(attribute.NewSet(attribute.String("result", "sent")))
	pm.mirrorDropped = metric.WithAttributeSet(attribute.NewSet(attribute.String("result", "dropped")))
	pm.configOK = metric.WithAttributeSet(attribute.NewSet(attribute.String("result", "ok")))
	pm.configRejected = metric.WithAttributeSet(attribute.NewSet(attribute.String("result", "rejected")))
	pm.linesWritten = metric.WithAttributeSet(attribute.NewSet(attribute.String("result", "written")))
	pm.linesDropped = metric.WithAttributeSet(attribute.NewSet(attribute.String("result", "dropped")))
	for i, r := range []string{"body_timeout", "bad_body", "conn_share"} {
		pm.clientReasons[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", r)))
	}
	for i, r := range []string{"exported", "dropped", "failed"} {
		pm.spanResults[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("result", r)))
	}

	if p.opts.Metrics != nil {
		if err := p.opts.Metrics(m); err != nil {
			return nil, fmt.Errorf("metric instruments: %w", err)
		}
	}

	if _, err := m.RegisterCallback(pm.observe,
		pm.requests, pm.responses, pm.noRoute, pm.upstreamErrors, pm.clientErrors, pm.timeouts,
		pm.retries, pm.mirrors, pm.websockets, pm.configLoads, pm.clusterUpdates,
		pm.configInfo, pm.ready, pm.clusterEndpoints, pm.clusterInflight,
		pm.accessLogLines, pm.spans, pm.inflight,
	); err != nil {
		return nil, fmt.Errorf("metric callback: %w", err)
	}

	if err := reg.Register(newRouteCollector(p)); err != nil {
		return nil, fmt.Errorf("route metrics: %w", err)
	}

	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:      promLogger{p.opts.Log},
		ErrorHandling: promhttp.ContinueOnError,
	}), nil
}

// observe reports every instrument; the SDK calls it once per scrape.
func (pm *proxyMetrics) observe(_ context.Context, o metric.Observer) error {
	p := pm.p
	s := &p.stats
	o.ObserveInt64(pm.requests, s.Requests.Load())
	for i := range s.Responses {
		o.ObserveInt64(pm.responses, s.Responses[i].Load(), pm.class[i])
	}
	o.ObserveInt64(pm.noRoute, s.NoRoute.Load())
	o.ObserveInt64(pm.upstreamErrors, s.UpstreamErrors.Load())
	o.ObserveInt64(pm.clientErrors, s.ClientBodyTimeouts.Load(), pm.clientReasons[0])
	o.ObserveInt64(pm.clientErrors, s.ClientBadBodies.Load(), pm.clientReasons[1])
	o.ObserveInt64(pm.clientErrors, s.ClientLimited.Load(), pm.clientReasons[2])
	o.ObserveInt64(pm.timeouts, s.Timeouts.Load())
	o.ObserveInt64(pm.retries, s.Retries.Load())
	o.ObserveInt64(pm.mirrors, s.MirrorsSent.Load(), pm.mirrorSent)
	o.ObserveInt64(pm.mirrors, s.MirrorsDropped.Load(), pm.mirrorDropped)
	o.ObserveInt64(pm.websockets, s.WebSockets.Load())
	o.ObserveInt64(pm.configLoads, s.ConfigLoaded.Load(), pm.configOK)
	o.ObserveInt64(pm.configLoads, s.ConfigRejected.Load(), pm.configRejected)
	o.ObserveInt64(pm.clusterUpdates, s.ClusterUpdates.Load())
	o.ObserveInt64(pm.inflight, p.inflight.Load())
	// Served at zero when the access log is off, so alerts on drops need
	// no special case.
	var written, dropped int64
	if l := p.opts.AccessLog; l != nil {
		written, dropped = l.Written(), l.Dropped()
	}
	o.ObserveInt64(pm.accessLogLines, written, pm.linesWritten)
	o.ObserveInt64(pm.accessLogLines, dropped, pm.linesDropped)
	var spans [3]int64
	if t := p.tracer; t != nil {
		spans[0], spans[1], spans[2] = t.Counts()
	}
	for i, n := range spans {
		o.ObserveInt64(pm.spans, n, pm.spanResults[i])
	}

	// Version and readiness come from one snapshot so they agree.
	if snap := p.current.Load(); snap != nil {
		o.ObserveInt64(pm.configInfo, 1, metric.WithAttributes(attribute.String("version", snap.version)))
		o.ObserveInt64(pm.ready, 1)
	} else {
		o.ObserveInt64(pm.ready, 0)
	}

	// A cluster left out of this callback is dropped from the scrape, so
	// clusters removed from the config disappear with it.
	for _, c := range p.clusterLoads() {
		attrs := metric.WithAttributeSet(attribute.NewSet(attribute.String("cluster", c.name)))
		o.ObserveInt64(pm.clusterEndpoints, int64(c.endpoints), attrs)
		o.ObserveInt64(pm.clusterInflight, c.inflight, attrs)
	}
	return nil
}

// clusterLoad is one cluster's size and load at scrape time.
type clusterLoad struct {
	name      string
	endpoints int
	inflight  int64
}

// clusterLoads reports every cluster of the current config, by name.
// p.mu is held only to read the slots and their endpoint counters; the
// caller records them after it is released.
func (p *Proxy) clusterLoads() []clusterLoad {
	p.mu.Lock()
	out := make([]clusterLoad, 0, len(p.slots))
	for name, s := range p.slots {
		c := clusterLoad{name: name}
		if cs := s.state.Load(); cs != nil {
			c.endpoints = len(cs.eps)
			for _, e := range cs.eps {
				c.inflight += int64(e.inflight.Load())
			}
		}
		out = append(out, c)
	}
	p.mu.Unlock()
	slices.SortFunc(out, func(a, b clusterLoad) int { return strings.Compare(a.name, b.name) })
	return out
}

// promLogger sends promhttp's errors (failed gathers, failed writes) to
// the proxy's log.
type promLogger struct{ log *slog.Logger }

func (l promLogger) Println(v ...any) {
	l.log.Error("metrics: " + strings.TrimSuffix(fmt.Sprintln(v...), "\n"))
}
