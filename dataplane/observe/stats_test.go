package observe

import (
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
		if buckets[le] != want {
			t.Errorf("bucket le=%g: %d, want %d", le, buckets[le], want)
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
	for result, want := range map[string]int64{"5xx": 1, "2xx": 1, "timeout": 1, "error": 1, "other": 0} {
		for i, r := range UpstreamResults {
			if r == result && u.Results[i].Load() != want {
				t.Errorf("%s: %d, want %d", result, u.Results[i].Load(), want)
			}
		}
	}
}

// A histogram nothing was observed in holds no buckets, and reports
// every bucket at zero, as one that holds them would.
func TestHistogramEmpty(t *testing.T) {
	var h Histogram
	buckets, count, sum := h.Cumulative()
	if h.b.Load() != nil {
		t.Error("reading an empty histogram made its buckets")
	}
	if len(buckets) != len(latencyBounds) || count != 0 || sum != 0 {
		t.Fatalf("%d buckets, count %d, sum %g; want %d at zero", len(buckets), count, sum, len(latencyBounds))
	}
	for bound, n := range buckets {
		if n != 0 {
			t.Errorf("bucket %g: %d", bound, n)
		}
	}
}
