package dataplane

import (
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tunnelgate/tunnelgate/dataplane/observe"
)

// routeCollector serves the per-rule and per-cluster families straight
// from the atomics the request path bumps. They are a Prometheus
// collector, not OpenTelemetry instruments like the rest, because
// OpenTelemetry has no asynchronous histogram, and a synchronous one
// would cost the request path an attribute lookup and a lock.
type routeCollector struct {
	p *Proxy

	routeRequests, routeLatency       *prometheus.Desc
	upstreamRequests, upstreamLatency *prometheus.Desc
	upstreamConnections               *prometheus.Desc
}

func newRouteCollector(p *Proxy) *routeCollector {
	return &routeCollector{
		p: p,
		routeRequests: prometheus.NewDesc("tunnelgate_route_requests_total",
			"Requests a route rule answered, by status class.", []string{"route", "rule", "class"}, nil),
		routeLatency: prometheus.NewDesc("tunnelgate_route_request_duration_seconds",
			"Time from a request's arrival to the end of its response (to the handshake for WebSockets), by route rule.",
			[]string{"route", "rule"}, nil),
		upstreamRequests: prometheus.NewDesc("tunnelgate_upstream_requests_total",
			"Attempts sent to a cluster's endpoints, by the status class of the answer, or error or timeout.",
			[]string{"cluster", "result"}, nil),
		upstreamLatency: prometheus.NewDesc("tunnelgate_upstream_response_seconds",
			"Time from sending an attempt to its response head, by cluster.", []string{"cluster"}, nil),
		upstreamConnections: prometheus.NewDesc("tunnelgate_upstream_connections",
			"HTTP/1.1 connections open to a cluster's endpoints: idle in the pool, or active (busy or dialling).",
			[]string{"cluster", "state"}, nil),
	}
}

func (c *routeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.routeRequests
	ch <- c.routeLatency
	ch <- c.upstreamRequests
	ch <- c.upstreamLatency
	ch <- c.upstreamConnections
}

func (c *routeCollector) Collect(ch chan<- prometheus.Metric) {
	rules, slots := c.p.metricSources()
	for _, st := range rules {
		for i, class := range observe.StatusClasses {
			ch <- prometheus.MustNewConstMetric(c.routeRequests, prometheus.CounterValue,
				float64(st.Responses[i].Load()), st.Route, st.Rule, class)
		}
		buckets, count, sum := st.Latency.Snapshot()
		ch <- prometheus.MustNewConstHistogram(c.routeLatency, count, sum, buckets, st.Route, st.Rule)
	}
	for _, s := range slots {
		u := &s.upstream
		for i, result := range observe.UpstreamResults {
			ch <- prometheus.MustNewConstMetric(c.upstreamRequests, prometheus.CounterValue,
				float64(u.Results[i].Load()), s.name, result)
		}
		buckets, count, sum := u.Latency.Snapshot()
		ch <- prometheus.MustNewConstHistogram(c.upstreamLatency, count, sum, buckets, s.name)
		idle, open := 0, 0
		if cs := s.state.Load(); cs != nil {
			for _, e := range cs.eps {
				i, o := e.h1.Counts()
				idle += i
				open += o
			}
		}
		ch <- prometheus.MustNewConstMetric(c.upstreamConnections, prometheus.GaugeValue, float64(idle), s.name, "idle")
		ch <- prometheus.MustNewConstMetric(c.upstreamConnections, prometheus.GaugeValue, float64(open-idle), s.name, "active")
	}
}

// metricSources returns the rule stats and cluster slots of the current
// config, sorted so the scrape is stable.
func (p *Proxy) metricSources() ([]*observe.RuleStats, []*clusterSlot) {
	p.mu.Lock()
	rules := make([]*observe.RuleStats, 0, len(p.ruleStats))
	for _, st := range p.ruleStats {
		rules = append(rules, st)
	}
	slots := make([]*clusterSlot, 0, len(p.slots))
	for _, s := range p.slots {
		slots = append(slots, s)
	}
	p.mu.Unlock()
	slices.SortFunc(rules, func(a, b *observe.RuleStats) int {
		if c := strings.Compare(a.Route, b.Route); c != 0 {
			return c
		}
		return strings.Compare(a.Rule, b.Rule)
	})
	slices.SortFunc(slots, func(a, b *clusterSlot) int { return strings.Compare(a.name, b.name) })
	return rules, slots
}
