// This file implements the request's trace spans.

package dataplane

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/tunnelgate/tunnelgate/dataplane/observe"
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
// package observe (spans.go), not the SDK's tracer: here the proxy only
// fills their fields.

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
	s, sc := h.p.tracer.StartServer(parent, name)
	rec.sc, rec.span = sc, s
	if s == nil {
		return
	}
	s.Start = rec.start
	s.Method = r.Method
	s.Scheme = clientScheme(r, h.trusted)
	if s.Path = rec.path; s.Path == "" { // refused before routing
		s.Path, _, _ = splitTarget(r)
	}
	s.Host = r.Host
	s.Client = clientIP(r, h.trusted)
	if ru := rec.rule; ru != nil {
		s.Route, s.Rule = ru.Route, ru.Label()
	}
	if rec.slot != nil {
		s.Backend = rec.slot.name
	}
}

// endSpan ends the server span (and an attempt span still open) with the
// outcome. Only 5xx answers mark it an error: a 4xx is the client's, not
// the server's.
func endSpan(t *observe.Tracer, rec *reqRecord, status int, end time.Time) {
	if rec.attempt != nil {
		t.Finish(rec.attempt, end)
		rec.attempt = nil
	}
	s := rec.span
	if s == nil {
		return
	}
	s.Status = status
	if rec.endpoint != "" {
		s.Endpoint = rec.endpoint
		s.Retries, s.RetriesSet = rec.retries, true
	}
	s.WebSocket = !rec.upgraded.IsZero()
	if status >= 500 {
		s.ErrText = http.StatusText(status)
	}
	t.Finish(s, end)
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
		x.out.traceparent, x.out.tracestate = observe.Traceparent(rec.sc)
		return
	}
	if rec.attempt != nil {
		t.Finish(rec.attempt, time.Now())
	}
	a := rec.span.Child(x.r.Method)
	host, port := splitHostPort(ep.addr)
	a.Method, a.ServerHost, a.Port = x.r.Method, host, port
	a.Attempt, a.AttemptSet = n, true
	rec.attempt = a
	x.out.traceparent, x.out.tracestate = observe.Traceparent(a.SpanContext())
}

// attemptOutcome records an attempt's answer on its span; an attempt
// without one ends here.
func attemptOutcome(t *observe.Tracer, rec *reqRecord, status int, err error) {
	a := rec.attempt
	if err != nil {
		a.ErrText, a.ErrIsException = err.Error(), true
		t.Finish(a, time.Now())
		rec.attempt = nil
		return
	}
	a.Status = status
	if status >= 500 {
		a.ErrText = http.StatusText(status)
	}
}

// startMirrorSpan starts the span of a mirrored copy of the request and
// puts its context in the copy; nil when the trace is not sampled.
func (x *exchange) startMirrorSpan(slot *clusterSlot, out *outRequest) *observe.Span {
	rec := &x.rec
	if !rec.sc.IsValid() {
		x.h.startSpan(x.r, rec)
	}
	if rec.span == nil {
		out.traceparent, out.tracestate = observe.Traceparent(rec.sc)
		return nil
	}
	s := rec.span.Child("mirror " + x.r.Method)
	s.Method, s.Backend = x.r.Method, slot.name
	out.traceparent, out.tracestate = observe.Traceparent(s.SpanContext())
	return s
}

// endMirrorSpan ends a mirror's span, if it has one.
func endMirrorSpan(t *observe.Tracer, s *observe.Span, ep *endpoint, ok bool) {
	if s == nil {
		return
	}
	if ep != nil {
		s.Endpoint = ep.addr
	}
	if !ok {
		s.ErrText = "mirror not delivered"
	}
	t.Finish(s, time.Now())
}
