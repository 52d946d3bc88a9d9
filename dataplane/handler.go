// This file implements the handler, where a request enters.

package dataplane

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/cfaccess"
	"github.com/tunnelgate/tunnelgate/dataplane/compiled"
	"github.com/tunnelgate/tunnelgate/dataplane/http1"
	"github.com/tunnelgate/tunnelgate/dataplane/httpsyntax"
	"github.com/tunnelgate/tunnelgate/matcher"
)

// handler is the request pipeline of one listener:
//
//	match → fail-closed checks → CORS preflight → redirect → rewrite →
//	backend choice (session pin or weighted) → mirrors → forward
//	(HTTP/1.1 pool, HTTP/2 transport, or WebSocket tunnel) → response
//	filters → body streamed
type handler struct {
	p       *Proxy
	port    int
	trusted bool
	// timeouts are the listener's deadlines on its clients, for net/http's
	// servers (the own server keeps its own); zero for none.
	timeouts clientTimeouts
	// gateway is the socket of its own (a Gateway address and port, or a
	// listener port) a server answers for (isGateway): only its listeners
	// are considered.
	gateway   gatewayAddr
	isGateway bool
}

// ServeHTTP is where every request comes in, on every listener: it
// starts the request's record (record.go), has serve run the pipeline,
// and finishes the record however serve ends.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := h.p
	p.stats.Requests.Add(1)
	p.inflight.Add(1)
	// The record lives in the exchange (on the stack): a record of its
	// own, pointed to by the exchange, would escape with it.
	var x exchange
	x.rec.start = time.Now()
	// The proxy's own HTTP/1.1 server knows the status and size of what
	// it sent, and times its clients itself; net/http's writers are
	// wrapped to learn the one and do the other (netwriter.go).
	own, _ := w.(*http1.ResponseWriter)
	var nw *netWriter
	if own == nil {
		nw = newNetWriter(w, r, h.timeouts)
		w = nw
	}
	// Deferred, so a handler aborted with a panic (http.ErrAbortHandler)
	// is still counted and its span ended.
	defer h.finish(&x.rec, r, own, nw)
	h.serve(w, r, &x)
}

// finish turns the record into metrics, a span's end and a log line.
func (h *handler) finish(rec *reqRecord, r *http.Request, own *http1.ResponseWriter, nw *netWriter) {
	p := h.p
	p.inflight.Add(-1)
	end := time.Now()
	status, size := rec.status, int64(0)
	if own != nil {
		size = own.Written()
		if status == 0 {
			status = own.Status()
		}
	} else {
		size = nw.written
		if status == 0 {
			status = nw.status
		}
		nw.release()
	}
	if rec.monitor {
		return // a health answer (health.go) is no user's request
	}
	if status == 0 {
		status = http.StatusOK // nothing written: the server sends an empty 200
	}
	rec.count(&p.noListener, status, end)
	if t := p.tracer; t != nil {
		if !rec.sc.IsValid() {
			h.startSpan(r, rec) // no backend was reached
		}
		endSpan(t, rec, status, end)
	}
	if l := p.opts.AccessLog; l != nil && l.Sampled() {
		line := accessLogLine(rec, r, h.trusted, status, size, end)
		l.Write(&line)
	}
}

// exchange is the state of one request once it is routed.
type exchange struct {
	h     *handler
	w     http.ResponseWriter
	r     *http.Request
	cc    *compiledConfig
	rule  *compiled.Rule
	be    *compiled.Backend
	slot  *clusterSlot // the chosen backend's cluster
	cs    *clusterState
	ep    *endpoint // the pinned endpoint, if a session named one
	out   outRequest
	path  string
	query string
	// client is who the request is for, as the per-client connection
	// caps count (clientIP).
	client string

	body   io.Reader
	replay []byte // the whole body when it was buffered, else nil
	// buf is the proxy's buffer the body was read into, if any: replay,
	// or the head of a streamed body, is in it (releaseBody).
	buf *bodyBuf
	// h2body is the body streamed to an HTTP/2 backend, which remembers
	// whether reading the client failed; nil otherwise.
	h2body  *clientBody
	hasBody bool
	// identity is who a protected rule's Access token says the client
	// is, and token that token, verified; nil and "" on other rules.
	identity     *cfaccess.Identity
	token        string
	newSession   bool      // the response starts a session
	sessionStart time.Time // when the pinned session began
	start        time.Time // when the request arrived
	rec          reqRecord
	// What the exchange waits on, for noticing a client that left
	// (clientwatch.go): waiting says the own server watches; stopWait
	// ends the watch of net/http's request context, whose clientGone is
	// set if the client left. (A pointer: the watch's closure must not
	// capture the exchange, or every exchange would be heap-allocated.)
	waiting    bool
	stopWait   func() bool
	clientGone *atomic.Bool
}

// wellFormed checks what every listener must before routing, whatever
// protocol the request came in: its method, target and authority are
// what an HTTP/1.1 request line and Host field may hold (RFC 9112 §3,
// §3.2). HTTP/1.1 parsers refuse the rest themselves; HTTP/2 carries them
// as pseudo-header values, which may hold spaces, and a :method of
// "GET /admin?" written into a request line would change its target.
func wellFormed(r *http.Request) bool {
	target := r.RequestURI
	if target == "" && r.URL != nil { // a request made in process, not read by a server
		target = r.URL.RequestURI()
	}
	return httpsyntax.IsToken(r.Method) && httpsyntax.ValidTarget(target) && httpsyntax.ValidHost(r.Host)
}

// splitTarget returns the escaped path and raw query of the request
// target as the client sent it. The router and the upstream see the same
// normalised path, so a path that looks different to each cannot slip past
// a route (for example "/public/..%2fadmin").
func splitTarget(r *http.Request) (path, query string, ok bool) {
	u := r.RequestURI
	if strings.HasPrefix(u, "/") {
		path, query, _ = strings.Cut(u, "?")
		return path, query, true
	}
	// Absolute form (RFC 9112 §3.2.2), which the server has parsed: an
	// http or https URI only.
	if u := r.URL; u != nil && u.Opaque == "" && (strings.EqualFold(u.Scheme, "http") || strings.EqualFold(u.Scheme, "https")) {
		p := r.URL.EscapedPath()
		if p == "" {
			p = "/"
		}
		return p, r.URL.RawQuery, true
	}
	return "", "", false
}

// target is the request target sent upstream: the normalised (maybe
// rewritten) path and the query as the client sent it.
func (x *exchange) target(r *http.Request) string {
	if x.query == "" {
		return x.path
	}
	// The common case needs no new string: the client's own target.
	if u := r.RequestURI; len(u) == len(x.path)+1+len(x.query) && strings.HasPrefix(u, x.path) && u[len(x.path)] == '?' {
		return u
	}
	return x.path + "?" + x.query
}

func isPreflight(r *http.Request) bool {
	return r.Method == http.MethodOptions && firstValue(r.Header, "Origin") != "" && firstValue(r.Header, "Access-Control-Request-Method") != ""
}

func firstValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func isWebSocket(r *http.Request) bool {
	if r.ProtoMajor != 1 {
		return false
	}
	up := r.Header["Upgrade"]
	return len(up) > 0 && httpsyntax.HasToken(up, "websocket") && httpsyntax.HasToken(r.Header["Connection"], "upgrade")
}

// pickListener returns the listener (merged by hostname) of set that takes
// host, or nil.
func pickListener(set *listenerSet, host string) *vhost {
	if set == nil {
		return nil
	}
	vh, ok := set.pick.Match(&matcher.Request{Host: host, Path: "/"})
	if !ok {
		return nil
	}
	return vh
}
