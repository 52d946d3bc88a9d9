package observe

import (
	"slices"
	"testing"
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
