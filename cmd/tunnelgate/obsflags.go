package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/tunnelgate/tunnelgate/dataplane/observe"
	"github.com/tunnelgate/tunnelgate/internal/pprofgate"
	"github.com/tunnelgate/tunnelgate/internal/telemetry"
)

// Flags shared by the commands for what they tell operators: the log's
// level and format, the proxy's access log, and who may profile. Tracing
// has no flags: it follows the standard OTEL_* environment variables
// (internal/telemetry).

// addPprofFlag adds -pprof: who may read /debug/pprof/ on the admin
// listener (internal/pprofgate). The default serves loopback peers only,
// which is how kubectl port-forward arrives.
func addPprofFlag(fs *flag.FlagSet) *pprofgate.Mode {
	m := new(pprofgate.Mode)
	fs.Var(m, "pprof", "who may read /debug/pprof/ on -admin, a `mode`: loopback (the default: peers on this host's loopback, which is how kubectl port-forward connects), all (every peer that reaches -admin) or off")
	return m
}

// logFlags choose the process log's level and format.
type logFlags struct{ level, format *string }

func addLogFlags(fs *flag.FlagSet) *logFlags {
	return &logFlags{
		level:  fs.String("log-level", "info", "least severe log `level` written: debug, info, warn or error"),
		format: fs.String("log-format", "text", "log `format`: text (key=value) or json (one object per line)"),
	}
}

// logger builds the process log on w. It never logs secrets: tokens and
// keys are read from files and only their file names are logged.
func (f *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(*f.level)); err != nil {
		return nil, fmt.Errorf("-log-level %q: want debug, info, warn or error", *f.level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch *f.format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("-log-format %q: want text or json", *f.format)
}

// accessLogFlags configure the proxy's access log.
type accessLogFlags struct {
	dest      *string
	sample    *float64
	omitQuery *bool
	queue     *int
}

func addAccessLogFlags(fs *flag.FlagSet) *accessLogFlags {
	return &accessLogFlags{
		dest:      fs.String("access-log", "", "write a JSON line per request to `dest`: stdout, stderr or a file path (appended to); empty disables"),
		sample:    fs.Float64("access-log-sample", 1, "fraction of requests logged, from 0 (exclusive) to 1"),
		omitQuery: fs.Bool("access-log-omit-query", false, "log paths without their query string (which may carry tokens or personal data)"),
		queue:     fs.Int("access-log-queue", 4096, "lines waiting to be written; beyond, lines are dropped and counted"),
	}
}

// open starts the access log, or returns nil when it is off. close stops
// it once the proxy has stopped serving.
func (f *accessLogFlags) open(stdout, stderr io.Writer) (al *observe.AccessLog, close func(), err error) {
	if *f.dest == "" {
		return nil, func() {}, nil
	}
	if *f.sample <= 0 || *f.sample > 1 {
		return nil, nil, fmt.Errorf("-access-log-sample %g: want more than 0 and at most 1", *f.sample)
	}
	if *f.queue <= 0 {
		return nil, nil, fmt.Errorf("-access-log-queue %d: want a positive number", *f.queue)
	}
	var w io.Writer
	closeFile := func() {}
	switch *f.dest {
	case "stdout", "-":
		w = stdout
	case "stderr":
		w = stderr
	default:
		file, err := os.OpenFile(*f.dest, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
		if err != nil {
			return nil, nil, fmt.Errorf("-access-log: %w", err)
		}
		w, closeFile = file, func() { file.Close() }
	}
	al = observe.NewAccessLog(w, observe.AccessLogOptions{Sample: *f.sample, OmitQuery: *f.omitQuery, Queue: *f.queue})
	return al, func() { al.Close(); closeFile() }, nil
}

// proxyTracer starts the proxy's tracer when the OTEL_* variables ask for
// tracing, or returns nil. stop exports what is left, then stops the
// exporter.
func proxyTracer(ctx context.Context, getenv func(string) string, log *slog.Logger) (t *observe.Tracer, stop func(), err error) {
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

// requestObservability is what a command serving requests tells
// operators through: the process log, the access log and the tracer.
type requestObservability struct {
	log                         *slog.Logger
	accessLog                   *observe.AccessLog
	tracer                      *observe.Tracer
	stopTracing, closeAccessLog func()
}

// openRequestObservability opens the log, the access log and the tracer,
// as the flags and the OTEL_* variables ask.
func openRequestObservability(ctx context.Context, logf *logFlags, accessLog *accessLogFlags, stdout, stderr io.Writer) (*requestObservability, error) {
	log, err := logf.logger(stderr)
	if err != nil {
		return nil, err
	}
	al, closeAccessLog, err := accessLog.open(stdout, stderr)
	if err != nil {
		return nil, err
	}
	tracer, stopTracing, err := proxyTracer(ctx, os.Getenv, log)
	if err != nil {
		closeAccessLog()
		return nil, fmt.Errorf("tracing: %w", err)
	}
	return &requestObservability{log: log, accessLog: al, tracer: tracer, stopTracing: stopTracing, closeAccessLog: closeAccessLog}, nil
}

// close exports the traces left, then writes the access log's last lines;
// the command has stopped serving.
func (o *requestObservability) close() {
	o.stopTracing()
	o.closeAccessLog()
}
