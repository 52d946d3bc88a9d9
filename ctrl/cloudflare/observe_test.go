package cloudflare

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		status int // 0: no answer
		err    error
		want   string
	}{
		{200, nil, "ok"},
		{304, nil, "ok"},
		{400, nil, "client_error"},
		{403, nil, "client_error"},
		{404, nil, "client_error"},
		{429, nil, "rate_limited"},
		{500, nil, "server_error"},
		{503, nil, "server_error"},
		{0, &net.OpError{Op: "dial", Err: errors.New("connection refused")}, "network"},
		{0, context.DeadlineExceeded, "network"},
		{0, context.Canceled, "network"},
	}
	for _, tc := range cases {
		var res *http.Response
		if tc.status != 0 {
			res = &http.Response{StatusCode: tc.status}
		}
		if got := outcomeNames[classify(res, tc.err)]; got != tc.want {
			t.Errorf("status %d, err %v: %s, want %s", tc.status, tc.err, got, tc.want)
		}
	}
}

// Every request is a client span under the caller's, and a count by
// operation and outcome; nothing of the token or the URL reaches either.
func TestCallsTracedAndCounted(t *testing.T) {
	const secret = "api-token-never-in-telemetry"
	statuses := []int{200, 404, 429, 500}
	next := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code := statuses[next%len(statuses)]
		next++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		if code == 200 {
			w.Write([]byte(`{"success":true,"errors":[],"messages":[],"result":{"config":{"ingress":[{"service":"http_status:404"}]}}}`))
			return
		}
		w.Write([]byte(`{"success":false,"errors":[{"code":1000,"message":"no"}],"messages":[],"result":null}`))
	}))
	defer srv.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close() // nothing listens: a dial error

	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	meter := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test")
	obs := newObserver(tp, meter, nil)

	ctx, parent := tp.Tracer("test").Start(context.Background(), "parent")
	a := newAPI(srv.URL, secret, nil, &Stats{}, obs)
	for range statuses {
		a.getConfig(ctx, "acc", "tun")
	}
	if err := newAPI(closedURL, secret, nil, &Stats{}, obs).putConfig(ctx, "acc", "tun", Document{}); err == nil {
		t.Fatal("a call to a closed port worked")
	}
	parent.End()

	type seen struct {
		status  int64
		errType string
		isError bool
		op      string
	}
	var got []seen
	for _, s := range spans.GetSpans() {
		if s.Name == "parent" {
			continue
		}
		if s.Parent.SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("%s: not a child of the caller's span", s.Name)
		}
		if s.SpanKind.String() != "client" {
			t.Errorf("%s: kind %s, want client", s.Name, s.SpanKind)
		}
		var g seen
		for _, kv := range s.Attributes {
			if strings.Contains(kv.Value.String(), secret) || strings.Contains(kv.Value.String(), "127.0.0.1") {
				t.Errorf("%s: attribute %s=%s carries request data", s.Name, kv.Key, kv.Value.String())
			}
			switch kv.Key {
			case "http.response.status_code":
				g.status = kv.Value.AsInt64()
			case "error.type":
				g.errType = kv.Value.AsString()
			case "cloudflare.operation":
				g.op = kv.Value.AsString()
			}
		}
		for _, ev := range s.Events {
			for _, kv := range ev.Attributes {
				if strings.Contains(kv.Value.String(), secret) || strings.Contains(kv.Value.String(), "127.0.0.1") {
					t.Errorf("%s: event attribute %s=%s carries request data", s.Name, kv.Key, kv.Value.String())
				}
			}
		}
		g.isError = s.Status.Code == codes.Error
		if s.Name != "cloudflare."+g.op {
			t.Errorf("span %s for operation %q", s.Name, g.op)
		}
		got = append(got, g)
	}
	want := []seen{
		{200, "", false, "tunnel_config_get"},
		{404, "client_error", true, "tunnel_config_get"},
		{429, "rate_limited", true, "tunnel_config_get"},
		{500, "server_error", true, "tunnel_config_get"},
		{0, "network", true, "tunnel_config_put"},
	}
	if len(got) != len(want) {
		t.Fatalf("spans %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("span %d: %+v, want %+v", i, got[i], want[i])
		}
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	var timed uint64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				if m.Name != "tunnelgate.cloudflare.api.calls" {
					continue
				}
				for _, p := range d.DataPoints {
					counts[attr(p.Attributes, "operation")+"/"+attr(p.Attributes, "outcome")] += p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					timed += p.Count
				}
			}
		}
	}
	wantCounts := map[string]int64{"tunnel_config_get/ok": 1, "tunnel_config_get/client_error": 1,
		"tunnel_config_get/rate_limited": 1, "tunnel_config_get/server_error": 1, "tunnel_config_put/network": 1}
	if len(counts) != len(wantCounts) {
		t.Errorf("calls %v, want %v", counts, wantCounts)
	}
	for k, v := range wantCounts {
		if counts[k] != v {
			t.Errorf("calls{%s} = %d, want %d", k, counts[k], v)
		}
	}
	if timed != 5 {
		t.Errorf("%d calls timed, want 5", timed)
	}
}

func attr(s attribute.Set, k attribute.Key) string {
	v, _ := s.Value(k)
	return v.AsString()
}
