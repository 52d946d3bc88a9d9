package dataplane

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/tunnelgate/tunnelgate/internal/telemetry"
)

// Tracing (Options.Tracer; off when nil). Each request gets a server
// span, continuing the trace of a W3C traceparent the client sent. Each
// attempt to reach a backend is a client span beneath it, and the
// traceparent sent to the backend names that attempt, so the backend's
// own spans hang under the try that reached it. Mirrors get a span each.
// A WebSocket's server span lasts as long as the tunnel. A trace the
// sampler leaves out still propagates, marked not sampled, so the
// backends leave it out too.
//
// Attribute names follow OpenTelemetry's HTTP semantic conventions where
// one fits; what is ours is under "tunnelgate.". Spans are recorded by
// spans.go, not the SDK's tracer.

// startSpan starts the request's server span, backdated to its arrival.
// It is started once the route is known, or when the request is over.
func (h *handler) startSpan(r *http.Request, rec *reqRecord) {
	var parent trace.SpanContext
	if len(r.Header["Traceparent"]) > 0 {
		ctx := telemetry.Propagator.Extract(context.Background(), propagation.HeaderCarrier(r.Header))
		parent = trace.SpanContextFromContext(ctx)
	}
	name := r.Method
	if ru := rec.rule; ru != nil {
		name = ru.spanName(r.Method)
	}
	s, sc := h.p.tracer.startServer(parent, name)
	rec.sc, rec.span = sc, s
	if s == nil {
		return
	}
	s.start = rec.start
	s.method = r.Method
	s.scheme = clientScheme(r, h.trusted)
	s.path, _, _ = splitTarget(r)
	s.host = r.Host
	s.client = clientIP(r, h.trusted)
	if ru := rec.rule; ru != nil {
		s.route, s.rule = ru.Route, ru.Label()
	}
	if rec.slot != nil {
		s.backend = rec.slot.name
	}
}

// endSpan ends the server span (and an attempt span still open) with the
// outcome. Only 5xx answers mark it an error: a 4xx is the client's, not
// the server's.
func endSpan(t *Tracer, rec *reqRecord, status int, end time.Time) {
	if rec.attempt != nil {
		t.finish(rec.attempt, end)
		rec.attempt = nil
	}
	s := rec.span
	if s == nil {
		return
	}
	s.status = status
	if rec.endpoint != "" {
		s.endpoint = rec.endpoint
		s.retries, s.retriesSet = rec.retries, true
	}
	s.websocket = !rec.upgraded.IsZero()
	if status >= 500 {
		s.errText = http.StatusText(status)
	}
	t.finish(s, end)
}

// spanName is the server span's name: the method and the route.
func (ru *servedRule) spanName(method string) string {
	if n, ok := ru.spanNames[method]; ok {
		return n
	}
	return method + " " + ru.Route
}

// startAttemptSpan starts the span of attempt n on ep (ending the one
// before, if it is still open) and puts its context in the request sent.
func (x *exchange) startAttemptSpan(ep *endpoint, n int) {
	rec := &x.rec
	t := x.h.p.tracer
	if !rec.sc.IsValid() {
		x.h.startSpan(x.r, rec)
	}
	if rec.span == nil { // not sampled: say so downstream
		x.out.traceparent, x.out.tracestate = traceparent(rec.sc)
		return
	}
	if rec.attempt != nil {
		t.finish(rec.attempt, time.Now())
	}
	a := child(rec.span, x.r.Method)
	a.method, a.serverHost, a.port = x.r.Method, ep.host, ep.port
	a.attempt, a.attemptSet = n, true
	rec.attempt = a
	x.out.traceparent, x.out.tracestate = traceparent(a.sc)
}

// attemptOutcome records an attempt's answer on its span; an attempt
// without one ends here.
func attemptOutcome(t *Tracer, rec *reqRecord, status int, err error) {
	a := rec.attempt
	if err != nil {
		a.errText, a.errIsException = err.Error(), true
		t.finish(a, time.Now())
		rec.attempt = nil
		return
	}
	a.status = status
	if status >= 500 {
		a.errText = http.StatusText(status)
	}
}

// startMirrorSpan starts the span of a mirrored copy of the request and
// puts its context in the copy; nil when the trace is not sampled.
func (x *exchange) startMirrorSpan(slot *clusterSlot, out *outRequest) *proxySpan {
	rec := &x.rec
	if !rec.sc.IsValid() {
		x.h.startSpan(x.r, rec)
	}
	if rec.span == nil {
		out.traceparent, out.tracestate = traceparent(rec.sc)
		return nil
	}
	s := child(rec.span, "mirror "+x.r.Method)
	s.method, s.backend = x.r.Method, slot.name
	out.traceparent, out.tracestate = traceparent(s.sc)
	return s
}

// endMirrorSpan ends a mirror's span, if it has one.
func (t *Tracer) endMirrorSpan(s *proxySpan, ep *endpoint, ok bool) {
	if s == nil {
		return
	}
	if ep != nil {
		s.endpoint = ep.addr
	}
	if !ok {
		s.errText = "mirror not delivered"
	}
	t.finish(s, time.Now())
}

// traceparent formats a span context as W3C Trace Context fields (the
// propagator's work, without its map and builder).
func traceparent(sc trace.SpanContext) (parent, state string) {
	const hex = "0123456789abcdef"
	var b [55]byte
	b[0], b[1], b[2] = '0', '0', '-'
	tid, sid := sc.TraceID(), sc.SpanID()
	for i, c := range tid {
		b[3+2*i], b[4+2*i] = hex[c>>4], hex[c&0xf]
	}
	b[35] = '-'
	for i, c := range sid {
		b[36+2*i], b[37+2*i] = hex[c>>4], hex[c&0xf]
	}
	b[52] = '-'
	f := sc.TraceFlags()
	b[53], b[54] = hex[f>>4], hex[f&0xf]
	if ts := sc.TraceState(); ts.Len() > 0 {
		state = ts.String()
	}
	return string(b[:]), state
}
