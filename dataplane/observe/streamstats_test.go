// This file implements the tests of the stream routes' and clusters' metric families.

package observe

import (
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/pipe"
)

// A stream route's and its cluster's connections, bytes, durations and ends are
// served by route and by cluster; an idle route has no series.
func TestStreamMetrics(t *testing.T) {
	route, cl := &StreamStats{}, &StreamStats{}
	for _, s := range []*StreamStats{route, cl} {
		s.Outcome(StreamRelayed)
		s.Start()
		s.End(pipe.Result{ClientToBackend: 10, BackendToClient: 20, Duration: 1500 * time.Millisecond, End: pipe.BackendClosed})
		s.Outcome(StreamRelayed)
		s.Start()
	}
	route.Outcome(StreamRefused)
	src := &fakeSource{
		version:  "v1",
		clusters: []Cluster{{Name: "ssh", Upstream: &UpstreamStats{}, Stream: cl}},
		streams:  []StreamRoute{{Kind: "TCPRoute", Name: "default/ssh", Stats: route}, {Kind: "TLSRoute", Name: "default/idle", Stats: &StreamStats{}}},
	}
	src.counters.Streams[StreamOverLimit].Store(3)
	series, _ := scrape(t, src, MetricsOptions{})
	for k, want := range map[string]string{
		`tunnelgate_stream_connections_total{outcome="over_limit"}`:                                        "3",
		`tunnelgate_stream_route_connections_total{kind="TCPRoute",outcome="relayed",route="default/ssh"}`: "2",
		`tunnelgate_stream_route_connections_total{kind="TCPRoute",outcome="refused",route="default/ssh"}`: "1",
		`tunnelgate_stream_route_active{kind="TCPRoute",route="default/ssh"}`:                              "1",
		`tunnelgate_stream_route_bytes_total{direction="up",kind="TCPRoute",route="default/ssh"}`:          "10",
		`tunnelgate_stream_route_bytes_total{direction="down",kind="TCPRoute",route="default/ssh"}`:        "20",
		`tunnelgate_stream_route_ends_total{kind="TCPRoute",reason="backend_closed",route="default/ssh"}`:  "1",
		`tunnelgate_stream_route_duration_seconds_total{kind="TCPRoute",route="default/ssh"}`:              "1.5",
		`tunnelgate_stream_cluster_duration_seconds_total{cluster="ssh"}`:                                  "1.5",
		`tunnelgate_stream_cluster_connections_total{cluster="ssh",outcome="relayed"}`:                     "2",
		`tunnelgate_stream_cluster_active{cluster="ssh"}`:                                                  "1",
		`tunnelgate_stream_cluster_bytes_total{cluster="ssh",direction="down"}`:                            "20",
	} {
		if got, ok := series[k]; !ok || got != want {
			t.Errorf("%s = %q (present %v), want %s", k, got, ok, want)
		}
	}
	for k := range series {
		if strings.Contains(k, `route="default/idle"`) {
			t.Errorf("an idle stream route has series: %s", k)
		}
	}
}
