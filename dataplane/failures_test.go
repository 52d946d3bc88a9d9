package dataplane

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/testnet"
)

func TestNoConfigAnswers503(t *testing.T) {
	e := newTestEnv(t, nil)
	res, body := e.get("h", "/")
	if res.StatusCode != 503 || !strings.Contains(body, "no configuration") {
		t.Fatalf("got %d %q", res.StatusCode, body)
	}
}

// rawAnswer answers every connection's first request with resp, then
// closes it (with resp "", closes without answering).
func rawAnswer(t *testing.T, resp string) string {
	return testnet.RawServer(t, func(c net.Conn) {
		skipHead(bufio.NewReader(c))
		c.Write([]byte(resp))
	})
}

func TestFailureStatuses(t *testing.T) {
	ok := startBackend(t, echo("ok"))
	slow := startBackend(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	})
	garbage := rawAnswer(t, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd")
	hangup := rawAnswer(t, "")
	smuggle := rawAnswer(t, "HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n")
	split := rawAnswer(t, "HTTP/1.1 200 OK\r\nX-A: a\rb\r\nContent-Length: 0\r\n\r\n")
	timeout := proxycfg.Rule{Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/"}}}, Backends: []proxycfg.BackendRef{{Cluster: "slow", Weight: 1}}, Timeouts: &proxycfg.Timeouts{Request: proxycfg.Duration(200 * time.Millisecond)}}
	cfg := config([]proxycfg.Route{
		{Kind: proxycfg.KindHTTP, Name: "r", Hostnames: []string{"fail.example"}, Rules: []proxycfg.Rule{{Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/"}}}, FailStatus: 500, Backends: []proxycfg.BackendRef{{Cluster: "ok", Weight: 1}}}}},
		{Kind: proxycfg.KindHTTP, Name: "s", Hostnames: []string{"status.example"}, Rules: []proxycfg.Rule{{Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/"}}}, Backends: []proxycfg.BackendRef{{Status: 502, Weight: 1}}}}},
		{Kind: proxycfg.KindHTTP, Name: "z", Hostnames: []string{"zero.example"}, Rules: []proxycfg.Rule{{Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathPrefix, Value: "/"}}}, Backends: []proxycfg.BackendRef{{Cluster: "ok", Weight: 0}}}}},
		{Kind: proxycfg.KindHTTP, Name: "e", Hostnames: []string{"empty.example"}, Rules: []proxycfg.Rule{to("empty")}},
		{Kind: proxycfg.KindHTTP, Name: "d", Hostnames: []string{"dial.example"}, Rules: []proxycfg.Rule{to("closed")}},
		{Kind: proxycfg.KindHTTP, Name: "t", Hostnames: []string{"timeout.example"}, Rules: []proxycfg.Rule{timeout}},
		{Kind: proxycfg.KindHTTP, Name: "g", Hostnames: []string{"garbage.example"}, Rules: []proxycfg.Rule{to("garbage")}},
		{Kind: proxycfg.KindHTTP, Name: "h", Hostnames: []string{"hangup.example"}, Rules: []proxycfg.Rule{to("hangup")}},
		{Kind: proxycfg.KindHTTP, Name: "m", Hostnames: []string{"smuggle.example"}, Rules: []proxycfg.Rule{to("smuggle")}},
		{Kind: proxycfg.KindHTTP, Name: "p", Hostnames: []string{"split.example"}, Rules: []proxycfg.Rule{to("split")}},
		{Kind: proxycfg.KindHTTP, Name: "o", Hostnames: []string{"ok.example"}, Rules: []proxycfg.Rule{{Matches: []proxycfg.Match{{Path: &proxycfg.PathMatch{Type: proxycfg.PathExact, Value: "/only"}}}, Backends: []proxycfg.BackendRef{{Cluster: "ok", Weight: 1}}}}},
	},
		cluster("ok", ok), cluster("slow", slow), cluster("empty"), cluster("closed", closedAddr(t)),
		cluster("garbage", garbage), cluster("hangup", hangup), cluster("smuggle", smuggle), cluster("split", split))
	e := newTestEnv(t, cfg)
	for _, c := range []struct {
		host, path string
		want       int
	}{
		{"fail.example", "/", 500},
		{"status.example", "/", 502},
		{"zero.example", "/", 500},
		{"empty.example", "/", 503},
		{"dial.example", "/", 502},
		{"timeout.example", "/", 504},
		{"garbage.example", "/", 502},
		{"hangup.example", "/", 502},
		{"smuggle.example", "/", 502},
		{"split.example", "/", 502},
		{"ok.example", "/other", 404},
		{"unknown.example", "/", 404},
		{"ok.example", "/only", 200},
	} {
		res, body := e.get(c.host, c.path)
		if res.StatusCode != c.want {
			t.Errorf("%s%s: status %d, want %d (%q)", c.host, c.path, res.StatusCode, c.want, body)
		}
	}
	s := e.p.Stats()
	if s.Timeouts.Load() != 1 || s.NoRoute.Load() != 2 {
		t.Errorf("timeouts %d, no route %d", s.Timeouts.Load(), s.NoRoute.Load())
	}
}

// The request timeout bounds the wait for response headers only: a body
// that streams for longer than the timeout is not cut off.
func TestTimeoutDoesNotCutStreams(t *testing.T) {
	be := startBackend(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		for i := range 6 {
			w.Write([]byte{'a' + byte(i)})
			w.(http.Flusher).Flush()
			time.Sleep(150 * time.Millisecond)
		}
	})
	// The headers come at once, the body over 900 ms: a timeout of 500 ms
	// leaves a busy machine time to deliver the headers.
	rule := to("a")
	rule.Timeouts = &proxycfg.Timeouts{Request: proxycfg.Duration(500 * time.Millisecond), BackendRequest: proxycfg.Duration(500 * time.Millisecond)}
	e := newTestEnv(t, config([]proxycfg.Route{route("r", rule)}, cluster("a", be)))
	res, body := e.get("h", "/")
	if res.StatusCode != 200 || body != "abcdef" {
		t.Fatalf("got %d %q", res.StatusCode, body)
	}
}

func TestRetries(t *testing.T) {
	var hits atomic.Int32
	flaky := startBackend(t, func(w http.ResponseWriter, r *http.Request) {
		n := hits.Add(1)
		if r.Header.Get("X-Fail-Until") != "" && int(n) <= 2 {
			w.WriteHeader(503)
			w.Write([]byte("try again"))
			return
		}
		echo("flaky")(w, r)
	})
	rule := to("a")
	rule.Retry = &proxycfg.Retry{Codes: []int{503}, Attempts: 2, Backoff: proxycfg.Duration(10 * time.Millisecond)}
	e := newTestEnv(t, config([]proxycfg.Route{route("r", rule)}, cluster("a", flaky)))

	// Two 503s, then success: the client sees only the success, with the
	// request body replayed on each attempt.
	req, _ := http.NewRequest("PUT", e.url("/"), strings.NewReader("payload"))
	req.Header.Set("X-Fail-Until", "2")
	res, body := e.do(e.client, req)
	if res.StatusCode != 200 || echoed(body, "body") != "payload" || hits.Load() != 3 {
		t.Fatalf("got %d after %d hits: %q", res.StatusCode, hits.Load(), body)
	}
	if got := e.p.Stats().Retries.Load(); got != 2 {
		t.Errorf("retries = %d", got)
	}

	// A POST is not idempotent: the backend saw it, so it is not sent
	// again, unless it carries an Idempotency-Key (RFC 9110 §9.2.2).
	for _, key := range []string{"", "k-1"} {
		hits.Store(0)
		req, _ = http.NewRequest("POST", e.url("/"), strings.NewReader("payload"))
		req.Header.Set("X-Fail-Until", "2")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		res, _ = e.do(e.client, req)
		want, wantHits := 503, int32(1)
		if key != "" {
			want, wantHits = 200, 3
		}
		if res.StatusCode != want || hits.Load() != wantHits {
			t.Errorf("POST with Idempotency-Key %q: %d after %d hits, want %d after %d", key, res.StatusCode, hits.Load(), want, wantHits)
		}
	}

	// Attempts exhausted: the last answer is passed on.
	hits.Store(-10)
	res, body = e.get("h", "/", "X-Fail-Until", "x")
	if res.StatusCode != 503 || body != "try again" {
		t.Fatalf("exhausted: got %d %q", res.StatusCode, body)
	}
}

func TestRetryMovesOffADeadEndpoint(t *testing.T) {
	good := startBackend(t, echo("good"))
	rule := to("a")
	rule.Retry = &proxycfg.Retry{Attempts: 3}
	e := newTestEnv(t, config([]proxycfg.Route{route("r", rule)}, cluster("a", good, closedAddr(t))))
	for i := range 20 {
		res, body := e.get("h", "/")
		if res.StatusCode != 200 {
			t.Fatalf("request %d: %d %q", i, res.StatusCode, body)
		}
	}
}

// A backend that closes idle keep-alive connections must not cost the
// client an error: the proxy resends on a new connection.
func TestStaleConnectionIsReplaced(t *testing.T) {
	var conns atomic.Int32
	addr := testnet.RawServer(t, func(c net.Conn) {
		// Answer one request with keep-alive, then close at once.
		conns.Add(1)
		skipHead(bufio.NewReader(c))
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
		time.Sleep(20 * time.Millisecond)
	})
	e := newTestEnv(t, config([]proxycfg.Route{route("r", to("a"))}, cluster("a", addr)))
	for i := range 5 {
		res, body := e.get("h", "/")
		if res.StatusCode != 200 || body != "ok" {
			t.Fatalf("request %d: %d %q", i, res.StatusCode, body)
		}
		time.Sleep(50 * time.Millisecond) // let the backend close the idle connection
	}
	if conns.Load() < 5 {
		t.Errorf("only %d connections for 5 requests", conns.Load())
	}
}

// A request whose body cannot be sent twice must not go into a pooled
// connection the backend has closed: the proxy checks first.
func TestStreamedBodyAvoidsClosedConnection(t *testing.T) {
	s := httptest.NewUnstartedServer(echo("a"))
	s.Config.IdleTimeout = 20 * time.Millisecond // like Node.js's 5 s, only shorter
	var closed atomic.Int32
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateClosed {
			closed.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	e := newTestEnv(t, config([]proxycfg.Route{route("r", to("a"))}, cluster("a", s.Listener.Addr().String())))
	for i := range 5 {
		req, _ := http.NewRequest("POST", e.url("/"), struct{ io.Reader }{strings.NewReader("payload")})
		req.ContentLength = -1 // streamed: the proxy cannot keep it for a second try
		res, body := e.do(e.client, req)
		if res.StatusCode != 200 || echoed(body, "body") != "payload" {
			t.Fatalf("request %d: %d %q", i, res.StatusCode, body)
		}
		// The backend closes the idle connection before the next request,
		// however late it runs (after the request is sent, a close is a
		// failure no proxy can avoid for a body it cannot send again).
		waitFor(t, "the backend to close its idle connection", func() bool { return closed.Load() > int32(i) })
		time.Sleep(20 * time.Millisecond)
	}
}

// An endpoint at its connection cap fails fast with 503 instead of
// opening more; every connection's place is given back when it closes.
func TestConnectionCap(t *testing.T) {
	release := make(chan struct{})
	var inside atomic.Int32
	be := startBackend(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			inside.Add(1)
			<-release
		}
		io.WriteString(w, "ok")
	})
	e := newTestEnv(t, config([]proxycfg.Route{route("r", to("a"))}, cluster("a", be)), func(o *Options) { o.Pool.MaxConns, o.Pool.MaxConnsPerClient = 2, 2 })
	done := make(chan int, 2)
	for range 2 {
		go func() {
			res, err := http.Get(e.url("/block"))
			if err != nil {
				done <- 0
				return
			}
			res.Body.Close()
			done <- res.StatusCode
		}()
	}
	waitUntil(t, func() bool { return inside.Load() == 2 })
	res, body := e.get("h", "/third")
	if res.StatusCode != 503 {
		t.Errorf("third request over the cap: %d %q", res.StatusCode, body)
	}
	close(release)
	for range 2 {
		if code := <-done; code != 200 {
			t.Errorf("a request under the cap got %d", code)
		}
	}
	for i := range 5 { // the two connections are reused, the cap is not hit
		if res, body := e.get("h", "/"); res.StatusCode != 200 {
			t.Fatalf("request %d after the burst: %d %q", i, res.StatusCode, body)
		}
	}
	idle, open := e.p.slots["a"].state.Load().endpoints()[0].conns()
	if open != idle || open > 2 {
		t.Errorf("%d connections counted open, %d idle: a place leaked", open, idle)
	}
}
