// This file implements the proxy command: Run, Main and one run.

package proxycmd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"go.opentelemetry.io/otel/metric"

	"github.com/tunnelgate/tunnelgate/cmd/internal/cli"
	"github.com/tunnelgate/tunnelgate/dataplane"
	"github.com/tunnelgate/tunnelgate/dataplane/configwatch"
	"github.com/tunnelgate/tunnelgate/dataplane/observe"
)

// Run runs the proxy command until SIGINT or SIGTERM and returns the
// process exit code: 0 once stopped, 1 when serving failed, 2 when the
// command line is wrong. name is how the command was called ("tunnelgate
// proxy", "tunnelgate-proxy"), for its usage and errors.
func Run(name string, args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Main(ctx, name, args, stdout, stderr, nil)
}

// Main is Run until ctx ends; ready, if set, is told the bound addresses
// (tests listen on ":0").
func Main(ctx context.Context, name string, args []string, stdout, stderr io.Writer, ready func(dataplane.Bound)) int {
	f, code, done := parseFlags(name, args, stderr)
	if done {
		return code
	}
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return code
	}
	obs, err := cli.OpenRequestObservability(ctx, f.log, f.accessLog, stdout, stderr)
	if err != nil {
		return fail(2, err)
	}
	defer obs.Close()
	r := newRun(f, obs)
	stopSource, code, err := r.startConfigSource(ctx)
	if err != nil {
		return fail(code, err)
	}
	defer stopSource()
	if err := r.serve(ctx, ready); err != nil {
		return fail(1, err)
	}
	return 0
}

// run is one run of the proxy command.
type run struct {
	f   *flags
	log *slog.Logger
	p   *dataplane.Proxy
	// watch is the client of -controller (nil with -config).
	watch *configwatch.Client
}

// newRun builds the proxy. It serves no config until startConfigSource
// gives it one.
func newRun(f *flags, obs *cli.RequestObservability) *run {
	r := &run{f: f, log: obs.Log}
	// The watch client's metrics go on the admin listener with the
	// proxy's; the meter is made at the first scrape, after watch is set.
	// The proxy is the process: it may give its memory back after a
	// whole load (dataplane.Options.ReturnMemory).
	r.p = dataplane.New(dataplane.Options{Log: obs.Log, AccessLog: obs.AccessLog, Tracer: obs.Tracer, Pprof: *f.pprof, Pool: f.pool,
		ListenerPorts: f.listenerPorts, ReturnMemory: true, EncodedSlashes: *f.slashes,
		MetricsDetail: observe.Detail(f.metricsDetail),
		RequestBuffer: int64(f.requestBuffer), BufferMemory: int64(f.bufferMemory), Streams: f.streams,
		Metrics: func(m metric.Meter) error {
			if r.watch == nil {
				return nil
			}
			return r.watch.RegisterMetrics(m)
		}})
	return r
}

// serve serves the listeners until ctx ends, or one fails.
func (r *run) serve(ctx context.Context, ready func(dataplane.Bound)) error {
	l := r.f.listen
	l.Ready = func(b dataplane.Bound) {
		r.log.Info("listening", "origin", b.Origin, "originTLS", b.OriginTLS, "plain", b.Plain, "admin", b.Admin, "originCA", b.OriginCA)
		if ready != nil {
			ready(b)
		}
	}
	return r.p.Serve(ctx, l)
}
