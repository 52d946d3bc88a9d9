// This file names the spans of a sync and their attributes.

package controller

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// A sync is traced as one span, tunnelgate.sync, with a child per step:
// tunnelgate.translate and tunnelgate.publish. The work a leading sync
// hands on happens later on goroutines of its own, in spans that link
// back to the sync: the status writes (tunnelgate.status_writes,
// statuswriter.go) and Cloudflare's (ctrl/cloudflare/observe.go).
//
// With tracing off the provider is a no-op: every Start returns the same
// non-recording span, and attributes are only built when a span records.
const (
	spanSync         = "tunnelgate.sync"
	spanTranslate    = "tunnelgate.translate"
	spanPublish      = "tunnelgate.publish"
	spanStatusWrites = "tunnelgate.status_writes"

	tracerName = "github.com/tunnelgate/tunnelgate/ctrl/controller"
)

// Attribute keys: ours are namespaced tunnelgate.*.
const (
	attrLeader           = attribute.Key("tunnelgate.sync.leader")
	attrConfigVersion    = attribute.Key("tunnelgate.config.version")
	attrRoutes           = attribute.Key("tunnelgate.config.routes")
	attrClusters         = attribute.Key("tunnelgate.config.clusters")
	attrEvents           = attribute.Key("tunnelgate.sync.events")
	attrTunnelClasses    = attribute.Key("tunnelgate.sync.tunnel_classes")
	attrStatusWrites     = attribute.Key("tunnelgate.sync.status_writes")
	attrStatusErrors     = attribute.Key("tunnelgate.sync.status_errors")
	attrStatusCompareAll = attribute.Key("tunnelgate.sync.status_compare_all")
)

// endSpan records err, if any, as the span's outcome and ends it.
func endSpan(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
