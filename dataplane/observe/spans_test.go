package observe

import (
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func TestTraceparent(t *testing.T) {
	ts, err := trace.ParseTraceState("vendor=x")
	if err != nil {
		t.Fatal(err)
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 15: 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 7: 0xb7},
		TraceFlags: trace.FlagsSampled,
		TraceState: ts,
	})
	parent, state := Traceparent(sc)
	if want := "00-4bf90000000000000000000000000036-00f00000000000b7-01"; parent != want {
		t.Errorf("traceparent %q, want %q", parent, want)
	}
	if state != "vendor=x" {
		t.Errorf("tracestate %q, want vendor=x", state)
	}
	if _, state := Traceparent(sc.WithTraceState(trace.TraceState{})); state != "" {
		t.Errorf("tracestate %q without a trace state", state)
	}
}

// A server span and its child reach the exporter with the identity they
// started with and the attributes set, in a fixed order; an unsampled
// trace records nothing but still has a context to propagate.
func TestSpanExport(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr := NewTracer(TracerOptions{Exporter: exp, Sampler: sdktrace.AlwaysSample()})
	start := time.Now()
	s, sc := tr.StartServer(trace.SpanContext{}, "GET r")
	if s == nil || !sc.IsSampled() || !s.SpanContext().Equal(sc) {
		t.Fatalf("StartServer: span %v, context %v", s, sc)
	}
	s.Start, s.Method, s.Path, s.Host, s.Route, s.Rule, s.Status = start, "GET", "/p", "h", "r", "0", 503
	s.Retries, s.RetriesSet = 0, true
	s.ErrText = "Service Unavailable"
	a := s.Child("GET")
	a.ServerHost, a.Port, a.Attempt, a.AttemptSet = "10.0.0.1", 8080, 0, true
	a.ErrText, a.ErrIsException = "connection refused", true
	tr.Finish(a, start.Add(time.Millisecond))
	tr.Finish(s, start.Add(2*time.Millisecond))
	tr.Close()

	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans exported, want 2", len(spans))
	}
	attempt, server := spans[0], spans[1]
	for _, tc := range []struct {
		span  tracetest.SpanStub
		kind  trace.SpanKind
		attrs string
	}{
		{server, trace.SpanKindServer, "http.request.method=GET url.path=/p server.address=h http.response.status_code=503 tunnelgate.route=r tunnelgate.rule=0 tunnelgate.retries=0"},
		{attempt, trace.SpanKindClient, "server.address=10.0.0.1 server.port=8080 tunnelgate.attempt=0"},
	} {
		var got []string
		for _, kv := range tc.span.Attributes {
			got = append(got, string(kv.Key)+"="+kv.Value.String())
		}
		if g := strings.Join(got, " "); g != tc.attrs {
			t.Errorf("%s span attributes\n got %s\nwant %s", tc.kind, g, tc.attrs)
		}
		if tc.span.SpanKind != tc.kind || tc.span.Status.Code != codes.Error {
			t.Errorf("span %q: kind %v status %v", tc.span.Name, tc.span.SpanKind, tc.span.Status)
		}
		if tc.span.InstrumentationScope.Name != "github.com/tunnelgate/tunnelgate/dataplane" {
			t.Errorf("scope %q", tc.span.InstrumentationScope.Name)
		}
	}
	if !attempt.Parent.Equal(server.SpanContext) || !attempt.StartTime.After(start) || !server.StartTime.Equal(start) {
		t.Errorf("attempt's parent %v start %v; server %v start %v", attempt.Parent, attempt.StartTime, server.SpanContext, server.StartTime)
	}
	if len(attempt.Events) != 1 || attempt.Events[0].Name != "exception" || len(server.Events) != 0 {
		t.Errorf("events: attempt %v, server %v; want one exception on the attempt", attempt.Events, server.Events)
	}
	if exported, dropped, failed := tr.Counts(); exported != 2 || dropped != 0 || failed != 0 {
		t.Errorf("counts %d %d %d, want 2 0 0", exported, dropped, failed)
	}

	never := NewTracer(TracerOptions{Exporter: exp, Sampler: sdktrace.NeverSample()})
	defer never.Close()
	if s, sc := never.StartServer(trace.SpanContext{}, "GET"); s != nil || !sc.IsValid() || sc.IsSampled() {
		t.Errorf("unsampled: span %v, context %v; want none, and a valid unsampled context", s, sc)
	}
}
