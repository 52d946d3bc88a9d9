package cloudflare

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":    0,
		"2":   2 * time.Second,
		"0.5": 500 * time.Millisecond,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Minute).Format(http.TimeFormat):     0,
		"soon":    0,
		"-3":      0,
		"9999999": 0,
	} {
		if got := retryAfter(v, now); got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", v, got, want)
		}
	}
}

// FuzzRetryAfter: any header value gives a wait between zero and a day,
// never a panic or a negative wait. (In this package: retryAfter is
// unexported, as translate's duration parser is fuzzed beside it.)
func FuzzRetryAfter(f *testing.F) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for _, s := range []string{"", "2", "0.5", "-3", "1e9", "NaN", "Inf", "soon", now.Add(time.Hour).Format(http.TimeFormat)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if d := retryAfter(v, now); d < 0 || d > 24*time.Hour {
			t.Fatalf("retryAfter(%q) = %v", v, d)
		}
	})
}
