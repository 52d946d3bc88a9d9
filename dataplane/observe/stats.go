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
//
// Its buckets are made at the first observation: a proxy keeps one for
// every rule and cluster of its config, thousands of which may see no
// request for a long time, and each is 136 bytes.
type Histogram struct {
	b atomic.Pointer[buckets]
}

// buckets are a histogram's counts: counts[i] holds the observations in
// bucket i alone (the last one is +Inf); Cumulative makes them
// cumulative.
type buckets struct {
	counts [len(latencyBounds) + 1]atomic.Uint64
	sum    atomic.Int64 // nanoseconds
}

// empty reports whether nothing was observed.
func (h *Histogram) empty() bool { return h.b.Load() == nil }

// Observe counts one duration.
func (h *Histogram) Observe(d time.Duration) {
	b := h.b.Load()
	if b == nil {
		h.b.CompareAndSwap(nil, new(buckets))
		b = h.b.Load()
	}
	i := 0
	for i < len(latencyBounds) && d > latencyBounds[i] {
		i++
	}
	b.counts[i].Add(1)
	b.sum.Add(int64(d))
}

// Cumulative returns the cumulative bucket counts by upper bound in
// seconds, the total count and the sum in seconds, as Prometheus
// histograms take them.
func (h *Histogram) Cumulative() (cumulative map[float64]uint64, count uint64, sum float64) {
	cumulative = make(map[float64]uint64, len(latencyBounds))
	b := h.b.Load()
	if b == nil {
		b = &buckets{}
	}
	for i, bound := range latencyBounds {
		count += b.counts[i].Load()
		cumulative[bound.Seconds()] = count
	}
	count += b.counts[len(latencyBounds)].Load()
	return cumulative, count, time.Duration(b.sum.Load()).Seconds()
}

// RuleStats are one route rule's: responses by status class and the time
// from the request's arrival to the end of its response.
type RuleStats struct {
	Route, Rule string // the metric labels, set when the stats are made
	Responses   [len(StatusClasses)]atomic.Int64
	Latency     Histogram
}

// UpstreamResults label UpstreamStats.Results by index: the backend's
// status class, or what went wrong when there was no answer.
var UpstreamResults = [...]string{"other", "1xx", "2xx", "3xx", "4xx", "5xx", "error", "timeout"}

const (
	upstreamError   = 6
	upstreamTimeout = 7
)

// UpstreamStats are one cluster's: attempts by result and the time from
// sending an attempt to its response head.
type UpstreamStats struct {
	Results [len(UpstreamResults)]atomic.Int64
	Latency Histogram
}

// Result counts one attempt: its response's status, or, with status 0,
// an attempt that got no answer because it timed out or failed.
func (u *UpstreamStats) Result(status int, timedOut bool) {
	switch {
	case status != 0:
		u.Results[StatusClass(status)].Add(1)
	case timedOut:
		u.Results[upstreamTimeout].Add(1)
	default:
		u.Results[upstreamError].Add(1)
	}
}

// idle reports whether the rule has answered no request.
func (r *RuleStats) idle() bool {
	for i := range r.Responses {
		if r.Responses[i].Load() != 0 {
			return false
		}
	}
	return r.Latency.empty()
}

// idle reports whether no attempt was sent to the cluster.
func (u *UpstreamStats) idle() bool {
	for i := range u.Results {
		if u.Results[i].Load() != 0 {
			return false
		}
	}
	return u.Latency.empty()
}
