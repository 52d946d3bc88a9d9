package dataplane

// End-to-end tests of the RequestMirror filter: copies go to real
// loopback backends and arrive asynchronously, so the tests wait on
// channels and counters with a deadline, never on a fixed sleep.

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/compiled"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
)

// mirrorHit is what a mirror backend saw of one request.
type mirrorHit struct {
	method, target, host string
	header               http.Header
	body                 string
}

// mirrorSink is a backend that reports every request it gets. With gate
// set, it holds each request until gate is closed (or hold passes).
type mirrorSink struct {
	addr string
	hits chan mirrorHit
	n    atomic.Int64
}

func startMirrorSink(t *testing.T, proto string, gate <-chan struct{}, hold time.Duration) *mirrorSink {
	t.Helper()
	s := &mirrorSink{hits: make(chan mirrorHit, 1024)}
	h := func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.n.Add(1)
		select {
		case s.hits <- mirrorHit{r.Method, r.RequestURI, r.Host, r.Header.Clone(), string(body)}:
		default:
		}
		if gate != nil {
			select {
			case <-gate:
			case <-time.After(hold):
			}
		}
		io.WriteString(w, "mirror answer, ignored")
	}
	if proto == proxycfg.ProtoH2C {
		s.addr = h2cBackend(t, h)
	} else {
		s.addr = startBackend(t, h)
	}
	return s
}

func (s *mirrorSink) cluster(name, proto string) proxycfg.Cluster {
	c := cluster(name, s.addr)
	c.Protocol = proto
	return c
}

// next waits up to 5 s for the next mirrored request.
func (s *mirrorSink) next(t *testing.T) mirrorHit {
	t.Helper()
	select {
	case h := <-s.hits:
		return h
	case <-time.After(5 * time.Second):
		t.Fatal("no mirrored request arrived within 5 s")
		return mirrorHit{}
	}
}

// waitFor polls cond until it holds, failing the test after 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after 5 s waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func mirrorFilter(cl string, percent *int) proxycfg.Filter {
	return proxycfg.Filter{Type: proxycfg.FilterRequestMirror, RequestMirror: &proxycfg.Mirror{Cluster: cl, Percent: percent}}
}

func TestE2EMirrorCopiesRequest(t *testing.T) {
	for _, proto := range []string{proxycfg.ProtoHTTP1, proxycfg.ProtoH2C} {
		t.Run(proto, func(t *testing.T) {
			be := startBackend(t, echo("primary"))
			sink := startMirrorSink(t, proto, nil, 0)
			r := to("a")
			r.Filters = []proxycfg.Filter{
				feReqMod(proxycfg.HeaderModifier{Set: feHdrs("X-Filtered", "yes"), Remove: []string{"X-Secret"}}),
				mirrorFilter("m", nil),
			}
			r.Backends[0].Filters = []proxycfg.Filter{feReqMod(proxycfg.HeaderModifier{Add: feHdrs("X-Backend-Filter", "b")})}
			e := newTestEnv(t, config([]proxycfg.Route{route("r", r)}, cluster("a", be), sink.cluster("m", proto)))

			const payload = "hello mirror"
			res, body := feSend(t, e.client, "POST", e.bound.Origin, "app.example.com", "/mirror/path?q=1&r=%20", strings.NewReader(payload),
				"X-Secret", "s3cr3t", "X-Filtered", "client", "X-Client", "c", "Content-Type", "text/plain")
			if res.StatusCode != 200 || echoed(body, "body") != payload {
				t.Fatalf("primary: status %d, body %q", res.StatusCode, body)
			}
			h := sink.next(t)
			if h.method != "POST" || h.target != "/mirror/path?q=1&r=%20" || h.host != "app.example.com" || h.body != payload {
				t.Errorf("mirror got %s %s Host %q body %q; want POST /mirror/path?q=1&r=%%20 Host app.example.com body %q",
					h.method, h.target, h.host, h.body, payload)
			}
			for name, want := range map[string]string{
				"X-Filtered":        "yes",
				"X-Secret":          "",
				"X-Client":          "c",
				"X-Backend-Filter":  "b",
				"Content-Type":      "text/plain",
				"X-Forwarded-For":   "127.0.0.1",
				"X-Forwarded-Proto": "http",
			} {
				got := h.header.Values(name)
				if want == "" && len(got) != 0 || want != "" && (len(got) != 1 || got[0] != want) {
					t.Errorf("mirror saw %s = %q, want %q", name, got, want)
				}
			}
			// The primary saw the same filtered headers.
			if echoed(body, "X-Filtered") != "yes" || echoed(body, "X-Secret") != "" {
				t.Errorf("primary headers not filtered:\n%s", body)
			}
			waitFor(t, "MirrorsSent to count the copy", func() bool { return e.p.Stats().MirrorsSent.Load() == 1 })
			if d := e.p.Stats().MirrorsDropped.Load(); d != 0 {
				t.Errorf("MirrorsDropped = %d", d)
			}

			// A GET without body is mirrored as a GET without body.
			feSend(t, e.client, "GET", e.bound.Origin, "app.example.com", "/g", nil)
			if h := sink.next(t); h.method != "GET" || h.target != "/g" || h.body != "" {
				t.Errorf("mirror got %s %s body %q", h.method, h.target, h.body)
			}
		})
	}
}

func TestE2EMirrorPercentZeroNeverMirrors(t *testing.T) {
	be := startBackend(t, echo("primary"))
	never := startMirrorSink(t, proxycfg.ProtoHTTP1, nil, 0)
	never2 := startMirrorSink(t, proxycfg.ProtoHTTP1, nil, 0)
	always := startMirrorSink(t, proxycfg.ProtoHTTP1, nil, 0)
	zero, hundred := 0, 100
	r := to("a")
	r.Filters = []proxycfg.Filter{
		mirrorFilter("never", &zero),
		{Type: proxycfg.FilterRequestMirror, RequestMirror: &proxycfg.Mirror{Cluster: "never2", Fraction: &proxycfg.Fraction{Numerator: 0, Denominator: 1000}}},
		mirrorFilter("always", &hundred),
	}
	e := newTestEnv(t, config([]proxycfg.Route{route("r", r)},
		cluster("a", be), cluster("never", never.addr), cluster("never2", never2.addr), cluster("always", always.addr)))
	const n = 50
	for range n {
		if res, _ := e.get("app.example.com", "/"); res.StatusCode != 200 {
			t.Fatalf("status %d", res.StatusCode)
		}
	}
	// Every copy the proxy made has been sent once the 100% mirror has all
	// of its copies and none is in flight.
	waitFor(t, "the 100% mirror to get every request", func() bool {
		return always.n.Load() == n && e.p.mirrorsInFlight.Load() == 0
	})
	if got := never.n.Load() + never2.n.Load(); got != 0 {
		t.Errorf("percent 0 / fraction 0 mirrors got %d requests", got)
	}
	if s, d := e.p.Stats().MirrorsSent.Load(), e.p.Stats().MirrorsDropped.Load(); s != n || d != 0 {
		t.Errorf("MirrorsSent %d, MirrorsDropped %d; want %d and 0", s, d, n)
	}
}

func TestE2EMirrorDoesNotSlowClient(t *testing.T) {
	be := startBackend(t, echo("primary"))
	gate := make(chan struct{})
	sink := startMirrorSink(t, proxycfg.ProtoHTTP1, gate, 2*time.Second)
	t.Cleanup(func() { close(gate) }) // runs before the sink's server closes
	r := to("a")
	r.Filters = []proxycfg.Filter{mirrorFilter("m", nil)}
	e := newTestEnv(t, config([]proxycfg.Route{route("r", r)}, cluster("a", be), sink.cluster("m", proxycfg.ProtoHTTP1)))

	for _, method := range []string{"GET", "POST"} {
		var body io.Reader
		if method == "POST" {
			body = strings.NewReader("small body")
		}
		start := time.Now()
		res, got := feSend(t, e.client, method, e.bound.Origin, "app.example.com", "/slow", body)
		elapsed := time.Since(start)
		if res.StatusCode != 200 || echoed(got, "backend") != "primary" {
			t.Fatalf("%s: status %d, body %q", method, res.StatusCode, got)
		}
		if elapsed >= time.Second {
			t.Errorf("%s took %v with a mirror backend that takes 2 s; the client must not wait for mirrors", method, elapsed)
		}
		// The copy did go out (so the check above measured something).
		if h := sink.next(t); h.method != method {
			t.Errorf("mirror got %s, want %s", h.method, method)
		}
	}
}

func TestE2EMirrorLimitDropsExtra(t *testing.T) {
	be := startBackend(t, echo("primary"))
	gate := make(chan struct{})
	sink := startMirrorSink(t, proxycfg.ProtoHTTP1, gate, 30*time.Second)
	var once atomic.Bool
	release := func() {
		if once.CompareAndSwap(false, true) {
			close(gate)
		}
	}
	t.Cleanup(release)
	r := to("a")
	r.Filters = []proxycfg.Filter{mirrorFilter("m", nil)}
	e := newTestEnv(t, config([]proxycfg.Route{route("r", r)}, cluster("a", be), sink.cluster("m", proxycfg.ProtoHTTP1)),
		func(o *Options) { o.MaxMirrors = 1 })
	stats := e.p.Stats()

	// The first copy takes the only slot and is held by the backend.
	if res, _ := e.get("app.example.com", "/1"); res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	if h := sink.next(t); h.target != "/1" {
		t.Fatalf("mirror got %s", h.target)
	}
	// Further copies find no slot: dropped and counted, while the client
	// is answered as usual.
	const extra = 5
	for i := range extra {
		res, body := e.get("app.example.com", "/extra")
		if res.StatusCode != 200 || echoed(body, "backend") != "primary" {
			t.Fatalf("extra request %d: status %d", i, res.StatusCode)
		}
	}
	if d := stats.MirrorsDropped.Load(); d != extra {
		t.Errorf("MirrorsDropped = %d, want %d", d, extra)
	}
	if n := sink.n.Load(); n != 1 {
		t.Errorf("mirror backend got %d requests while its slot was taken, want 1", n)
	}

	// Once the held copy finishes, the slot is free again.
	release()
	waitFor(t, "the held mirror to finish", func() bool {
		return stats.MirrorsSent.Load() == 1 && e.p.mirrorsInFlight.Load() == 0
	})
	if res, _ := e.get("app.example.com", "/after"); res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	if h := sink.next(t); h.target != "/after" {
		t.Errorf("mirror got %s, want /after", h.target)
	}
	waitFor(t, "the second copy to be counted", func() bool { return stats.MirrorsSent.Load() == 2 })
	if d := stats.MirrorsDropped.Load(); d != extra {
		t.Errorf("MirrorsDropped = %d after the slot freed, want still %d", d, extra)
	}
}

func TestE2EMirrorLargeBodyNotMirrored(t *testing.T) {
	be := startBackend(t, echo("primary"))
	sink := startMirrorSink(t, proxycfg.ProtoHTTP1, nil, 0)
	r := to("a")
	r.Filters = []proxycfg.Filter{mirrorFilter("m", nil)}
	e := newTestEnv(t, config([]proxycfg.Route{route("r", r)}, cluster("a", be), sink.cluster("m", proxycfg.ProtoHTTP1)))
	stats := e.p.Stats()

	// To an HTTP/1.1 backend a body is kept up to the request buffer.
	limit := max(DefaultRequestBuffer, compiled.MaxReplayBody)
	big := strings.Repeat("b", limit+1)
	for i, chunked := range []bool{false, true} {
		var body io.Reader = strings.NewReader(big)
		if chunked {
			body = struct{ io.Reader }{body} // unknown length: sent chunked
		}
		res, got := feSend(t, e.client, "POST", e.bound.Origin, "app.example.com", "/big", body)
		if res.StatusCode != 200 || echoed(got, "body") != big {
			t.Fatalf("chunked=%v: primary status %d, body of %d bytes arrived", chunked, res.StatusCode, len(echoed(got, "body")))
		}
		// The drop is decided before the request is forwarded.
		if d := stats.MirrorsDropped.Load(); d != int64(i+1) {
			t.Errorf("chunked=%v: MirrorsDropped = %d, want %d", chunked, d, i+1)
		}
	}

	// A body of exactly the limit is kept, so it is mirrored whole; it is
	// sent after the big ones, so once it has been counted, nothing else
	// can still be on its way.
	exact := strings.Repeat("e", limit)
	res, got := feSend(t, e.client, "POST", e.bound.Origin, "app.example.com", "/exact", strings.NewReader(exact))
	if res.StatusCode != 200 || echoed(got, "body") != exact {
		t.Fatalf("exact: status %d", res.StatusCode)
	}
	h := sink.next(t)
	if h.target != "/exact" || h.body != exact {
		t.Errorf("mirror got %s with a body of %d bytes, want /exact with %d", h.target, len(h.body), len(exact))
	}
	waitFor(t, "the copy to be counted", func() bool { return stats.MirrorsSent.Load() == 1 && e.p.mirrorsInFlight.Load() == 0 })
	if n := sink.n.Load(); n != 1 {
		t.Errorf("mirror backend got %d requests, want only the one within the limit", n)
	}
	if d := stats.MirrorsDropped.Load(); d != 2 {
		t.Errorf("MirrorsDropped = %d, want 2", d)
	}
}
