// This file implements the per-rule and per-cluster metric families.

package observe

import (
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// routeCollector serves the per-rule and per-cluster families straight
// from the atomics the request path bumps. They are a Prometheus
// collector, not OpenTelemetry instruments like the rest, because
// OpenTelemetry has no asynchronous histogram, and a synchronous one
// would cost the request path an attribute lookup and a lock.
//
// A rule or cluster that has seen no request yet has no series (but a
// cluster without endpoints, which is worth an alert): at 5,000 routes of
// two backends each, every series of every rule and cluster is 420,000
// series, 37 MB of text and over 100 MB of memory for each scrape, mostly
// zeros. Its series appear with its first request.
type routeCollector struct {
	src Source

	routeRequests, routeLatency       *prometheus.Desc
	upstreamRequests, upstreamLatency *prometheus.Desc
	upstreamConnections               *prometheus.Desc
	clusterEndpoints, clusterInflight *prometheus.Desc
}

func newRouteCollector(src Source) *routeCollector {
	return &routeCollector{
		src: src,
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
		clusterEndpoints: prometheus.NewDesc("tunnelgate_cluster_endpoints",
			"Endpoints of each cluster in the current config.", []string{"cluster"}, nil),
		clusterInflight: prometheus.NewDesc("tunnelgate_cluster_inflight_requests",
			"Requests in flight to each cluster's endpoints (an endpoint shared by clusters counts in each).", []string{"cluster"}, nil),
	}
}

func (c *routeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.routeRequests
	ch <- c.routeLatency
	ch <- c.upstreamRequests
	ch <- c.upstreamLatency
	ch <- c.upstreamConnections
	ch <- c.clusterEndpoints
	ch <- c.clusterInflight
}

func (c *routeCollector) Collect(ch chan<- prometheus.Metric) {
	rules := c.src.Rules()
	slices.SortFunc(rules, func(a, b *RuleStats) int {
		if n := strings.Compare(a.Route, b.Route); n != 0 {
			return n
		}
		return strings.Compare(a.Rule, b.Rule)
	})
	for _, st := range rules {
		responses, latency, ok := st.counts()
		if !ok {
			continue // idle: no series yet
		}
		for i, class := range StatusClasses {
			ch <- prometheus.MustNewConstMetric(c.routeRequests, prometheus.CounterValue,
				float64(responses[i]), st.Route, st.Rule, class)
		}
		buckets, count, sum := latency.Cumulative()
		ch <- prometheus.MustNewConstHistogram(c.routeLatency, count, sum, buckets, st.Route, st.Rule)
	}
	// A cluster without endpoints shows whether it saw a request or not,
	// so that it can be alerted on; a cluster removed from the config
	// goes from the scrape with it.
	for _, cl := range sortedClusters(c.src) {
		results, latency, ok := cl.Upstream.counts()
		if !ok && cl.OpenConns == 0 {
			if cl.Endpoints == 0 {
				ch <- prometheus.MustNewConstMetric(c.clusterEndpoints, prometheus.GaugeValue, 0, cl.Name)
			}
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.clusterEndpoints, prometheus.GaugeValue, float64(cl.Endpoints), cl.Name)
		ch <- prometheus.MustNewConstMetric(c.clusterInflight, prometheus.GaugeValue, float64(cl.Inflight), cl.Name)
		for i, result := range UpstreamResults {
			ch <- prometheus.MustNewConstMetric(c.upstreamRequests, prometheus.CounterValue,
				float64(results[i]), cl.Name, result)
		}
		if latency == nil {
			latency = &Histogram{}
		}
		buckets, count, sum := latency.Cumulative()
		ch <- prometheus.MustNewConstHistogram(c.upstreamLatency, count, sum, buckets, cl.Name)
		ch <- prometheus.MustNewConstMetric(c.upstreamConnections, prometheus.GaugeValue, float64(cl.IdleConns), cl.Name, "idle")
		ch <- prometheus.MustNewConstMetric(c.upstreamConnections, prometheus.GaugeValue, float64(cl.OpenConns-cl.IdleConns), cl.Name, "active")
	}
}
