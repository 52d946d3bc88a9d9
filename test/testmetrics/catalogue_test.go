package testmetrics

import (
	"slices"
	"testing"
)

// The parsers themselves, on a small scrape and a small catalogue.
func TestServedParsesPrometheusText(t *testing.T) {
	got := served(`# HELP tunnelgate_a_total A.
# TYPE tunnelgate_a_total counter
tunnelgate_a_total{class="2xx",result="ok"} 3
tunnelgate_a_total{class="5xx",result="ok"} 0
# TYPE tunnelgate_h_seconds histogram
tunnelgate_h_seconds_bucket{route="r",le="0.1"} 1
tunnelgate_h_seconds_sum{route="r"} 0.05
tunnelgate_h_seconds_count{route="r"} 1
# TYPE go_goroutines gauge
go_goroutines 7
# TYPE go_gc_duration_seconds summary
go_gc_duration_seconds{quantile="0.5"} 1e-05
go_gc_duration_seconds_sum 0.001
go_gc_duration_seconds_count 9
# TYPE go_info gauge
go_info{version="go1.26.0"} 1
# TYPE other_thing gauge
other_thing 1
`)
	want := map[string]Entry{
		"tunnelgate_a_total":     {Type: "counter", Labels: []string{"class", "result"}},
		"tunnelgate_h_seconds":   {Type: "histogram", Labels: []string{"route"}},
		"go_goroutines":          {Type: "gauge"},
		"go_gc_duration_seconds": {Type: "summary"},
		"go_info":                {Type: "gauge", Labels: []string{"version"}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for n, w := range want {
		if g := got[n]; g.Type != w.Type || !slices.Equal(g.Labels, w.Labels) {
			t.Errorf("%s: %+v, want %+v", n, g, w)
		}
	}
}

// docs/metrics.md is found from any package of the module, and has the
// sections the command tests compare with.
func TestCatalogueHasEverySection(t *testing.T) {
	for _, section := range []string{"Proxy", "Controller", runtimeSection} {
		if c := Catalogue(t, section); c["go_goroutines"].Type == "" && section == runtimeSection {
			t.Errorf("the %q section lacks go_goroutines", section)
		}
	}
}
