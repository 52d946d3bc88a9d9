// This file implements the provisioner's metrics.

package planes

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/metric"
)

// RegisterMetrics registers the provisioner's instruments on m. p may be
// nil (a controller without planes): the instruments then read zero, so
// every controller serves the same metric families.
func RegisterMetrics(m metric.Meter, p *Provisioner) error {
	read := func(f func(*Provisioner) int64) func() int64 {
		return func() int64 {
			if p == nil {
				return 0
			}
			return f(p)
		}
	}
	var errs []error
	counter := func(name, unit, desc string, read func() int64) {
		_, err := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc),
			metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error { o.Observe(read()); return nil }))
		errs = append(errs, err)
	}
	counter("tunnelgate.controller.plane.applies", "{apply}", "Objects of dedicated planes applied (server-side apply; unchanged ones are not sent).",
		read(func(p *Provisioner) int64 { return p.Stats.Applies.Load() }))
	counter("tunnelgate.controller.plane.deletes", "{delete}", "Objects of dedicated planes deleted (pruned, or the plane of a Gateway back on the shared proxies).",
		read(func(p *Provisioner) int64 { return p.Stats.Deletes.Load() }))
	counter("tunnelgate.controller.plane.errors", "{error}", "Syncs of a dedicated plane that failed (retried with backoff; the Gateway's status says why).",
		read(func(p *Provisioner) int64 { return p.Stats.Errors.Load() }))
	_, err := m.Int64ObservableGauge("tunnelgate.controller.planes", metric.WithUnit("{plane}"),
		metric.WithDescription("Dedicated planes this replica applies (0 unless it leads)."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(read(func(p *Provisioner) int64 { return int64(p.wantedCount()) })())
			return nil
		}))
	errs = append(errs, err)
	return errors.Join(errs...)
}

// wantedCount is how many planes the last Update wanted, while leading.
func (p *Provisioner) wantedCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.leading {
		return 0
	}
	return len(p.wanted)
}
