package hostile

// replay_test.go: a request that must not reach a backend twice.
//
// A POST may place an order or move money. Once a backend has read it,
// a proxy that loses the connection cannot know whether it was acted on,
// and sending it again may do it twice (RFC 9110 §9.2.2). So the proxy
// sends a request again (on a new connection after a reused one closed,
// or as a retry the route asks for) only if it is idempotent: GET, HEAD,
// OPTIONS, TRACE, PUT, DELETE, or any request with an Idempotency-Key or
// X-Idempotency-Key header, as Go's Transport decides. Any other request
// is sent again only when none of it reached a backend: the connection was
// refused. The backends here count how many times each request came.

import (
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/testnet"
)

// Request bodies: a small one, which a rule with retries keeps to send
// again, and one over the 64 KiB the proxy keeps, which it streams.
var (
	smallBody = "amount=100&to=acct-42"
	largeBody = strings.Repeat("L", 100<<10)
)

// sendCase is one request and what must come of it.
type sendCase struct {
	name string
	req  request // the id is filled in per path
	// times is how many times the request must reach the backend; 0 is
	// not checked.
	times int
	// status is what the client must get.
	status int
}

// header is a header with one field.
func header(name, value string) http.Header { return http.Header{name: {value}} }

// Requests by idempotency.
var (
	postBare       = request{method: http.MethodPost}
	postSmall      = request{method: http.MethodPost, body: smallBody}
	postLarge      = request{method: http.MethodPost, body: largeBody}
	patchSmall     = request{method: http.MethodPatch, body: smallBody}
	getBare        = request{method: http.MethodGet}
	putBare        = request{method: http.MethodPut}
	putSmall       = request{method: http.MethodPut, body: smallBody}
	deleteBare     = request{method: http.MethodDelete}
	postKeyed      = request{method: http.MethodPost, header: header("Idempotency-Key", "order-7")}
	postXKeyed     = request{method: http.MethodPost, header: header("X-Idempotency-Key", "order-7")}
	postKeyedSmall = request{method: http.MethodPost, body: smallBody, header: header("Idempotency-Key", "order-7")}
)

// withRetries is the rule of the retry cases: two retries on 503 (and,
// as always, on a failure to get any answer), no backoff.
var withRetries = withRule(func(r *proxycfg.Rule) {
	r.Retry = &proxycfg.Retry{Codes: []int{http.StatusServiceUnavailable}, Attempts: 2}
})

// runSendCases runs each case on each path, one request at a time: when
// warm, first a GET, so that an idle connection waits in the pool for the
// case's request; then the case's request, whose status and arrivals at b
// it checks.
func runSendCases(e *env, b *idBackend, cases []sendCase, warm bool) {
	e.each(func(t *testing.T, p path) {
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				if warm {
					if o := ask(p, request{id: idFor(p, i, 0)}); !o.own() {
						t.Fatalf("the warm-up GET did not get its answer: %v", o)
					}
				}
				r := tc.req
				r.id, r.hostile = idFor(p, i, 1), true
				o := ask(p, r)
				if msg := o.misdelivered(); msg != "" {
					t.Error(msg)
				}
				if o.status != tc.status {
					t.Errorf("got %v, want status %d", o, tc.status)
				}
				if n := b.times(r.id); tc.times > 0 && n != tc.times {
					t.Errorf("%s %s (body %d bytes) reached the backend %d times, want %d", r.method, r.id, len(r.body), n, tc.times)
				}
			})
		}
	})
}

// TestReusedConnectionClosedAfterReading: the request goes on a pooled
// connection, the backend reads it whole and closes without answering.
// Only an idempotent request may go again, on a new connection (where this
// backend answers it); any other reaches the backend once, and the client
// gets a 502. Once without retries, once with a rule that has them (and
// so keeps small bodies to send again).
func TestReusedConnectionClosedAfterReading(t *testing.T) {
	closesFirstTime := func(c net.Conn, r *backendReq) bool {
		if r.hostile && r.nth == 1 {
			return false // read whole, never answered
		}
		write(c, okFor(r.id))
		return true
	}
	once := []sendCase{
		{"POST without body", postBare, 1, http.StatusBadGateway},
		{"POST with a small body", postSmall, 1, http.StatusBadGateway},
		{"POST with a streamed body", postLarge, 1, http.StatusBadGateway},
		{"PATCH with a small body", patchSmall, 1, http.StatusBadGateway},
	}
	again := []sendCase{
		{"GET", getBare, 0, http.StatusOK},
		{"PUT without body", putBare, 0, http.StatusOK},
		{"DELETE", deleteBare, 0, http.StatusOK},
		{"POST with Idempotency-Key", postKeyed, 0, http.StatusOK},
		{"POST with X-Idempotency-Key", postXKeyed, 0, http.StatusOK},
	}
	t.Run("no retries", func(t *testing.T) {
		b := newIDBackend(t, closesFirstTime)
		runSendCases(newEnv(t, b.addr), b, slices.Concat(once, again), true)
	})
	t.Run("retries", func(t *testing.T) {
		b := newIDBackend(t, closesFirstTime)
		kept := sendCase{"PUT with a small body", putSmall, 0, http.StatusOK}
		runSendCases(newEnv(t, b.addr, withRetries), b, slices.Concat(once, again, []sendCase{kept}), true)
	})
}

// TestRetryOn503: the rule retries 503 twice and the backend always
// answers 503. An idempotent request reaches it three times; any other
// once, and the client gets the backend's 503.
func TestRetryOn503(t *testing.T) {
	b := newIDBackend(t, func(c net.Conn, r *backendReq) bool {
		body := idBody(r.id)
		write(c, headFor(http.StatusServiceUnavailable, r.id, contentLength(len(body)))+body)
		return true
	})
	runSendCases(newEnv(t, b.addr, withRetries), b, []sendCase{
		{"POST without body", postBare, 1, http.StatusServiceUnavailable},
		{"POST with a small body", postSmall, 1, http.StatusServiceUnavailable},
		{"POST with a streamed body", postLarge, 1, http.StatusServiceUnavailable},
		{"PATCH with a small body", patchSmall, 1, http.StatusServiceUnavailable},
		{"GET", getBare, 3, http.StatusServiceUnavailable},
		{"PUT with a small body", putSmall, 3, http.StatusServiceUnavailable},
		{"DELETE", deleteBare, 3, http.StatusServiceUnavailable},
		{"POST with Idempotency-Key", postKeyed, 3, http.StatusServiceUnavailable},
		{"POST with a small body and Idempotency-Key", postKeyedSmall, 3, http.StatusServiceUnavailable},
		{"POST with X-Idempotency-Key", postXKeyed, 3, http.StatusServiceUnavailable},
	}, false)
}

// TestRetryAfterCloseHavingRead: the rule has retries and the backend
// reads every request whole, then closes without answering. An idempotent
// request is retried (three times in all); any other is not.
func TestRetryAfterCloseHavingRead(t *testing.T) {
	b := newIDBackend(t, func(net.Conn, *backendReq) bool { return false })
	runSendCases(newEnv(t, b.addr, withRetries), b, []sendCase{
		{"POST without body", postBare, 1, http.StatusBadGateway},
		{"POST with a small body", postSmall, 1, http.StatusBadGateway},
		{"PATCH with a small body", patchSmall, 1, http.StatusBadGateway},
		{"GET", getBare, 3, http.StatusBadGateway},
		{"PUT with a small body", putSmall, 3, http.StatusBadGateway},
		{"POST with Idempotency-Key", postKeyed, 3, http.StatusBadGateway},
	}, false)
}

// TestPOSTRetriedWhenRefused: where no byte of a POST reached a backend
// (the connection was refused) it may go again. Nothing listens on the
// backend's address until the proxy's first connection has been refused;
// then a backend opens there, and the retry must reach it, once.
func TestPOSTRetriedWhenRefused(t *testing.T) {
	// A port free on a loopback address of its own: on 127.0.0.1 the
	// proxies' own listeners, opened next, could take it.
	ip := freeLoopbackIP(t)
	addr := net.JoinHostPort(ip, strconv.Itoa(freePort(t, ip)))
	b := &idBackend{arrivals: map[string][]int{}, answer: func(c net.Conn, r *backendReq) bool {
		// Closed, and said so, so that the proxy pools nothing: the next
		// path's POST must meet a refusal, not a connection closing.
		body := idBody(r.id)
		write(c, headFor(http.StatusOK, r.id, contentLength(len(body)), "Connection: close")+body)
		return false
	}}
	e := newEnv(t, addr, withRule(func(r *proxycfg.Rule) {
		r.Retry = &proxycfg.Retry{Attempts: 5, Backoff: proxycfg.Duration(50 * time.Millisecond)}
	}))
	for _, l := range e.cfg.Listeners {
		if l.Address == ip {
			t.Fatalf("the gateway address is the backend's, %s: run again", ip)
		}
	}
	e.each(func(t *testing.T, p path) {
		stats := e.proxy(p).Stats()
		refusals := stats.UpstreamErrors.Load()
		id := idFor(p, 0, 1)
		done := make(chan outcome, 1)
		go func() { done <- ask(p, request{method: http.MethodPost, id: id, body: smallBody}) }()
		for deadline := time.Now().Add(askTimeout); stats.UpstreamErrors.Load() == refusals; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the proxy never tried the backend")
			}
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("reopening the backend's address: %v", err)
		}
		defer ln.Close()
		go testnet.Accept(ln, b.serve)
		o := <-done
		if !o.own() {
			t.Errorf("got %v, want the backend's answer after a retry", o)
		}
		if n := b.times(id); n != 1 {
			t.Errorf("the POST reached the backend %d times, want 1", n)
		}
	})
}
