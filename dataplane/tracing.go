package dataplane

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/tunnelgate/tunnelgate/internal/telemetry"
)

// Tracing (Options.Tracing; off when nil). Each request gets a server
// span, continuing the trace of a W3C traceparent the client sent. Each
// attempt to reach a backend is a client span beneath it, and the
// traceparent sent to the backend names that attempt, so the backend's
// own spans hang under the try that reached it. Mirrors get a span each.
// A WebSocket's server span lasts as long as the tunnel.
//
// Attribute names follow OpenTelemetry's HTTP semantic conventions where
// one fits; what is ours is under "tunnelgate.".

// traceCarrier receives the two W3C fields the propagator writes.
type traceCarrier struct{ parent, state string }

func (c *traceCarrier) Get(string) string { return "" }
func (c *traceCarrier) Keys() []string    { return nil }
func (c *traceCarrier) Set(k, v string) {
	switch k {
	case "traceparent":
		c.parent = v
	case "tracestate":
		c.state = v
	}
}

// startSpan starts the request's server span and returns the request
// carrying it.
func (h *handler) startSpan(r *http.Request, rec *reqRecord) *http.Request {
	ctx := telemetry.Propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	scheme := clientScheme(r, h.trusted)
	path, _, _ := splitTarget(r)
	attrs := []attribute.KeyValue{
		attribute.String("http.request.method", r.Method),
		attribute.String("url.scheme", scheme),
		attribute.String("url.path", path),
		attribute.String("server.address", r.Host),
		attribute.String("client.address", clientIP(r, h.trusted)),
		attribute.String("network.protocol.version", protoVersion(r)),
	}
	if ua := firstValue(r.Header, "User-Agent"); ua != "" {
		attrs = append(attrs, attribute.String("user_agent.original", ua))
	}
	ctx, rec.span = h.p.tracer.Start(ctx, r.Method,
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithTimestamp(rec.start),
		trace.WithAttributes(attrs...))
	return r.WithContext(ctx)
}

// endSpan names the server span after the route and ends it. Only 5xx
// answers mark it an error: a 4xx is the client's, not the server's.
func endSpan(rec *reqRecord, method string, status int, size int64, end time.Time) {
	s := rec.span
	if rec.attempt != nil {
		rec.attempt.End(trace.WithTimestamp(end))
	}
	s.SetAttributes(
		attribute.Int("http.response.status_code", status),
		attribute.Int64("http.response.body.size", size),
	)
	if ru := rec.rule; ru != nil {
		s.SetName(method + " " + ru.route)
		s.SetAttributes(
			attribute.String("tunnelgate.route", ru.route),
			attribute.String("tunnelgate.rule", ru.label()),
		)
	}
	if rec.slot != nil {
		s.SetAttributes(attribute.String("tunnelgate.backend", rec.slot.name))
	}
	if rec.endpoint != "" {
		s.SetAttributes(
			attribute.String("tunnelgate.endpoint", rec.endpoint),
			attribute.Int("tunnelgate.retries", rec.retries),
		)
	}
	if !rec.upgraded.IsZero() {
		s.SetAttributes(attribute.Bool("tunnelgate.websocket", true))
	}
	if status >= 500 {
		s.SetStatus(codes.Error, http.StatusText(status))
	}
	s.End(trace.WithTimestamp(end))
}

// startAttemptSpan starts the span of attempt n on ep (ending the one
// before, if it is still open) and puts its context in the request sent.
func (x *exchange) startAttemptSpan(ep *endpoint, n int) {
	rec := &x.rec
	if rec.attempt != nil {
		rec.attempt.End()
	}
	host, port, _ := net.SplitHostPort(ep.addr)
	p, _ := strconv.Atoi(port)
	var ctx context.Context
	ctx, rec.attempt = x.h.p.tracer.Start(x.r.Context(), x.r.Method,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("http.request.method", x.r.Method),
			attribute.String("server.address", host),
			attribute.Int("server.port", p),
			attribute.String("tunnelgate.backend", x.be.slot.name),
			attribute.Int("tunnelgate.attempt", n),
		))
	var c traceCarrier
	telemetry.Propagator.Inject(ctx, &c)
	x.out.traceparent, x.out.tracestate = c.parent, c.state
}

// attemptOutcome records an attempt's answer on its span; an attempt
// without one ends here.
func attemptOutcome(rec *reqRecord, status int, err error) {
	s := rec.attempt
	if err != nil {
		s.RecordError(err)
		s.SetStatus(codes.Error, err.Error())
		s.End()
		rec.attempt = nil
		return
	}
	s.SetAttributes(attribute.Int("http.response.status_code", status))
	if status >= 500 {
		s.SetStatus(codes.Error, http.StatusText(status))
	}
}

// startMirrorSpan starts the span of a mirrored copy of the request and
// puts its context in the copy.
func (x *exchange) startMirrorSpan(m *mirror, out *outRequest) trace.Span {
	ctx, s := x.h.p.tracer.Start(x.r.Context(), "mirror "+x.r.Method,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("http.request.method", x.r.Method),
			attribute.String("tunnelgate.backend", m.slot.name),
		))
	var c traceCarrier
	telemetry.Propagator.Inject(ctx, &c)
	out.traceparent, out.tracestate = c.parent, c.state
	return s
}

// endMirrorSpan ends a mirror's span, if it has one.
func endMirrorSpan(s trace.Span, ep *endpoint, ok bool) {
	if s == nil {
		return
	}
	if ep != nil {
		s.SetAttributes(attribute.String("tunnelgate.endpoint", ep.addr))
	}
	if !ok {
		s.SetStatus(codes.Error, "mirror not delivered")
	}
	s.End()
}

// isClientBodyError reports a failure caused by the client's body, not
// the backend.
func isClientBodyError(err error) bool {
	var cb *errClientBody
	return errors.As(err, &cb)
}

// protoVersion is the HTTP version as the semantic conventions write it.
func protoVersion(r *http.Request) string {
	switch {
	case r.ProtoMajor == 2:
		return "2"
	case r.ProtoMajor == 1 && r.ProtoMinor == 0:
		return "1.0"
	}
	return "1.1"
}

// clientIP is the client's address: Cf-Connecting-Ip when the peer is
// trusted (cloudflared sets it to the visitor's address), else the peer.
func clientIP(r *http.Request, trusted bool) string {
	if trusted {
		if ip := firstValue(r.Header, "Cf-Connecting-Ip"); ip != "" {
			return ip
		}
	}
	return peerIP(r.RemoteAddr)
}
