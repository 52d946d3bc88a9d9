// This file implements Series, a scrape read as its series.

package testmetrics

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Series reads a scrape with the Prometheus text parser, failing
// the test when it does not parse or holds a series twice, and returns
// each sample's value by series: the name (with _bucket, _sum or _count
// for histograms and summaries), then the labels sorted by name, le and
// quantile last, as `name{a="x",b="y"}`.
func Series(t testing.TB, text string) map[string]string {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("the scrape does not parse: %v\n%s", err, text)
	}
	series := map[string]string{}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := slices.Clone(m.GetLabel())
			slices.SortFunc(labels, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
			put := func(suffix, extra, extraValue string, v float64) {
				var b strings.Builder
				b.WriteString(name + suffix)
				pairs := make([]string, 0, len(labels)+1)
				for _, l := range labels {
					pairs = append(pairs, l.GetName()+"="+strconv.Quote(l.GetValue()))
				}
				if extra != "" {
					pairs = append(pairs, extra+"="+strconv.Quote(extraValue))
				}
				if len(pairs) > 0 {
					b.WriteString("{" + strings.Join(pairs, ",") + "}")
				}
				key := b.String()
				if _, dup := series[key]; dup {
					t.Errorf("the scrape holds %s twice", key)
				}
				series[key] = strconv.FormatFloat(v, 'g', -1, 64)
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				put("", "", "", m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				put("", "", "", m.GetGauge().GetValue())
			case dto.MetricType_UNTYPED:
				put("", "", "", m.GetUntyped().GetValue())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					if !math.IsInf(b.GetUpperBound(), 1) {
						put("_bucket", "le", strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64), float64(b.GetCumulativeCount()))
					}
				}
				put("_bucket", "le", "+Inf", float64(h.GetSampleCount()))
				put("_sum", "", "", h.GetSampleSum())
				put("_count", "", "", float64(h.GetSampleCount()))
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.GetQuantile() {
					put("", "quantile", strconv.FormatFloat(q.GetQuantile(), 'g', -1, 64), q.GetValue())
				}
				put("_sum", "", "", s.GetSampleSum())
				put("_count", "", "", float64(s.GetSampleCount()))
			}
		}
	}
	return series
}
