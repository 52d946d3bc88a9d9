// This file defines status classes, the latency Histogram, RuleStats,
// ListenerStats and UpstreamStats.

package observe

import (
	"sync/atomic"
	"time"
)

// The proxy's counters by route rule and by cluster, and the latency
// histograms beside them. Each is bumped by the request path with an
// atomic add and read at scrape time by the collector (collector.go).
// The proxy keeps one RuleStats per route rule and one UpstreamStats per
// cluster name for as long as the rule or cluster stays in its config,
// so a config swap does not reset them.

// StatusClasses label counts by status class, indexed by StatusClass.
var StatusClasses = [...]string{"other", "1xx", "2xx", "3xx", "4xx", "5xx"}

// StatusClass is the index of status in StatusClasses: its hundreds
// digit, or 0 for a status outside 100-599.
func StatusClass(status int) int {
	c := status / 100
	if c < 1 || c > 5 {
		return 0
	}
	return c
}

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

// Histogram counts durations into fixed latency buckets without locks.
// The zero value is ready to use.
type Histogram struct {
	// counts[i] holds the observations in bucket i alone (the last one
	// is +Inf); Cumulative makes them cumulative.
	counts [len(latencyBounds) + 1]atomic.Uint64
	sum    atomic.Int64 // nanoseconds
}

// Observe counts one duration.
func (h *Histogram) Observe(d time.Duration) {
	i := 0
	for i < len(latencyBounds) && d > latencyBounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(int64(d))
}

// Cumulative returns the cumulative bucket counts, in the order of
// latencyBounds (+Inf left out: it is count), the total count and the
// sum in seconds, as Prometheus histograms take them.
func (h *Histogram) Cumulative() (buckets [len(latencyBounds)]uint64, count uint64, sum float64) {
	for i := range latencyBounds {
		count += h.counts[i].Load()
		buckets[i] = count
	}
	count += h.counts[len(latencyBounds)].Load()
	return buckets, count, time.Duration(h.sum.Load()).Seconds()
}

// A proxy keeps stats for every rule and every cluster of its config:
// thousands, most of which may see no request for a long time. So the
// counters of each (a histogram of 136 bytes and a few counts) are made
// at its first request, and until then it is idle: its series are not
// served (collector.go).

// lazy returns *p, made at the first call.
func lazy[T any](p *atomic.Pointer[T]) *T {
	if v := p.Load(); v != nil {
		return v
	}
	p.CompareAndSwap(nil, new(T))
	return p.Load()
}

// RuleStats are one route rule's: responses by status class and the time
// from the request's arrival to the end of its response.
type RuleStats struct {
	Route, Rule string // the metric labels, set when the stats are made
	// Untimed, set when the stats are made, leaves latency uncounted:
	// where it is not served (below DetailRoute), Respond reads no
	// histogram bucket.
	Untimed bool
	c       atomic.Pointer[ruleCounts]
}

type ruleCounts struct {
	responses [len(StatusClasses)]atomic.Int64
	latency   Histogram
}

// Respond counts a response with status, which took d from the
// request's arrival.
func (r *RuleStats) Respond(status int, d time.Duration) {
	c := lazy(&r.c)
	c.responses[StatusClass(status)].Add(1)
	if !r.Untimed {
		c.latency.Observe(d)
	}
}

// counts returns the rule's responses by status class and its latency
// histogram, or false when it is idle.
func (r *RuleStats) counts() (responses [len(StatusClasses)]int64, latency *Histogram, ok bool) {
	c := r.c.Load()
	if c == nil {
		return responses, nil, false
	}
	for i := range c.responses {
		responses[i] = c.responses[i].Load()
	}
	return responses, &c.latency, true
}

// ListenerStats are one listener's: the time from a request's arrival to
// the end of its response, for every request the listener took, whatever
// became of it. The proxy keeps one per listener name across config
// loads, as it keeps RuleStats, and one for the requests no listener
// took.
//
// It also counts the listener's answers to load balancer monitors
// (HealthCheck), which are not requests it took: they are in no
// listener's or rule's latency or requests.
type ListenerStats struct {
	Listener string // the metric label, set when the stats are made
	h        atomic.Pointer[Histogram]
	// health counts the health answers, by HealthResults' index.
	health [len(HealthResults)]atomic.Int64
}

// Observe counts a request that took d from its arrival.
func (l *ListenerStats) Observe(d time.Duration) { lazy(&l.h).Observe(d) }

// HealthResults label a listener's health answers by index: a host
// whose routes can all send to a backend, or one whose cannot.
var HealthResults = [...]string{"healthy", "unhealthy"}

// HealthCheck counts a health answer to a load balancer monitor.
func (l *ListenerStats) HealthCheck(healthy bool) {
	if healthy {
		l.health[0].Add(1)
	} else {
		l.health[1].Add(1)
	}
}

// histogram is the listener's histogram, or nil while it is idle.
func (l *ListenerStats) histogram() *Histogram { return l.h.Load() }

// UpstreamResults label an UpstreamStats' results by index: the backend's
// status class, or what went wrong when there was no answer.
var UpstreamResults = [...]string{"other", "1xx", "2xx", "3xx", "4xx", "5xx", "error", "timeout"}

const (
	upstreamError   = 6
	upstreamTimeout = 7
)

// UpstreamStats are one cluster's: attempts by result and the time from
// sending an attempt to its response head.
type UpstreamStats struct {
	c atomic.Pointer[upstreamCounts]
}

type upstreamCounts struct {
	results [len(UpstreamResults)]atomic.Int64
	latency Histogram
}

// Result counts one attempt: its response's status, or, with status 0,
// an attempt that got no answer because it timed out or failed.
func (u *UpstreamStats) Result(status int, timedOut bool) {
	c := lazy(&u.c)
	switch {
	case status != 0:
		c.results[StatusClass(status)].Add(1)
	case timedOut:
		c.results[upstreamTimeout].Add(1)
	default:
		c.results[upstreamError].Add(1)
	}
}

// Head counts the time an attempt took to its response head.
func (u *UpstreamStats) Head(d time.Duration) { lazy(&u.c).latency.Observe(d) }

// counts returns the cluster's attempts by result and its latency
// histogram, or false when it is idle.
func (u *UpstreamStats) counts() (results [len(UpstreamResults)]int64, latency *Histogram, ok bool) {
	if u == nil {
		return results, nil, false
	}
	c := u.c.Load()
	if c == nil {
		return results, nil, false
	}
	for i := range c.results {
		results[i] = c.results[i].Load()
	}
	return results, &c.latency, true
}
