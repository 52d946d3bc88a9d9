package dataplane

import (
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/tunnelgate/tunnelgate/dataplane/http1"
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
	slot     *clusterSlot // the chosen backend's cluster
	endpoint string       // the endpoint of the last attempt
	// status is set where the response writer cannot tell: the 101 of a
	// hijacked connection.
	status  int
	retries int

	// sc is the request's span context once tracing has started it; span
	// and attempt are the server span and the current backend attempt's,
	// nil when the trace is not sampled.
	sc            trace.SpanContext
	span, attempt *proxySpan
}

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
	if status == 0 {
		status = http.StatusOK // nothing written: the server sends an empty 200
	}
	if ru := rec.rule; ru != nil && ru.stats != nil {
		ru.stats.Responses[observe.StatusClass(status)].Add(1)
		until := end
		if !rec.upgraded.IsZero() {
			until = rec.upgraded
		}
		ru.stats.Latency.Observe(until.Sub(rec.start))
	}
	if t := p.tracer; t != nil {
		if !rec.sc.IsValid() {
			h.startSpan(r, rec) // no backend was reached
		}
		endSpan(t, rec, status, end)
	}
	if l := p.opts.AccessLog; l != nil {
		l.log(rec, r, h.trusted, status, size, end)
	}
}

// beginAttempt notes an attempt on ep (the n-th, from 0) and, when
// tracing, starts its span and has the request carry its context. It
// returns when the attempt started, for endAttempt.
func (x *exchange) beginAttempt(ep *endpoint, n int) time.Time {
	x.rec.endpoint = ep.addr
	if x.h.p.tracer != nil {
		x.startAttemptSpan(ep, n)
	}
	return time.Now()
}

// endAttempt counts the attempt's outcome for its cluster: the status of
// its response head, or err when there was none.
func (x *exchange) endAttempt(start time.Time, status int, err error) {
	u := &x.slot.upstream
	if status != 0 {
		u.Latency.Observe(time.Since(start))
	}
	if err == nil || backendsFault(err) {
		u.Result(status, status == 0 && isTimeout(err))
	}
	if x.rec.attempt != nil {
		attemptOutcome(x.h.p.tracer, &x.rec, status, err)
	}
}
