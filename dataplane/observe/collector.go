// This file implements the per-listener, per-rule and per-cluster metric families.

package observe

import (
	"fmt"
	"slices"
	"strings"
)

// The per-listener, per-rule and per-cluster families are written
// straight from the atomics the request path bumps, by a textWriter
// (exposition.go), not through the Prometheus client: at 5,000 routes,
// building every series as a metric object for each scrape cost more
// memory than the proxy's whole config. They are not OpenTelemetry
// instruments like the proxy-wide ones either, because OpenTelemetry has
// no asynchronous histogram, and a synchronous one would cost the request
// path an attribute lookup and a lock.
//
// What a scrape holds is chosen so that it grows with the traffic seen,
// and, by default, by a line or two per route (Detail):
//
//   - a rule that has seen no request has no series, and a rule's or a
//     cluster's counters are served only for the classes or results that
//     are not zero: a rule that only ever answered 200 is one line;
//   - latency is a histogram per listener (every request, routed or not);
//     per rule and per cluster only with DetailRoute, with the clusters'
//     in-flight requests and pooled connections;
//   - a cluster without endpoints always has its tunnelgate_cluster_endpoints
//     series (0), to alert on.

// Detail is how much a scrape says of each route rule and cluster.
type Detail int

const (
	// DetailListener, the default: rules' and clusters' requests by
	// status class or result, latency by listener.
	DetailListener Detail = iota
	// DetailRoute adds each rule's and each cluster's latency histogram,
	// and each cluster's endpoints, in-flight requests and connections.
	DetailRoute
)

// Details name the Details, as the proxy's -metrics-detail flag takes them.
var Details = [...]string{DetailListener: "listener", DetailRoute: "route"}

func (d Detail) String() string {
	if d >= 0 && int(d) < len(Details) {
		return Details[d]
	}
	return fmt.Sprintf("Detail(%d)", int(d))
}

// ParseDetail reads a Detail by its name.
func ParseDetail(s string) (Detail, error) {
	for i, name := range Details {
		if s == name {
			return Detail(i), nil
		}
	}
	return 0, fmt.Errorf("metrics detail %q is not %s", s, strings.Join(Details[:], " or "))
}

// The families, with their help texts.
var (
	famListenerLatency = family{"tunnelgate_listener_request_duration_seconds", "histogram",
		`Time from a request's arrival to the end of its response (to the handshake for WebSockets), by the listener that took it ("" for requests no listener took).`}
	famHealthChecks = family{"tunnelgate_health_checks_total", "counter",
		"Health answers to load balancer monitors, by the listener whose health check they carried and result (healthy: 200, unhealthy: 503)."}
	famRouteRequests = family{"tunnelgate_route_requests_total", "counter",
		"Requests a route rule answered, by status class."}
	famRouteLatency = family{"tunnelgate_route_request_duration_seconds", "histogram",
		"Time from a request's arrival to the end of its response (to the handshake for WebSockets), by route rule."}
	famUpstreamRequests = family{"tunnelgate_upstream_requests_total", "counter",
		"Attempts sent to a cluster's endpoints, by the status class of the answer, or error or timeout."}
	famUpstreamLatency = family{"tunnelgate_upstream_response_seconds", "histogram",
		"Time from sending an attempt to its response head, by cluster."}
	famPoolConnections = family{"tunnelgate_upstream_pool_connections", "gauge",
		"HTTP/1.1 connections open to the endpoints of every cluster, each endpoint counted once: idle in the pool, or active (busy or dialling)."}
	famUpstreamConnections = family{"tunnelgate_upstream_connections", "gauge",
		"HTTP/1.1 connections open to a cluster's endpoints: idle in the pool, or active (busy or dialling)."}
	famClusterEndpoints = family{"tunnelgate_cluster_endpoints", "gauge",
		"Endpoints of each cluster in the current config."}
	famClusterInflight = family{"tunnelgate_cluster_inflight_requests", "gauge",
		"Requests in flight to each cluster's endpoints (an endpoint shared by clusters counts in each)."}
)

// routeFamilies are the families writeRoutes may write.
var routeFamilies = []*family{&famListenerLatency, &famHealthChecks, &famRouteRequests, &famRouteLatency, &famUpstreamRequests,
	&famUpstreamLatency, &famPoolConnections, &famUpstreamConnections, &famClusterEndpoints, &famClusterInflight}

// scrapeLists are the lists a scrape sorts, kept from one scrape to the
// next: at 5,000 routes they are most of what a scrape would allocate.
type scrapeLists struct {
	rules    []*RuleStats
	clusters []Cluster
}

// clear drops what the lists point to, keeping their room.
func (l *scrapeLists) clear() {
	clear(l.rules[:cap(l.rules)])
	clear(l.clusters[:cap(l.clusters)])
	l.rules, l.clusters = l.rules[:0], l.clusters[:0]
}

// writeRoutes writes the per-listener, per-rule and per-cluster families
// of src at detail d, each sorted by its labels' values, into lists, and
// leaves the clusters sorted by name in lists.clusters for the stream
// families.
func writeRoutes(t *textWriter, src Source, d Detail, lists *scrapeLists) {
	listeners := src.Listeners()
	slices.SortFunc(listeners, func(a, b *ListenerStats) int { return strings.Compare(a.Listener, b.Listener) })
	t.begin(&famListenerLatency)
	for _, l := range listeners {
		if h := l.histogram(); h != nil {
			t.series()
			t.label("listener", l.Listener)
			t.histogram(h)
		}
	}
	t.begin(&famHealthChecks)
	for _, l := range listeners {
		for i := range l.health {
			if n := l.health[i].Load(); n != 0 {
				t.series()
				t.label("listener", l.Listener)
				t.label("result", HealthResults[i])
				t.int(n)
			}
		}
	}

	lists.rules = src.Rules(lists.rules[:0])
	rules := lists.rules
	slices.SortFunc(rules, func(a, b *RuleStats) int {
		if n := strings.Compare(a.Route, b.Route); n != 0 {
			return n
		}
		return strings.Compare(a.Rule, b.Rule)
	})
	t.begin(&famRouteRequests)
	for _, st := range rules {
		responses, _, ok := st.counts()
		if !ok {
			continue // idle: no series yet
		}
		for i, n := range responses {
			if n != 0 {
				ruleSeries(t, st)
				t.label("class", StatusClasses[i])
				t.int(n)
			}
		}
	}
	if d >= DetailRoute {
		t.begin(&famRouteLatency)
		for _, st := range rules {
			if _, latency, ok := st.counts(); ok {
				ruleSeries(t, st)
				t.histogram(latency)
			}
		}
	}

	lists.clusters = src.Clusters(lists.clusters[:0])
	clusters := lists.clusters
	slices.SortFunc(clusters, func(a, b Cluster) int { return strings.Compare(a.Name, b.Name) })
	t.begin(&famUpstreamRequests)
	for i := range clusters {
		cl := &clusters[i]
		results, _, _ := cl.Upstream.counts()
		for i, n := range results {
			if n != 0 {
				t.series()
				t.label("cluster", cl.Name)
				t.label("result", UpstreamResults[i])
				t.int(n)
			}
		}
	}
	// A cluster without endpoints is served whether it saw a request or
	// not, so that it can be alerted on; a cluster removed from the
	// config goes from the scrape with it.
	t.begin(&famClusterEndpoints)
	for i := range clusters {
		if cl := &clusters[i]; cl.Endpoints == 0 || d >= DetailRoute && cl.busy() {
			t.series()
			t.label("cluster", cl.Name)
			t.int(int64(cl.Endpoints))
		}
	}
	idle, open := src.PoolConnections()
	t.begin(&famPoolConnections)
	for _, s := range [...]struct {
		state string
		n     int
	}{{"idle", idle}, {"active", open - idle}} {
		t.series()
		t.label("state", s.state)
		t.int(int64(s.n))
	}
	if d < DetailRoute {
		return
	}
	t.begin(&famUpstreamLatency)
	for i := range clusters {
		if cl := &clusters[i]; cl.busy() {
			_, latency, _ := cl.Upstream.counts()
			if latency == nil {
				latency = &noLatency
			}
			t.series()
			t.label("cluster", cl.Name)
			t.histogram(latency)
		}
	}
	t.begin(&famClusterInflight)
	for i := range clusters {
		if cl := &clusters[i]; cl.busy() {
			t.series()
			t.label("cluster", cl.Name)
			t.int(cl.Inflight)
		}
	}
	t.begin(&famUpstreamConnections)
	for i := range clusters {
		if cl := &clusters[i]; cl.busy() {
			for _, s := range [...]struct {
				state string
				n     int
			}{{"idle", cl.IdleConns}, {"active", cl.OpenConns - cl.IdleConns}} {
				t.series()
				t.label("cluster", cl.Name)
				t.label("state", s.state)
				t.int(int64(s.n))
			}
		}
	}
}

// noLatency is the histogram of a cluster that has not been timed: no
// observation. It is only read.
var noLatency Histogram

// ruleSeries starts a series of rule st.
func ruleSeries(t *textWriter, st *RuleStats) {
	t.series()
	t.label("route", st.Route)
	t.label("rule", st.Rule)
}

// busy reports whether the cluster has seen an attempt or holds a
// connection: its per-cluster series are served from then on.
func (c *Cluster) busy() bool {
	_, _, ok := c.Upstream.counts()
	return ok || c.OpenConns > 0
}
