// Package procmetrics adds the Go runtime's and the process's standard
// Prometheus metrics (go_*, process_*) to a registry. Both processes
// serve /metrics from a registry of their own rather than the global
// one, so neither gets these for free; dashboards and alerts written for
// any Go program (process_resident_memory_bytes, go_goroutines, GC
// pauses) expect them under their usual names.
package procmetrics

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Register adds the Go runtime collector (client_golang's default set:
// go_goroutines, go_threads, go_gc_duration_seconds, go_memstats_* and
// a few runtime/metrics gauges) and the process collector (CPU, resident
// and virtual memory, file descriptors, start time, network bytes) to
// reg. Call it once per registry: a second call fails as a duplicate.
func Register(reg prometheus.Registerer) error {
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return fmt.Errorf("go runtime metrics: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return fmt.Errorf("process metrics: %w", err)
	}
	return nil
}
