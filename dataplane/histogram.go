package dataplane

import (
	"sync/atomic"
	"time"
)

// Per-route and per-cluster counters. They live as long as the route rule
// or cluster name stays in the config (Proxy.load hands the same ones to
// each new compile of a rule), so a config swap does not reset them; a
// rule or cluster that leaves the config leaves the scrape with it.
// Everything on the request path is an atomic add.

// latencyBounds are the upper bounds of the latency histograms' buckets:
// from a cached answer on the same node to a slow report, in roughly
// 2.5x steps (the Prometheus client's usual spread, stretched to a
// minute for long polls and uploads).
var latencyBounds = [...]time.Duration{
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second,
	10 * time.Second, 30 * time.Second, time.Minute,
}

// histogram counts durations into latencyBounds' buckets without locks.
// counts[i] holds the observations in bucket i alone (the last one is
// +Inf); the scrape makes them cumulative.
type histogram struct {
	counts [len(latencyBounds) + 1]atomic.Uint64
	sum    atomic.Int64 // nanoseconds
}

func (h *histogram) observe(d time.Duration) {
	i := 0
	for i < len(latencyBounds) && d > latencyBounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(int64(d))
}

// snapshot returns the cumulative bucket counts by upper bound in
// seconds, the total count and the sum in seconds.
func (h *histogram) snapshot() (buckets map[float64]uint64, count uint64, sum float64) {
	buckets = make(map[float64]uint64, len(latencyBounds))
	for i, b := range latencyBounds {
		count += h.counts[i].Load()
		buckets[b.Seconds()] = count
	}
	count += h.counts[len(latencyBounds)].Load()
	return buckets, count, time.Duration(h.sum.Load()).Seconds()
}

// ruleStats are one route rule's: responses by status class and the time
// from the request's arrival to the end of its response.
type ruleStats struct {
	route, rule string // the metric labels
	responses   [len(statusClasses)]atomic.Int64
	latency     histogram
}

// upstreamResults label upstreamStats.results by index: the backend's
// status class, or what went wrong when there was no answer.
var upstreamResults = [...]string{"other", "1xx", "2xx", "3xx", "4xx", "5xx", "error", "timeout"}

const (
	upstreamError   = 6
	upstreamTimeout = 7
)

// upstreamStats are one cluster's: attempts by result and the time from
// sending an attempt to its response head.
type upstreamStats struct {
	results [len(upstreamResults)]atomic.Int64
	latency histogram
}

// result counts one attempt: a status, or 0 with err saying why there was
// no answer.
func (u *upstreamStats) result(status int, err error) {
	switch {
	case status != 0:
		c := status / 100
		if c < 1 || c > 5 {
			c = 0
		}
		u.results[c].Add(1)
	case isTimeout(err):
		u.results[upstreamTimeout].Add(1)
	default:
		u.results[upstreamError].Add(1)
	}
}

// adoptRuleStats gives each rule of a config being installed its stats:
// the ones its route and label had in the config before, or new ones.
// Rules that left the config leave the scrape. p.mu is held.
func (p *Proxy) adoptRuleStats(rules []servedRule) {
	next := make(map[[2]string]*ruleStats, len(rules))
	for i := range rules {
		ru := &rules[i]
		key := [2]string{ru.Route, ru.Label()}
		st := next[key]
		if st == nil {
			// Two rules with one key (an HTTPRoute and a GRPCRoute of the
			// same name) share their series rather than repeat it.
			if st = p.ruleStats[key]; st == nil {
				st = &ruleStats{route: key[0], rule: key[1]}
			}
			next[key] = st
		}
		ru.stats = st
		if p.tracer != nil {
			ru.spanNames = map[string]string{}
			for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
				ru.spanNames[m] = m + " " + ru.Route
			}
		}
	}
	p.ruleStats = next
}
