// This file implements the sync's metrics and trace spans of API calls.

package cloudflare

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/cloudflare/cloudflare-go/v7/option"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/tunnelgate/tunnelgate/ctrl/translate"
)

// Every HTTP request to Cloudflare's API is counted, timed and traced by
// one cloudflare-go middleware (observer.do): a listing of several pages
// is several calls, as Cloudflare's rate limit counts them. The api method
// names its operation in the request's context; the middleware never reads
// the URL or the body, so no label or attribute can carry request data,
// and the token (a header) is never looked at.

// operation is the kind of call: the "operation" label and the
// cloudflare.operation attribute.
type operation uint8

const (
	opOther operation = iota // a call no api method named (a bug; kept countable)
	opAccountList
	opZoneList
	opTunnelGet
	opTunnelList
	opTunnelCreate
	opTunnelTokenGet
	opTunnelSecretEdit // a new tunnel secret: the credential rotated
	opTunnelConfigGet
	opTunnelConfigPut
	opTunnelConnectionsDelete
	opTunnelDelete
	opDNSList
	opDNSBatch // deletes, updates and creates of one zone, applied all or nothing
	opAccessAppList
	opAccessAppCreate
	opAccessAppUpdate
	opAccessAppDelete
	opAccessPolicyList
	opAccessPolicyCreate
	opAccessPolicyUpdate
	opAccessPolicyDelete
	opAccessTagList
	opAccessTagCreate
	opLBMonitorList
	opLBMonitorGet
	opLBMonitorCreate
	opLBMonitorUpdate
	opLBMonitorDelete
	opLBPoolList
	opLBPoolGet
	opLBPoolCreate
	opLBPoolEdit // the origins of a pool, or its monitor
	opLBPoolDelete
	opLBList
	opLBGet
	opLBCreate
	opLBUpdate
	opLBDelete
	numOps
)

var opNames = [numOps]string{"other", "account_list", "zone_list", "tunnel_get", "tunnel_list", "tunnel_create",
	"tunnel_token_get", "tunnel_secret_edit", "tunnel_config_get", "tunnel_config_put",
	"tunnel_connections_delete", "tunnel_delete", "dns_list", "dns_batch",
	"access_app_list", "access_app_create", "access_app_update", "access_app_delete",
	"access_policy_list", "access_policy_create", "access_policy_update", "access_policy_delete",
	"access_tag_list", "access_tag_create",
	"lb_monitor_list", "lb_monitor_get", "lb_monitor_create", "lb_monitor_update", "lb_monitor_delete",
	"lb_pool_list", "lb_pool_get", "lb_pool_create", "lb_pool_edit", "lb_pool_delete",
	"lb_list", "lb_get", "lb_create", "lb_update", "lb_delete"}

// callOutcome is how a call ended: the "outcome" label.
type callOutcome uint8

const (
	outcomeOK          callOutcome = iota // below 400
	outcomeClientError                    // 4xx but 429
	outcomeRateLimited                    // 429
	outcomeServerError                    // 5xx
	outcomeNetwork                        // no answer: dial, TLS, timeout, canceled
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"ok", "client_error", "rate_limited", "server_error", "network"}

// classify sorts an HTTP exchange into a callOutcome.
func classify(res *http.Response, err error) callOutcome {
	switch {
	case err != nil || res == nil:
		return outcomeNetwork
	case res.StatusCode == http.StatusTooManyRequests:
		return outcomeRateLimited
	case res.StatusCode >= 500:
		return outcomeServerError
	case res.StatusCode >= 400:
		return outcomeClientError
	}
	return outcomeOK
}

type opKey struct{}

// withOp names the operation of the calls made under ctx.
func withOp(ctx context.Context, op operation) context.Context {
	return context.WithValue(ctx, opKey{}, op)
}

// Attribute keys of the call spans (OpenTelemetry's HTTP conventions
// where one fits) and of the Syncer's spans.
const (
	attrOperation  = attribute.Key("cloudflare.operation")
	attrMethod     = attribute.Key("http.request.method")
	attrStatusCode = attribute.Key("http.response.status_code")
	attrErrorType  = attribute.Key("error.type")
	attrClass      = attribute.Key("tunnelgate.gateway_class")
	attrTunnelID   = attribute.Key("tunnelgate.cloudflare.tunnel_id")
	attrChanged    = attribute.Key("tunnelgate.cloudflare.report_changed")
)

// callBuckets suit one API call: tens of milliseconds when all is well, up
// to the 30 s request timeout.
var callBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// observer holds the tracer and instruments of the calls, with every
// label set made once so a call allocates none.
type observer struct {
	tracer   trace.Tracer
	calls    metric.Int64Counter
	duration metric.Float64Histogram
	spanName [numOps]string
	callSet  [numOps][numOutcomes]metric.AddOption
	opSet    [numOps]metric.RecordOption

	// rotations counts tunnel credential rotations (rotation.go) by
	// outcome: one done, or a step that failed.
	rotations                   metric.Int64Counter
	rotatedSet, rotationFailSet metric.AddOption
}

// newObserver makes the instruments on m and the tracer from tp; nil
// means none. A meter that refuses an instrument costs the metric, not
// the sync.
func newObserver(tp trace.TracerProvider, m metric.Meter, log *slog.Logger) *observer {
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	if m == nil {
		m = metricnoop.NewMeterProvider().Meter("")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	o := &observer{tracer: tp.Tracer("github.com/tunnelgate/tunnelgate/ctrl/cloudflare")}
	var err1, err2, err3 error
	o.calls, err1 = m.Int64Counter("tunnelgate.cloudflare.api.calls", metric.WithUnit("{call}"),
		metric.WithDescription("Cloudflare API requests, by operation and outcome."))
	o.duration, err2 = m.Float64Histogram("tunnelgate.cloudflare.api.call.duration", metric.WithUnit("s"),
		metric.WithDescription("Time to Cloudflare's answer (its headers), by operation."),
		metric.WithExplicitBucketBoundaries(callBuckets...))
	o.rotations, err3 = m.Int64Counter("tunnelgate.cloudflare.tunnel.credential.rotations", metric.WithUnit("{rotation}"),
		metric.WithDescription("Tunnel credential rotations: done (rotated), or a step that failed (failed, retried)."))
	if err := errors.Join(err1, err2, err3); err != nil {
		log.Error("Cloudflare API metrics unavailable", "err", err)
		nm := metricnoop.NewMeterProvider().Meter("")
		o.calls, _ = nm.Int64Counter("")
		o.duration, _ = nm.Float64Histogram("")
		o.rotations, _ = nm.Int64Counter("")
	}
	o.rotatedSet = metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", "rotated")))
	o.rotationFailSet = metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", "failed")))
	// Both series from the start, so a rate or an alert has them before
	// the first rotation.
	o.rotations.Add(context.Background(), 0, o.rotatedSet)
	o.rotations.Add(context.Background(), 0, o.rotationFailSet)
	for op := range numOps {
		o.spanName[op] = "cloudflare." + opNames[op]
		o.opSet[op] = metric.WithAttributeSet(attribute.NewSet(attribute.String("operation", opNames[op])))
		for oc := range numOutcomes {
			o.callSet[op][oc] = metric.WithAttributeSet(attribute.NewSet(
				attribute.String("operation", opNames[op]), attribute.String("outcome", outcomeNames[oc])))
		}
	}
	return o
}

// do is the middleware: a client span per request, the call counted by
// outcome and timed. The span context is not sent to Cloudflare: a trace
// of ours is no business of a third party's.
func (o *observer) do(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	ctx := r.Context()
	op, _ := ctx.Value(opKey{}).(operation)
	_, span := o.tracer.Start(ctx, o.spanName[op], trace.WithSpanKind(trace.SpanKindClient))
	start := time.Now()
	res, err := next(r)
	d := time.Since(start)
	oc := classify(res, err)
	// The instruments ignore cancellation; the call may have been
	// canceled, and its cost still counts.
	mctx := context.WithoutCancel(ctx)
	o.calls.Add(mctx, 1, o.callSet[op][oc])
	o.duration.Record(mctx, d.Seconds(), o.opSet[op])
	if span.IsRecording() {
		span.SetAttributes(attrOperation.String(opNames[op]), attrMethod.String(r.Method))
		if res != nil {
			span.SetAttributes(attrStatusCode.Int(res.StatusCode))
		}
		if oc != outcomeOK {
			span.SetAttributes(attrErrorType.String(outcomeNames[oc]))
			if err != nil {
				msg := errorClass(err) // without the URL
				span.RecordError(errors.New(msg))
				span.SetStatus(codes.Error, msg)
			} else if res != nil {
				span.SetStatus(codes.Error, http.StatusText(res.StatusCode))
			}
		}
	}
	span.End()
	return res, err
}

// startClassSpan starts the span of one class's sync. It is a root span:
// the Syncer works on its own goroutine, after and apart from the
// controller sync that asked for the work (the controller never waits on
// Cloudflare), and one wish may take several attempts; so its API calls
// are children of this span, which links to the controller sync that made
// the wish.
func (s *Syncer) startClassSpan(ctx context.Context, class string, cause trace.SpanContext) (context.Context, trace.Span) {
	opts := []trace.SpanStartOption{trace.WithNewRoot()}
	if cause.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: cause}))
	}
	ctx, span := s.obs.tracer.Start(ctx, "tunnelgate.cloudflare.sync", opts...)
	if span.IsRecording() {
		span.SetAttributes(attrClass.String(class))
	}
	return ctx, span
}

// endClassSpan ends a class's sync span with what it achieved. Errors
// are the Syncer's own descriptions, which never hold the token.
func endClassSpan(span trace.Span, st *translate.TunnelState, changed bool, err error) {
	if span.IsRecording() {
		span.SetAttributes(attrChanged.Bool(changed))
		if st != nil && st.ID != "" {
			span.SetAttributes(attrTunnelID.String(st.ID))
		}
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
}
