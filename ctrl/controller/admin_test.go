package controller

import (
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// The controller's /metrics serves the standard runtime and process
// families next to its own.
func TestMetricsEndpointServesRuntimeMetrics(t *testing.T) {
	_, h, err := MetricsEndpoint()
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	want := []string{"# TYPE go_goroutines gauge", "# TYPE go_gc_duration_seconds summary"}
	if runtime.GOOS == "linux" {
		want = append(want, "# TYPE process_resident_memory_bytes gauge", "# TYPE process_cpu_seconds_total counter")
	}
	for _, line := range want {
		if !strings.Contains(rec.Body.String(), line+"\n") {
			t.Errorf("scrape lacks %q:\n%s", line, rec.Body)
		}
	}
}
