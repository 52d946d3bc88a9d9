// This file implements the tests of the streamed families and of their text writer.

package observe

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"maps"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// streamedSource has a busy rule, an idle one, a busy cluster, an idle
// cluster without endpoints and an idle one with, two listeners (one
// idle) and the requests no listener took.
func streamedSource() *fakeSource {
	busy := &RuleStats{Route: "default/shop", Rule: "main"}
	busy.Respond(200, 2*time.Millisecond)
	busy.Respond(204, 3*time.Millisecond)
	busy.Respond(503, 40*time.Millisecond)
	up := &UpstreamStats{}
	up.Result(200, false)
	up.Head(time.Millisecond)
	up.Result(0, true)
	src := &fakeSource{
		version: "v1",
		rules:   []*RuleStats{busy, {Route: "default/idle", Rule: "0"}},
		clusters: []Cluster{
			{Name: "b", Endpoints: 2, Inflight: 1, IdleConns: 3, OpenConns: 5, Upstream: up},
			{Name: "a", Upstream: &UpstreamStats{}},
			{Name: "c", Endpoints: 1, Upstream: &UpstreamStats{}},
		},
		listens: []*ListenerStats{{Listener: "gw/http"}, {Listener: "gw/idle"}, {}},
	}
	src.listens[0].Observe(time.Millisecond)
	src.listens[2].Observe(time.Second)
	return src
}

// histogramSeries are the keys of a histogram's series with labels (as
// testmetrics.Series writes them, labels sorted, le last).
func histogramSeries(name, labels string) []string {
	var out []string
	for _, le := range append(leLabels[:], "+Inf") {
		out = append(out, name+"_bucket{"+labels+`,le="`+le+`"}`)
	}
	return append(out, name+"_sum{"+labels+"}", name+"_count{"+labels+"}")
}

// A scrape holds exactly these series of the streamed families, at each
// detail: counts that are not zero, latency by listener, and by rule and
// cluster only with DetailRoute.
func TestStreamedSeriesExactly(t *testing.T) {
	common := []string{
		`tunnelgate_route_requests_total{class="2xx",route="default/shop",rule="main"}`,
		`tunnelgate_route_requests_total{class="5xx",route="default/shop",rule="main"}`,
		`tunnelgate_upstream_requests_total{cluster="b",result="2xx"}`,
		`tunnelgate_upstream_requests_total{cluster="b",result="timeout"}`,
		`tunnelgate_cluster_endpoints{cluster="a"}`,
		`tunnelgate_upstream_pool_connections{state="idle"}`,
		`tunnelgate_upstream_pool_connections{state="active"}`,
	}
	common = append(common, histogramSeries("tunnelgate_listener_request_duration_seconds", `listener="gw/http"`)...)
	common = append(common, histogramSeries("tunnelgate_listener_request_duration_seconds", `listener=""`)...)
	route := []string{
		`tunnelgate_cluster_endpoints{cluster="b"}`,
		`tunnelgate_cluster_inflight_requests{cluster="b"}`,
		`tunnelgate_upstream_connections{cluster="b",state="idle"}`,
		`tunnelgate_upstream_connections{cluster="b",state="active"}`,
	}
	route = append(route, histogramSeries("tunnelgate_route_request_duration_seconds", `route="default/shop",rule="main"`)...)
	route = append(route, histogramSeries("tunnelgate_upstream_response_seconds", `cluster="b"`)...)

	streamed := map[string]bool{}
	for _, f := range append(slices.Clone(routeFamilies), streamFamilies...) {
		streamed[f.name] = true
	}
	for _, tc := range []struct {
		detail Detail
		want   []string
	}{{DetailListener, common}, {DetailRoute, append(slices.Clone(common), route...)}} {
		series, _ := scrape(t, streamedSource(), MetricsOptions{Detail: tc.detail})
		var got []string
		for k := range series {
			name, _, _ := strings.Cut(k, "{")
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base, ok := strings.CutSuffix(name, suffix); ok && streamed[base] {
					name = base
				}
			}
			if streamed[name] {
				got = append(got, k)
			}
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(tc.want))
		if !slices.Equal(got, want) {
			t.Errorf("%s: series\n%s\nwant\n%s", tc.detail, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		for k, v := range map[string]string{
			`tunnelgate_route_requests_total{class="2xx",route="default/shop",rule="main"}`:      "2",
			`tunnelgate_listener_request_duration_seconds_bucket{listener="gw/http",le="0.001"}`: "1",
			`tunnelgate_listener_request_duration_seconds_sum{listener=""}`:                      "1",
			`tunnelgate_upstream_pool_connections{state="active"}`:                               "2",
		} {
			if series[k] != v {
				t.Errorf("%s: %s = %q, want %s", tc.detail, k, series[k], v)
			}
		}
	}
}

// Two scrapes of the same counts are the same bytes: rules, clusters and
// listeners are written in order whatever order the Source gives them.
func TestStreamedSeriesSorted(t *testing.T) {
	src := streamedSource()
	_, first := scrape(t, src, MetricsOptions{Detail: DetailRoute})
	slices.Reverse(src.rules)
	slices.Reverse(src.clusters)
	slices.Reverse(src.listens)
	_, second := scrape(t, src, MetricsOptions{Detail: DetailRoute})
	a, b := tunnelgateFamilies(first), tunnelgateFamilies(second)
	delete(a, "tunnelgate_requests_total") // none of these change between scrapes anyway
	for name := range a {
		if a[name] != b[name] {
			t.Errorf("%s changed with the Source's order:\n%s", name, lineDiff(a[name], b[name]))
		}
	}
}

// Label values are written escaped (backslash, double quote, line feed),
// so that a name holding them reads back as it is.
func TestLabelEscaping(t *testing.T) {
	hostile := []string{`de"fault/sh\op`, "line\nfeed", `\n`, `"`, `\`, "ünï/cödé", `a\"b`}
	src := &fakeSource{}
	for i, name := range hostile {
		st := &RuleStats{Route: name, Rule: hostile[len(hostile)-1-i]}
		st.Respond(200, time.Millisecond)
		src.rules = append(src.rules, st)
		up := &UpstreamStats{}
		up.Result(200, false)
		src.clusters = append(src.clusters, Cluster{Name: name, Endpoints: 1, Upstream: up})
		l := &ListenerStats{Listener: name}
		l.Observe(time.Millisecond)
		src.listens = append(src.listens, l)
	}
	_, text := scrape(t, src, MetricsOptions{Detail: DetailRoute})
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	for family, label := range map[string]string{
		"tunnelgate_route_requests_total":              "route",
		"tunnelgate_route_request_duration_seconds":    "rule",
		"tunnelgate_upstream_requests_total":           "cluster",
		"tunnelgate_upstream_response_seconds":         "cluster",
		"tunnelgate_listener_request_duration_seconds": "listener",
	} {
		var got []string
		for _, m := range mfs[family].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label {
					got = append(got, l.GetValue())
				}
			}
		}
		slices.Sort(got)
		if want := slices.Sorted(slices.Values(hostile)); !slices.Equal(got, want) {
			t.Errorf("%s: %s values read back as %q, want %q", family, label, got, want)
		}
	}
}

// A scraper that takes gzip gets the same scrape compressed; one that
// refuses it (q=0), or does not ask, gets it plain.
func TestScrapeGzip(t *testing.T) {
	h, err := NewMetricsHandler(streamedSource(), MetricsOptions{Detail: DetailRoute})
	if err != nil {
		t.Fatal(err)
	}
	get := func(accept string) (string, string) {
		req := httptest.NewRequest("GET", "/metrics", nil)
		if accept != "" {
			req.Header.Set("Accept-Encoding", accept)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if ct := rec.Header().Get("Content-Type"); ct != textContentType {
			t.Errorf("Accept-Encoding %q: Content-Type %q", accept, ct)
		}
		return rec.Header().Get("Content-Encoding"), rec.Body.String()
	}
	_, plain := get("")
	for _, accept := range []string{"gzip", "deflate, gzip;q=0.5", "GZIP", "br;q=1.0, gzip"} {
		enc, body := get(accept)
		if enc != "gzip" {
			t.Errorf("Accept-Encoding %q: Content-Encoding %q", accept, enc)
			continue
		}
		zr, err := gzip.NewReader(strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		text, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("Accept-Encoding %q: %v", accept, err)
		}
		gzipped := tunnelgateFamilies(string(text))
		if want := tunnelgateFamilies(plain); !maps.Equal(gzipped, want) {
			t.Errorf("Accept-Encoding %q: the gzip scrape differs from the plain one", accept)
		}
	}
	for _, accept := range []string{"gzip;q=0", "deflate", "identity, gzip;q=0.000"} {
		if enc, body := get(accept); enc != "" || !strings.HasPrefix(body, "# HELP") {
			t.Errorf("Accept-Encoding %q: Content-Encoding %q", accept, enc)
		}
	}
}

// The registry's families and the streamed ones have no name in common:
// a name is one family in the whole scrape.
func TestStreamedNamesApart(t *testing.T) {
	h, err := NewMetricsHandler(streamedSource(), MetricsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mfs, err := h.(*metricsHandler).gather.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(slices.Clone(routeFamilies), streamFamilies...) {
		for _, mf := range mfs {
			if mf.GetName() == f.name {
				t.Errorf("%s is both gathered and streamed", f.name)
			}
		}
	}
}

// The writer writes a gauge's family byte for byte as the Prometheus
// library's text encoder does, whatever its label value; and a valid
// UTF-8 value reads back as it was.
func FuzzLabelValue(f *testing.F) {
	for _, seed := range []string{"", "team-0/app-0", `a"b`, `a\b`, "a\nb", `\"`, `\\n`, "\n\n", "ü/é", "tab\there", "\xff"} {
		f.Add(seed)
	}
	fam := family{name: "tunnelgate_fuzz", typ: "gauge", help: "A\\help\nwith both."}
	f.Fuzz(func(t *testing.T, v string) {
		var ours bytes.Buffer
		bw := bufio.NewWriter(&ours)
		tw := textWriter{w: bw}
		tw.begin(&fam)
		tw.series()
		tw.label("l", v)
		tw.int(7)
		bw.Flush()

		var theirs bytes.Buffer
		mf := &dto.MetricFamily{Name: ptr(fam.name), Help: ptr(fam.help), Type: dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{{Label: []*dto.LabelPair{{Name: ptr("l"), Value: ptr(v)}}, Gauge: &dto.Gauge{Value: ptr(7.0)}}}}
		if _, err := expfmt.MetricFamilyToText(&theirs, mf); err != nil {
			t.Fatal(err)
		}
		if ours.String() != theirs.String() {
			t.Fatalf("label %q written\n%q\nthe library writes\n%q", v, ours.String(), theirs.String())
		}
		if !utf8.ValidString(v) {
			return // the format's label values are UTF-8: the parser refuses it
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		mfs, err := p.TextToMetricFamilies(&ours)
		if err != nil {
			t.Fatalf("label %q: %v", v, err)
		}
		if got := mfs[fam.name].GetMetric()[0].GetLabel()[0].GetValue(); got != v {
			t.Fatalf("label %q read back as %q", v, got)
		}
	})
}

func ptr[T any](v T) *T { return &v }

// Scrapes at once each write the whole scrape: the one that finds the
// kept lists taken makes its own.
func TestScrapesAtOnce(t *testing.T) {
	h, err := NewMetricsHandler(streamedSource(), MetricsOptions{Detail: DetailRoute})
	if err != nil {
		t.Fatal(err)
	}
	bodies := make([]string, 8)
	var wg sync.WaitGroup
	for i := range bodies {
		wg.Go(func() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			bodies[i] = rec.Body.String()
		})
	}
	wg.Wait()
	want := tunnelgateFamilies(bodies[0])
	for i, b := range bodies[1:] {
		got := tunnelgateFamilies(b)
		for _, name := range []string{"tunnelgate_route_requests_total", "tunnelgate_upstream_connections", "tunnelgate_route_request_duration_seconds", "tunnelgate_listener_request_duration_seconds"} {
			if got[name] == "" || got[name] != want[name] {
				t.Errorf("scrape %d: %s differs from the first scrape's:\n%s", i+1, name, lineDiff(want[name], got[name]))
			}
		}
	}
}
