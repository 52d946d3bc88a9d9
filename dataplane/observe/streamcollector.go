// This file implements the per-stream-route and per-cluster stream metric families.

package observe

import (
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// StreamRoute is one stream route of the current config at scrape time.
type StreamRoute struct {
	// Kind is TCPRoute or TLSRoute; Name is "namespace/name".
	Kind, Name string
	Stats      *StreamStats
}

// streamCollector serves the stream routes' and their clusters' families
// from the atomics of their StreamStats, as routeCollector serves the
// rules'. A route or cluster that has had no connection has no series.
type streamCollector struct {
	src Source

	routeConns, routeActive, routeBytes, routeSeconds, routeEnds *prometheus.Desc
	clusterConns, clusterActive, clusterBytes, clusterSeconds    *prometheus.Desc
}

func newStreamCollector(src Source) *streamCollector {
	return &streamCollector{
		src: src,
		routeConns: prometheus.NewDesc("tunnelgate_stream_route_connections_total",
			"Connections a stream route took, by outcome.", []string{"kind", "route", "outcome"}, nil),
		routeActive: prometheus.NewDesc("tunnelgate_stream_route_active",
			"Connections a stream route is relaying now.", []string{"kind", "route"}, nil),
		routeBytes: prometheus.NewDesc("tunnelgate_stream_route_bytes_total",
			"Bytes a stream route relayed, by direction: up (client to backend) or down.", []string{"kind", "route", "direction"}, nil),
		routeSeconds: prometheus.NewDesc("tunnelgate_stream_route_duration_seconds_total",
			"How long a stream route's relayed connections lasted, added up as each ends.", []string{"kind", "route"}, nil),
		routeEnds: prometheus.NewDesc("tunnelgate_stream_route_ends_total",
			"Relayed connections of a stream route that ended, by reason.", []string{"kind", "route", "reason"}, nil),
		clusterConns: prometheus.NewDesc("tunnelgate_stream_cluster_connections_total",
			"Connections stream routes sent to a cluster, by outcome (relayed or dial_failed).", []string{"cluster", "outcome"}, nil),
		clusterActive: prometheus.NewDesc("tunnelgate_stream_cluster_active",
			"Connections relayed to a cluster now.", []string{"cluster"}, nil),
		clusterBytes: prometheus.NewDesc("tunnelgate_stream_cluster_bytes_total",
			"Bytes relayed to and from a cluster, by direction: up (client to backend) or down.", []string{"cluster", "direction"}, nil),
		clusterSeconds: prometheus.NewDesc("tunnelgate_stream_cluster_duration_seconds_total",
			"How long the connections relayed to a cluster lasted, added up as each ends.", []string{"cluster"}, nil),
	}
}

func (c *streamCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.routeConns, c.routeActive, c.routeBytes, c.routeSeconds, c.routeEnds, c.clusterConns, c.clusterActive, c.clusterBytes, c.clusterSeconds} {
		ch <- d
	}
}

func (c *streamCollector) Collect(ch chan<- prometheus.Metric) {
	routes := c.src.StreamRoutes()
	slices.SortFunc(routes, func(a, b StreamRoute) int {
		if n := strings.Compare(a.Name, b.Name); n != 0 {
			return n
		}
		return strings.Compare(a.Kind, b.Kind)
	})
	for _, r := range routes {
		n, ok := r.Stats.counts()
		if !ok {
			continue
		}
		for i, o := range StreamOutcomes {
			ch <- prometheus.MustNewConstMetric(c.routeConns, prometheus.CounterValue, float64(n.outcomes[i]), r.Kind, r.Name, o)
		}
		ch <- prometheus.MustNewConstMetric(c.routeActive, prometheus.GaugeValue, float64(n.active), r.Kind, r.Name)
		ch <- prometheus.MustNewConstMetric(c.routeBytes, prometheus.CounterValue, float64(n.up), r.Kind, r.Name, "up")
		ch <- prometheus.MustNewConstMetric(c.routeBytes, prometheus.CounterValue, float64(n.down), r.Kind, r.Name, "down")
		ch <- prometheus.MustNewConstMetric(c.routeSeconds, prometheus.CounterValue, seconds(n.nanos), r.Kind, r.Name)
		for i, e := range StreamEnds {
			ch <- prometheus.MustNewConstMetric(c.routeEnds, prometheus.CounterValue, float64(n.ends[i]), r.Kind, r.Name, string(e))
		}
	}
	for _, cl := range sortedClusters(c.src) {
		if cl.Stream == nil {
			continue
		}
		n, ok := cl.Stream.counts()
		if !ok {
			continue
		}
		for _, o := range []StreamOutcome{StreamRelayed, StreamDialFailed} {
			ch <- prometheus.MustNewConstMetric(c.clusterConns, prometheus.CounterValue, float64(n.outcomes[o]), cl.Name, StreamOutcomes[o])
		}
		ch <- prometheus.MustNewConstMetric(c.clusterActive, prometheus.GaugeValue, float64(n.active), cl.Name)
		ch <- prometheus.MustNewConstMetric(c.clusterBytes, prometheus.CounterValue, float64(n.up), cl.Name, "up")
		ch <- prometheus.MustNewConstMetric(c.clusterBytes, prometheus.CounterValue, float64(n.down), cl.Name, "down")
		ch <- prometheus.MustNewConstMetric(c.clusterSeconds, prometheus.CounterValue, seconds(n.nanos), cl.Name)
	}
}

// seconds is nanos in seconds.
func seconds(nanos int64) float64 { return float64(nanos) / 1e9 }
