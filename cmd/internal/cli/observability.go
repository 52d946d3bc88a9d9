// This file opens the request path's log, access log and tracer.

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/observe"
	"github.com/tunnelgate/tunnelgate/internal/telemetry"
)

// RequestObservability is what a command serving requests tells
// operators through: the process log, the access log and the tracer.
type RequestObservability struct {
	Log       *slog.Logger
	AccessLog *observe.AccessLog // nil when off
	Tracer    *observe.Tracer    // nil when off

	stopTracing, closeAccessLog func()
}

// OpenRequestObservability opens the log, the access log and the tracer,
// as the flags and the OTEL_* variables ask.
func OpenRequestObservability(ctx context.Context, logf *LogFlags, accessLog *AccessLogFlags, stdout, stderr io.Writer) (*RequestObservability, error) {
	log, err := logf.Logger(stderr)
	if err != nil {
		return nil, err
	}
	al, closeAccessLog, err := accessLog.open(stdout, stderr)
	if err != nil {
		return nil, err
	}
	tracer, stopTracing, err := requestTracer(ctx, os.Getenv, log)
	if err != nil {
		closeAccessLog()
		return nil, fmt.Errorf("tracing: %w", err)
	}
	return &RequestObservability{Log: log, AccessLog: al, Tracer: tracer, stopTracing: stopTracing, closeAccessLog: closeAccessLog}, nil
}

// Close exports the traces left, then writes the access log's last lines;
// the command has stopped serving.
func (o *RequestObservability) Close() {
	o.stopTracing()
	o.closeAccessLog()
}

// requestTracer starts the tracer of the requests served when the OTEL_*
// variables ask for tracing, or returns nil. Its service is
// tunnelgate-proxy unless OTEL_SERVICE_NAME says otherwise: standalone
// mode serves through the same proxy. stop exports what is left, then
// stops the exporter.
func requestTracer(ctx context.Context, getenv func(string) string, log *slog.Logger) (t *observe.Tracer, stop func(), err error) {
	tr, err := telemetry.FromEnv(ctx, getenv, "tunnelgate-proxy")
	if err != nil {
		return nil, nil, err
	}
	log.Info("tracing", "mode", tr.Describe)
	if !tr.Enabled {
		return nil, func() {}, nil
	}
	t = observe.NewTracer(observe.TracerOptions{Exporter: tr.Exporter, Sampler: tr.Sampler, Resource: tr.Resource})
	return t, func() {
		t.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tr.Shutdown(sctx); err != nil && !errors.Is(err, context.Canceled) {
			log.Warn("tracing: spans may be lost at shutdown", "err", strings.TrimSpace(err.Error()))
		}
	}, nil
}
