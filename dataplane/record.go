// This file keeps what a request leaves for metrics, traces and the access
// log.

package dataplane

import (
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/tunnelgate/tunnelgate/dataplane/observe"
)

// Every request leaves a record behind: which rule and backend served
// it, the status and size of the answer, how long it took, how many
// retries. handler.ServeHTTP fills it as the request goes through the
// pipeline and, once the response is done, finish turns it into the
// rule's metrics, the end of its trace span and an access log line.
// With tracing and the access log off this costs two clock reads and a
// few atomic adds per request, and no allocation.

// reqRecord is what one request leaves for metrics, its trace and the
// access log.
type reqRecord struct {
	start time.Time
	// upgraded is when a WebSocket handshake completed: the request's
	// latency ends there, not when the tunnel closes.
	upgraded time.Time
	rule     *servedRule
	// listener is the stats of the listener that took the request; nil
	// when none did.
	listener *observe.ListenerStats
	slot     *clusterSlot // the chosen backend's cluster
	endpoint string       // the endpoint of the last attempt
	// status is set where the response writer cannot tell: the 101 of a
	// hijacked connection.
	status  int
	retries int
	// monitor marks a load balancer monitor's health request (health.go):
	// no user's, so counted, traced and logged nowhere but in its own
	// counter.
	monitor bool
	// path and query are what the router matched (reqpath.go), once the
	// request got that far; "" before.
	path, query string

	// sc is the request's span context once tracing has started it; span
	// and attempt are the server span and the current backend attempt's,
	// nil when the trace is not sampled.
	sc            trace.SpanContext
	span, attempt *observe.Span
}

// count adds the request's answer to its listener's stats (none's when
// no listener took it) and its rule's: its status, and its latency up to
// end, or up to the handshake of a WebSocket.
func (rec *reqRecord) count(none *observe.ListenerStats, status int, end time.Time) {
	until := end
	if !rec.upgraded.IsZero() {
		until = rec.upgraded
	}
	took := until.Sub(rec.start)
	l := rec.listener
	if l == nil {
		l = none
	}
	l.Observe(took)
	if ru := rec.rule; ru != nil && ru.stats != nil {
		ru.stats.Respond(status, took)
	}
}

// beginAttempt notes an attempt on ep (the n-th, from 0) and, when
// tracing, starts its span and has the request carry its context. It
// returns when the attempt started, for endAttempt, where the cluster's
// latency is counted (Proxy.timed); else the zero time.
func (x *exchange) beginAttempt(ep *endpoint, n int) time.Time {
	x.rec.endpoint = ep.addr
	if x.h.p.tracer != nil {
		x.startAttemptSpan(ep, n)
	}
	if !x.h.p.timed() {
		return time.Time{}
	}
	return time.Now()
}

// endAttempt counts the attempt's outcome for its cluster: the status of
// its response head, or err when there was none.
func (x *exchange) endAttempt(start time.Time, status int, err error) {
	u := &x.slot.upstream
	if status != 0 && !start.IsZero() {
		u.Head(time.Since(start))
	}
	if err == nil || backendsFault(err) {
		u.Result(status, status == 0 && isTimeout(err))
	}
	if x.rec.attempt != nil {
		attemptOutcome(x.h.p.tracer, &x.rec, status, err)
	}
}

// accessLogLine is the access log's line for the request rec records. The
// caller builds it only for a request the log samples: the client's
// address and the path may cost work. The path is the one the router
// matched, and the client's spelling beside it when that differs; a
// request refused before routing shows the client's.
func accessLogLine(rec *reqRecord, r *http.Request, trusted bool, status int, size int64, end time.Time) observe.Line {
	path := logPath(r)
	var clientPath string
	if sent, _, _ := strings.Cut(path, "?"); rec.path != "" && rec.path != sent {
		// Only a spelling the router read as another path costs a string.
		clientPath, path = path, rec.path
		if rec.query != "" {
			path += "?" + rec.query
		}
	}
	ln := observe.Line{
		Start: rec.start, End: end,
		ClientIP: clientIP(r, trusted), Host: r.Host, Method: r.Method, Path: path, ClientPath: clientPath, Proto: r.Proto,
		Status: status, Bytes: size,
		Endpoint: rec.endpoint, Retries: rec.retries,
		TraceID: rec.sc.TraceID(),
	}
	if ru := rec.rule; ru != nil {
		ln.Route, ln.Rule = ru.Route, ru.Label()
	}
	if rec.slot != nil {
		ln.Backend = rec.slot.name
	}
	return ln
}

// logPath is the target a line shows: as the client sent it, except that
// an absolute-form target shows its path and query, as for every other
// request. A target that is neither ("*", CONNECT's authority) is shown
// as it came.
func logPath(r *http.Request) string {
	p := r.RequestURI
	if p == "" && r.URL != nil { // a request made in a test
		return r.URL.RequestURI()
	}
	if p == "" || p[0] == '/' {
		return p
	}
	path, query, ok := splitTarget(r)
	switch {
	case !ok:
		return p
	case query != "":
		return path + "?" + query
	}
	return path
}
