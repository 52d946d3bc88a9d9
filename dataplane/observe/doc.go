// Package observe is how the proxy reports on the requests it serves:
// counters and latency histograms, Prometheus metrics, trace spans and
// the access log.
//
// The idea: the request path only records. It bumps atomic counters and
// fills plain structs (a Span's fields, a Line), then moves on. What
// costs more happens elsewhere: metric families are written from the
// counters when /metrics is scraped (the per-rule and per-cluster ones
// streamed to the scraper line by line: metrics.go), the tracer's
// goroutine turns spans into the OpenTelemetry SDK's form and exports
// them in batches, and the access log's goroutine writes lines out. (A sampled line is formatted
// on the request's goroutine, into a pooled buffer: handing over those
// bytes allocates nothing, where handing over the Line would.) What a
// request hands over goes through a bounded queue that never blocks:
// when it is full the item is dropped and counted, because reporting on
// the traffic must not slow it down. With tracing and the access log
// off, a request costs a few atomic adds and no allocation.
//
// The proxy-wide counters are one struct, Counters, served from one
// table, counterFamilies (counters.go), which names each field's metric,
// its label value and what it counts. A new counter is a field there, a
// row in the table and a line in docs/metrics.md; tests fail while one of
// the three is missing.
//
// The package knows nothing of package dataplane's types (it takes only
// the names of Cloudflare Access's refusals from package cfaccess, to
// label Counters.Access): package dataplane keeps a Counters and the
// per-rule and per-cluster stats across config loads, fills spans and
// lines from what it knows of a request, and serves metrics from a
// Source it implements.
package observe
