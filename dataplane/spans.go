package dataplane

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
	queue *drainQueue[*proxySpan]
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
		scope: instrumentation.Scope{Name: meterName},
		queue: newDrainQueue[*proxySpan](opts.Queue),
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

// proxySpan is one span as the request path records it. Attributes are
// plain fields; export turns the ones set into attribute.KeyValues.
type proxySpan struct {
	name       string
	kind       trace.SpanKind
	sc, parent trace.SpanContext
	start, end time.Time

	method, scheme, path, host, client string
	route, rule, backend, endpoint     string
	serverHost                         string
	status, retries, attempt, port     int
	retriesSet, attemptSet, websocket  bool
	errText                            string // the span failed: why
	errIsException                     bool   // errText is an error (an exception event)
}

// startServer begins a request's server span, continuing parent (the
// client's traceparent, if valid) and asking the sampler. It returns nil
// when the trace is not sampled; then sc is what to propagate.
func (t *Tracer) startServer(parent trace.SpanContext, name string) (s *proxySpan, sc trace.SpanContext) {
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
	return &proxySpan{name: name, kind: trace.SpanKindServer, sc: sc, parent: parent}, sc
}

// child begins a client span under parent, which is sampled.
func child(parent *proxySpan, name string) *proxySpan {
	sc := parent.sc.WithSpanID(newSpanID())
	return &proxySpan{name: name, kind: trace.SpanKindClient, sc: sc, parent: parent.sc, start: time.Now()}
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

// finish queues s for export, or drops it when the queue is full.
func (t *Tracer) finish(s *proxySpan, end time.Time) {
	s.end = end
	if !t.queue.offer(s) {
		t.dropped.Add(1)
	}
}

// take adds a span to the batch, exporting the batch once it is full.
func (t *Tracer) take(s *proxySpan) {
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
func (t *Tracer) readOnly(s *proxySpan) sdktrace.ReadOnlySpan {
	e := &exportSpan{s: s, t: t}
	str := func(k, v string) {
		if v != "" {
			e.attrs = append(e.attrs, attribute.String(k, v))
		}
	}
	e.attrs = make([]attribute.KeyValue, 0, s.attrCount())
	str("http.request.method", s.method)
	str("url.scheme", s.scheme)
	str("url.path", s.path)
	str("server.address", s.host)
	str("server.address", s.serverHost)
	if s.port != 0 {
		e.attrs = append(e.attrs, attribute.Int("server.port", s.port))
	}
	str("client.address", s.client)
	if s.status != 0 {
		e.attrs = append(e.attrs, attribute.Int("http.response.status_code", s.status))
	}
	str("tunnelgate.route", s.route)
	str("tunnelgate.rule", s.rule)
	str("tunnelgate.backend", s.backend)
	str("tunnelgate.endpoint", s.endpoint)
	if s.retriesSet {
		e.attrs = append(e.attrs, attribute.Int("tunnelgate.retries", s.retries))
	}
	if s.attemptSet {
		e.attrs = append(e.attrs, attribute.Int("tunnelgate.attempt", s.attempt))
	}
	if s.websocket {
		e.attrs = append(e.attrs, attribute.Bool("tunnelgate.websocket", true))
	}
	if s.errText != "" {
		e.status = sdktrace.Status{Code: codes.Error, Description: s.errText}
		if s.errIsException {
			e.events = []sdktrace.Event{{
				Name: "exception", Time: s.end,
				Attributes: []attribute.KeyValue{attribute.String("exception.message", s.errText)},
			}}
		}
	}
	return e
}

// attrCount is how many attributes readOnly makes of s.
func (s *proxySpan) attrCount() int {
	n := 0
	for _, v := range [...]string{s.method, s.scheme, s.path, s.host, s.serverHost, s.client, s.route, s.rule, s.backend, s.endpoint} {
		if v != "" {
			n++
		}
	}
	for _, b := range [...]bool{s.port != 0, s.status != 0, s.retriesSet, s.attemptSet, s.websocket} {
		if b {
			n++
		}
	}
	return n
}

// exportSpan presents a proxySpan as an sdktrace.ReadOnlySpan. The SDK
// closes that interface with an unexported method; the embedded (nil)
// interface supplies it, and every exported method is defined here.
type exportSpan struct {
	sdktrace.ReadOnlySpan
	s      *proxySpan
	t      *Tracer
	attrs  []attribute.KeyValue
	events []sdktrace.Event
	status sdktrace.Status
}

func (e *exportSpan) Name() string                                { return e.s.name }
func (e *exportSpan) SpanContext() trace.SpanContext              { return e.s.sc }
func (e *exportSpan) Parent() trace.SpanContext                   { return e.s.parent }
func (e *exportSpan) SpanKind() trace.SpanKind                    { return e.s.kind }
func (e *exportSpan) StartTime() time.Time                        { return e.s.start }
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
