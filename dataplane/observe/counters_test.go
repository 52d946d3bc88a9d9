package observe

import (
	"slices"
	"strings"
	"testing"

	"github.com/tunnelgate/tunnelgate/test/testmetrics"
)

// Every field of Counters has one row in counterFamilies; a table that
// misses a field, or names one Counters lacks, does not build a handler.
func TestCounterFamilies(t *testing.T) {
	if _, err := counterTable(counterFamilies, &Counters{}); err != nil {
		t.Fatal(err)
	}
	last := counterFamilies[len(counterFamilies)-1]
	for name, families := range map[string][]counterFamily{
		"a field without a row": counterFamilies[:len(counterFamilies)-1],
		"a row without a field": append(slices.Clone(counterFamilies), counterFamily{name: "tunnelgate.none", series: []counterSeries{{field: "None"}}}),
		"a field in two rows":   append(slices.Clone(counterFamilies), last),
		"a label without values": append(slices.Clone(counterFamilies[:len(counterFamilies)-1]),
			counterFamily{name: last.name, label: last.label, series: []counterSeries{{field: last.series[0].field}}}),
		"an array's values short": append(slices.Clone(counterFamilies[:len(counterFamilies)-1]),
			counterFamily{name: last.name, label: last.label, series: []counterSeries{{field: last.series[0].field, each: last.series[0].each[1:]}}}),
	} {
		if _, err := counterTable(families, &Counters{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := NewMetricsHandler(&fakeSource{}, MetricsOptions{}); err != nil {
		t.Fatal(err)
	}
}

// servedElsewhere are the counters docs/metrics.md lists for the proxy
// that are not read from Counters, with what serves them; so are the
// tunnelgate_config_watch_ ones (package configwatch).
var servedElsewhere = map[string]string{
	"tunnelgate_route_requests_total":                  "the route families (collector.go)",
	"tunnelgate_health_checks_total":                   "the route families (collector.go)",
	"tunnelgate_upstream_requests_total":               "the route families (collector.go)",
	"tunnelgate_stream_route_connections_total":        "the stream families (streamcollector.go)",
	"tunnelgate_stream_route_bytes_total":              "the stream families (streamcollector.go)",
	"tunnelgate_stream_route_ends_total":               "the stream families (streamcollector.go)",
	"tunnelgate_stream_route_duration_seconds_total":   "the stream families (streamcollector.go)",
	"tunnelgate_stream_cluster_duration_seconds_total": "the stream families (streamcollector.go)",
	"tunnelgate_stream_cluster_connections_total":      "the stream families (streamcollector.go)",
	"tunnelgate_stream_cluster_bytes_total":            "the stream families (streamcollector.go)",
	"tunnelgate_access_log_lines_total":                "AccessLog",
	"tunnelgate_trace_spans_total":                     "Tracer",
}

// Each family of counterFamilies is in docs/metrics.md's Proxy table,
// as a counter with its label, and every value of the label is written
// there in backquotes; every counter the table lists for the proxy is a
// family of counterFamilies or served elsewhere.
func TestCountersCatalogued(t *testing.T) {
	catalogue := testmetrics.Catalogue(t, "Proxy")
	ours := map[string]bool{}
	for _, f := range counterFamilies {
		name := strings.ReplaceAll(f.name, ".", "_") + "_total" // the exporter's translation
		ours[name] = true
		e, ok := catalogue[name]
		if !ok {
			t.Errorf("docs/metrics.md does not list %s under Proxy", name)
			continue
		}
		var labels []string
		if f.label != "" {
			labels = []string{f.label}
		}
		if e.Type != "counter" || !slices.Equal(e.Labels, labels) {
			t.Errorf("%s: catalogued as %s with labels %v, served as a counter with %v", name, e.Type, e.Labels, labels)
		}
		for _, s := range f.series {
			for _, v := range append([]string{s.value}, s.each...) {
				if v != "" && !strings.Contains(e.Meaning, "`"+v+"`") {
					t.Errorf("%s: docs/metrics.md does not say what %s=%q means (`%s`)", name, f.label, v, v)
				}
			}
		}
	}
	for name, e := range catalogue {
		if e.Type != "counter" || ours[name] || servedElsewhere[name] != "" || strings.HasPrefix(name, "tunnelgate_config_watch_") {
			continue
		}
		t.Errorf("docs/metrics.md lists the proxy counter %s, which no row of counterFamilies serves", name)
	}
	for name, by := range servedElsewhere {
		if _, ok := catalogue[name]; !ok {
			t.Errorf("servedElsewhere names %s (%s), which docs/metrics.md does not list under Proxy", name, by)
		}
	}
}
