// This file defines StreamStats, what the proxy counts of the connections of one stream route or one cluster.

package observe

import (
	"sync/atomic"

	"github.com/tunnelgate/tunnelgate/dataplane/pipe"
)

// StreamOutcome is what became of a connection to a stream socket (a TCP
// or TLS listener's, or an origin port's).
type StreamOutcome int

// The outcomes, each a label value of StreamOutcomes.
const (
	// StreamRelayed: a backend was reached and the bytes relayed.
	StreamRelayed StreamOutcome = iota
	// StreamRefused: the backend chosen by weight has a Status (its share
	// of connections is refused), or the route has no weight at all.
	StreamRefused
	// StreamNoRoute: no route takes the connection (a TLS server name no
	// route has, or none sent).
	StreamNoRoute
	// StreamDialFailed: no endpoint of the cluster answered (or it has
	// none).
	StreamDialFailed
	// StreamOverLimit: the proxy held its cap of streams already.
	StreamOverLimit
	// StreamHandshakeFailed: a TLS listener's client sent no whole
	// ClientHello in time, or something else.
	StreamHandshakeFailed
	numStreamOutcomes
)

// StreamOutcomes label connections by StreamOutcome.
var StreamOutcomes = [numStreamOutcomes]string{"relayed", "refused", "no_route", "dial_failed", "over_limit", "handshake_failed"}

// StreamEnds label relayed connections by how their pipe ended.
var StreamEnds = [...]pipe.Reason{pipe.ClientClosed, pipe.BackendClosed, pipe.Idle, pipe.HalfCloseTimeout, pipe.Stopped, pipe.ClientError, pipe.BackendError}

// StreamStats are one stream route's, or one cluster's, connections: by
// outcome, those being relayed, the bytes each way, how long relayed
// ones lasted in all and why they ended. The proxy keeps one per route and one per cluster name across
// config loads, as it keeps RuleStats and UpstreamStats. The zero value
// is ready to use.
type StreamStats struct {
	outcomes [numStreamOutcomes]atomic.Int64
	active   atomic.Int64
	// up and down count bytes client to backend and back.
	up, down atomic.Int64
	// nanos is the relayed connections' durations added up.
	nanos atomic.Int64
	ends  [len(StreamEnds)]atomic.Int64
}

// Outcome counts one connection's outcome.
func (s *StreamStats) Outcome(o StreamOutcome) { s.outcomes[o].Add(1) }

// Start counts a connection being relayed, until End.
func (s *StreamStats) Start() { s.active.Add(1) }

// End counts a relayed connection's end: its bytes each way, how long
// it lasted and why it ended.
func (s *StreamStats) End(r pipe.Result) {
	s.active.Add(-1)
	s.up.Add(r.ClientToBackend)
	s.down.Add(r.BackendToClient)
	s.nanos.Add(int64(r.Duration))
	for i, e := range StreamEnds {
		if e == r.End {
			s.ends[i].Add(1)
			return
		}
	}
}

// streamCounts is a StreamStats as a scrape reads it.
type streamCounts struct {
	outcomes [numStreamOutcomes]int64
	active   int64
	up, down int64
	nanos    int64
	ends     [len(StreamEnds)]int64
}

// counts loads s, and reports false when it saw no connection yet.
func (s *StreamStats) counts() (c streamCounts, ok bool) {
	for i := range s.outcomes {
		c.outcomes[i] = s.outcomes[i].Load()
		ok = ok || c.outcomes[i] != 0
	}
	c.active, c.up, c.down, c.nanos = s.active.Load(), s.up.Load(), s.down.Load(), s.nanos.Load()
	for i := range s.ends {
		c.ends[i] = s.ends[i].Load()
	}
	return c, ok
}
