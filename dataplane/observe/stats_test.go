package observe

import (
	"slices"
	"testing"
	"time"
)

// Buckets are inclusive upper bounds, made cumulative by Snapshot; what
// exceeds the last bound is counted in +Inf only.
func TestHistogramBuckets(t *testing.T) {
	var h Histogram
	for _, d := range []time.Duration{0, time.Millisecond, time.Millisecond + 1, 3 * time.Second, time.Hour} {
		h.Observe(d)
	}
	buckets, count, sum := h.Cumulative()
	if count != 5 {
		t.Errorf("count %d, want 5", count)
	}
	for le, want := range map[float64]uint64{0.001: 2, 0.0025: 3, 2.5: 3, 5: 4, 60: 4} {
		i := slices.IndexFunc(latencyBounds[:], func(b time.Duration) bool { return b.Seconds() == le })
		if i < 0 || buckets[i] != want {
			t.Errorf("bucket le=%g (%d): %v, want %d", le, i, buckets, want)
		}
	}
	if want := (time.Hour + 3*time.Second + 2*time.Millisecond + 1).Seconds(); sum != want {
		t.Errorf("sum %g, want %g", sum, want)
	}
}

func TestStatusClassAndUpstreamResult(t *testing.T) {
	for status, want := range map[int]int{0: 0, 99: 0, 101: 1, 204: 2, 302: 3, 404: 4, 503: 5, 599: 5, 600: 0} {
		if got := StatusClass(status); got != want {
			t.Errorf("StatusClass(%d) = %d, want %d", status, got, want)
		}
	}
	var u UpstreamStats
	u.Result(503, false)
	u.Result(200, true) // a status wins: the attempt was answered
	u.Result(0, true)
	u.Result(0, false)
	results, _, _ := u.counts()
	for result, want := range map[string]int64{"5xx": 1, "2xx": 1, "timeout": 1, "error": 1, "other": 0} {
		for i, r := range UpstreamResults {
			if r == result && results[i] != want {
				t.Errorf("%s: %d, want %d", result, results[i], want)
			}
		}
	}
}

// A rule's or a cluster's counters are made at its first request; until
// then it is idle, and reading it makes nothing.
func TestStatsIdleUntilFirstRequest(t *testing.T) {
	var r RuleStats
	var u UpstreamStats
	if _, _, ok := r.counts(); ok {
		t.Error("a rule with no response is not idle")
	}
	if _, _, ok := u.counts(); ok {
		t.Error("a cluster with no attempt is not idle")
	}
	if r.c.Load() != nil || u.c.Load() != nil {
		t.Fatal("reading idle stats made their counters")
	}
	r.Respond(404, 3*time.Millisecond)
	u.Head(time.Millisecond)
	responses, latency, ok := r.counts()
	if _, count, _ := latency.Cumulative(); !ok || responses[4] != 1 || count != 1 {
		t.Errorf("after a 404: %v %v, latency count %d", ok, responses, count)
	}
	if _, latency, ok := u.counts(); !ok || latency == nil {
		t.Error("a cluster timed to a response head is idle")
	}
}
