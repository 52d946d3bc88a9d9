// This file implements the Tracer and its spans.

package observe

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The proxy records its spans itself instead of through the SDK's
// tracer. An SDK span builds, copies and de-duplicates an attribute list
// under a lock for every attribute call; on this path that cost more CPU
// than proxying the request. Here a span is one struct of plain fields
// filled as the request goes; the export goroutine turns it into the
// SDK's ReadOnlySpan, attributes and all, off the request path. Sampling
// (the configured SDK sampler), IDs, batching and the exporter are the
// standard OpenTelemetry ones, so what reaches the collector is what the
// SDK would have sent.

// TracerOptions configure a Tracer.
type TracerOptions struct {
	// Sampler decides which traces are recorded (sdktrace.ParentBased(
	// sdktrace.AlwaysSample()) when nil). Spans under a request's server
	// span follow its decision.
	Sampler sdktrace.Sampler
	// Exporter receives finished spans in batches; it is not shut down
	// by Close.
	Exporter sdktrace.SpanExporter
	// Resource describes the process; default resource.Default().
	Resource *resource.Resource
	// Interval is the longest a span waits to be exported; default 1 s.
	Interval time.Duration
	// Queue is the most spans waiting for export; beyond, spans are
	// dropped and counted. Default 8192.
	Queue int
}

// Tracer records the proxy's spans and exports them in batches.
type Tracer struct {
	opts  TracerOptions
	scope instrumentation.Scope
	queue *drainQueue[*Span]
	batch []sdktrace.ReadOnlySpan // spans taken from the queue, not yet exported

	exported, dropped, failed atomic.Int64
}

// exportBatch is the most spans given to the exporter at once.
const exportBatch = 512

// NewTracer starts a tracer; Close flushes and stops it.
func NewTracer(opts TracerOptions) *Tracer {
	if opts.Sampler == nil {
		opts.Sampler = sdktrace.ParentBased(sdktrace.AlwaysSample())
	}
	if opts.Resource == nil {
		opts.Resource = resource.Default()
	}
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.Queue <= 0 {
		opts.Queue = 8192
	}
	t := &Tracer{
		opts:  opts,
		scope: instrumentation.Scope{Name: scopeName},
		queue: newDrainQueue[*Span](opts.Queue),
		batch: make([]sdktrace.ReadOnlySpan, 0, exportBatch),
	}
	// Batches go out when full, and whenever the queue has been drained:
	// every Interval with spans waiting, when it is half full, at Close.
	go t.queue.run(opts.Interval, t.take, t.export)
	return t
}

// Close exports the spans queued and stops. Spans ended after it are
// dropped.
func (t *Tracer) Close() { t.queue.close() }

// Counts are how many spans were exported, dropped because the export
// queue was full, and failed to export.
func (t *Tracer) Counts() (exported, dropped, failed int64) {
	return t.exported.Load(), t.dropped.Load(), t.failed.Load()
}

// scopeName is the instrumentation scope of the proxy's spans and metric
// instruments. It names the package that recorded them before this one
// existed, so what collectors and dashboards see did not change.
const scopeName = "github.com/tunnelgate/tunnelgate/dataplane"

// Span is one span as the request path records it. Its identity is set
// when it starts; its attributes are plain fields the proxy fills as the
// request goes, which export turns into attribute.KeyValues, leaving out
// those empty or zero (or, for Retries and Attempt, not Set).
type Span struct {
	name       string
	kind       trace.SpanKind
	sc, parent trace.SpanContext
	end        time.Time

	// Start is when the span began: Child sets it; the caller of
	// StartServer sets it to the request's arrival.
	Start time.Time

	Method     string // http.request.method
	Scheme     string // url.scheme
	Path       string // url.path
	Host       string // server.address: the host the client asked for
	ServerHost string // server.address: the backend an attempt reached
	Port       int    // server.port
	Client     string // client.address
	Status     int    // http.response.status_code
	Route      string // tunnelgate.route
	Rule       string // tunnelgate.rule
	Backend    string // tunnelgate.backend
	Endpoint   string // tunnelgate.endpoint
	Retries    int    // tunnelgate.retries, exported when RetriesSet
	RetriesSet bool   // Retries holds a count, 0 included
	Attempt    int    // tunnelgate.attempt, exported when AttemptSet
	AttemptSet bool   // Attempt holds a number, 0 included
	WebSocket  bool   // tunnelgate.websocket, exported when true

	// ErrText, when set, marks the span failed and says why. With
	// ErrIsException it is an error, also recorded as an exception
	// event; without, a failed answer (a 5xx).
	ErrText        string
	ErrIsException bool
}

// SpanContext is the span's identity, to propagate to whoever works for
// it (Traceparent).
func (s *Span) SpanContext() trace.SpanContext { return s.sc }

// StartServer begins a request's server span, continuing parent (the
// client's traceparent, if valid) and asking the sampler. It returns nil
// when the trace is not sampled; sc is then what to propagate, marked not
// sampled so the backends leave the trace out too.
func (t *Tracer) StartServer(parent trace.SpanContext, name string) (s *Span, sc trace.SpanContext) {
	var tid trace.TraceID
	ctx := context.Background()
	if parent.IsValid() {
		tid = parent.TraceID()
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	} else {
		putUint64(tid[:8], rand.Uint64())
		putUint64(tid[8:], rand.Uint64())
	}
	res := t.opts.Sampler.ShouldSample(sdktrace.SamplingParameters{
		ParentContext: ctx, TraceID: tid, Name: name, Kind: trace.SpanKindServer,
	})
	flags := parent.TraceFlags() &^ trace.FlagsSampled
	if res.Decision == sdktrace.RecordAndSample {
		flags |= trace.FlagsSampled
	}
	sc = trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: newSpanID(), TraceFlags: flags, TraceState: res.Tracestate,
	})
	if !sc.IsSampled() {
		return nil, sc
	}
	return &Span{name: name, kind: trace.SpanKindServer, sc: sc, parent: parent}, sc
}

// Child begins a client span under s (a span StartServer returned),
// starting now.
func (s *Span) Child(name string) *Span {
	sc := s.sc.WithSpanID(newSpanID())
	return &Span{name: name, kind: trace.SpanKindClient, sc: sc, parent: s.sc, Start: time.Now()}
}

func newSpanID() trace.SpanID {
	var id trace.SpanID
	for id == (trace.SpanID{}) {
		putUint64(id[:], rand.Uint64())
	}
	return id
}

func putUint64(b []byte, v uint64) {
	for i := range 8 {
		b[i] = byte(v >> (56 - 8*i))
	}
}

// Traceparent formats a span context as the W3C Trace Context fields
// traceparent and tracestate (the propagator's work, without its map
// and builder); state is empty when the context has no trace state.
func Traceparent(sc trace.SpanContext) (parent, state string) {
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

// Finish ends s at end and queues it for export, or drops and counts it
// when the queue is full. s must not be changed afterwards.
func (t *Tracer) Finish(s *Span, end time.Time) {
	s.end = end
	if !t.queue.offer(s) {
		t.dropped.Add(1)
	}
}

// take adds a span to the batch, exporting the batch once it is full.
func (t *Tracer) take(s *Span) {
	t.batch = append(t.batch, t.readOnly(s))
	if len(t.batch) == exportBatch {
		t.export()
	}
}

// export hands the batch to the exporter.
func (t *Tracer) export() {
	if len(t.batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := t.opts.Exporter.ExportSpans(ctx, t.batch); err != nil {
		t.failed.Add(int64(len(t.batch)))
	} else {
		t.exported.Add(int64(len(t.batch)))
	}
	clear(t.batch)
	t.batch = t.batch[:0]
}

// readOnly is s as the SDK's exporters take it.
func (t *Tracer) readOnly(s *Span) sdktrace.ReadOnlySpan {
	e := &exportSpan{s: s, t: t}
	str := func(k, v string) {
		if v != "" {
			e.attrs = append(e.attrs, attribute.String(k, v))
		}
	}
	e.attrs = make([]attribute.KeyValue, 0, s.attrCount())
	str("http.request.method", s.Method)
	str("url.scheme", s.Scheme)
	str("url.path", s.Path)
	str("server.address", s.Host)
	str("server.address", s.ServerHost)
	if s.Port != 0 {
		e.attrs = append(e.attrs, attribute.Int("server.port", s.Port))
	}
	str("client.address", s.Client)
	if s.Status != 0 {
		e.attrs = append(e.attrs, attribute.Int("http.response.status_code", s.Status))
	}
	str("tunnelgate.route", s.Route)
	str("tunnelgate.rule", s.Rule)
	str("tunnelgate.backend", s.Backend)
	str("tunnelgate.endpoint", s.Endpoint)
	if s.RetriesSet {
		e.attrs = append(e.attrs, attribute.Int("tunnelgate.retries", s.Retries))
	}
	if s.AttemptSet {
		e.attrs = append(e.attrs, attribute.Int("tunnelgate.attempt", s.Attempt))
	}
	if s.WebSocket {
		e.attrs = append(e.attrs, attribute.Bool("tunnelgate.websocket", true))
	}
	if s.ErrText != "" {
		e.status = sdktrace.Status{Code: codes.Error, Description: s.ErrText}
		if s.ErrIsException {
			e.events = []sdktrace.Event{{
				Name: "exception", Time: s.end,
				Attributes: []attribute.KeyValue{attribute.String("exception.message", s.ErrText)},
			}}
		}
	}
	return e
}

// attrCount is how many attributes readOnly makes of s.
func (s *Span) attrCount() int {
	n := 0
	for _, v := range [...]string{s.Method, s.Scheme, s.Path, s.Host, s.ServerHost, s.Client, s.Route, s.Rule, s.Backend, s.Endpoint} {
		if v != "" {
			n++
		}
	}
	for _, b := range [...]bool{s.Port != 0, s.Status != 0, s.RetriesSet, s.AttemptSet, s.WebSocket} {
		if b {
			n++
		}
	}
	return n
}

// exportSpan presents a Span as an sdktrace.ReadOnlySpan. The SDK
// closes that interface with an unexported method; the embedded (nil)
// interface supplies it, and every exported method is defined here.
type exportSpan struct {
	sdktrace.ReadOnlySpan
	s      *Span
	t      *Tracer
	attrs  []attribute.KeyValue
	events []sdktrace.Event
	status sdktrace.Status
}

func (e *exportSpan) Name() string                                { return e.s.name }
func (e *exportSpan) SpanContext() trace.SpanContext              { return e.s.sc }
func (e *exportSpan) Parent() trace.SpanContext                   { return e.s.parent }
func (e *exportSpan) SpanKind() trace.SpanKind                    { return e.s.kind }
func (e *exportSpan) StartTime() time.Time                        { return e.s.Start }
func (e *exportSpan) EndTime() time.Time                          { return e.s.end }
func (e *exportSpan) Attributes() []attribute.KeyValue            { return e.attrs }
func (e *exportSpan) Links() []sdktrace.Link                      { return nil }
func (e *exportSpan) Events() []sdktrace.Event                    { return e.events }
func (e *exportSpan) Status() sdktrace.Status                     { return e.status }
func (e *exportSpan) InstrumentationScope() instrumentation.Scope { return e.t.scope }
func (e *exportSpan) Resource() *resource.Resource                { return e.t.opts.Resource }
func (e *exportSpan) DroppedAttributes() int                      { return 0 }
func (e *exportSpan) DroppedLinks() int                           { return 0 }
func (e *exportSpan) DroppedEvents() int                          { return 0 }
func (e *exportSpan) ChildSpanCount() int                         { return 0 }

// InstrumentationLibrary is deprecated by the SDK, but sdktrace's
// ReadOnlySpan still requires it.
//
//lint:ignore SA1019 required by sdktrace.ReadOnlySpan
func (e *exportSpan) InstrumentationLibrary() instrumentation.Library {
	//lint:ignore SA1019 required by sdktrace.ReadOnlySpan
	return instrumentation.Library{Name: e.t.scope.Name}
}
