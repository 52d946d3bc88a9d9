package observe

import (
	"flag"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/pipe"
)

var update = flag.Bool("update", false, "rewrite testdata/scrape.golden")

// goldenSource is a Source whose every proxy-wide counter holds its own
// value, with one busy rule and one busy cluster.
func goldenSource() *fakeSource {
	rule := &RuleStats{Route: "default/shop", Rule: "main"}
	rule.Respond(200, 2*time.Millisecond)
	rule.Respond(503, 40*time.Millisecond)
	up := &UpstreamStats{}
	up.Result(200, false)
	up.Result(0, true)
	src := &fakeSource{
		version:  "v7",
		rules:    []*RuleStats{rule},
		clusters: []Cluster{{Name: "b", Endpoints: 2, Inflight: 1, IdleConns: 3, OpenConns: 5, Upstream: up}},
		listens:  []*ListenerStats{{Listener: "infra/gw/http"}},
	}
	src.listens[0].Observe(2 * time.Millisecond)
	c := &src.counters
	for n, v := range map[*atomic.Int64]int64{
		&c.Requests: 101, &c.NoRoute: 102, &c.UpstreamErrors: 103,
		&c.ClientBodyTimeouts: 104, &c.ClientBadBodies: 105, &c.ClientLimited: 106,
		&c.ClientUploadLimited: 107, &c.ClientGone: 108, &c.ClientBadPaths: 109,
		&c.Timeouts: 110, &c.Retries: 111, &c.MirrorsSent: 112, &c.MirrorsDropped: 113,
		&c.WebSockets: 114, &c.ConfigLoaded: 115, &c.ConfigRejected: 116,
		&c.ClusterUpdates: 117, &c.RoutePatches: 118,
	} {
		n.Store(v)
	}
	for i := range c.Access { // allowed, then cfaccess's reasons in order
		c.Access[i].Store(int64(120 + i))
	}
	for i := range c.Responses {
		c.Responses[i].Store(int64(90 + i))
	}
	return src
}

// tunnelgateFamilies are the tunnelgate_ families of a scrape, each
// family's lines (HELP, TYPE, samples) by its name; the go_ and process_
// ones change from run to run.
func tunnelgateFamilies(text string) map[string]string {
	out := map[string]string{}
	name := ""
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			name, _, _ = strings.Cut(rest, " ")
		}
		if strings.HasPrefix(name, "tunnelgate_") && line != "" {
			out[name] += line + "\n"
		}
	}
	return out
}

// Every family in testdata/scrape.golden is served as written there, byte
// for byte: name, HELP text, type, labels and values. Dashboards and
// alerts read them, so a change to one is a change for every user; -update
// rewrites the file with every tunnelgate_ family served with DetailRoute,
// which serves every family. A family not in the file yet fails nothing
// here (TestCountersCatalogued holds it to docs/metrics.md).
func TestScrapeGolden(t *testing.T) {
	_, text := scrape(t, goldenSource(), MetricsOptions{Detail: DetailRoute})
	got := tunnelgateFamilies(text)
	path := filepath.Join("testdata", "scrape.golden")
	if *update {
		names := slices.Sorted(maps.Keys(got))
		var b strings.Builder
		for _, name := range names {
			b.WriteString(got[name])
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := tunnelgateFamilies(string(golden))
	if len(want) == 0 {
		t.Fatalf("%s holds no tunnelgate_ family", path)
	}
	for name, w := range want {
		if g := got[name]; g != w {
			t.Errorf("%s is not served as %s has it (go test -update rewrites the file):\n%s", name, path, lineDiff(w, g))
		}
	}
}

// lineDiff lists the lines only in want (-) and only in got (+).
func lineDiff(want, got string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var b strings.Builder
	for _, l := range strings.Split(want, "\n") {
		if !g[l] {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if !w[l] {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}

// BenchmarkScrape serves /metrics from goldenSource: what one scrape of
// an idle proxy costs, go_ and process_ families included.
func BenchmarkScrape(b *testing.B) {
	h, err := NewMetricsHandler(goldenSource(), MetricsOptions{})
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/metrics", nil)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("status %d", rec.Code)
		}
	}
}

// Labels are written in the order of their names, as Prometheus's client
// writes them, but le, which goes last: a series reads the same in our
// scrape as in one the client would write, byte for byte.
func TestScrapeLabelsInNameOrder(t *testing.T) {
	src := goldenSource()
	st := &StreamStats{}
	st.Outcome(StreamRelayed)
	st.Start()
	st.End(pipe.Result{ClientToBackend: 10, BackendToClient: 20, Duration: time.Second, End: StreamEnds[0]})
	src.streams = []StreamRoute{{Kind: "TCPRoute", Name: "default/ssh", Stats: st}}
	src.clusters = append(src.clusters, Cluster{Name: "ssh", Upstream: &UpstreamStats{}, Stream: st})
	_, text := scrape(t, src, MetricsOptions{Detail: DetailRoute})
	for _, fam := range []string{"tunnelgate_stream_route_connections_total{", "tunnelgate_stream_route_bytes_total{", "tunnelgate_stream_route_ends_total{"} {
		if !strings.Contains(text, fam) {
			t.Fatalf("no %s series in the scrape", fam)
		}
	}
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, "#") {
			continue
		}
		open := strings.IndexByte(line, '{')
		if open < 0 {
			continue
		}
		var names []string
		for _, pair := range strings.Split(line[open+1:strings.LastIndexByte(line, '}')], "\",") {
			name, _, _ := strings.Cut(pair, "=")
			names = append(names, name)
		}
		if names[len(names)-1] == "le" {
			names = names[:len(names)-1]
		}
		if !slices.IsSorted(names) {
			t.Errorf("labels out of name order: %s", strings.TrimSpace(line))
		}
	}
}
