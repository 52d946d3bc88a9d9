// This file implements the client's metrics.

package configwatch

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// LoadKind says how a document was applied.
type LoadKind int

const (
	// LoadFull is a document the proxy compiled whole.
	LoadFull LoadKind = iota
	// LoadClusters is a document whose routes the proxy had: only
	// clusters replaced (proxycfg.AppliedClusters).
	LoadClusters
	// LoadCache is the cache file, loaded at start.
	LoadCache
	// LoadRoutes is a document whose edited, added or deleted routes
	// and listeners alone the proxy compiled (proxycfg.AppliedRoutes).
	LoadRoutes
	numLoadKinds
)

var loadKindNames = [numLoadKinds]string{"full", "clusters", "cache", "routes"}

// Failure is a kind of thing that went wrong.
type Failure int

const (
	// FailUnreachable: no answer (connection, TLS handshake, deadline,
	// a body cut short).
	FailUnreachable Failure = iota
	// FailUnauthorized: the controller answered 401.
	FailUnauthorized
	// FailBadAnswer: another status, or a document that does not decode.
	FailBadAnswer
	// FailRejected: the proxy refused the config.
	FailRejected
	// FailToken: the token file is unreadable or empty.
	FailToken
	// FailTLSFiles: the CA or client certificate files do not load.
	FailTLSFiles
	// FailCache: the cache file did not load, or was not written.
	FailCache
	numFailures
)

var failureNames = [numFailures]string{"unreachable", "unauthorized", "bad_answer", "rejected", "token", "tls_files", "cache"}

// Stats count what the client did.
type Stats struct {
	// Requests is the number of requests sent to the controller.
	Requests atomic.Int64
	// Loads are documents applied, by LoadKind.
	Loads [numLoadKinds]atomic.Int64
	// Deltas are documents received as a delta from the config served,
	// applied or not.
	Deltas atomic.Int64
	// Failures are by Failure.
	Failures [numFailures]atomic.Int64
	// AccessKeyRequests counts the Access teams the proxy asked the
	// controller to fetch keys for again (HeaderUnknownAccessKeys), each
	// time it sent one.
	AccessKeyRequests atomic.Int64
	// LastSuccess is when the controller last answered with a config or
	// 304 (Unix nanoseconds; 0 before it ever did).
	LastSuccess atomic.Int64
}

func (s *Stats) fail(f Failure) { s.Failures[f].Add(1) }

func (s *Stats) success() { s.LastSuccess.Store(time.Now().UnixNano()) }

// RegisterMetrics adds the client's metrics to m, read from Stats at
// collection time like the proxy's own (dataplane.Options.Metrics takes
// it). On the admin listener they are
//
//	tunnelgate_config_watch_requests_total
//	tunnelgate_config_watch_loads_total{kind="full"|"clusters"|"routes"|"cache"}
//	tunnelgate_config_watch_failures_total{reason="unreachable"|"unauthorized"|"bad_answer"|"rejected"|"token"|"tls_files"|"cache"}
//	tunnelgate_config_watch_access_key_requests_total
//	tunnelgate_config_watch_deltas_total
//	tunnelgate_config_watch_last_success_seconds
//
// The last is the Unix time of the controller's last answer, 0 before
// the first: alert on time() minus it.
func (c *Client) RegisterMetrics(m metric.Meter) error {
	requests, err1 := m.Int64ObservableCounter("tunnelgate.config_watch.requests",
		metric.WithUnit("{request}"), metric.WithDescription("Requests sent to the controller for config."))
	loads, err2 := m.Int64ObservableCounter("tunnelgate.config_watch.loads",
		metric.WithUnit("{config}"), metric.WithDescription("Configs applied, by how: full (routes compiled), clusters (endpoints only), routes (edited routes compiled), cache (at start)."))
	failures, err3 := m.Int64ObservableCounter("tunnelgate.config_watch.failures",
		metric.WithUnit("{failure}"), metric.WithDescription("Config watch failures, by reason."))
	last, err4 := m.Int64ObservableGauge("tunnelgate.config_watch.last_success",
		metric.WithUnit("s"), metric.WithDescription("Unix time of the controller's last answer (a config or 304 Not Modified); 0 before the first."))
	keyRequests, err5 := m.Int64ObservableCounter("tunnelgate.config_watch.access_key_requests",
		metric.WithUnit("{team}"), metric.WithDescription("Cloudflare Access teams whose keys the proxy asked the controller to fetch again: a token named a key the team's set lacked."))
	deltas, err6 := m.Int64ObservableCounter("tunnelgate.config_watch.deltas",
		metric.WithUnit("{config}"), metric.WithDescription("Configs received as a delta from the config served, among those received."))
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
		return err
	}
	var kinds [numLoadKinds]metric.ObserveOption
	for i, n := range loadKindNames {
		kinds[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("kind", n)))
	}
	var reasons [numFailures]metric.ObserveOption
	for i, n := range failureNames {
		reasons[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", n)))
	}
	s := &c.stats
	_, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(requests, s.Requests.Load())
		for i := range s.Loads {
			o.ObserveInt64(loads, s.Loads[i].Load(), kinds[i])
		}
		for i := range s.Failures {
			o.ObserveInt64(failures, s.Failures[i].Load(), reasons[i])
		}
		o.ObserveInt64(keyRequests, s.AccessKeyRequests.Load())
		o.ObserveInt64(deltas, s.Deltas.Load())
		var sec int64
		if ns := s.LastSuccess.Load(); ns > 0 {
			sec = ns / int64(time.Second)
		}
		o.ObserveInt64(last, sec)
		return nil
	}, requests, loads, failures, keyRequests, deltas, last)
	return err
}
