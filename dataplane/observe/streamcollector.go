// This file implements the per-stream-route and per-cluster stream metric families.

package observe

import (
	"slices"
	"strings"
)

// StreamRoute is one stream route of the current config at scrape time.
type StreamRoute struct {
	// Kind is TCPRoute or TLSRoute; Name is "namespace/name".
	Kind, Name string
	Stats      *StreamStats
}

// The stream routes' and their clusters' families are written from the
// atomics of their StreamStats, as the rules' are (collector.go). A
// route or cluster that has had no connection has no series, and a
// counter by outcome, end or direction is served only for the values
// that are not zero.
var (
	famStreamRouteConns = family{"tunnelgate_stream_route_connections_total", "counter",
		"Connections a stream route took, by outcome."}
	famStreamRouteActive = family{"tunnelgate_stream_route_active", "gauge",
		"Connections a stream route is relaying now."}
	famStreamRouteBytes = family{"tunnelgate_stream_route_bytes_total", "counter",
		"Bytes a stream route relayed, by direction: up (client to backend) or down."}
	famStreamRouteSeconds = family{"tunnelgate_stream_route_duration_seconds_total", "counter",
		"How long a stream route's relayed connections lasted, added up as each ends."}
	famStreamRouteEnds = family{"tunnelgate_stream_route_ends_total", "counter",
		"Relayed connections of a stream route that ended, by reason."}
	famStreamClusterConns = family{"tunnelgate_stream_cluster_connections_total", "counter",
		"Connections stream routes sent to a cluster, by outcome (relayed or dial_failed)."}
	famStreamClusterActive = family{"tunnelgate_stream_cluster_active", "gauge",
		"Connections relayed to a cluster now."}
	famStreamClusterBytes = family{"tunnelgate_stream_cluster_bytes_total", "counter",
		"Bytes relayed to and from a cluster, by direction: up (client to backend) or down."}
	famStreamClusterSeconds = family{"tunnelgate_stream_cluster_duration_seconds_total", "counter",
		"How long the connections relayed to a cluster lasted, added up as each ends."}
)

// streamFamilies are the families writeStreams may write.
var streamFamilies = []*family{&famStreamRouteConns, &famStreamRouteActive, &famStreamRouteBytes, &famStreamRouteSeconds,
	&famStreamRouteEnds, &famStreamClusterConns, &famStreamClusterActive, &famStreamClusterBytes, &famStreamClusterSeconds}

// streamRoute is a stream route with its counts, loaded once per scrape.
type streamRoute struct {
	kind, name string
	n          streamCounts
}

// writeStreams writes the stream routes' families of src and those of
// clusters (sorted by name), each family's series sorted by route (then
// kind) or by cluster.
func writeStreams(t *textWriter, src Source, clusters []Cluster) {
	var routes []streamRoute
	for _, r := range src.StreamRoutes() {
		if n, ok := r.Stats.counts(); ok {
			routes = append(routes, streamRoute{r.Kind, r.Name, n})
		}
	}
	slices.SortFunc(routes, func(a, b streamRoute) int {
		if n := strings.Compare(a.name, b.name); n != 0 {
			return n
		}
		return strings.Compare(a.kind, b.kind)
	})
	route := func(r *streamRoute) {
		t.series()
		t.label("kind", r.kind)
		t.label("route", r.name)
	}
	t.begin(&famStreamRouteConns)
	for i := range routes {
		for o, n := range routes[i].n.outcomes {
			if n != 0 {
				route(&routes[i])
				t.label("outcome", StreamOutcomes[o])
				t.int(n)
			}
		}
	}
	t.begin(&famStreamRouteActive)
	for i := range routes {
		route(&routes[i])
		t.int(routes[i].n.active)
	}
	t.begin(&famStreamRouteBytes)
	for i := range routes {
		for _, d := range routes[i].n.directions() {
			if d.n != 0 {
				route(&routes[i])
				t.label("direction", d.name)
				t.int(d.n)
			}
		}
	}
	t.begin(&famStreamRouteSeconds)
	for i := range routes {
		route(&routes[i])
		t.float(seconds(routes[i].n.nanos))
	}
	t.begin(&famStreamRouteEnds)
	for i := range routes {
		for e, n := range routes[i].n.ends {
			if n != 0 {
				route(&routes[i])
				t.label("reason", string(StreamEnds[e]))
				t.int(n)
			}
		}
	}

	type streamCluster struct {
		name string
		n    streamCounts
	}
	var cls []streamCluster
	for i := range clusters {
		if s := clusters[i].Stream; s != nil {
			if n, ok := s.counts(); ok {
				cls = append(cls, streamCluster{clusters[i].Name, n})
			}
		}
	}
	cluster := func(c *streamCluster) {
		t.series()
		t.label("cluster", c.name)
	}
	t.begin(&famStreamClusterConns)
	for i := range cls {
		for _, o := range [...]StreamOutcome{StreamRelayed, StreamDialFailed} {
			if n := cls[i].n.outcomes[o]; n != 0 {
				cluster(&cls[i])
				t.label("outcome", StreamOutcomes[o])
				t.int(n)
			}
		}
	}
	t.begin(&famStreamClusterActive)
	for i := range cls {
		cluster(&cls[i])
		t.int(cls[i].n.active)
	}
	t.begin(&famStreamClusterBytes)
	for i := range cls {
		for _, d := range cls[i].n.directions() {
			if d.n != 0 {
				cluster(&cls[i])
				t.label("direction", d.name)
				t.int(d.n)
			}
		}
	}
	t.begin(&famStreamClusterSeconds)
	for i := range cls {
		cluster(&cls[i])
		t.float(seconds(cls[i].n.nanos))
	}
}

// direction is a count of bytes one way, with its label.
type direction struct {
	name string
	n    int64
}

// directions are c's bytes up and down.
func (c *streamCounts) directions() [2]direction {
	return [2]direction{{"up", c.up}, {"down", c.down}}
}
