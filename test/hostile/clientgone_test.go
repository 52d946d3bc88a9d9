//go:build linux

package hostile

// Clients that leave before their answer. A client that closes its
// connection, half-closes it (HTTP/1.1) or resets its stream (HTTP/2)
// while the proxy dials a backend or waits for its response head has
// met no backend failure: it left. net/http's servers end the request's
// context then, and the dial or the wait fails with it; the proxy used
// to blame the backend for that: tunnelgate_upstream_errors_total and the
// cluster's result="error" rose, a warning was logged, a failed dial
// marked the endpoint down for 5 s (the balancer avoided it), and a rule
// with retries sent the request again. The proxy's own server, which
// watches the client's connection itself, counted the interrupted wait as
// a backend timeout and retried it, and did not watch a client during a
// dial at all. On every listener it is now the client's:
// tunnelgate_client_errors_total{reason="client_gone"}, 499 in the access
// log, nothing sent, nothing retried, logged or held against the
// endpoint.
//
// The backend slow to accept is a listener whose accept queue is full
// (Linux drops the SYN of a connection to it); hence linux only.

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/dataplane/observe"
	"github.com/tunnelgate/tunnelgate/dataplane/proxycfg"
	"github.com/tunnelgate/tunnelgate/test/testproc"
)

// goneNoticed bounds the time from a client leaving to the proxy being
// done with its request: at once on net/http's servers, within two
// seconds on the own server (its watch starts once a wait lasted a
// second), well under the 10 s dial timeout.
const goneNoticed = 6 * time.Second

// followUps is how many requests are sent after a client left, to see
// that the endpoint it was sent to is not avoided: were it marked down,
// the balancer would send every one of them to the other endpoint; if
// not, each goes to it with odds of one half (2^-24 that none does).
const followUps = 24

// The proxy dials an endpoint that does not accept, and the client
// leaves. No retries here: a retry would mark the other endpoint down
// too, and the balancer would then not avoid either.
func TestClientGoneWhileDialling(t *testing.T) {
	for _, proto := range []string{proxycfg.ProtoHTTP1, proxycfg.ProtoH2C} {
		t.Run("backend="+proto, func(t *testing.T) {
			t.Parallel() // an env of its own; its cases, which share it, one by one
			g := newGoneEnv(t, proto, nil)
			g.e.each(func(t *testing.T, p path) {
				for _, leave := range leavesOf(p) {
					t.Run(leave, func(t *testing.T) { g.run(t, p, leave, true) })
				}
			})
		})
	}
}

// The backend takes the request and does not answer, and the client
// leaves. The rule retries failed attempts: none may be retried.
func TestClientGoneWhileWaitingForHead(t *testing.T) {
	retry := func(r *proxycfg.Rule) { r.Retry = &proxycfg.Retry{Attempts: 2} }
	for _, proto := range []string{proxycfg.ProtoHTTP1, proxycfg.ProtoH2C} {
		t.Run("backend="+proto, func(t *testing.T) {
			t.Parallel() // an env of its own; its cases, which share it, one by one
			g := newGoneEnv(t, proto, retry)
			g.e.each(func(t *testing.T, p path) {
				for _, leave := range leavesOf(p) {
					t.Run(leave, func(t *testing.T) { g.run(t, p, leave, false) })
				}
			})
		})
	}
}

// leavesOf are the ways a client of p leaves: it closes its connection,
// or half-closes it (HTTP/1.1: it still reads), or resets its stream
// (HTTP/2: the connection stays); on HTTP/1.1, also a WebSocket
// handshake's client closing its connection (websocket.go's path).
func leavesOf(p path) []string {
	if p.proto == "h1" {
		return []string{"close", "half-close", "websocket-close"}
	}
	return []string{"close", "reset"}
}

// goneEnv is an env whose proxies log their warnings and access log
// lines where the tests read them.
type goneEnv struct {
	e             *env
	warns, access *testproc.SyncBuffer
	loads         atomic.Int32 // config versions made by pointAt
}

func newGoneEnv(t *testing.T, proto string, rule func(*proxycfg.Rule)) *goneEnv {
	g := &goneEnv{warns: new(testproc.SyncBuffer), access: new(testproc.SyncBuffer)}
	log := observe.NewAccessLog(g.access, observe.AccessLogOptions{})
	t.Cleanup(log.Close) // after the proxies stopped
	placeholder := newGoneEndpoint(t, false)
	opts := []option{
		withCluster(func(c *proxycfg.Cluster) { c.Protocol = proto }),
		withOptions(func(o *dataplane.Options) {
			o.Log = slog.New(slog.NewTextHandler(g.warns, &slog.HandlerOptions{Level: slog.LevelWarn}))
			o.AccessLog = log
		}),
	}
	if rule != nil {
		opts = append(opts, withRule(rule))
	}
	g.e = newEnv(t, placeholder.addr, opts...)
	return g
}

// pointAt gives the cluster of the proxy serving p the endpoints addrs,
// new to it: no state (pools, marks) is left from another subtest.
func (g *goneEnv) pointAt(t *testing.T, p path, addrs ...string) {
	t.Helper()
	px := g.e.proxy(p)
	cfg := *px.Config()
	cfg.Version = fmt.Sprintf("client-gone-%d", g.loads.Add(1))
	cfg.Clusters = slices.Clone(cfg.Clusters)
	cfg.Clusters[0].Endpoints = nil
	for _, a := range addrs {
		cfg.Clusters[0].Endpoints = append(cfg.Clusters[0].Endpoints, proxycfg.Endpoint{Address: a})
	}
	if err := px.Load(&cfg); err != nil {
		t.Fatalf("Load: %v", err)
	}
}

// goneMetrics are the series a client that left must move, or must not.
var goneMetrics = []string{
	`tunnelgate_client_errors_total{reason="client_gone"}`,
	"tunnelgate_upstream_errors_total",
	"tunnelgate_upstream_timeouts_total",
	"tunnelgate_retries_total",
	`tunnelgate_upstream_requests_total{cluster="backend",result="error"}`,
	`tunnelgate_upstream_requests_total{cluster="backend",result="timeout"}`,
}

// run is one case: a request to p whose client leaves (leave) while the
// proxy dials a backend that does not accept (dialling) or waits for the
// head of one that does not answer.
func (g *goneEnv) run(t *testing.T, p path, leave string, dialling bool) {
	e := g.e
	admin := e.adminOf(p)
	a, b := newGoneEndpoint(t, dialling), newGoneEndpoint(t, dialling)
	g.pointAt(t, p, a.addr, b.addr)
	before := scrapeMetrics(t, admin)
	warned := len(g.warns.String())
	target := "/hold/" + strings.NewReplacer("/", "-", "=", "-").Replace(t.Name())

	// The request, and the client leaving once the proxy is on it.
	started := func() bool {
		return scrapeMetrics(t, admin)["tunnelgate_requests_total"] > before["tunnelgate_requests_total"]
	}
	if !dialling {
		started = func() bool { return a.holds(target) || b.holds(target) }
	}
	got := leaveDuring(t, p, target, leave, started)

	// The proxy is done with the request soon.
	for deadline := time.Now().Add(goneNoticed); ; time.Sleep(20 * time.Millisecond) {
		if scrapeMetrics(t, admin)["tunnelgate_inflight_requests"] == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the proxy still serves the request %v after its client left", goneNoticed)
			break
		}
	}
	if !dialling && !a.released(target) && !b.released(target) {
		t.Errorf("the backend still holds the request of a client that left")
	}
	if s := got(); s != "" {
		t.Errorf("the client that left (%s) got %s, want nothing", leave, s)
	}

	after := scrapeMetrics(t, admin)
	for _, m := range goneMetrics {
		want := before[m]
		if strings.Contains(m, "client_gone") {
			want++
		}
		if after[m] != want {
			t.Errorf("%s went from %v to %v, want %v", m, before[m], after[m], want)
		}
	}
	if logged := g.warns.String()[warned:]; logged != "" {
		t.Errorf("warnings were logged: %s", logged)
	}

	// The access log records 499, and the endpoint the request was for.
	var line struct {
		Path     string `json:"path"`
		Status   int    `json:"status"`
		Endpoint string `json:"endpoint"`
	}
	for deadline := time.Now().Add(2 * time.Second); line.Path != target; time.Sleep(20 * time.Millisecond) {
		for _, l := range logLines(g.access) {
			if strings.Contains(l, `"path":"`+target+`"`) {
				json.Unmarshal([]byte(l), &line)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no access log line for %s", target)
		}
	}
	if line.Status != 499 {
		t.Errorf("the access log has status %d, want 499", line.Status)
	}

	// The endpoint is not avoided: it gets its share of what follows.
	if dialling {
		a.serve()
		b.serve()
	}
	var sentTo *goneEndpoint
	switch line.Endpoint {
	case a.addr:
		sentTo = a
	case b.addr:
		sentTo = b
	default:
		t.Fatalf("the access log names endpoint %q, neither of %s and %s", line.Endpoint, a.addr, b.addr)
	}
	for i := range followUps {
		res, err := p.client.Get(p.url("/x"))
		if err != nil {
			t.Fatalf("request %d after the client left: %v", i, err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("request %d after the client left: %d, want 200", i, res.StatusCode)
		}
	}
	if sentTo.hits.Load() == 0 {
		t.Errorf("none of %d requests after the client left went to its endpoint: the balancer avoids it", followUps)
	}
}

// leaveDuring sends a GET for target on a connection of its own, waits
// until started says the proxy is on it (and a little more, for a dial
// to begin), then leaves as leave says. got, called once the proxy is
// done, says what the client received after it left: "" for nothing.
func leaveDuring(t *testing.T, p path, target, leave string, started func() bool) (got func() string) {
	t.Helper()
	c := p.dial(t)
	t.Cleanup(func() { c.Close() })
	var h *h2conn
	var s *h2stream
	if p.proto == "h1" {
		head := "GET " + target + " HTTP/1.1\r\nHost: app.example\r\n"
		if strings.HasPrefix(leave, "websocket-") {
			head += "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
		}
		if _, err := io.WriteString(c, head+"\r\n"); err != nil {
			t.Fatalf("sending the request: %v", err)
		}
	} else {
		h = h2dial(t, c)
		s = h.open(p.request("GET", target, "app.example"), true)
	}
	for deadline := time.Now().Add(wait); !started(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the request did not reach the proxy's backend side within %v", wait)
		}
	}
	time.Sleep(100 * time.Millisecond)

	switch leave {
	case "close", "websocket-close":
		c.Close()
		return func() string { return "" }
	case "half-close":
		if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
			t.Fatalf("CloseWrite: %v", err)
		}
		// It still reads: it must get no answer, only the end of the
		// connection.
		read := make(chan string, 1)
		go func() {
			c.SetReadDeadline(time.Now().Add(goneNoticed + time.Second))
			b, err := io.ReadAll(c)
			switch {
			case len(b) > 0:
				read <- fmt.Sprintf("%q", truncated(string(b)))
			case isTimeout(err):
				read <- "no end of the connection"
			default:
				read <- ""
			}
		}()
		return func() string { return <-read }
	case "reset":
		if err := h.write(func() error { return h.fr.WriteRSTStream(s.id, http2.ErrCodeCancel) }); err != nil {
			t.Fatalf("RST_STREAM: %v", err)
		}
		return func() string {
			h.mu.Lock()
			defer h.mu.Unlock()
			if s.status != 0 {
				return fmt.Sprintf("a %d response", s.status)
			}
			return ""
		}
	}
	t.Fatalf("unknown way to leave %q", leave)
	return nil
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// goneEndpoint is an endpoint of the tests' cluster, served by net/http
// over HTTP/1.1 and h2c: it answers "ok" at once, but holds a request for
// /hold/... until the proxy lets go of it (closes its connection or
// resets its stream).
type goneEndpoint struct {
	addr string
	ln   net.Listener
	srv  *http.Server
	hits atomic.Int32 // requests answered

	held, let sync.Map // targets held, and let go of by the proxy
}

// newGoneEndpoint starts an endpoint; a stalled one accepts nothing
// until serve.
func newGoneEndpoint(t *testing.T, stalled bool) *goneEndpoint {
	t.Helper()
	var ln net.Listener
	if stalled {
		ln = stalledListen(t)
	} else {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	ep := &goneEndpoint{addr: ln.Addr().String(), ln: ln}
	var ps http.Protocols
	ps.SetHTTP1(true)
	ps.SetUnencryptedHTTP2(true)
	ep.srv = &http.Server{Handler: ep, Protocols: &ps}
	t.Cleanup(func() {
		ep.srv.Close()
		ln.Close()
	})
	if !stalled {
		ep.serve()
	}
	return ep
}

func (ep *goneEndpoint) serve() { go ep.srv.Serve(ep.ln) }

func (ep *goneEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/hold/") {
		ep.held.Store(r.URL.Path, true)
		<-r.Context().Done()
		ep.let.Store(r.URL.Path, true)
		return
	}
	ep.hits.Add(1)
	io.WriteString(w, "ok")
}

func (ep *goneEndpoint) holds(target string) bool {
	_, ok := ep.held.Load(target)
	return ok
}

// released reports whether the endpoint held target and the proxy let
// go of it, waiting a little for it.
func (ep *goneEndpoint) released(target string) bool {
	if !ep.holds(target) {
		return false
	}
	for deadline := time.Now().Add(time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, ok := ep.let.Load(target); ok {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// stalledListen listens on 127.0.0.1 with an accept queue of one, and
// fills it: a connection to it then hangs in its handshake (Linux drops
// the SYN of a connection to a listener whose queue is full) until the
// listener is served.
func stalledListen(t *testing.T) net.Listener {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "stalled listener")
	defer f.Close()
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	ln, err := net.FileListener(f)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), 200*time.Millisecond)
		if err != nil {
			break // it hangs: the queue is full
		}
		t.Cleanup(func() { c.Close() })
		if i == 8 {
			ln.Close()
			t.Fatal("the accept queue does not fill")
		}
	}
	return ln
}
