// Package telemetry sets up OpenTelemetry tracing for both processes from
// the standard OTEL_* environment variables, so an operator configures
// tunnelgate the way they configure every other instrumented program.
//
// Tracing is off unless asked for: OTEL_TRACES_EXPORTER=otlp, or an OTLP
// endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
// without OTEL_TRACES_EXPORTER=none. OTEL_SDK_DISABLED=true turns it off
// whatever else is set. When off, the tracer provider is a no-op one and
// instrumented code pays a nil check per span.
//
// What the OTLP exporter reads (endpoint, headers, TLS, timeout, protocol
// "http/protobuf" or "grpc") is the exporter's own business; the sampler
// (OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG) is parsed here so that
// a typo fails the start with a clear error instead of silently sampling
// everything.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Propagator is the one context format spoken on the wire: W3C Trace
// Context (traceparent, tracestate).
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// Tracing is a process's tracer provider and how to stop it.
type Tracing struct {
	// Provider makes the process's tracers; a no-op provider when tracing
	// is off.
	Provider trace.TracerProvider
	// Enabled says whether spans are recorded and exported.
	Enabled bool
	// Describe is a one-line summary for the start-up log.
	Describe string
	// Shutdown flushes spans still buffered and stops the exporter.
	Shutdown func(context.Context) error

	// Exporter, Sampler and Resource are what Provider was built from, for
	// a recorder of its own (the proxy's request path records spans
	// without the SDK's per-span cost); nil when tracing is off. Spans
	// must be exported before Shutdown, which stops Exporter.
	Exporter sdktrace.SpanExporter
	Sampler  sdktrace.Sampler
	Resource *resource.Resource
}

// Off is tracing switched off.
func Off() *Tracing {
	return &Tracing{Provider: noop.NewTracerProvider(), Describe: "off", Shutdown: func(context.Context) error { return nil }}
}

// FromEnv builds tracing from the OTEL_* variables getenv returns (pass
// os.Getenv). service names the process when OTEL_SERVICE_NAME is unset.
func FromEnv(ctx context.Context, getenv func(string) string, service string) (*Tracing, error) {
	if !enabled(getenv) {
		return Off(), nil
	}
	sampler, desc, err := samplerFrom(getenv)
	if err != nil {
		return nil, err
	}
	var client otlptrace.Client
	proto := strings.TrimSpace(firstSet(getenv, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"))
	switch proto {
	case "", "http/protobuf":
		client = otlptracehttp.NewClient()
		proto = "http/protobuf"
	case "grpc":
		client = otlptracegrpc.NewClient()
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q: tracing speaks \"http/protobuf\" or \"grpc\"", proto)
	}
	exp, err := otlptrace.New(ctx, client)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	return New(exp, sampler, service, "otlp "+proto+", "+desc)
}

// New is tracing that exports to exp through a batching processor (the
// exporter never runs on a request's goroutine), sampled by sampler.
// Tests and benchmarks pass their own exporter.
func New(exp sdktrace.SpanExporter, sampler sdktrace.Sampler, service, describe string) (*Tracing, error) {
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", service)))
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override the default.
	if env, err := resource.New(context.Background(), resource.WithFromEnv()); err == nil {
		if merged, err := resource.Merge(res, env); err == nil {
			res = merged
		}
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithSampler(sampler),
		sdktrace.WithResource(res),
	)
	return &Tracing{Provider: tp, Enabled: true, Describe: describe, Shutdown: tp.Shutdown,
		Exporter: exp, Sampler: sampler, Resource: res}, nil
}

// enabled applies the switch described in the package comment.
func enabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))) {
	case "otlp":
		return true
	case "":
		return firstSet(getenv, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT") != ""
	}
	return false // "none", or an exporter this program does not have
}

// samplerFrom reads OTEL_TRACES_SAMPLER and its argument. The default is
// the specification's: parentbased_always_on.
func samplerFrom(getenv func(string) string) (sdktrace.Sampler, string, error) {
	name := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER")))
	arg := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG"))
	ratio := func() (float64, error) {
		if arg == "" {
			return 1, nil
		}
		v, err := strconv.ParseFloat(arg, 64)
		if err != nil || !(v >= 0 && v <= 1) { // NaN too
			return 0, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG %q: want a ratio from 0 to 1", arg)
		}
		return v, nil
	}
	switch name {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), "parentbased_always_on", nil
	case "always_on":
		return sdktrace.AlwaysSample(), name, nil
	case "always_off":
		return sdktrace.NeverSample(), name, nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), name, nil
	case "traceidratio", "parentbased_traceidratio":
		v, err := ratio()
		if err != nil {
			return nil, "", err
		}
		s := sdktrace.TraceIDRatioBased(v)
		if name == "parentbased_traceidratio" {
			s = sdktrace.ParentBased(s)
		}
		return s, name + " " + strconv.FormatFloat(v, 'g', -1, 64), nil
	}
	return nil, "", errors.New("OTEL_TRACES_SAMPLER " + strconv.Quote(name) +
		": want always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio")
}

func firstSet(getenv func(string) string, keys ...string) string {
	for _, k := range keys {
		if v := getenv(k); v != "" {
			return v
		}
	}
	return ""
}
