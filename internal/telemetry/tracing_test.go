package telemetry

import (
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestEnabled(t *testing.T) {
	for i, c := range []struct {
		env  func(string) string
		want bool
	}{
		{env(), false},
		{env("OTEL_TRACES_EXPORTER", "otlp"), true},
		{env("OTEL_TRACES_EXPORTER", "OTLP"), true},
		{env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"), true},
		{env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:4318/v1/traces"), true},
		{env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://x", "OTEL_TRACES_EXPORTER", "none"), false},
		{env("OTEL_TRACES_EXPORTER", "otlp", "OTEL_SDK_DISABLED", "true"), false},
		{env("OTEL_TRACES_EXPORTER", "zipkin"), false},
	} {
		if got := enabled(c.env); got != c.want {
			t.Errorf("case %d: enabled = %v, want %v", i, got, c.want)
		}
	}
}

func TestSampler(t *testing.T) {
	for _, c := range []struct {
		name, arg, want, err string
	}{
		{"", "", "ParentBased{root:AlwaysOnSampler", ""},
		{"always_off", "", "AlwaysOffSampler", ""},
		{"traceidratio", "0.25", "TraceIDRatioBased{0.25}", ""},
		{"parentbased_traceidratio", "0.5", "ParentBased{root:TraceIDRatioBased{0.5}", ""},
		{"traceidratio", "", "TraceIDRatioBased{1}", ""},
		{"traceidratio", "1.5", "", "want a ratio from 0 to 1"},
		{"traceidratio", "half", "", "want a ratio from 0 to 1"},
		{"traceidratio", "NaN", "", "want a ratio from 0 to 1"},
		{"sometimes", "", "", `OTEL_TRACES_SAMPLER "sometimes"`},
	} {
		s, _, err := samplerFrom(env("OTEL_TRACES_SAMPLER", c.name, "OTEL_TRACES_SAMPLER_ARG", c.arg))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s %s: err %v, want %q", c.name, c.arg, err, c.err)
			}
			continue
		}
		if err != nil || !strings.HasPrefix(s.Description(), c.want) {
			t.Errorf("%s %s: %v %v, want %s", c.name, c.arg, s, err, c.want)
		}
	}
}

func TestFromEnvOffAndBadProtocol(t *testing.T) {
	tr, err := FromEnv(context.Background(), env(), "x")
	if err != nil || tr.Enabled {
		t.Fatalf("no variables: %+v %v, want tracing off", tr, err)
	}
	_, err = FromEnv(context.Background(), env("OTEL_TRACES_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"), "x")
	if err == nil || !strings.Contains(err.Error(), "http/json") {
		t.Fatalf("http/json: %v, want an error naming it", err)
	}
}

func TestNewNamesTheService(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr, err := New(exp, sdktrace.AlwaysSample(), "tunnelgate-test", "test")
	if err != nil {
		t.Fatal(err)
	}
	_, span := tr.Provider.Tracer("t").Start(context.Background(), "op")
	span.End()
	// (Shutdown would also empty the in-memory exporter.)
	if err := tr.Provider.(*sdktrace.TracerProvider).ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans exported, want 1", len(spans))
	}
	name, _ := spans[0].Resource.Set().Value("service.name")
	if name.AsString() != "tunnelgate-test" {
		t.Fatalf("service.name %q", name.AsString())
	}
}
