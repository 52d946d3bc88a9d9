// This file implements the config server's metrics.

package configserver

import (
	"context"
	"errors"
	"log/slog"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Metrics, on the meter the controller passes in Options.Meter. Names
// follow the proxy's (dataplane/metrics.go): units are annotations, so
// the Prometheus names are tunnelgate_config_server_published_total,
// tunnelgate_config_server_watchers,
// tunnelgate_config_server_requests_total{result} and
// tunnelgate_config_server_deltas_total.

// result is how a config request ended, the "result" label.
type result int

const (
	resultChanged      result = iota // 200 with a document
	resultNotModified                // 304 at the end of the wait
	resultUnauthorized               // 401
	resultBadRequest                 // 400: a wait that is no duration
	resultCanceled                   // the proxy left before an answer
	numResults
)

var resultNames = [numResults]string{"changed", "not_modified", "unauthorized", "bad_request", "canceled"}

type instruments struct {
	published metric.Int64Counter
	watchers  metric.Int64UpDownCounter
	requests  metric.Int64Counter
	deltas    metric.Int64Counter
	results   [numResults]metric.AddOption
}

// newInstruments makes the server's instruments on m. A meter that
// refuses one (it should not) costs that metric, not the server.
func newInstruments(m metric.Meter, log *slog.Logger) instruments {
	if m == nil {
		m = noop.NewMeterProvider().Meter("")
	}
	var in instruments
	var err1, err2, err3, err4 error
	in.published, err1 = m.Int64Counter("tunnelgate.config_server.published",
		metric.WithUnit("{version}"), metric.WithDescription("Config versions published to proxies."))
	in.watchers, err2 = m.Int64UpDownCounter("tunnelgate.config_server.watchers",
		metric.WithUnit("{request}"), metric.WithDescription("Proxy requests held waiting for a new config version."))
	in.requests, err3 = m.Int64Counter("tunnelgate.config_server.requests",
		metric.WithUnit("{request}"), metric.WithDescription("Config requests answered, by result."))
	in.deltas, err4 = m.Int64Counter("tunnelgate.config_server.deltas",
		metric.WithUnit("{answer}"), metric.WithDescription("Changed configs sent as a delta from the version the proxy serves."))
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		log.Error("config server metrics unavailable", "err", err)
		nm := noop.NewMeterProvider().Meter("")
		in.published, _ = nm.Int64Counter("")
		in.watchers, _ = nm.Int64UpDownCounter("")
		in.requests, _ = nm.Int64Counter("")
		in.deltas, _ = nm.Int64Counter("")
	}
	for i, name := range resultNames {
		in.results[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("result", name)))
	}
	in.deltas.Add(context.Background(), 0) // served at zero from the start
	return in
}

func (in *instruments) request(ctx context.Context, r result) {
	in.requests.Add(context.WithoutCancel(ctx), 1, in.results[r])
}

func (in *instruments) delta(ctx context.Context) {
	in.deltas.Add(context.WithoutCancel(ctx), 1)
}

func (in *instruments) watching(ctx context.Context, delta int64) {
	in.watchers.Add(context.WithoutCancel(ctx), delta)
}
