package dataplane

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/tunnelgate/tunnelgate/dataplane/observe"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// tracedEnv is a proxy tracing every request into an in-memory exporter,
// exporting every few milliseconds.
func tracedEnv(t *testing.T, cfg *proxycfg.Config, opts ...func(*Options)) (*testEnv, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tr := observe.NewTracer(observe.TracerOptions{Exporter: exp, Interval: 5 * time.Millisecond})
	t.Cleanup(tr.Close)
	opts = append(opts, func(o *Options) { o.Tracer = tr })
	return newTestEnv(t, cfg, opts...), exp
}

// waitSpans waits for n spans: the server span ends after the client has
// its answer.
func waitSpans(t *testing.T, exp *tracetest.InMemoryExporter, n int) tracetest.SpanStubs {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		spans := exp.GetSpans()
		if len(spans) >= n || time.Now().After(deadline) {
			if len(spans) != n {
				var names []string
				for _, s := range spans {
					names = append(names, s.Name)
				}
				t.Fatalf("%d spans %v, want %d", len(spans), names, n)
			}
			return spans
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// attrs are a span's attributes as strings, by key.
func attrs(s tracetest.SpanStub) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

func wantAttrs(t *testing.T, s tracetest.SpanStub, want map[string]string) {
	t.Helper()
	got := attrs(s)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("span %q: %s = %q, want %q (all: %v)", s.Name, k, got[k], v, got)
		}
	}
}

func byKind(spans tracetest.SpanStubs, kind trace.SpanKind) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.SpanKind == kind {
			out = append(out, s)
		}
	}
	return out
}

const (
	clientTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID  = "00f067aa0ba902b7"
)

// A request gets a server span continuing the client's trace, a client
// span per backend attempt (a retry makes two), and one per mirror; each
// backend sees a traceparent naming the span of the attempt (or mirror)
// that reached it.
func TestTracingSpansAndTraceparent(t *testing.T) {
	var calls atomic.Int32
	seen := make(chan string, 4)
	be := startBackend(t, func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Get("Traceparent")
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	})
	mirrored := make(chan string, 1)
	mb := startBackend(t, func(w http.ResponseWriter, r *http.Request) { mirrored <- r.Header.Get("Traceparent") })

	rule := to("app")
	rule.Name = "main"
	rule.Retry = &proxycfg.Retry{Codes: []int{503}, Attempts: 1}
	rule.Filters = []proxycfg.Filter{mirrorFilter("shadow", nil)}
	e, exp := tracedEnv(t, config([]proxycfg.Route{route("traced", rule)}, cluster("app", be), cluster("shadow", mb)))

	res, body := e.get("app.example.com", "/orders?id=7",
		"Traceparent", "00-"+clientTraceID+"-"+clientSpanID+"-01", "Tracestate", "vendor=x")
	if res.StatusCode != 200 || body != "ok" {
		t.Fatalf("status %d %q", res.StatusCode, body)
	}
	first, second := <-seen, <-seen
	mirrorParent := <-mirrored

	spans := waitSpans(t, exp, 4)
	servers := byKind(spans, trace.SpanKindServer)
	if len(servers) != 1 {
		t.Fatalf("%d server spans, want 1", len(servers))
	}
	srv := servers[0]
	if srv.Name != "GET default/traced" {
		t.Errorf("server span named %q", srv.Name)
	}
	if got := srv.SpanContext.TraceID().String(); got != clientTraceID {
		t.Errorf("server span in trace %s, want the client's %s", got, clientTraceID)
	}
	if got := srv.Parent.SpanID().String(); got != clientSpanID {
		t.Errorf("server span's parent %s, want the client's span %s", got, clientSpanID)
	}
	wantAttrs(t, srv, map[string]string{
		"http.request.method":       "GET",
		"url.path":                  "/orders",
		"server.address":            "app.example.com",
		"http.response.status_code": "200",
		"tunnelgate.route":          "default/traced",
		"tunnelgate.rule":           "main",
		"tunnelgate.backend":        "app",
		"tunnelgate.endpoint":       be,
		"tunnelgate.retries":        "1",
	})

	clients := byKind(spans, trace.SpanKindClient)
	var attempts []tracetest.SpanStub
	var mirror *tracetest.SpanStub
	for i, s := range clients {
		if s.Parent.SpanID() != srv.SpanContext.SpanID() {
			t.Errorf("span %q is not a child of the server span", s.Name)
		}
		if strings.HasPrefix(s.Name, "mirror") {
			mirror = &clients[i]
		} else {
			attempts = append(attempts, s)
		}
	}
	if len(attempts) != 2 || mirror == nil {
		t.Fatalf("%d attempt spans and mirror %v, want 2 and one", len(attempts), mirror)
	}
	// Spans are exported as they end: the first attempt first.
	wantAttrs(t, attempts[0], map[string]string{"tunnelgate.attempt": "0", "http.response.status_code": "503", "server.address": "127.0.0.1"})
	wantAttrs(t, attempts[1], map[string]string{"tunnelgate.attempt": "1", "http.response.status_code": "200"})
	for i, got := range []string{first, second} {
		want := fmt.Sprintf("00-%s-%s-01", clientTraceID, attempts[i].SpanContext.SpanID())
		if got != want {
			t.Errorf("attempt %d: backend saw traceparent %q, want %q", i, got, want)
		}
	}
	if want := fmt.Sprintf("00-%s-%s-01", clientTraceID, mirror.SpanContext.SpanID()); mirrorParent != want {
		t.Errorf("mirror backend saw traceparent %q, want %q", mirrorParent, want)
	}
	wantAttrs(t, *mirror, map[string]string{"tunnelgate.backend": "shadow", "tunnelgate.endpoint": mb})
	e.scrapeMetrics().want(t, `tunnelgate_trace_spans_total{result="exported"}`, "4")
}

// An HTTP/2 backend gets the attempt's traceparent too, and a request no
// route matched still has its server span.
func TestTracingH2AndUnrouted(t *testing.T) {
	seen := make(chan string, 1)
	be := h2cBackend(t, func(w http.ResponseWriter, r *http.Request) { seen <- r.Header.Get("Traceparent") })
	c := cluster("grpc", be)
	c.Protocol = proxycfg.ProtoH2C
	e, exp := tracedEnv(t, config([]proxycfg.Route{route("h2", to("grpc"))}, c))

	if res, _ := e.get("x", "/"); res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	spans := waitSpans(t, exp, 2)
	attempt := byKind(spans, trace.SpanKindClient)[0]
	if got, want := <-seen, fmt.Sprintf("00-%s-%s-01", attempt.SpanContext.TraceID(), attempt.SpanContext.SpanID()); got != want {
		t.Errorf("h2 backend saw traceparent %q, want %q", got, want)
	}
	// A new trace: no parent came with the request.
	if srv := byKind(spans, trace.SpanKindServer)[0]; srv.Parent.IsValid() {
		t.Errorf("server span has parent %v without a traceparent", srv.Parent)
	}

	exp.Reset()
	e.p.Load(config(nil))
	if res, _ := e.get("x", "/"); res.StatusCode != 404 {
		t.Fatalf("status %d", res.StatusCode)
	}
	srv := waitSpans(t, exp, 1)[0]
	if srv.Name != "GET" {
		t.Errorf("unrouted span named %q, want GET", srv.Name)
	}
	wantAttrs(t, srv, map[string]string{"http.response.status_code": "404"})
	if _, ok := attrs(srv)["tunnelgate.route"]; ok {
		t.Errorf("unrouted span has a route: %v", attrs(srv))
	}
}

// A WebSocket's server span says so and carries the 101; the backend's
// handshake carries the attempt's traceparent.
func TestTracingWebSocket(t *testing.T) {
	seen := make(chan string, 1)
	ws := wsBackend(false, nil)
	be := startBackend(t, func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Get("Traceparent")
		ws(w, r)
	})
	e, exp := tracedEnv(t, config([]proxycfg.Route{route("chat", to("ws"))}, cluster("ws", be)))
	c, res := wsHandshake(t, e.bound.Origin, "chat.example.com")
	if res.StatusCode != 101 {
		t.Fatalf("handshake: status %d", res.StatusCode)
	}
	if err := c.roundTrip("hello"); err != nil {
		t.Fatal(err)
	}
	c.nc.Close()
	spans := waitSpans(t, exp, 2)
	srv := byKind(spans, trace.SpanKindServer)[0]
	wantAttrs(t, srv, map[string]string{"tunnelgate.websocket": "true", "http.response.status_code": "101"})
	attempt := byKind(spans, trace.SpanKindClient)[0]
	if got := <-seen; !strings.Contains(got, attempt.SpanContext.SpanID().String()) {
		t.Errorf("WebSocket backend saw traceparent %q, want the attempt's span %s", got, attempt.SpanContext.SpanID())
	}
}

// Without tracing the client's traceparent reaches the backend untouched.
func TestTraceparentPassesThroughWhenTracingIsOff(t *testing.T) {
	seen := make(chan string, 1)
	be := startBackend(t, func(w http.ResponseWriter, r *http.Request) { seen <- r.Header.Get("Traceparent") })
	e := newTestEnv(t, config([]proxycfg.Route{route("r", to("c"))}, cluster("c", be)))
	tp := "00-" + clientTraceID + "-" + clientSpanID + "-01"
	e.get("x", "/", "Traceparent", tp)
	if got := <-seen; got != tp {
		t.Errorf("backend saw %q, want the client's %q", got, tp)
	}
}

// closeAfter waits for n lines to be written or dropped, then closes
// the log: a request's line is queued after the client has its answer.
func closeAfter(t *testing.T, al *observe.AccessLog, n int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for al.Written()+al.Dropped() < n && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	al.Close()
}

// accessLine is a parsed access log line.
type accessLine map[string]any

func parseAccessLog(t *testing.T, text string) []accessLine {
	t.Helper()
	var lines []accessLine
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		var l accessLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("access log line %q is not JSON: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	return lines
}

func (l accessLine) want(t *testing.T, key string, want any) {
	t.Helper()
	if got := l[key]; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("access log %s = %v, want %v (line %v)", key, got, want, l)
	}
}

// Each request is one JSON line with the fields a reader needs; the
// client's address comes from Cf-Connecting-Ip behind the tunnel.
func TestAccessLogLines(t *testing.T) {
	be := startBackend(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") })
	var out testproc.SyncBuffer
	al := observe.NewAccessLog(&out, observe.AccessLogOptions{})
	rule := to("app")
	e, _ := tracedEnv(t, config([]proxycfg.Route{route("shop", rule)}, cluster("app", be)), func(o *Options) { o.AccessLog = al })

	e.get("shop.example.com", "/cart?token=secret", "Cf-Connecting-Ip", "203.0.113.9")
	// A target net/http's client would not send: quotes, a backslash and
	// a byte that is not UTF-8.
	nc, err := net.Dial("tcp", e.bound.Origin)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(nc, "GET /\"q\"\\\xff HTTP/1.1\r\nHost: shop.example.com\r\nConnection: close\r\n\r\n")
	io.ReadAll(nc)
	nc.Close()
	e.p.Load(config(nil))
	e.get("other.example.com", "/nothing")
	// The plain listener does not trust its peer: its Cf-Connecting-Ip is
	// not taken.
	req, _ := http.NewRequest("GET", "http://"+e.bound.Plain+"/direct", nil)
	req.Header.Set("Cf-Connecting-Ip", "198.51.100.1")
	e.do(e.client, req)
	closeAfter(t, al, 4)

	lines := parseAccessLog(t, out.String())
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4:\n%s", len(lines), out.String())
	}
	l := lines[0]
	for k, v := range map[string]any{
		"client_ip": "203.0.113.9", "host": "shop.example.com", "method": "GET", "path": "/cart?token=secret",
		"proto": "HTTP/1.1", "status": 200, "bytes": 5, "route": "default/shop", "rule": "0",
		"backend": "app", "endpoint": be, "retries": 0,
	} {
		l.want(t, k, v)
	}
	if ts, err := time.Parse(time.RFC3339Nano, fmt.Sprint(l["time"])); err != nil || time.Since(ts) > time.Minute {
		t.Errorf("time %v: %v", l["time"], err)
	}
	if d, ok := l["duration_ms"].(float64); !ok || d <= 0 {
		t.Errorf("duration_ms %v", l["duration_ms"])
	}
	if id, _ := l["trace_id"].(string); len(id) != 32 {
		t.Errorf("trace_id %q", l["trace_id"])
	}
	lines[1].want(t, "path", "/\"q\"\\\ufffd")
	lines[2].want(t, "status", 404)
	if _, ok := lines[2]["route"]; ok {
		t.Errorf("unrouted line has a route: %v", lines[2])
	}
	lines[3].want(t, "client_ip", "127.0.0.1")
	if al.Written() != 4 || al.Dropped() != 0 {
		t.Errorf("written %d dropped %d, want 4 and 0", al.Written(), al.Dropped())
	}
}

// OmitQuery drops the query; sampling at 0.5 logs about half.
func TestAccessLogOptions(t *testing.T) {
	be := startBackend(t, func(w http.ResponseWriter, r *http.Request) {})
	var out testproc.SyncBuffer
	al := observe.NewAccessLog(&out, observe.AccessLogOptions{OmitQuery: true})
	e := newTestEnv(t, config([]proxycfg.Route{route("r", to("c"))}, cluster("c", be)), func(o *Options) { o.AccessLog = al })
	e.get("x", "/p?q=1")
	closeAfter(t, al, 1)
	parseAccessLog(t, out.String())[0].want(t, "path", "/p")

	var sampled testproc.SyncBuffer
	half := observe.NewAccessLog(&sampled, observe.AccessLogOptions{Sample: 0.5})
	e = newTestEnv(t, config([]proxycfg.Route{route("r", to("c"))}, cluster("c", be)), func(o *Options) { o.AccessLog = half })
	const n = 200
	for range n {
		e.get("x", "/")
	}
	// Unsampled requests leave no trace to wait for; the last request's
	// finish has run once a scrape sees nothing in flight.
	e.waitMetric("tunnelgate_inflight_requests", "0")
	half.Close()
	// Binomial(200, 0.5) falls outside 60..140 with probability ~1e-8.
	if got := len(parseAccessLog(t, sampled.String())); got < 60 || got > 140 {
		t.Errorf("%d of %d requests logged at 0.5", got, n)
	}
}

// blockedWriter blocks every write until released.
type blockedWriter struct {
	release chan struct{}
	mu      sync.Mutex
	n       int
}

func (w *blockedWriter) Write(p []byte) (int, error) {
	<-w.release
	w.mu.Lock()
	w.n += strings.Count(string(p), "\n")
	w.mu.Unlock()
	return len(p), nil
}

// A writer that stops does not stop requests: lines beyond the queue are
// dropped, counted, and served as a metric.
func TestAccessLogDropsWhenTheWriterIsStuck(t *testing.T) {
	be := startBackend(t, func(w http.ResponseWriter, r *http.Request) {})
	bw := &blockedWriter{release: make(chan struct{})}
	al := observe.NewAccessLog(bw, observe.AccessLogOptions{Queue: 2})
	e := newTestEnv(t, config([]proxycfg.Route{route("r", to("c"))}, cluster("c", be)), func(o *Options) { o.AccessLog = al })
	const n = 20
	for range n {
		if res, _ := e.get("x", "/"); res.StatusCode != 200 {
			t.Fatalf("status %d", res.StatusCode)
		}
	}
	// One line is held by the stuck writer, two wait in the queue (or
	// one, if a line was offered before the writer took the first).
	e.waitMetric("tunnelgate_inflight_requests", "0")
	if d := al.Dropped(); d < n-4 {
		t.Errorf("%d lines dropped, want at least %d", d, n-4)
	}
	e.scrapeMetrics().want(t, `tunnelgate_access_log_lines_total{result="dropped"}`, fmt.Sprint(al.Dropped()))
	close(bw.release)
	closeAfter(t, al, n)
	if got := int64(bw.n); got != al.Written() || got+al.Dropped() != n {
		t.Errorf("wrote %d, counted written %d dropped %d, want %d in all", got, al.Written(), al.Dropped(), n)
	}
}

// The per-rule and per-cluster families count what happened: responses
// by class and latency per rule, attempts by result per cluster, pooled
// connections, requests in flight.
func TestRouteAndUpstreamMetrics(t *testing.T) {
	var calls atomic.Int32
	be := startBackend(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	rule := to("app")
	rule.Name = "main"
	rule.Retry = &proxycfg.Retry{Codes: []int{503}, Attempts: 1}
	down := to("gone")
	e := newTestEnv(t, config([]proxycfg.Route{route("shop", rule), {Kind: proxycfg.KindHTTP, Name: "dead", Hostnames: []string{"dead.example.com"}, Rules: []proxycfg.Rule{down}}},
		cluster("app", be), cluster("gone", closedAddr(t))), func(o *Options) { o.MetricsDetail = observe.DetailRoute })
	e.get("x", "/")
	e.get("x", "/")
	e.get("dead.example.com", "/")

	s := e.waitMetric(`tunnelgate_route_requests_total{class="2xx",route="default/shop",rule="main"}`, "2")
	s.want(t, `tunnelgate_route_requests_total{class="5xx",route="default/dead",rule="0"}`, "1")
	s.want(t, `tunnelgate_route_request_duration_seconds_count{route="default/shop",rule="main"}`, "2")
	s.want(t, `tunnelgate_route_request_duration_seconds_bucket{route="default/shop",rule="main",le="+Inf"}`, "2")
	s.want(t, `tunnelgate_upstream_requests_total{cluster="app",result="5xx"}`, "1")
	s.want(t, `tunnelgate_upstream_requests_total{cluster="app",result="2xx"}`, "2")
	s.want(t, `tunnelgate_upstream_requests_total{cluster="gone",result="error"}`, "1")
	s.want(t, `tunnelgate_upstream_response_seconds_count{cluster="app"}`, "3")
	s.want(t, `tunnelgate_upstream_response_seconds_count{cluster="gone"}`, "0")
	s.want(t, `tunnelgate_upstream_connections{cluster="app",state="idle"}`, "1")
	s.want(t, `tunnelgate_upstream_connections{cluster="app",state="active"}`, "0")
	s.want(t, `tunnelgate_inflight_requests`, "0")
	s.want(t, `tunnelgate_access_log_lines_total{result="written"}`, "0")

	// A new config keeps the counts of the rules it keeps and drops the
	// others.
	if err := e.p.Load(config([]proxycfg.Route{route("shop", rule)}, cluster("app", be))); err != nil {
		t.Fatal(err)
	}
	s = e.scrapeMetrics()
	s.want(t, `tunnelgate_route_requests_total{class="2xx",route="default/shop",rule="main"}`, "2")
	s.absent(t, `tunnelgate_route_requests_total{class="1xx",route="default/dead"`)
	s.absent(t, `tunnelgate_upstream_requests_total{cluster="gone"`)
}

// By default a scrape serves each rule's and cluster's counts that are
// not zero, and latency by listener: every request, routed or not, under
// the listener that took it, or "" when none did; a cluster's own
// gauges only when it has no endpoint, and the pools' connections added
// up, an endpoint two clusters list counted once. The listeners' counts are kept
// across a config load that keeps the listener.
func TestMetricsListenerDetail(t *testing.T) {
	be := startBackend(t, echo("ok"))
	cfg := config([]proxycfg.Route{
		route("shop", to("app")),
		{Kind: proxycfg.KindHTTP, Name: "named", Listeners: []string{"gw/named"}, Rules: []proxycfg.Rule{to("app-too")}},
	}, cluster("app", be), cluster("app-too", be), cluster("empty"))
	cfg.Listeners = []proxycfg.Listener{
		{Name: "gw/http", Port: 80, Protocol: proxycfg.ListenerHTTP, Hostname: "shop.example"},
		{Name: "gw/named", Port: 80, Protocol: proxycfg.ListenerHTTP, Hostname: "named.example"},
	}
	e := newTestEnv(t, cfg)
	for _, host := range []string{"shop.example", "shop.example", "named.example", "nowhere.example"} {
		e.get(host, "/")
	}
	e.get("shop.example", "/a%00b") // refused (400) before a listener is chosen
	s := e.waitMetric(`tunnelgate_listener_request_duration_seconds_count{listener="gw/http"}`, "2")
	s.want(t, `tunnelgate_listener_request_duration_seconds_count{listener="gw/named"}`, "1")
	s.want(t, `tunnelgate_listener_request_duration_seconds_count{listener=""}`, "2")
	s.want(t, `tunnelgate_listener_request_duration_seconds_bucket{listener="gw/http",le="+Inf"}`, "2")
	s.want(t, `tunnelgate_route_requests_total{class="2xx",route="default/shop",rule="0"}`, "2")
	s.want(t, `tunnelgate_route_requests_total{class="2xx",route="default/named",rule="0"}`, "1")
	s.want(t, `tunnelgate_upstream_requests_total{cluster="app",result="2xx"}`, "2")
	s.want(t, `tunnelgate_upstream_requests_total{cluster="app-too",result="2xx"}`, "1")
	s.want(t, `tunnelgate_cluster_endpoints{cluster="empty"}`, "0")
	s.want(t, `tunnelgate_upstream_pool_connections{state="idle"}`, "1")
	s.want(t, `tunnelgate_upstream_pool_connections{state="active"}`, "0")
	for _, prefix := range []string{
		`tunnelgate_route_requests_total{class="5xx"`, `tunnelgate_upstream_requests_total{cluster="app",result="error"`,
		"tunnelgate_route_request_duration_seconds", "tunnelgate_upstream_response_seconds", "tunnelgate_upstream_connections",
		"tunnelgate_cluster_inflight_requests", `tunnelgate_cluster_endpoints{cluster="app"`,
	} {
		s.absent(t, prefix)
	}

	// A load that keeps gw/http and drops gw/named keeps the one's counts
	// and takes the other's series away.
	cfg = config([]proxycfg.Route{route("shop", to("app"))}, cluster("app", be))
	cfg.Listeners = []proxycfg.Listener{{Name: "gw/http", Port: 80, Protocol: proxycfg.ListenerHTTP, Hostname: "shop.example"}}
	if err := e.p.Load(cfg); err != nil {
		t.Fatal(err)
	}
	e.get("shop.example", "/")
	s = e.waitMetric(`tunnelgate_listener_request_duration_seconds_count{listener="gw/http"}`, "3")
	s.absent(t, `tunnelgate_listener_request_duration_seconds_count{listener="gw/named"}`)
}
